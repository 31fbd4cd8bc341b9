"""The package's version: a leaf every module may import (``from checkpoint_doctor import
__version__`` made the package itself, whose API is loaded on first use, part of every import
cycle through a module that stamps a document)."""

__version__ = "0.1.0"
