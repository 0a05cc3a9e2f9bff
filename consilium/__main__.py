"""Entry point for ``python -m consilium``."""

from consilium.cli import run

if __name__ == "__main__":
    run()
