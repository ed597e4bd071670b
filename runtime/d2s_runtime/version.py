"""The runtime's version (the loader names it in its messages)."""
__version__ = "0.1.0"
