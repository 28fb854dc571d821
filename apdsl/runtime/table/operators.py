"""Operators as values (SPEC 11): `nl.add`, `nl.exp`, ... as `Operator`s, and `operator_arg`,
which checks an instruction's `op=` argument.

`OPERATORS` holds, keyed by the NKI name, every operator of the NKI math-operator table (the
"Supported Math Operators" table of `nki.api.shared`: bit-vector, arithmetic and arithmetic
unary, with its "legal reduction op" column), every function of the activation table (the
Scalar Engine's `op` for `activation`), and the element-wise `nki.language` functions that are
in neither table (`divide`, `negative`, `cos`, ... : values the high-level `nl` functions use,
which no ISA instruction takes as `op`).  Each names its NumPy meaning on float32 arrays
(bit-vector operators on integer arrays, their bits as they are).

Where an instruction's docs accept an operator is the instruction's business: it asks
`operator_arg` for an operator of the table it takes (`alu`, `activation`), of the kinds and
arity it allows.  Nothing here is mutable: a program cannot change an operator for its caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ApdslTypeError, TargetError

KINDS = ("arith", "bitvec", "compare", "logical", "activation")
F32 = np.float32


@dataclass(frozen=True)
class Operator:
    """One NKI operator or activation function as a value.

    `kind`: `bitvec` (integer bit patterns), `arith`, `compare` (1.0 where true, else 0.0),
    `logical` (the ALU's logical and/or/xor, arithmetic operators on truth values) or
    `activation` (a Scalar Engine function that is not an ALU operator).  `fn` is the NumPy
    meaning (float32 arrays in and out; bit-vector ones on integer arrays).  `alu`: in the math
    operator table (what `tensor_tensor`, `tensor_scalar` and friends take); `activation`: in
    the activation table (what `activation` takes); `reduction`: a legal reduction op of the
    math-operator table; `identity`: the value a reduction by it starts from; `targets`: the
    targets that have it (None: all); `valid`: the activation table's valid input range as
    text (None: any input), checked by `inside`."""

    name: str
    kind: str
    fn: Callable[..., np.ndarray]
    arity: int
    alu: bool = False
    activation: bool = False
    reduction: bool = False
    identity: float | int | None = None
    targets: tuple[str, ...] | None = None
    valid: str | None = None
    inside_fn: Callable[[np.ndarray], np.ndarray] | None = None
    # the NumPy ufunc computing `fn` exactly on float32 arrays (executors may call it with
    # out=, without temporaries); None where `fn` is more than one ufunc
    ufunc: Any = None

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    @property
    def bitvec(self) -> bool:
        return self.kind == "bitvec"

    def inside(self, x: np.ndarray) -> np.ndarray:
        """Where `x` lies in the function's valid input range (all true when it has none)."""
        if self.inside_fn is None:
            return np.ones(np.shape(x), bool)
        return self.inside_fn(x)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the high-level `nl` functions (nl.add(a, b)) are a subclass's; a plain operator is a
        # value only, as an `op=` argument
        raise ApdslTypeError(f"nl.{self.name} is an operator here, to pass as op=, not a "
                             "function to call", code="APK350",
                             help=f"for example nisa.tensor_tensor(dst, a, b, op=nl.{self.name})"
                             if self.arity == 2 else
                             f"for example nisa.activation(dst, op=nl.{self.name}, data=x)")


# ---------------------------------------------------------------------------------------------
# NumPy meanings


def _b(x: np.ndarray) -> np.ndarray:
    """1.0 where a comparison or logical operator holds, else 0.0 (NL: "a tile with 1 where
    ..., 0 otherwise")."""
    return np.asarray(x, F32)


def _quiet(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """float32 math as IEEE gives it (inf, nan) without NumPy's warnings."""
    def run(*args: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*args), F32)
    run.__name__ = getattr(fn, "__name__", "op")
    return run


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_ERF(np.asarray(x, np.float64)), np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # the logistic function, without exp overflow


def _softplus(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.logaddexp(0.0, x)


_SQRT2 = math.sqrt(2.0)
_TANH_C = math.sqrt(2.0 / math.pi)
# gelu_apprx_sigmoid: x * sigmoid(1.702 x), the usual sigmoid approximation of GELU (AWS does not
# publish its constant; the aws-neuron-sdk BERT demo's gelu uses this one)
_SIG_C = 1.702


def _gelu(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + _erf(x / _SQRT2))


def _gelu_dx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 0.5 * (1.0 + _erf(x / _SQRT2)) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(_TANH_C * (x + 0.044715 * x ** 3)))


def _gelu_sig(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x * _sigmoid(_SIG_C * x)


def _gelu_sig_dx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    s = _sigmoid(_SIG_C * x)
    return s + _SIG_C * x * s * (1.0 - s)


def _silu_dx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    s = _sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def _mish(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x * np.tanh(_softplus(x))


def _erf_dx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return 2.0 / math.sqrt(math.pi) * np.exp(-x * x)


def _prelu(x: np.ndarray, alpha: Any = 0.0) -> np.ndarray:
    return np.where(x > 0, x, F32(alpha) * x)


def _abs_max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) > np.abs(y), x, y)  # the signed input; a tie gives y (NL)


def _abs_min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < np.abs(y), x, y)


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "i" else x


