"""What the editor is told without running anything: the meaning of a builtin, an `nl.`,
`nisa.` or `asc.` name, a view method or an error code under the cursor; the completions at
the cursor; where a helper, kernel or imported `.apk` module is defined.

Signatures and descriptions come from the functions themselves (the instruction table's
implementations for the instructions, `apdsl.nki` for `nl.`, `apdsl.asc` for the rest of
`asc.`), so a hover says what `help()` says.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from ...records import record
from .outline import Outline, outline

__all__ = ["Meaning", "meaning", "explain_code", "completions", "definition", "module_file"]

_CODE = re.compile(r"APK\d{3}")
# what a prefix names, in either kind of file (`nki.language.exp`, `nl.exp`)
_SPACES = {"nl": "nl", "nki.language": "nl", "language": "nl", "nisa": "nisa",
           "nki.isa": "nisa", "isa": "nisa", "asc": "asc", "asc.language": "asc",
           "apdsl.asc": "asc"}


@record
class Meaning:
    """A hover's text: a signature (or a one-line title) and a description."""

    title: str
    text: str

    def markdown(self, language: str = "python") -> str:
        body = f"```{language}\n{self.title}\n```"
        return body + (f"\n\n{self.text}" if self.text else "")


def explain_code(word: str) -> str | None:
    """`apdsl explain CODE` (plain), for an error code."""
    if not _CODE.fullmatch(word):
        return None
    from ...catalogue import lookup
    from ..diagnostics import render_explain
    entry = lookup(word)
    return None if entry is None else render_explain(entry, color=False)


def meaning(word: str, kind: str, aliases: dict[str, str] | None = None) -> Meaning | None:
    """The meaning of dotted name `word` in a file of `kind` ("apk" or "py"): an instruction,
    an `nl.`/`nisa.`/`asc.` name, a builtin, dtype or buffer, or a view method (`t.slice`).
    `aliases` maps the file's own names for the namespaces (`import nki.language as lang`)."""
    space, _, name = word.rpartition(".")
    space = (aliases or {}).get(space, space)
    target = _SPACES.get(space) if space else None
    if space and target is None:
        from ...semantics.values import TENSOR_ATTRS
        if name in TENSOR_ATTRS:  # `t.slice`: a method of the view `t` is bound to
            from ...tensor.view import Tensor
            return _described(f"Tensor.{name}", getattr(Tensor, name, None))
        return None
    if target == "asc":
        return _instruction(f"asc.{name}", f"asc.{name}") or _asc(name)
    if target == "nl":
        return _nl(name)
    if target == "nisa" or kind == "apk":
        found = _instruction(name, f"{space}.{name}" if space else name)
        if found is not None or target == "nisa":
            return found
    return _builtin(name) if kind == "apk" else None


def _instruction(table_name: str, shown: str) -> Meaning | None:
    from ...runtime.table import TABLE, implementation
    if table_name not in TABLE:
        return None
    try:
        fn = implementation(table_name)
    except Exception:  # noqa: BLE001 - an entry with no Python form: its name only
        return Meaning(shown, "")
    return _described(shown, fn)


def _nl(name: str) -> Meaning | None:
    from ...nki import language
    value = getattr(language, name, None)
    if value is None or name.startswith("_"):
        return None
    if isinstance(value, str):
        return Meaning(f"nl.{name}", f"the buffer `{value}`")
    from ...tensor.dtypes import DType
    if isinstance(value, DType):
        return Meaning(f"nl.{name}", f"the element type {value}")
    return _described(f"nl.{name}", value)


def _asc(name: str) -> Meaning | None:
    from ... import asc
    value = getattr(asc, name, None)
    if value is None or name.startswith("_"):
        return None
    return _described(f"asc.{name}", value)


def _builtin(name: str) -> Meaning | None:
    """A builtin of `.apk` that is not an instruction: apdsl's function of that name when it
    has one (`ndarray`, `make_layout`), else what kind of name it is."""
    from ...tensor import tla, view
    from ..lexer import BUFFERS, BUILTINS, DTYPE_NAMES
    if name in DTYPE_NAMES:
        return Meaning(name, "an element type (dtype)")
    if name in BUFFERS:
        return Meaning(name, "a buffer: where a tensor's storage lives")
    for module in (view, tla):  # `ndarray`, `make_layout`: apdsl's own functions
        if name in BUILTINS and callable(getattr(module, name, None)):
            return _described(name, getattr(module, name))
    from ...semantics.builtins import builtin_names
    if name in builtin_names():
        return Meaning(name, "a builtin of the .apk language")
    return None


def _described(shown: str, value: Any) -> Meaning | None:
    if value is None:
        return None
    try:
        title = shown + str(inspect.signature(value))
    except (TypeError, ValueError):
        title = shown
    doc = inspect.getdoc(value) or ""
    own = doc if getattr(value, "__doc__", None) is not getattr(type(value), "__doc__", 0) \
        or inspect.isclass(value) or inspect.isroutine(value) else ""
    first = own.split("\n\n")[0].replace("\n", " ").strip()
    return Meaning(title, first)


# -- completion ---------------------------------------------------------------------------------

