"""The version of apdsl (also in pyproject.toml), at the bottom so every layer may show it."""

__version__ = "0.1.0"