def _right_shift(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Logical right shift: the bits shift in zeros whatever the sign (SHARED: arithmetic
    shift right is not supported)."""
    u = _unsigned(np.ascontiguousarray(x))
    return np.right_shift(u, np.asarray(s).astype(u.dtype)).view(x.dtype)


def _left_shift(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    u = _unsigned(np.ascontiguousarray(x))
    return np.left_shift(u, np.asarray(s).astype(u.dtype)).view(x.dtype)


def _shift_inside(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """A shift by 0 .. width-1 bits; the docs say nothing of other amounts."""
    s = np.asarray(s)
    return (s >= 0) & (s < 8 * np.asarray(x).dtype.itemsize)


def _range(lo: float, hi: float, magnitude: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    def inside(x: np.ndarray) -> np.ndarray:
        v = np.abs(x) if magnitude else x
        return (v >= lo) & (v <= hi)
    return inside


def _op(name: str, kind: str, fn: Callable[..., np.ndarray], arity: int, **kw: Any) -> Operator:
    return Operator(name, kind, fn, arity, **kw)


def _alu(name: str, kind: str, fn: Callable[..., np.ndarray], arity: int = 2,
         reduction: bool = False, identity: float | int | None = None,
         **kw: Any) -> Operator:
    return Operator(name, kind, fn, arity, alu=True, reduction=reduction, identity=identity,
                    **kw)


def _act(name: str, fn: Callable[..., np.ndarray], valid: str | None = None,
         inside: Callable[[np.ndarray], np.ndarray] | None = None, **kw: Any) -> Operator:
    return Operator(name, kw.pop("kind", "activation"), _quiet(fn), 1, activation=True,
                    valid=valid, inside_fn=inside, **kw)


_BITVEC = (
    _alu("invert", "bitvec", np.invert, 1),
    _alu("bitwise_and", "bitvec", np.bitwise_and, reduction=True, identity=-1),
    _alu("bitwise_or", "bitvec", np.bitwise_or, reduction=True, identity=0),
    _alu("bitwise_xor", "bitvec", np.bitwise_xor, reduction=True, identity=0),
    _alu("left_shift", "bitvec", _left_shift),
    _alu("right_shift", "bitvec", _right_shift),
)

_ARITH = (
    _alu("add", "arith", _quiet(np.add), reduction=True, identity=0.0,
         ufunc=np.add),
    _alu("subtract", "arith", _quiet(np.subtract), reduction=True, identity=0.0,
         ufunc=np.subtract),
    _alu("multiply", "arith", _quiet(np.multiply), reduction=True, identity=1.0,
         ufunc=np.multiply),
    _alu("maximum", "arith", _quiet(np.maximum), reduction=True, identity=-math.inf,
         ufunc=np.maximum),
    _alu("minimum", "arith", _quiet(np.minimum), reduction=True, identity=math.inf,
         ufunc=np.minimum),
    _alu("equal", "compare", _quiet(lambda x, y: _b(x == y))),
    _alu("not_equal", "compare", _quiet(lambda x, y: _b(x != y))),
    _alu("greater_equal", "compare", _quiet(lambda x, y: _b(x >= y))),
    _alu("greater", "compare", _quiet(lambda x, y: _b(x > y))),
    _alu("less_equal", "compare", _quiet(lambda x, y: _b(x <= y))),
    _alu("less", "compare", _quiet(lambda x, y: _b(x < y))),
    _alu("logical_and", "logical", _quiet(lambda x, y: _b((x != 0) & (y != 0))),
         reduction=True, identity=1.0),
    _alu("logical_or", "logical", _quiet(lambda x, y: _b((x != 0) | (y != 0))),
         reduction=True, identity=0.0),
    _alu("logical_xor", "logical", _quiet(lambda x, y: _b((x != 0) ^ (y != 0))),
         reduction=True, identity=0.0),
    _alu("power", "arith", _quiet(np.power), ufunc=np.power),
    _alu("abs_max", "arith", _quiet(_abs_max), targets=("trn3",)),
    _alu("abs_min", "arith", _quiet(_abs_min), targets=("trn3",)),
)

# the ALU's unary arithmetic operators; all but rsqrt's GpSimd form are in the activation table
# too, with its valid input ranges
_UNARY = (
    _act("abs", np.abs, kind="arith", alu=True),
    _act("square", np.square, kind="arith", alu=True),
    _act("relu", lambda x: np.maximum(x, F32(0)), kind="arith", alu=True),
    _act("rsqrt", lambda x: F32(1) / np.sqrt(x), "[2^-87, 2^97]",
         _range(2.0 ** -87, 2.0 ** 97), kind="arith", alu=True),
    _act("reciprocal", lambda x: F32(1) / x, "±[2^-42, 2^42]",
         _range(2.0 ** -42, 2.0 ** 42, magnitude=True), kind="arith", alu=True),
)

_ACTIVATIONS = (
    _act("copy", lambda x: x),
    _act("sigmoid", _sigmoid),
    _act("prelu", _prelu),
    _act("gelu", _gelu),
    _act("gelu_dx", _gelu_dx),
    _act("gelu_apprx_tanh", _gelu_tanh),
    _act("gelu_apprx_sigmoid", _gelu_sig),
    _act("gelu_apprx_sigmoid_dx", _gelu_sig_dx),
    _act("silu", lambda x: np.asarray(x, np.float64) * _sigmoid(x)),
    _act("silu_dx", _silu_dx),
    _act("tanh", np.tanh),
    _act("softplus", _softplus),
    _act("mish", _mish),
    _act("erf", _erf),
    _act("erf_dx", _erf_dx),
    _act("exp", np.exp),
    _act("log", np.log, "[2^-64, 2^64]", _range(2.0 ** -64, 2.0 ** 64)),
    _act("sin", np.sin, "[-pi, pi]", _range(-math.pi, math.pi)),
    _act("arctan", np.arctan, "[-pi/2, pi/2]", _range(-math.pi / 2, math.pi / 2)),
    _act("sqrt", np.sqrt, "[2^-116, 2^118]", _range(2.0 ** -116, 2.0 ** 118)),
    _act("sign", np.sign),
)

# nki.language element-wise functions in neither table: operator values for the high-level
# functions, taken as `op=` by no ISA instruction (`nl.divide` is commented out as unsupported
# in the nki.language index; `average` is tensor_partition_reduce's own; `bypass` is the
# no-op stage of activate2, which apdsl does not implement)
_LANGUAGE = (
    _op("divide", "arith", _quiet(np.divide), 2),
    _op("fmod", "arith", _quiet(np.fmod), 2),
    _op("mod", "arith", _quiet(np.mod), 2),
    _op("negative", "arith", _quiet(np.negative), 1),
    _op("logical_not", "logical", _quiet(lambda x: _b(x == 0)), 1),
    _op("cos", "arith", _quiet(np.cos), 1),
    _op("tan", "arith", _quiet(np.tan), 1),
    _op("ceil", "arith", _quiet(np.ceil), 1),
    _op("floor", "arith", _quiet(np.floor), 1),
    _op("trunc", "arith", _quiet(np.trunc), 1),
    _op("average", "arith", _quiet(lambda x, axis=0: np.mean(x, axis=axis)), 1),
    _op("bypass", "arith", lambda x: x, 1),
)

OPERATORS: dict[str, Operator] = {o.name: o for o in
                                  _BITVEC + _ARITH + _UNARY + _ACTIVATIONS + _LANGUAGE}

# The legacy NKI API passed NumPy's functions as operators (`op=np.add`, `reduce_op=np.amax`):
# each is the operator of the same meaning.
NUMPY_OPERATORS: dict[Any, Operator] = {
    **{getattr(np, n): o for n, o in OPERATORS.items()
       if isinstance(getattr(np, n, None), np.ufunc)},
    np.absolute: OPERATORS["abs"], np.amax: OPERATORS["maximum"],
    np.amin: OPERATORS["minimum"], np.max: OPERATORS["maximum"], np.min: OPERATORS["minimum"],
    np.sum: OPERATORS["add"], np.true_divide: OPERATORS["divide"],
    np.bitwise_not: OPERATORS["invert"],
}

# the shifts' amounts must be 0 .. width-1 (checked by the executors with `shift_inside`)
shift_inside = _shift_inside


def divide_refused(what: str) -> TargetError:
    """APK183: `nl.divide` as an operator or a function.  The Neuron compiler rejects it
    ("unsupported operator 'divide'"), though NKI's own simulator accepts it (SPEC 11): apdsl
    refuses it as the compiler does, and shows the working form."""
    return TargetError(
        f"{what}: the Neuron compiler rejects divide (\"unsupported operator 'divide'\"), "
        "even where NKI's simulator accepts it", code="APK183", operator="divide",
        notes=["a / b on the device is a * (1 / b): the reciprocal, then a multiply"],
        help="multiply by the reciprocal: inv = nl.reciprocal(b); out = nl.multiply(a, inv) "
        "(instructions: nisa.reciprocal(dst=inv, data=b), then nisa.tensor_tensor(dst=out, "
        "data1=a, data2=inv, op=nl.multiply)); by a number s: nl.multiply(a, 1.0 / s)")


def _numpy_operator(value: Any) -> Any:
    try:
        return NUMPY_OPERATORS.get(value, value)
    except TypeError:  # unhashable: not one of NumPy's functions
        return value


def operator_arg(value: Any, label: str, role: str, *, table: str = "alu",
                 kinds: tuple[str, ...] | None = None, arity: int | None = None,
                 names: tuple[str, ...] | None = None, target: str | None = None,
                 accepted: str | None = None) -> Operator:
    """`value` as the operator argument `role` of the instruction `label`.

    It must be an `Operator` (or an instance of a subclass); `names`, when given, lists the
    operators accepted (the instruction's docs name them); otherwise the operator must be in
    `table` ("alu": the math-operator table; "activation": the activation table; "any"), of
    one of `kinds` and of `arity` when given.  `target` (the operands' target) refuses an
    operator that target lacks.  `accepted` words the accepted set for the message.
    APK350: not an operator; APK351: an operator this instruction does not take; APK352: an
    operator the target does not have."""
    if not isinstance(value, Operator):
        value = _numpy_operator(value)
    if not isinstance(value, Operator):
        shown = value if isinstance(value, (str, int, float, type(None))) else \
            type(value).__name__
        raise ApdslTypeError(
            f"{label}: {role} must be an operator such as nl.add or nl.exp, got {shown!r}",
            code="APK350", help=f"pass one of the nl operators, for example {role}=nl.add"
            if table != "activation" else f"pass an activation function, for example "
            f"{role}=nl.exp", role=role)
    ok = (names is not None and value.name in names) or names is None and (
        (table == "any" or (table == "alu" and value.alu)
         or (table == "activation" and value.activation))
        and (kinds is None or value.kind in kinds)
        and (arity is None or value.arity == arity))
    if not ok and value.name == "divide":
        raise divide_refused(f"{label}: {role}=nl.divide")
    if not ok:
        what = accepted or _accepted_words(table, kinds, arity, names)
        raise TargetError(f"{label}: {role}={value!r} is not an operator it takes; it takes "
                          f"{what}", code="APK351", role=role, operator=value.name,
                          help=f"pick one of {what}")
    if target is not None and value.targets is not None and target not in value.targets:
        raise TargetError(f"{label}: {role}={value!r} exists on {', '.join(value.targets)} "
                          f"only; the target is {target}", code="APK352", role=role,
                          operator=value.name,
                          help=f"use --target {value.targets[0]}, or another operator")
    return value


def _accepted_words(table: str, kinds: tuple[str, ...] | None, arity: int | None,
                    names: tuple[str, ...] | None) -> str:
    if names is not None:
        return ", ".join(f"nl.{n}" for n in names)
    words = {"alu": "operators of the NKI math-operator table",
             "activation": "activation functions of the NKI activation table",
             "any": "operators"}[table]
    if arity is not None:
        words = ("unary " if arity == 1 else "binary ") + words
    if kinds is not None:
        kind_words = {"arith": "arithmetic", "bitvec": "bit-vector", "compare": "comparison",
                      "logical": "logical", "activation": "activation"}
        words += " (" + ", ".join(kind_words[k] for k in kinds) + ")"
    return words


def operator(name: str) -> Operator:
    """The NKI operator or activation function `name` as a value (what `nl.<name>` is in a
    kernel), for the Python API's instructions.

    >>> apdsl.operator("maximum")
    nl.maximum
    >>> apdsl.operator("exp").activation
    True
    """
    op = OPERATORS.get(name) if isinstance(name, str) else None
    if op is None:
        from difflib import get_close_matches
        close = get_close_matches(str(name), OPERATORS, n=3)
        raise ApdslTypeError(f"no NKI operator is named {name!r}", code="APK350",
                             help=f"did you mean {', '.join(close)}?" if close else
                             "see SPEC section 11 for the operators")
    return op
