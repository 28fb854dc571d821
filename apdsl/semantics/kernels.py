"""Which definitions of a `.apk` file are kernels, and what their untyped parameters need.

A `kernel NAME(...)` statement is a kernel.  So is a `def` decorated as NKI code decorates its
kernels (`@nki.jit`, `@nki.jit(mode=...)`, `@nki.baremetal`,
`@nki.compiler.skip_middle_end_transformations`, with or without a leading `neuronxcc.`): NKI
documentation code then runs unchanged.  Such a kernel's parameters usually carry no tensor
type; each takes its shape, dtype and values from `-i` (SPEC section 3).
"""

from __future__ import annotations

from typing import Any

from ..syntax import ast

# The decorators that make a `def` a kernel, as dotted names (a leading `neuronxcc.` dropped).
KERNEL_DECORATORS = frozenset({"nki.jit", "nki.baremetal",
                               "nki.compiler.skip_middle_end_transformations"})


def dotted_name(node: Any) -> str | None:
    """`a.b.c` for a chain of attribute names, else None."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def is_kernel_decorator(expr: Any) -> bool:
    """True for `@nki.jit` and the other NKI kernel decorators, called or not."""
    if type(expr) is ast.Call:
        expr = expr.func
    name = dotted_name(expr)
    if name is None:
        return False
    return name.removeprefix("neuronxcc.") in KERNEL_DECORATORS


def is_kernel(node: Any) -> bool:
    """A `kernel` statement, or a `def` with an NKI kernel decorator."""
    if type(node) is ast.Kernel:
        return True
    return type(node) is ast.FunctionDef and any(
        is_kernel_decorator(d) for d in getattr(node, "decorators", ()))


def tensor_type(param: Any) -> ast.TypeSpec | None:
    """The parameter's tensor type (`A: f32[M, K] @ hbm`), or None when it has none (no
    annotation, or a type hint such as `nl.ndarray` that says nothing about the tensor)."""
    spec = getattr(param, "type", None)
    return spec if isinstance(spec, ast.TypeSpec) else None


def needs_input(param: Any) -> bool:
    """An untyped parameter without a default: only `-i` can give it a value."""
    return tensor_type(param) is None and getattr(param, "default", None) is None


def missing_inputs(node: Any, given: Any) -> list[str]:
    """The parameters of kernel `node` that need `-i` and are not among `given`."""
    return [p.name for p in node.params if needs_input(p) and p.name not in given]


def missing_message(name: str, missing: list[str]) -> str:
    """The usage error for a kernel whose untyped parameters were not given."""
    flags = " ".join(f"-i {m}=FILE.npy" for m in missing)
    what = "parameter" if len(missing) == 1 else "parameters"
    return (f"kernel {name} needs {flags}: its {what} {', '.join(missing)} "
            f"{'has' if len(missing) == 1 else 'have'} no tensor type, so the shape and dtype "
            "come from the input")
