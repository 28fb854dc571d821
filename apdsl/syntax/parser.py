"""`parse(source, file) -> ast.Module`: the one entry point from `.apk` text to syntax tree.

The grammar is Lark's (`grammar/apk.lark`, LALR with the basic lexer); the AST is built during
the parse by `Builder`.  A text parses through `lalr.LalrParser` on tables Lark analysed once
and `lalr_tables` caches on disk (`$XDG_CACHE_HOME/apdsl` or `~/.cache/apdsl`;
`APDSL_NO_CACHE=1` turns the cache off), so a cold `apdsl check` imports no Lark.  A text the
runtime does not accept (a syntax error) is parsed again by Lark itself, whose exceptions
`SyntaxReporter` turns into the diagnostic.  This module must stay free of numpy and rich: it
is on the cold-start path.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from ..errors import ApdslSyntaxError, Span
from ..resources import grammar_filename
from . import ast
from .build_displays import FieldSyntaxError
from .builder import Builder
from .indent import ApkIndenter
from .lalr import LalrParser, Token, Unhandled

__all__ = ["parse", "bare_parser", "cache_dir"]

_OPTIONS = {"parser": "lalr", "lexer": "basic", "maybe_placeholders": True}
# The file, and an f-string field's expression on its own.
_STARTS = ["start", "fexpr"]


class _Parser:
    """The parser with its builder and post-lexer; Lark and the error reporter on demand."""

    def __init__(self, cache: str | os.PathLike | None) -> None:
        self.cache = cache
        self.builder = Builder()
        self.indenter = ApkIndenter()
        self.builder.parse_field = self._parse_field
        self._lark: Any = None
        self._reporter: Any = None
        self.fast = self._fast_parser()
        # The builder and indenter keep per-parse state (the file name, open brackets).
        self.lock = _thread.allocate_lock()

    def parse(self, source: str, file: str) -> ast.Module:
        # Editors do not show a byte-order mark, so columns are counted without it.
        source = source.removeprefix("\ufeff")
        text = source if source.endswith("\n") else source + "\n"
        with self.lock:
            self.builder.file = self.indenter.file = file
            body = self._run(text, "start")
        return ast.Module(body, file, source, _whole(source, file))

    def _run(self, text: str, start: str) -> Any:
        if self.fast is not None:
            try:
                return self.fast.parse(text, start)
            except Unhandled:
                pass  # Lark parses it again: the same calls, then its error
        from lark.exceptions import LarkError
        try:
            return self.lark.parse(text, start=start)
        except ApdslSyntaxError:
            raise
        except LarkError as exc:
            raise self.reporter.error(exc, text, self.indenter.state) from None

    def _parse_field(self, text: str) -> ast.Expr:
        """An f-string field's expression, parsed during the file's own parse (the builder
        calls this; the parsers keep no state between parses, the indenter's error state is
        restored after)."""
        saved = self.indenter.state
        try:
            return self._run(text + "\n", "fexpr")
        except ApdslSyntaxError as e:
            raise FieldSyntaxError(e.message) from None
        finally:
            self.indenter.state = saved

    @property
    def lark(self) -> Any:
        """Lark's own parser of the grammar (through Lark's cache), built on first use."""
        if self._lark is None:
            self._lark = _load(self.builder, _Retokenize(self.indenter), self.cache, _STARTS)
        return self._lark

    @property
    def reporter(self) -> Any:
        if self._reporter is None:
            from .diagnose import SyntaxReporter
            self._reporter = SyntaxReporter(self.lark.terminals)
        return self._reporter

    def _fast_parser(self) -> LalrParser | None:
        """The table-driven parser, its tables from the cache or from Lark (then cached); None
        when the runtime cannot reproduce this Lark configuration (Lark then parses all)."""
        from . import lalr_tables as T
        grammar = grammar_text()
        key = T.cache_key(grammar, repr((_OPTIONS, _STARTS)))
        path = None if self.cache is None else os.path.join(self.cache, f"apk-lalr-{key}.tables")
        tables = T.read_cache(path, key) if path is not None else None
        if tables is None:
            try:
                tables = T.extract(self.lark)
            except ValueError:
                return None
            if path is not None:
                T.write_cache(path, key, tables)
        fast = LalrParser(tables, self.builder, self.indenter)
        try:
            T.check_builder(self.builder, tables, {n for m in fast.mres for n in m.groupindex})
        except ValueError:
            return None
        return fast


class _Retokenize:
    """The indenter behind Lark's lexer, its tokens made `lalr.Token`s first: the builder tells
    tokens from nodes by that class, whichever parser runs."""

    always_accept = ApkIndenter.always_accept

    def __init__(self, indenter: ApkIndenter) -> None:
        self.indenter = indenter

    def process(self, stream: Iterable[Any]) -> Iterator[Token]:
        return self.indenter.process(
            Token(t.type, t.value, t.start_pos, t.line, t.column, t.end_line, t.end_column,
                  t.end_pos) for t in stream)


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


def cache_dir() -> str | None:
    """Where the analysed grammar is cached, or None to build it every time."""
    if os.environ.get("APDSL_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "apdsl")


def grammar_text() -> str:
    with open(grammar_filename(), encoding="utf-8") as f:
        return f.read()


def bare_parser() -> Any:
    """The same grammar, loaded by Lark the same way, with no transformer: `parse(text)` builds
    a plain Lark tree without positions (the baseline of the benchmarks)."""
    return _load(None, ApkIndenter(), cache_dir(), "start")


def _import_lark() -> Any:
    """Lark imports the third-party `regex` module whenever it is installed (30 ms) though an
    LALR parser with the standard lexer never uses it; this keeps it out."""
    if "lark" not in sys.modules and "regex" not in sys.modules:
        sys.modules["regex"] = None  # type: ignore[assignment]  # makes `import regex` fail
        try:
            import lark
        finally:
            del sys.modules["regex"]
    import lark
    return lark


def _load(builder: Builder | None, indenter: Any, cache: str | os.PathLike | None,
          start: str | list[str]) -> Any:
    """Lark's parser, through Lark's on-disk cache of the analysed grammar when possible.

    Lark checks the cache against a hash of the grammar, options and versions and rebuilds
    (and rewrites) a stale or unreadable one; an unwritable cache directory just means no cache.
    """
    import hashlib
    lark = _import_lark()
    grammar = grammar_text()
    path: str | bool = False
    if cache is not None:
        try:
            os.makedirs(cache, exist_ok=True)
            key = hashlib.sha256((grammar + repr(start)).encode()).hexdigest()[:16]
            path = os.path.join(cache, f"apk-grammar-{key}-py{sys.version_info[0]}"
                                       f"{sys.version_info[1]}-lark{lark.__version__}.cache")
        except OSError:
            path = False
    return lark.Lark(grammar, transformer=builder, postlex=indenter, cache=path, start=start,
                     **_OPTIONS)
