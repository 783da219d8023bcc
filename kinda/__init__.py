"""kinda-llama: rebuild the LLaMA (v1) pre-training corpus, and go beyond it.

This package is the ``kinda`` command (the top layer); the recipe version lives in
:mod:`core.version` so the pure core does not import the command.
"""

from core.version import __version__

__all__ = ["__version__"]
