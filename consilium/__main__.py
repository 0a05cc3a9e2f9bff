"""Entry point for ``python -m consilium``."""

import sys

from consilium.cli import main

if __name__ == "__main__":
    sys.exit(main())
