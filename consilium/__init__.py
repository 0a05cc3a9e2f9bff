"""consilium: simulate multidisciplinary clinical deliberation with LLM agents and measure it."""

__all__ = ["__version__"]

__version__ = "0.1.0"
