"""Inputs for a kernel that nothing in its repository calls, from what its definition says of
its parameters: an annotation that carries a shape and a dtype (`nki.typing.tensor[...]`), a
comment on the parameter's line (`query: nl.ndarray,  # (S, 128) float32`) or its line in the
docstring (`q_pe: Query RoPE component [BH, d_rope]`).

A dimension is an integer expression of literals and names. A name takes the value of the
kernel's integer keyword default or module constant of that name; any other name is assumed to
be 128 (one partition tile, what NKI kernels' size rules most often ask for), and a dtype not
given is assumed to be float32. What was assumed is returned with the arrays, so the verdict can
say on what inputs the kernel ran."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...records import record
from ...tensor.dtypes import dtype as dtype_named

ASSUMED_SIZE = 128
_SHAPE = re.compile(r"\(([^()]*)\)|\[([^\[\]]*)\]")
_DTYPE = re.compile(r"\b(bfloat16|bf16|float32|fp32|float16|fp16|half|float8_e4m3|float8_e5m2|"
                    r"int64|int32|int16|int8|uint32|uint16|uint8|bool)\b")
_COMMENTED = re.compile(r"^\s*\*{0,2}(\w+)\b[^#]*#\s*(.*)$")
_HEADER_END = re.compile(r"\)\s*(->.*)?:\s*$")
_DOC_ENTRY = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@record
class Inputs:
    """Arrays for a kernel's parameters, and the sizes and dtypes that had to be assumed."""

    args: tuple[Any, ...]
    assumed: tuple[str, ...]
    source: str


def _said_in_comments(fn: Callable[..., Any], names: set[str]) -> dict[str, str]:
    """Each parameter's trailing comment in the `def` header."""
    try:
        lines, _ = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return {}
    said: dict[str, str] = {}
    for line in lines:
        if line.lstrip().startswith(('"""', "'''")):
            break  # the header ended; the body's comments are not about parameters
        m = _COMMENTED.match(line)
        if m and m.group(1) in names and m.group(1) not in said:
            said[m.group(1)] = m.group(2)
        if _HEADER_END.search(line.partition("#")[0]):
            break
    return said


def _said_in_docstring(fn: Callable[..., Any], names: set[str]) -> dict[str, str]:
    said: dict[str, str] = {}
    for line in (inspect.getdoc(fn) or "").splitlines():
        m = _DOC_ENTRY.match(line)
        if m and m.group(1) in names and m.group(1) not in said:
            said[m.group(1)] = m.group(2)
    return said


def _size(node: ast.AST, known: Mapping[str, int], assumed: dict[str, int]) -> int | None:
    """The value of a dimension's expression, or None when it is not one."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id in known:
            return known[node.id]
        return assumed.setdefault(node.id, ASSUMED_SIZE)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub,
                                                             ast.FloorDiv, ast.Div)):
        a, b = _size(node.left, known, assumed), _size(node.right, known, assumed)
        if a is None or b is None:
            return None
        if isinstance(node.op, (ast.Div, ast.FloorDiv)):
            return a // b if b and a % b == 0 else None
        return a * b if isinstance(node.op, ast.Mult) else a + b if isinstance(
            node.op, ast.Add) else a - b
    return None


def shape_in(text: str, known: Mapping[str, int], assumed: dict[str, int]
             ) -> tuple[int, ...] | None:
    """The first bracketed tuple of dimension expressions in `text` (sizes of names not in
    `known` go into `assumed`), or None when the text gives none."""
    for m in _SHAPE.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        parts = [p.strip() for p in body.split(",") if p.strip()]
        if not parts:
            continue
        trial = dict(assumed)
        sizes = []
        for part in parts:
            try:
                node = ast.parse(part, mode="eval").body
            except SyntaxError:
                break
            size = _size(node, known, trial)
            if size is None or size <= 0:
                break
            sizes.append(size)
        else:
            assumed.update(trial)
            return tuple(sizes)
    return None


def _dtype_in(text: str) -> np.dtype | None:
    m = _DTYPE.search(text)
    if m is None:
        return None
    return np.dtype(bool) if m.group(1) == "bool" else dtype_named(m.group(1)).np


def _known_sizes(fn: Callable[..., Any]) -> dict[str, int]:
    known = {k: v for k, v in getattr(fn, "__globals__", {}).items()
             if type(v) is int and not k.startswith("__")}
    for p in inspect.signature(fn).parameters.values():
        if type(p.default) is int:
            known[p.name] = p.default
    return known


def _data(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(0, 8, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def signature_inputs(fn: Callable[..., Any]) -> Inputs | None:
    """Arrays for the parameters without defaults, or None when one of them is not described
    with a shape (by its annotation, its comment or its docstring line)."""
    rng = np.random.default_rng(0)
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL,
                                                                   p.VAR_KEYWORD):
            break
        params.append(p)
    names = {p.name for p in params}
    comments, docs = _said_in_comments(fn, names), _said_in_docstring(fn, names)
    known, assumed = _known_sizes(fn), {}
    args, guessed, sources = [], [], set()
    for p in params:
        shape, dtype = getattr(p.annotation, "shape", None), getattr(p.annotation, "dtype", None)
        if shape is not None and dtype is not None:
            args.append(_data(rng, tuple(shape), np.dtype(getattr(dtype, "numpy", dtype))))
            sources.add("annotations")
            continue
        for where, text in (("comments", comments.get(p.name)), ("docstring", docs.get(p.name))):
            found = shape_in(text, known, assumed) if text else None
            if found is not None:
                dt = _dtype_in(text)
                if dt is None:
                    guessed.append(p.name)
                args.append(_data(rng, found, dt if dt is not None else np.dtype(np.float32)))
                sources.add(where)
                break
        else:
            return None
    told = [f"{k} = {v}" for k, v in assumed.items()]
    if guessed:
        told.append(f"float32 for {', '.join(guessed)}")
    return Inputs(tuple(args), tuple(told), " and ".join(sorted(sources)))
