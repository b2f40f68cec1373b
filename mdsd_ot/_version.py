"""The package version (one place; ``mdsd_ot.__version__`` re-exports it)."""

__version__ = "0.1.0"
