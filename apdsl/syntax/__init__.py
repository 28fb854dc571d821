"""The .apk language's syntax: grammar loading, parser and typed AST (`apdsl.syntax.ast`)."""

import sys


def _import_lark_without_regex() -> None:
    """Lark imports the third-party `regex` module whenever it is installed (30 ms, a sixth
    of a cold start) though an LALR parser with the standard lexer never uses it.  This runs
    before any module of the package imports lark."""
    if "regex" in sys.modules or "lark" in sys.modules:
        return
    sys.modules["regex"] = None  # type: ignore[assignment]  # makes `import regex` fail
    try:
        import lark  # noqa: F401
    finally:
        del sys.modules["regex"]


_import_lark_without_regex()

from .parser import parse  # noqa: E402

__all__ = ["parse"]
