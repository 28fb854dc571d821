"""The LALR tables of the `.apk` grammar: extracted from a Lark parser, cached on disk.

The cache file holds the tables as `marshal` data (plain dicts, lists and strings: no code,
nothing Lark must rebuild) under a header naming what they were computed from (a hash of the
grammar text and parser options, Lark's version, this module's format, the Python version)
and a checksum of the data.  A file whose header or checksum does not match is ignored and
rewritten; a cache directory that cannot be created or written means the tables are computed
again next time, nothing worse.  Lark is imported only to compute the tables.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from importlib.machinery import PathFinder
from typing import Any

from .lalr import Tables

__all__ = ["cache_key", "read_cache", "write_cache", "extract"]

FORMAT = 1  # bump when the layout of the data changes
_MAGIC = b"apdsl-lalr\n"


def lark_version() -> str:
    """Lark's version, read from its package without importing it (importing it is what the
    cache saves); a checksum of its `__init__.py` when no version string is found there."""
    module = sys.modules.get("lark")
    if module is not None:
        return str(module.__version__)
    spec = PathFinder.find_spec("lark")
    if spec is None or spec.origin is None:
        return "none"
    try:
        with open(spec.origin, "rb") as f:
            text = f.read()
    except OSError:
        return "unreadable"
    for line in text.splitlines():
        if line.startswith(b"__version__"):
            return line.split(b"=", 1)[-1].strip(b" :str\"'").decode("ascii", "replace")
    return f"crc{zlib.crc32(text):08x}"


def cache_key(grammar: str, options: str) -> str:
    """Names the tables of `grammar` built with `options` by this Lark on this Python."""
    data = (grammar + "\0" + options).encode()
    digest = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return (f"f{FORMAT}-{digest}-lark{lark_version()}"
            f"-py{sys.version_info[0]}{sys.version_info[1]}")


def read_cache(path: str, key: str) -> Tables | None:
    """The tables stored at `path` under `key`, or None (missing, stale, corrupted)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    header = _MAGIC + key.encode() + b"\n"
    if not blob.startswith(header) or len(blob) < len(header) + 4:
        return None
    body = blob[len(header) + 4:]
    if zlib.crc32(body) != int.from_bytes(blob[len(header):len(header) + 4], "little"):
        return None
    try:
        data = marshal.loads(body)
        tables = Tables.from_data(data)
        _validate(tables)
    except Exception:  # noqa: BLE001 - any malformed cache is only a cache miss
        return None
    return tables


def write_cache(path: str, key: str, tables: Tables) -> None:
    """Store `tables` at `path` (written whole or not at all); failures are ignored."""
    body = marshal.dumps(tables.data())
    blob = _MAGIC + key.encode() + b"\n" + zlib.crc32(body).to_bytes(4, "little") + body
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _validate(tables: Tables) -> None:
    """The shape the runtime relies on (a checksum passed, so this guards against a file
    written by a buggy or different writer, not against noise)."""
    n_states, n_rules = len(tables.states), len(tables.rules)
    for name, pattern in tables.patterns:
        if not isinstance(name, str) or not isinstance(pattern, int):
            raise ValueError("pattern")
    for state in (*tables.starts.values(), *tables.ends.values()):
        if not 0 <= state < n_states:
            raise ValueError("state")
    for row in tables.states:
        for action in row.values():
            if not (-n_rules <= action < n_states):
                raise ValueError("action")
    for origin, size, name, _expand1, _spec in tables.rules:
        if not (isinstance(origin, str) and isinstance(name, str) and size >= 0):
            raise ValueError("rule")


def extract(parser: Any) -> Tables:
    """The tables of a built `lark.Lark` LALR parser with the basic lexer, exactly as its
    lexer, parser and parse-tree builder use them.  Raises ValueError for a configuration
    the runtime does not reproduce (then Lark itself parses)."""
    from lark.lexer import BasicLexer, PatternStr
    from lark.parse_tree_builder import (
        ChildFilterLALR,
        ChildFilterLALR_NoPlaceholders,
        maybe_create_child_filter,
    )
    from lark.parsers.lalr_analysis import Shift

    options = parser.options
    if (options.parser != "lalr" or options.propagate_positions or options.lexer_callbacks
            or options.keep_all_tokens or options.use_bytes or options.regex
            or options.tree_class is not None):
        raise ValueError("unsupported Lark options")
    frontend = parser.parser
    lexer = getattr(frontend.lexer, "lexer", frontend.lexer)
    if type(lexer) is not BasicLexer or lexer.re.__name__ != "re" or lexer.g_regex_flags:
        raise ValueError("unsupported lexer")
    scanner = lexer.scanner  # built now, with its keyword callbacks
    # (Lark's names may be its Token objects, a str subclass: stored as plain str)
    patterns = [(str(m.pattern), int(m.flags)) for m in scanner._mres]
    keywords: dict[str, dict[str, str]] = {}
    for kind, callback in lexer.callback.items():
        terms = getattr(getattr(callback, "scanner", None), "terminals", None)
        if terms is None or not all(type(t.pattern) is PatternStr and not t.pattern.flags
                                    for t in terms):
            raise ValueError(f"unsupported lexer callback for {kind}")
        keywords[str(kind)] = {str(t.pattern.value): str(t.name) for t in terms}

    table = frontend.parser.parser.parse_table
    rule_index: dict[Any, int] = {}
    rules = []
    for rule in parser.rules:
        rule_index[rule] = len(rules)
        made = maybe_create_child_filter(rule.expansion, rule.options.keep_all_tokens, False,
                                         rule.options.empty_indices
                                         if options.maybe_placeholders else None)
        if made is None:
            spec = None
        elif made.func is ChildFilterLALR:
            include, nones_after = made.args
            spec = (tuple((int(i), bool(e), int(n)) for i, e, n in include), int(nones_after))
        elif made.func is ChildFilterLALR_NoPlaceholders:
            (include,) = made.args
            spec = (tuple((int(i), bool(e), 0) for i, e in include), 0)
        else:
            raise ValueError("unsupported child filter")
        name = rule.alias or rule.options.template_source or rule.origin.name
        expand1 = bool(rule.options.expand1 and not rule.alias)
        rules.append((str(rule.origin.name), len(rule.expansion), str(name), expand1, spec))
    n_states = len(table.states)
    if sorted(table.states) != list(range(n_states)):
        raise ValueError("parse states are not numbered 0..n-1")
    states = []
    for s in range(n_states):
        row = {}
        for symbol, (action, arg) in table.states[s].items():
            row[str(symbol)] = int(arg) if action is Shift else ~rule_index[arg]
        states.append(row)
    return Tables(patterns, keywords, map(str, lexer.ignore_types), map(str, lexer.newline_types),
                  states, rules, {str(k): int(v) for k, v in table.start_states.items()},
                  {str(k): int(v) for k, v in table.end_states.items()})


def check_builder(builder: Any, tables: Tables, terminals: set[str]) -> None:
    """Raise ValueError when `builder` would make Lark do what the runtime does not: a method
    named after a terminal (Lark calls it on every such token), or a method for a `_rule`
    (whose result Lark splices into its parent as a tree)."""
    for kind in terminals:
        if getattr(builder, kind, None) is not None:
            raise ValueError(f"builder has a method for the terminal {kind}")
    for origin, _size, name, _e, _spec in tables.rules:
        if origin.startswith("_") and getattr(builder, name, None) is not None:
            raise ValueError(f"builder has a method for the inlined rule {name}")
