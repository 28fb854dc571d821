"""How the builder's error messages name syntax, and the small facts about names it needs:
dotted names, the dtype names that make an annotation a tensor type, and the help line that
points at the Python frontend for Python that `.apk` does not take."""

from __future__ import annotations

from . import ast as A

# The dtype names and aliases of SPEC section 3 (`apdsl.tensor.dtypes` holds the dtypes
# themselves; the parser stays free of NumPy).  An annotation `NAME[...]` with one of these is
# a tensor type missing its buffer, not a type hint.
DTYPE_NAMES = frozenset({
    "float32", "f32", "fp32", "float16", "f16", "fp16", "half", "bfloat16", "bf16",
    "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "fp8_e4m3", "fp8_e5m2", "int4", "int8",
    "i8", "uint8", "u8", "int16", "i16", "uint16", "u16", "int32", "i32", "uint32", "u32",
    "int64", "i64", "bool_", "tfloat32", "tf32",
    "float8_e8m0fnu", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4"})

# Python's exception classes a program may raise (`raise ValueError("...")`): a located error
# with the exception's name and message.
EXCEPTIONS = frozenset({
    "Exception", "ValueError", "TypeError", "RuntimeError", "AssertionError", "IndexError",
    "KeyError", "NotImplementedError", "ZeroDivisionError", "ArithmeticError",
    "OverflowError", "LookupError", "AttributeError", "NameError", "MemoryError",
    "RecursionError", "SystemError", "BaseException", "UserWarning", "Warning"})

PYTHON_FRONTEND = ("`.apk` runs the Python that NKI kernels are written in; run other Python "
                   "with the Python frontend: `apdsl run FILE.py`")


def describe(node: A.Node) -> str:
    """How an error message names a kind of expression."""
    return {
        A.Call: "a function call", A.Const: "a literal", A.Str: "a string literal",
        A.EllipsisLit: "'...'", A.BinOp: "an operator expression",
        A.UnaryOp: "an operator expression", A.BoolOp: "a boolean expression",
        A.Compare: "a comparison", A.IfExp: "a conditional expression",
        A.DictExpr: "a dict literal", A.TupleExpr: "an empty tuple",
        A.ListExpr: "an empty list", A.SetExpr: "a set literal",
        A.ListComp: "a comprehension", A.SetComp: "a comprehension",
        A.DictComp: "a comprehension", A.GeneratorExp: "a generator expression",
        A.Lambda: "a lambda", A.JoinedStr: "an f-string",
        A.Starred: "a starred expression", A.NkiName: "an NKI name",
    }.get(type(node), "this expression")


def dotted(node: A.Expr) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    parts = []
    while type(node) is A.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not A.Name and not (type(node) is A.NkiName and not parts):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def looks_like_tensor_type(expr: A.Expr) -> bool:
    """`f32[...]`, `nl.bfloat16[...]`: a dtype with dimensions (a tensor type, perhaps missing
    its `@ BUFFER`), as opposed to a type hint such as `list[int]`."""
    if type(expr) is not A.Subscript:
        return False
    name = dotted(expr.value)
    return name is not None and name.rsplit(".", 1)[-1] in DTYPE_NAMES
