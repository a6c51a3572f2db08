"""The version of envre-hf, in a module of its own: the stages that need it (the HTTP ``User-Agent``) take it
from here instead of importing the package root above them. ``pyproject.toml`` reads it too."""

__version__ = "0.1.0"
