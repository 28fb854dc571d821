"""The operators as high-level `nl` functions (`nl.add(a, b)`, `nl.multiply(x, 2.0)`): values
and dtypes against NumPy, the instruction each issues, and the operator value they still are."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.runtime.table.operators import Operator
from apdsl.semantics.program import Program

RNG = np.random.default_rng(5)

# the NumPy expression a user would write for each function (float32 math)
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "maximum": np.maximum, "minimum": np.minimum,
          "greater": lambda a, b: (a > b).astype(np.float32),
          "less_equal": lambda a, b: (a <= b).astype(np.float32),
          "equal": lambda a, b: (a == b).astype(np.float32)}


def run(source: str, inputs: dict):
    result = Program(source, "<nl>").run(None, inputs, trace=True)
    return result.value.numpy(), [r.op for r in result.trace.records]


KERNEL = """
kernel k(a: f32[{p}, {f}] @ hbm, b: f32[{p}, {f}] @ hbm, c: f32[{p}, 1] @ hbm) -> f32[{p}, {f}] @ shared_hbm:
    x = nl.load(a)
    y = nl.load(b)
    col = nl.load(c)
    r = {expr}
    out = nl.ndarray(({p}, {f}), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r, dtype=nl.float32))
    return out
"""


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(BINARY)), p=st.integers(1, 128), f=st.integers(1, 24),
       form=st.sampled_from(["tiles", "scalar_right", "scalar_left", "column_right",
                             "column_left"]),
       scalar=st.sampled_from([0.0, -1.5, 3.0, 7]))
def test_binary_functions_match_numpy(name, p, f, form, scalar):
    a = RNG.integers(-4, 5, (p, f)).astype(np.float32)  # small integers: ties and equals occur
    b = RNG.integers(-4, 5, (p, f)).astype(np.float32)
    c = RNG.integers(-4, 5, (p, 1)).astype(np.float32)
    fn = BINARY[name]
    expr, expect, op = {
        "tiles": (f"nl.{name}(x, y)", fn(a, b), "tensor_tensor"),
        "scalar_right": (f"nl.{name}(x, {scalar!r})", fn(a, np.float32(scalar)), "tensor_scalar"),
        "scalar_left": (f"nl.{name}({scalar!r}, x)", fn(np.float32(scalar), a), "tensor_scalar"),
        "column_right": (f"nl.{name}(x, col)", fn(a, c), "tensor_scalar"),
        "column_left": (f"nl.{name}(col, x)", fn(c, a), "tensor_scalar"),
    }[form]
    if f == 1 and form.startswith("column"):
        expr, op = expr, "tensor_tensor"  # a [P, 1] tile against a [P, 1] tile: same shape
    value, ops = run(KERNEL.format(p=p, f=f, expr=expr), {"a": a, "b": b, "c": c})
    np.testing.assert_array_equal(value, np.asarray(expect, np.float32))
    assert ops[3] == op


def test_results_live_in_sbuf_with_the_promoted_dtype():
    src = """
kernel k(a: bf16[8, 4] @ hbm, b: f16[8, 4] @ hbm, i: i32[8, 4] @ hbm):
    x = nl.load(a)
    y = nl.load(b)
    n = nl.load(i)
    assert nl.add(x, x).dtype == nl.bfloat16 and nl.add(x, x).buffer == "sbuf"
    assert nl.add(x, y).dtype == nl.float32          # bfloat16 with float16
    assert nl.add(n, y).dtype == nl.float16          # the float of a float/int pair
    assert nl.multiply(n, 2).dtype == nl.int32
    assert nl.multiply(n, 0.5).dtype == nl.float32   # a float scalar on an integer tile
    assert nl.add(x, y, dtype=nl.bfloat16).dtype == nl.bfloat16
"""
    Program(src, "<nl>").run(None, {"a": np.ones((8, 4), np.float32),
                                    "b": np.ones((8, 4), np.float32),
                                    "i": np.ones((8, 4), np.int32)})


def test_reciprocal_and_negative_issue_their_instructions():
    a = RNG.uniform(0.5, 4, (16, 8)).astype(np.float32)
    value, ops = run(KERNEL.format(p=16, f=8, expr="nl.negative(nl.reciprocal(x))"),
                     {"a": a, "b": a, "c": a[:, :1]})
    np.testing.assert_array_equal(value, -(np.float32(1) / a))
    assert ops[3:5] == ["reciprocal", "tensor_scalar"]


def test_a_function_is_still_the_operator_value():
    src = """
