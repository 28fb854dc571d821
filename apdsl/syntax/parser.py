"""`parse(source, file) -> ast.Module`: the one entry point from `.apk` text to syntax tree.

The Lark LALR parser is built once per process and the analysed grammar is cached on disk
(`$XDG_CACHE_HOME/apdsl` or `~/.cache/apdsl`; `APDSL_NO_CACHE=1` turns it off), so a cold
`apdsl check` does not pay for grammar analysis.  The AST is built during the parse by `Builder`.  This module must stay free of numpy
and rich: it is on the cold-start path.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from pathlib import Path

import lark
from lark import Lark
from lark.exceptions import LarkError

from ..errors import ApdslSyntaxError, Span
from ..resources import grammar_file
from . import ast
from .build_displays import FieldSyntaxError
from .builder import Builder
from .diagnose import SyntaxReporter
from .indent import ApkIndenter

__all__ = ["parse", "bare_parser", "cache_dir"]

_OPTIONS = {"parser": "lalr", "lexer": "basic", "maybe_placeholders": True}


class _Parser:
    """The built Lark parser with its transformer, post-lexer and error reporter."""

    def __init__(self, cache: Path | None) -> None:
        self.builder = Builder()
        self.indenter = ApkIndenter()
        self.lark = _load(self.builder, self.indenter, cache, _STARTS)
        self.builder.parse_field = self._parse_field
        self.reporter = SyntaxReporter(self.lark.terminals)
        # The builder and indenter keep per-parse state (the file name, open brackets).
        self.lock = threading.Lock()

    def parse(self, source: str, file: str) -> ast.Module:
        # Editors do not show a byte-order mark, so columns are counted without it.
        source = source.removeprefix("\ufeff")
        text = source if source.endswith("\n") else source + "\n"
        with self.lock:
            self.builder.file = self.indenter.file = file
            try:
                body = self.lark.parse(text, start="start")
            except ApdslSyntaxError:
                raise
            except LarkError as exc:
                raise self.reporter.error(exc, text, self.indenter.state) from None
        return ast.Module(body, file, source, _whole(source, file))


    def _parse_field(self, text: str) -> ast.Expr:
        """An f-string field's expression, parsed during the file's own parse (the builder
        calls this; Lark's LALR parser keeps no state between parses, the indenter's error
        state is restored after)."""
        saved = self.indenter.state
        try:
            return self.lark.parse(text + "\n", start="fexpr")
        except ApdslSyntaxError as e:
            raise FieldSyntaxError(e.message) from None
        except LarkError as exc:
            error = self.reporter.error(exc, text + "\n", self.indenter.state)
            raise FieldSyntaxError(error.message) from None
        finally:
            self.indenter.state = saved


def _whole(source: str, file: str) -> Span:
    # counted, not split: a list of every line would cost ~60 bytes a line
    last = source.rfind("\n")
    return Span(file, 1, 1, source.count("\n") + 1, len(source) - last)


_parser: _Parser | None = None


def parse(source: str, file: str = "<string>") -> ast.Module:
    """Parse `.apk` text; raise `ApdslSyntaxError` (never a Lark error) on any mistake."""
    global _parser
    if _parser is None:
        _parser = _Parser(cache_dir())
    return _parser.parse(source, file)


def cache_dir() -> Path | None:
    """Where the analysed grammar is cached, or None to build it every time."""
    if os.environ.get("APDSL_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "apdsl"


def grammar_text() -> str:
    return grammar_file().read_text(encoding="utf-8")


def bare_parser() -> Lark:
    """The same grammar, loaded the same way, with no transformer: `parse(text)` builds a
    plain Lark tree without positions (the baseline of the benchmarks)."""
    return _load(None, ApkIndenter(), cache_dir(), "start")


# The file, and an f-string field's expression on its own.
_STARTS = ["start", "fexpr"]


def _load(builder: Builder | None, indenter: ApkIndenter, cache: Path | None,
          start: str | list[str]) -> Lark:
    """Build the parser, through Lark's on-disk cache of the analysed grammar when possible.

    Lark checks the cache against a hash of the grammar, options and versions and rebuilds
    (and rewrites) a stale or unreadable one; an unwritable cache directory just means no cache.
    """
    grammar = grammar_text()
    path: str | bool = False
    if cache is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            key = hashlib.sha256((grammar + repr(start)).encode()).hexdigest()[:16]
            path = str(cache / f"apk-grammar-{key}-py{sys.version_info[0]}{sys.version_info[1]}"
                               f"-lark{lark.__version__}.cache")
        except OSError:
            path = False
    return Lark(grammar, transformer=builder, postlex=indenter, cache=path, start=start,
                **_OPTIONS)
