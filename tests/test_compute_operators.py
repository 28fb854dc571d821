"""Operators as values (`apdsl.runtime.table.operators`, SPEC 11): each operator's NumPy meaning
against an independent formula, the tables' membership, `operator_arg`'s refusals, and the
operators as `.apk` builtins and `nl.` names."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.table.operators import KINDS, OPERATORS, Operator, operator_arg, shift_inside

# the NKI math-operator table (nki.api.shared tbl-aluop): name -> legal reduction op
ALU_TABLE = {"invert": False, "bitwise_and": True, "bitwise_or": True, "bitwise_xor": True,
             "left_shift": False, "right_shift": False, "add": True, "subtract": True,
             "multiply": True, "maximum": True, "minimum": True, "equal": False,
             "not_equal": False, "greater_equal": False, "greater": False, "less_equal": False,
             "less": False, "logical_and": True, "logical_or": True, "logical_xor": True,
             "power": False, "abs_max": False, "abs_min": False, "abs": False, "square": False,
             "relu": False, "rsqrt": False, "reciprocal": False}
# the activation table (tbl-act-func)
ACTIVATION_TABLE = {"copy", "square", "sigmoid", "relu", "prelu", "gelu", "gelu_dx",
                    "gelu_apprx_tanh", "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu",
                    "silu_dx", "tanh", "softplus", "mish", "erf", "erf_dx", "exp", "log", "sin",
                    "arctan", "sqrt", "rsqrt", "reciprocal", "sign", "abs"}
BITVEC = {"invert", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}


def test_the_tables_are_the_documented_ones():
    alu = {n for n, o in OPERATORS.items() if o.alu}
    assert alu == set(ALU_TABLE)
    assert {n for n, o in OPERATORS.items() if o.activation} == ACTIVATION_TABLE
    assert {n for n, o in OPERATORS.items() if o.reduction} == {n for n, r in ALU_TABLE.items()
                                                                 if r}
    assert {n for n, o in OPERATORS.items() if o.bitvec} == BITVEC
    assert all(o.kind in KINDS for o in OPERATORS.values())
    assert OPERATORS["abs_max"].targets == ("trn3",) == OPERATORS["abs_min"].targets
    assert not OPERATORS["divide"].alu and not OPERATORS["divide"].activation


def test_operators_are_frozen_values():
    op = OPERATORS["add"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.name = "subtract"  # type: ignore[misc]
    assert repr(op) == "nl.add" and op == OPERATORS["add"]


X = np.array([-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.0, 7.0], np.float32)
Y = np.array([2.0, -1.0, 0.0, -0.0, 0.5, 3.0, -2.0, 7.0], np.float32)

BINARY = {
    "add": lambda x, y: [a + b for a, b in zip(x, y)],
    "subtract": lambda x, y: [a - b for a, b in zip(x, y)],
    "multiply": lambda x, y: [a * b for a, b in zip(x, y)],
    "maximum": lambda x, y: [max(a, b) for a, b in zip(x, y)],
    "minimum": lambda x, y: [min(a, b) for a, b in zip(x, y)],
    "equal": lambda x, y: [float(a == b) for a, b in zip(x, y)],
    "not_equal": lambda x, y: [float(a != b) for a, b in zip(x, y)],
    "greater_equal": lambda x, y: [float(a >= b) for a, b in zip(x, y)],
    "greater": lambda x, y: [float(a > b) for a, b in zip(x, y)],
    "less_equal": lambda x, y: [float(a <= b) for a, b in zip(x, y)],
    "less": lambda x, y: [float(a < b) for a, b in zip(x, y)],
    "logical_and": lambda x, y: [float(bool(a) and bool(b)) for a, b in zip(x, y)],
    "logical_or": lambda x, y: [float(bool(a) or bool(b)) for a, b in zip(x, y)],
    "logical_xor": lambda x, y: [float(bool(a) != bool(b)) for a, b in zip(x, y)],
    "abs_max": lambda x, y: [a if abs(a) > abs(b) else b for a, b in zip(x, y)],
    "abs_min": lambda x, y: [a if abs(a) < abs(b) else b for a, b in zip(x, y)],
    "divide": lambda x, y: [a / b if b else math.copysign(math.inf, a) * math.copysign(1, b)
                            if a else math.nan for a, b in zip(x, y)],
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_meanings(name):
    got = OPERATORS[name].fn(X, Y)
    assert got.dtype == np.float32
    expect = np.asarray(BINARY[name](X.tolist(), Y.tolist()), np.float32)
    np.testing.assert_array_equal(got, expect)


def test_power_and_abs_max_ties():
    np.testing.assert_array_equal(OPERATORS["power"].fn(np.float32([2, 3, 4]),
                                                        np.float32([3, 2, 0.5])), [8, 9, 2])
    # |1| == |-1|: the tie gives y (nl.abs_max docs)
    assert OPERATORS["abs_max"].fn(np.float32([1.0]), np.float32([-1.0])).tolist() == [-1.0]


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def _sig(x):
    return 1 / (1 + math.exp(-x))


UNARY = {
    "abs": abs, "square": lambda x: x * x, "relu": lambda x: max(x, 0.0),
    "rsqrt": lambda x: 1 / math.sqrt(x), "reciprocal": lambda x: 1 / x, "copy": lambda x: x,
    "sigmoid": _sig, "gelu": lambda x: x * _phi(x),
    "gelu_dx": lambda x: _phi(x) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi)
                                                          * (x + 0.044715 * x ** 3))),
    "gelu_apprx_sigmoid": lambda x: x * _sig(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: _sig(1.702 * x) * (1 + 1.702 * x * (1 - _sig(1.702 * x))),
    "silu": lambda x: x * _sig(x), "silu_dx": lambda x: _sig(x) * (1 + x * (1 - _sig(x))),
    "tanh": math.tanh, "softplus": lambda x: math.log1p(math.exp(x)),
    "mish": lambda x: x * math.tanh(math.log1p(math.exp(x))), "erf": math.erf,
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * math.exp(-x * x), "exp": math.exp,
    "log": math.log, "sin": math.sin, "arctan": math.atan, "sqrt": math.sqrt,
    "sign": lambda x: float((x > 0) - (x < 0)), "negative": lambda x: -x, "cos": math.cos,
    "tan": math.tan, "ceil": math.ceil, "floor": math.floor, "trunc": math.trunc,
    "logical_not": lambda x: float(x == 0),
}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.125, 3.0, width=32), min_size=1, max_size=16),
       st.sampled_from(sorted(UNARY)), st.booleans())
def test_unary_meanings(values, name, negate):
    x = np.asarray(values, np.float32)
    if negate and name not in ("rsqrt", "log", "sqrt"):
        x = -x
    got = OPERATORS[name].fn(x)
    assert got.dtype == np.float32
    expect = np.asarray([UNARY[name](float(v)) for v in x], np.float32)
    np.testing.assert_allclose(got, expect, rtol=2e-6, atol=1e-7)


def test_prelu_takes_its_slope():
    got = OPERATORS["prelu"].fn(np.float32([-2.0, 3.0]), 0.25)
    assert got.tolist() == [-0.5, 3.0]


def test_valid_ranges_of_the_activation_table():
    assert OPERATORS["log"].valid == "[2^-64, 2^64]"
    assert OPERATORS["log"].inside(np.float32([1.0, 0.0, 2.0 ** 65])).tolist() == [True, False,
                                                                                  False]
    assert OPERATORS["reciprocal"].inside(np.float32([-1.0, 0.0, 2.0 ** -50])).tolist() == [
        True, False, False]
    assert OPERATORS["sin"].inside(np.float32([3.0, 3.2])).tolist() == [True, False]
    assert OPERATORS["exp"].inside(np.float32([1e30])).tolist() == [True]


INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(INTS), st.data())
def test_bitvec_operators_work_on_the_bits(dtype, data):
    info = np.iinfo(dtype)
    bits = info.bits
    xs = data.draw(st.lists(st.integers(info.min, info.max), min_size=1, max_size=8))
    ys = data.draw(st.lists(st.integers(info.min, info.max), min_size=len(xs),
                            max_size=len(xs)))
    shifts = data.draw(st.lists(st.integers(0, bits - 1), min_size=len(xs), max_size=len(xs)))
    x, y, s = (np.asarray(v, dtype) for v in (xs, ys, shifts))
    mask = (1 << bits) - 1

    def back(u):  # an unsigned bit pattern as the dtype's value
        return u - (1 << bits) if info.min < 0 and u >> (bits - 1) else u

    def expect(fn, *cols):
        return np.asarray([back(fn(*[v & mask for v in vals]) & mask)
                           for vals in zip(*cols)], dtype)

    ops = OPERATORS
    np.testing.assert_array_equal(ops["bitwise_and"].fn(x, y), expect(lambda a, b: a & b, xs, ys))
    np.testing.assert_array_equal(ops["bitwise_or"].fn(x, y), expect(lambda a, b: a | b, xs, ys))
    np.testing.assert_array_equal(ops["bitwise_xor"].fn(x, y), expect(lambda a, b: a ^ b, xs, ys))
    np.testing.assert_array_equal(ops["invert"].fn(x), expect(lambda a: ~a, xs))
    np.testing.assert_array_equal(ops["left_shift"].fn(x, s),
                                  expect(lambda a, k: a << k, xs, shifts))
    # logical: zeros shift in whatever the sign
    np.testing.assert_array_equal(ops["right_shift"].fn(x, s),
                                  expect(lambda a, k: a >> k, xs, shifts))
    assert shift_inside(x, s).all()


def test_shift_amounts_outside_the_width_are_not_inside():
    x = np.zeros(3, np.int16)
    assert shift_inside(x, np.asarray([15, 16, -1])).tolist() == [True, False, False]


def test_operator_arg_accepts_by_table_kind_and_arity():
    add = OPERATORS["add"]
    assert operator_arg(add, "tensor_tensor", "op", arity=2) is add
    with raises_code("APK350") as err:
        operator_arg("add", "tensor_tensor", "op")
    assert err.value.message.startswith("tensor_tensor: op must be an operator")
    with raises_code("APK351") as err:
        operator_arg(OPERATORS["exp"], "tensor_tensor", "op", arity=2)
    assert "op=nl.exp is not an operator it takes" in err.value.message
    with raises_code("APK351"):
        operator_arg(OPERATORS["abs"], "tensor_tensor", "op", arity=2)
    with raises_code("APK351"):
        operator_arg(OPERATORS["add"], "activation", "op", table="activation")
    with raises_code("APK351"):
        operator_arg(OPERATORS["bitwise_or"], "scalar_tensor_tensor", "op0",
                     kinds=("arith", "compare", "logical"))
    assert operator_arg(OPERATORS["maximum"], "select_reduce", "reduce_op",
                        names=("maximum",)).name == "maximum"
    with raises_code("APK351") as err:
        operator_arg(OPERATORS["add"], "select_reduce", "reduce_op", names=("maximum",))
    assert "it takes nl.maximum" in err.value.message
    with raises_code("APK352"):
        operator_arg(OPERATORS["abs_max"], "tensor_tensor", "op", target="trn2")
    assert operator_arg(OPERATORS["abs_max"], "tensor_tensor", "op", target="trn3").name == \
        "abs_max"


def test_subclass_instances_are_operators():
    class Callable_(Operator):
        def __call__(self, *args):
            return "called"

    base = OPERATORS["exp"]
    op = Callable_(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})
    assert operator_arg(op, "activation", "op", table="activation") is op
    assert op() == "called"


def test_a_plain_operator_called_is_a_coded_error():
    with raises_code("APK350"):
        apdsl.run("x = add(1, 2)\n")


def test_operators_are_apk_builtins_and_nl_names():
    assert apdsl.run("""\
kernel k() -> i32[1, 1] @ hbm:
    o: i32[1, 1] @ hbm
    t: i32[1, 1] @ sbuf
    memset(t, 1 if nl.add == add and nl.exp != nl.log else 0)
    dma_copy(o, t)
    return o
""").tolist() == [[1]]
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel():
        # nl.add is also the high-level function (an Operator subclass), the same operator
        assert isinstance(nl.add, Operator) and nl.add == OPERATORS["add"]
        assert nl.gelu_apprx_tanh == OPERATORS["gelu_apprx_tanh"]
        out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        apdsl.memset(t, 3)
        apdsl.dma_copy(out, t)
        return out

    assert kernel().tolist() == [[3]]