kernel k(a: f32[8, 4] @ hbm) -> f32[8, 4] @ shared_hbm:
    x = nl.load(a)
    r = nl.ndarray((8, 4), nl.float32, nl.sbuf)
    nisa.tensor_tensor(dst=r, data1=x, data2=x, op=nl.add)
    out = nl.ndarray((8, 4), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out
"""
    a = RNG.standard_normal((8, 4)).astype(np.float32)
    value, _ = run(src, {"a": a})
    np.testing.assert_array_equal(value, a + a)
    import apdsl.nki.language as nl
    assert isinstance(nl.add, Operator) and repr(nl.add) == "nl.add"


def test_python_frontend_calls_the_same_functions():
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a, b):
        x, y = nl.load(a), nl.load(b)
        r = nl.maximum(nl.add(x, y), 0.0)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    a = RNG.standard_normal((64, 16)).astype(np.float32)
    b = RNG.standard_normal((64, 16)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a, b), np.maximum(a + b, 0))
    assert abs(-2) == 2  # Python's own abs is untouched by nl.abs


@pytest.mark.parametrize("expr, code", [
    ("nl.add(x, nl.load(a[0:4, :]))", "APK154"),   # 8 and 4 partitions do not broadcast
    ("nl.add(x, nl.load(a[0:1, 0:2]))", "APK154"),  # nor do 4 and 2 columns
    ("nl.add(1, 2)", "APK152"),                    # no tile
    ("nl.add(x, 'two')", "APK152"),
    ("nl.add(x, a)", "APK151"),                    # an HBM operand
    ("nl.reciprocal(a)", "APK151"),
])
def test_refusals(expr, code):
    src = f"""
kernel k(a: f32[8, 4] @ hbm):
    x = nl.load(a)
    r = {expr}
"""
    with raises_code(code) as err:
        Program(src, "<nl>").run(None, {"a": np.ones((8, 4), np.float32)})
    assert err.value.span.line == 4


BROADCASTS = [((128, 512), (1, 512)), ((128, 512), (1, 1)), ((128, 1), (1, 512)),
              ((1, 700), (64, 700)), ((128, 4, 8), (1, 4, 1)), ((16, 1, 8), (16, 4, 8))]


@pytest.mark.parametrize("sx, sy", BROADCASTS)
@pytest.mark.parametrize("fn", ["add", "subtract", "maximum"])
def test_two_tiles_broadcast_as_numpy_does(sx, sy, fn):
    """The legacy reference: x.shape and y.shape broadcastable to a common shape (its examples
    add [1, 512] and [1, 1] tiles to [128, 512] ones); bit-exact against NumPy (the partition
    broadcast multiplies by ones and sums one term)."""
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a, b):
        r = getattr(nl, fn)(nl.load(a), nl.load(b))
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    a = RNG.standard_normal(sx).astype(np.float32)
    b = RNG.standard_normal(sy).astype(np.float32)
    np.testing.assert_array_equal(kernel(a, b), getattr(np, fn)(a, b))
    np.testing.assert_array_equal(kernel(b, a), getattr(np, fn)(b, a))


def test_a_bfloat16_row_broadcast_across_partitions_keeps_its_values():
    import ml_dtypes

    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a, b):
        r = nl.multiply(nl.load(a), nl.load(b))
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    a = RNG.standard_normal((32, 16)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((1, 16)).astype(ml_dtypes.bfloat16)
    got = kernel(a, b)
    assert got.dtype == ml_dtypes.bfloat16
    want = (a.astype(np.float32) * b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_matmul_without_transpose_x_transposes_on_the_tensor_engine():
    src = """
kernel k(x: f32[64, 128] @ hbm, y: f32[128, 256] @ hbm) -> f32[64, 256] @ shared_hbm:
    r = nl.matmul(nl.load(x), nl.load(y))
    out = nl.ndarray((64, 256), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out
"""
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    y = RNG.standard_normal((128, 256)).astype(np.float32)
    value, ops = run(src, {"x": x, "y": y})
    np.testing.assert_allclose(value, x @ y, rtol=1e-4, atol=1e-4)
    assert ops[2:5] == ["nc_transpose", "tensor_copy", "nc_matmul"]


# -- unary functions (nisa.activation) and reductions (nisa.tensor_reduce) -------------------

UNARY = {"exp": np.exp, "tanh": np.tanh, "abs": np.abs, "square": np.square,
         "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
         "sqrt": lambda x: np.sqrt(np.abs(x) + 1)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_are_activations_matching_numpy(name):
    a = RNG.uniform(-3, 3, (32, 16)).astype(np.float32)
    arg = "nl.add(nl.abs(x), 1.0)" if name == "sqrt" else "x"
    value, ops = run(KERNEL.format(p=32, f=16, expr=f"nl.{name}({arg})"),
                     {"a": a, "b": a, "c": a[:, :1]})
    np.testing.assert_allclose(value, UNARY[name](a.astype(np.float64)), rtol=2e-6, atol=1e-6)
    assert ops[-3] == "activation"


def test_unary_dtype_and_where_it_lives():
    src = """
kernel k(a: f32[8, 4] @ hbm):
    x = nl.load(a)
    e = nl.exp(x, dtype=nl.bfloat16)
    assert e.dtype == nl.bfloat16 and e.buffer == "sbuf" and e.shape == (8, 4)
    assert nl.tanh(x).dtype == nl.float32
"""
    Program(src, "<nl>").run(None, {"a": np.zeros((8, 4), np.float32)})


REDUCE = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean,
          "var": np.var, "all": lambda x, axis, keepdims=False: np.all(x != 0, axis=axis,
                                                                      keepdims=keepdims)}


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(REDUCE)), p=st.integers(1, 128),
       shape=st.sampled_from([(8,), (3, 5), (2, 2, 4)]), keepdims=st.booleans(),
       last=st.booleans())
def test_reductions_match_numpy(name, p, shape, keepdims, last):
    full = (p, *shape)
    nd = len(full)
    axes = (nd - 1,) if last else tuple(range(1, nd))
    if name == "var":  # of every free axis only
        axes = tuple(range(1, nd))
    a = RNG.integers(-3, 4, full).astype(np.float32)
    if name == "prod":
        a = np.where(a == 0, 1, a).astype(np.float32) / 2
    kd = "" if name == "all" else f", keepdims={keepdims}"
    src = f"""
kernel k(a: f32{list(full)} @ hbm):
    x = nl.load(a)
    r = nl.{name}(x, axis={list(axes)}{kd})
    return nl.copy(r, dtype=nl.float32)
"""
    result = Program(src, "<nl>").run(None, {"a": a}, trace=True)
    got = result.value.numpy()
    expect = np.asarray(REDUCE[name](a.astype(np.float64), axis=axes,
                                     keepdims=keepdims and name != "all"), np.float64)
    if expect.ndim < 2:
        expect = expect.reshape(p, 1)
    assert got.shape == expect.shape
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-5)
    assert "tensor_reduce" in [r.op for r in result.trace.records]


@pytest.mark.parametrize("expr", ["nl.sum(x, axis=0)", "nl.sum(x, axis=[0, 1])",
                                  "nl.sum(x, axis=3)", "nl.max(x, axis=1)",
                                  "nl.var(x, axis=2)"])
def test_reduction_axis_refusals(expr):
    src = f"""
kernel k(a: f32[8, 4, 2] @ hbm):
    x = nl.load(a)
    r = {expr}
"""
    with raises_code("APK158") as err:
        Program(src, "<nl>").run(None, {"a": np.ones((8, 4, 2), np.float32)})
    assert err.value.span.line == 4


def test_bare_max_and_sum_stay_python_beside_nl_max():
    src = """
kernel k(a: f32[8, 4] @ hbm):
    x = nl.load(a)
    assert nl.max(x, axis=1).shape == (8, 1)
    assert max(3, 4) == 4 and sum([1, 2, 3]) == 6 and min(2, 1) == 1
"""
    Program(src, "<nl>").run(None, {"a": np.ones((8, 4), np.float32)})
