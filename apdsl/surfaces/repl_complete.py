"""Tab completion in `apdsl repl`: names in scope, builtins, keywords, dtypes and buffers;
after `NAME.` the attributes of what NAME is bound to; after `:` the commands."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..tensor.view import Tensor
from .session import ALIASES, COMMANDS, Session

__all__ = ["ApkCompleter", "receiver", "prompt_completer", "VIEW_METHODS"]

_MEMBER = re.compile(r"\.(\w*)$")
_WORD = re.compile(r"[A-Za-z_]\w*$")
_NKI_PREFIXES = ("nl", "nisa", "nki.language", "nki.isa")
# tensor methods that return a view: their call keeps a chain completable
VIEW_METHODS = frozenset({"ap", "broadcast", "expand_dim", "flatten_dims", "indirect",
                          "permute", "rearrange", "reinterpret_cast", "reshape", "reshape_dim",
                          "select", "slice", "squeeze_dim", "vector_select", "view"})
_TENSOR = object()  # "some tensor": the static type of a view-method chain


def receiver(text: str) -> list[str] | None:
    """The chain before a member access, read backwards without evaluating anything:
    `x = t[0:4].slice(1, 0, 2)` gives ["t", "[]", "slice", "()"]; None when it is not a
    chain of names, calls and subscripts (`3`, `(a + b)`)."""
    parts: list[str] = []
    i = len(text)
    while i > 0:
        ch = text[i - 1]
        if ch in ")]":
            j = _opening(text, i - 1)
            if j is None:
                return None
            parts.append("()" if ch == ")" else "[]")
            i = j
            continue
        m = _WORD.search(text, 0, i)
        if m is None or (m.start() > 0 and text[m.start() - 1].isdigit()):
            return None
        parts.append(m.group(0))
        i = m.start()
        if i > 0 and text[i - 1] == ".":
            i -= 1
            continue
        break
    if not parts or parts[-1] in ("()", "[]"):
        return None
    return list(reversed(parts))


def _opening(text: str, close: int) -> int | None:
    """Index of the bracket matching text[close] (strings ignored: a rough scan suffices)."""
    depth = 0
    for k in range(close, -1, -1):
        if text[k] in ")]}":
            depth += 1
        elif text[k] in "([{":
            depth -= 1
            if depth == 0:
                return k
    return None


class ApkCompleter:
    """Names in scope, builtins, keywords, dtypes and buffers; after `NAME.` the attributes of
    what NAME is bound to (a tensor's methods and attributes, also after a chain of view
    methods and subscripts); after `:` the commands."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # the prompt_toolkit Completer protocol (see `prompt_completer`)
    def get_completions(self, document: Any, complete_event: Any) -> Iterator[Any]:
        from prompt_toolkit.completion import Completion
        for text, start, meta in self.candidates(document.current_line_before_cursor,
                                                 bool(getattr(complete_event,
                                                              "completion_requested", True))):
            yield Completion(text, start_position=start, display_meta=meta)

    def candidates(self, line: str, requested: bool = True) -> list[tuple[str, int, str]]:
        """(completion, start position relative to the cursor, kind) for the line so far."""
        stripped = line.lstrip()
        if stripped.startswith(":"):
            return self._command(stripped)
        member = _MEMBER.search(line)
        if member:
            prefix = member.group(1)
            chain = receiver(line[:member.start()])
            table = self._attributes(chain) if chain else {}
        else:
            w = _WORD.search(line)
            prefix = w.group(0) if w else ""
            if not prefix and not requested:
                return []
            if w and w.start() > 0 and line[w.start() - 1].isdigit():
                return []
            table = self._names()
        return [(name, -len(prefix), meta) for name, meta in sorted(table.items())
                if name.startswith(prefix) and name != prefix]

    def _names(self) -> dict[str, str]:
        from ..semantics.builtins import builtin_names
        from ..semantics.values import type_name
        from .lexer import BUFFERS, DTYPE_NAMES, KEYWORDS
        table: dict[str, str] = {}
        for name in builtin_names():
            table[name] = "builtin"
        for name in DTYPE_NAMES:
            table[name] = "dtype"
        for name in BUFFERS:
            table[name] = "buffer"
        for name in KEYWORDS:
            table[name] = "keyword"
        for name in ("nl", "nisa"):
            table[name] = "NKI prefix"
        table["asc"] = "Ascend prefix"
        for name in self.session.names():
            table[name] = _kind(type_name(self.session.lookup(name)))
        return table

    def _attributes(self, chain: list[str]) -> dict[str, str]:
        from ..semantics import values
        from ..tensor.dtypes import DType
        if chain == ["asc"]:  # the asc. instructions, enums and parameter objects
            from ..semantics.builtins import nki_names
            return {n[4:]: "asc" for n in nki_names() if n.startswith("asc.")}
        if ".".join(chain) in _NKI_PREFIXES:
            return {k: v for k, v in self._names().items()
                    if v in ("builtin", "dtype", "buffer")}
        value = self.session.lookup(chain[0]) if chain[0] in self.session.names() else None
        pending = None  # a view method named but not called yet
        for part in chain[1:]:
            is_tensor = value is _TENSOR or isinstance(value, Tensor)
            if part == "()":
                value = _TENSOR if pending else None
                pending = None
            elif part == "[]":
                value = _TENSOR if is_tensor and not pending else None
            elif is_tensor and part in VIEW_METHODS:
                pending, value = part, None
            elif isinstance(value, values.Module) and part in value.namespace:
                value = value.namespace[part]
            else:
                return {}
        if pending:
            return {}
        if value is _TENSOR or isinstance(value, Tensor):
            return {a: "method" if callable(getattr(Tensor, a, None)) else "attribute"
                    for a in values.TENSOR_ATTRS}
        if isinstance(value, values.Module):
            return {k: _kind(values.type_name(v)) for k, v in value.namespace.items()
                    if not k.startswith("_")}
        if isinstance(value, DType):
            return {a: "attribute" for a in values.DTYPE_ATTRS}
        import numpy as np
        if isinstance(value, np.ndarray):
            return {a: "host" for a in values.HOST_ATTRS}
        return {}

    def _command(self, stripped: str) -> list[tuple[str, int, str]]:
        word, space, arg = stripped.partition(" ")
        if not space:
            names = sorted(set(COMMANDS) | set(ALIASES))
            return [(c, -len(word), "command") for c in names
                    if c.startswith(word) and c != word]
        word = ALIASES.get(word, word)
        arg = arg.lstrip()
        if word == ":load":
            return _paths(arg)
        if word in (":show", ":lower") and _WORD.fullmatch(arg or "x"):
            from ..semantics.values import Function
            out = []
            for name in self.session.names():
                v = self.session.lookup(name)
                ok = isinstance(v, Tensor) or (word == ":lower" and isinstance(v, Function)
                                               and v.is_kernel)
                if ok and name.startswith(arg) and name != arg:
                    out.append((name, -len(arg), "kernel" if not isinstance(v, Tensor)
                                else "tensor"))
            return out
        return []


def _kind(type_text: str) -> str:
    return type_text.removeprefix("an ").removeprefix("a ")


def _paths(arg: str) -> list[tuple[str, int, str]]:
    folder, _, stem = arg.rpartition("/")
    base = Path(folder or ".")
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    out = []
    for p in entries:
        if not p.name.startswith(stem) or p.name.startswith("."):
            continue
        if p.is_dir():
            out.append((p.name + "/", -len(stem), "folder"))
        elif p.suffix == ".apk":
            out.append((p.name, -len(stem), "file"))
    return out


# The completer must be a prompt_toolkit Completer; subclass lazily so importing this module
# (for scripted use and tests) does not import prompt_toolkit.
def prompt_completer(session: Session) -> Any:
    from prompt_toolkit.completion import Completer

    class _Completer(ApkCompleter, Completer):
        pass

    return _Completer(session)
