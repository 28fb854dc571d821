"""The view a hover asks about (in the worker's process): the name under the cursor, in the
kernel whose block holds it or at the top level, drawn by `apdsl show` as `[KERNEL.]NAME`
would draw it; told as its facts (shape, dtype, buffer, format, strides, offset, pattern) and
its lowered access patterns (SPEC section 8)."""

from __future__ import annotations

from typing import Any

from ...errors import ApdslError
from .outline import outline, word_at


def view_at(file: str, source: str, line: int, column: int) -> dict[str, Any]:
    """{"view": facts} of the name at (`line`, `column`), or {"none": why not}."""
    found = word_at(source, line, column)
    if found is None or "." in found[0]:
        return {"none": "no name here"}
    name = found[0]
    scope = outline(file, source).scope_at(line)
    if scope is not None and scope.kind != "kernel":
        return {"none": f"{name} is inside helper {scope.name}: its views are drawn where "
                f"a kernel calls it"}
    kernel = scope.name if scope is not None else None
    from ..plumbing import open_program
    from ..show import named_view
    try:
        step = named_view(open_program(file, source), kernel, name)
        return {"view": facts(step.tensor, step.title)}
    except ApdslError as e:
        return {"none": f"[{e.code}] {e.message}"}
    except Exception as e:  # noqa: BLE001 - a hover never fails loudly (the check says why)
        return {"none": f"{type(e).__name__}: {e}"}


def facts(t: Any, title: str) -> dict[str, Any]:
    """What the hover shows of view `t` (JSON values), its lowered patterns included."""
    from ...tensor.lowering import lower
    from ..picture import pattern_text
    try:
        aps = [{"offset": str(ap.offset), "pattern": _json(ap.pattern)} for ap in lower(t)]
    except ApdslError as e:
        aps = [{"error": f"[{e.code}] {e.message}"}]
    return {
        "title": title, "name": t.name, "shape": [int(n) for n in t.shape],
        "dtype": str(t.dtype), "buffer": t.buffer, "format": t.format,
        "strides": [None if s is None else int(s) for s in t.strides],
        "offset": str(t.offset), "pattern": pattern_text(t), "aps": aps,
    }


def _json(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)