def completions(source: str, file: str, line: int, column: int) -> list[tuple[str, str]]:
    """(completion, kind) at 1-based (`line`, `column`): after `NAME.` the members of what NAME
    is (an NKI or Ascend namespace, a module, a view), otherwise names in scope."""
    lines = source.splitlines()
    text = lines[line - 1][:column - 1] if 1 <= line <= len(lines) else ""
    shape = outline(file, source)
    member = re.search(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\.(\w*)$", text)
    if member:
        chain, prefix = member.group(1), member.group(2)
        table = _members(chain, file, shape)
    else:
        word = re.search(r"[A-Za-z_]\w*$", text)
        prefix = word.group(0) if word else ""
        table = _names(file, shape)
    return sorted((n, k) for n, k in table.items() if n.startswith(prefix) and n != prefix)


def namespaces(shape: Outline) -> dict[str, str]:
    """The file's names for the NKI and Ascend namespaces: its imports' aliases (`import
    nki.language as lang` -> {"lang": "nl"}), besides the usual `nl`, `nisa`, `asc`."""
    out = {"nl": "nl", "nisa": "nisa", "asc": "asc"}
    for imp in shape.imports:
        for bound, name in imp.names:
            space = _SPACES.get(f"{imp.module}.{name}".removeprefix("neuronxcc.")) or \
                _SPACES.get(name if imp.module in ("nki", "neuronxcc.nki", "apdsl") else "")
            if space:
                out[bound] = space
        if imp.alias:
            space = _SPACES.get(imp.module.removeprefix("neuronxcc."))
            if space:
                out[imp.alias] = space
    return out


def _members(chain: str, file: str, shape: Outline) -> dict[str, str]:
    space = namespaces(shape).get(chain) or _SPACES.get(chain)
    if space is not None:
        return _space_members(space, file.endswith(".py"))
    for imp in shape.imports:  # an imported .apk module: what it defines
        if chain in (imp.alias, imp.module) and not file.endswith(".py"):
            path = module_file(imp.module, file)
            if path is not None:
                text = path.read_text(encoding="utf-8", errors="replace")
                return {n: "name" for n in outline(str(path), text).names}
    if chain.split(".")[0] in shape.names:
        from ...semantics.values import TENSOR_ATTRS
        from ...tensor.view import Tensor
        return {a: "method" if callable(getattr(Tensor, a, None)) else "attribute"
                for a in TENSOR_ATTRS}
    return {}


def _space_members(space: str, python: bool) -> dict[str, str]:
    if space == "asc":
        from ...semantics.builtins import nki_names
        out = {n[4:]: "asc" for n in nki_names() if n.startswith("asc.")}
        if python:
            from ... import asc
            out.update({n: "asc" for n in dir(asc) if not n.startswith("_")})
        return out
    from ...nki import isa, language
    module = language if space == "nl" else isa
    out = {n: "nl" if space == "nl" else "nisa" for n in dir(module) if not n.startswith("_")
           and not inspect.ismodule(getattr(module, n))}
    if not python:  # .apk accepts the prefix on every builtin, dtype and buffer too
        from ..lexer import BUFFERS, DTYPE_NAMES
        out.update({n: "dtype" for n in DTYPE_NAMES})
        out.update({n: "buffer" for n in BUFFERS})
    return out


def _names(file: str, shape: Outline) -> dict[str, str]:
    table: dict[str, str] = {}
    if not file.endswith(".py"):
        from ...semantics.builtins import builtin_names
        from ..lexer import BUFFERS, DTYPE_NAMES, KEYWORDS
        table.update({n: "builtin" for n in builtin_names()})
        table.update({n: "dtype" for n in DTYPE_NAMES})
        table.update({n: "buffer" for n in BUFFERS})
        table.update({n: "keyword" for n in KEYWORDS})
    table.update({n: "namespace" for n in namespaces(shape)})
    table.update({n: "name" for n in shape.names})
    for d in shape.definitions:
        table[d.name] = d.kind
    return table


# -- definitions ------------------------------------------------------------------------------

def module_file(module: str, file: str) -> Path | None:
    """The `.apk` file `import MODULE` in `file` reads: beside the file, else in the standard
    library (the order the interpreter searches)."""
    from ...resources import stdlib_path
    rel = Path(*module.split(".")).with_suffix(".py" if file.endswith(".py") else ".apk")
    for base in (Path(file).parent, stdlib_path()):
        if (base / rel).is_file():
            return base / rel
    return None


def definition(source: str, file: str, line: int, column: int) -> tuple[str, int, int] | None:
    """(file, line, column) where the name under the cursor is defined: a kernel or helper of
    this file, an imported module (its first line), or a name defined in one."""
    from .outline import word_at
    found = word_at(source, line, column)
    if found is None:
        return None
    word = found[0]
    shape = outline(file, source)
    parts = word.split(".")
    for imp in shape.imports:
        if imp.span.line == line:  # on the import statement itself: the module
            path = module_file(imp.module, file)
            if path is not None and imp.span.column <= column <= imp.span.end_column:
                return str(path), 1, 1
        target = None
        if parts[0] == (imp.alias or imp.module.split(".")[0]) and not imp.names:
            rest = parts[1:] if imp.alias else parts[len(imp.module.split(".")):]
            target = rest[0] if rest else None
            if target is None:
                path = module_file(imp.module, file)
                return (str(path), 1, 1) if path is not None else None
        named = dict(imp.names)
        if len(parts) == 1 and parts[0] in named:
            target = named[parts[0]]
        if target is not None:
            path = module_file(imp.module, file)
            if path is None:
                return None
            there = outline(str(path), path.read_text(encoding="utf-8", errors="replace"))
            for d in there.definitions:
                if d.name == target:
                    return str(path), d.span.line, d.span.column
            return str(path), 1, 1
    if len(parts) == 1:
        for d in shape.definitions:
            if d.name == word:
                return file, d.span.line, d.span.column
    return None
