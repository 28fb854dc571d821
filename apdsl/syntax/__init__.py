"""The .apk language's syntax: grammar loading, parser and typed AST (`apdsl.syntax.ast`)."""

from .parser import parse

__all__ = ["parse"]
