"""Python's arithmetic operators on tiles (the legacy NKI API overloads `+`, `-`, `*`, `/`, the
shifts and the bitwise operators: `a + b` is `nl.add(a, b)`): the same instruction, checks and
new tile as the `nl` function.  Kernels written for these tests; NumPy is the oracle, and the
`nl` function form of the same kernel is the oracle for `lower`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import apdsl
import apdsl.nki as nki
import apdsl.nki.language as nl
from tests.support import lowered_rows, raises_code

RNG = np.random.default_rng(11)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@nki.jit
def mixed(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(32)[None, :]
    x = nl.load(a[i_p, i_f])
    y = nl.load(b[i_p, i_f])
    z = (x + y) * 3.0 - y        # tile op tile, tile op scalar
    w = 0.25 * z + (-x)          # scalar op tile (reflected), unary minus
    v = 1.5 - w                  # reflected subtraction keeps the order
    nl.store(out[i_p, i_f], value=v * np.float32(2.0) + x * y)
    return out


def test_operators_compute_what_numpy_computes() -> None:
    a, b = rand(128, 32), rand(128, 32)
    z = (a + b) * 3.0 - b
    want = (1.5 - (0.25 * z - a)) * 2.0 + a * b
    np.testing.assert_allclose(mixed(a, b), want, rtol=1e-5, atol=1e-5)


@nki.jit
def on_allocated_tiles(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    u = nl.load(a)
    s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nki.isa.tensor_copy(dst=s, src=u)
    nl.store(out, value=s * s + s)   # current-API tiles take the operators too
    return out


def test_allocated_tiles_take_the_operators() -> None:
    a = rand(64, 16)
    np.testing.assert_allclose(on_allocated_tiles(a), a * a + a, rtol=1e-6)


@nki.jit
def integer_ops(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value=((x << 2) | 1) ^ (x >> 1) & 7)
    return out


def test_shifts_and_bitwise_operators_work_on_the_integer_bits() -> None:
    a = RNG.integers(0, 1 << 20, (32, 8)).astype(np.int32)
    np.testing.assert_array_equal(integer_ops(a), ((a << 2) | 1) ^ (a >> 1) & 7)


@nki.jit
def divides(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value=x / 2.0)
    return out


def test_division_is_refused_as_nl_divide_is() -> None:
    with raises_code("APK183"):
        divides(rand(8, 8))


def test_an_operator_outside_a_kernel_is_a_located_error() -> None:
    t = apdsl.ndarray((4, 4), "float32", "sbuf")
    with raises_code("APK946"):
        t + t  # noqa: B018
    with raises_code("APK946"):
        2.0 * t  # noqa: B018


OPERATORS_FILE = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, value=2.0 * (x + y) - x)
    return out
"""

FUNCTIONS_FILE = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, value=nl.subtract(nl.multiply(2.0, nl.add(x, y)), x))
    return out
"""


def _lower(tmp_path: Path, source: str) -> list[dict]:
    return lowered_rows(tmp_path, source, {"a": rand(128, 64), "b": rand(128, 64)})


def test_operators_lower_as_the_nl_functions(tmp_path: Path) -> None:
    ops = _lower(tmp_path, OPERATORS_FILE)
    fns = _lower(tmp_path, FUNCTIONS_FILE)
    assert [r["op"] for r in ops] == ["dma_copy", "dma_copy", "tensor_tensor",
                                      "tensor_scalar", "tensor_tensor", "dma_copy"]
    assert ops == fns


@pytest.mark.parametrize("expr", ["x + y", "x * 2.0", "3.0 - x"])
def test_operators_check_as_the_functions_do(expr: str) -> None:
    """Operands whose partition dimensions differ are the nl function's refusal."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((64, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        scope = {"x": nl.load(a), "y": nl.load(b)}
        nl.store(out, value=eval(expr, {}, scope))
        return out
    if expr == "x + y":
        with raises_code("APK154"):
            k(rand(64, 8), rand(32, 8))
    else:
        a = rand(64, 8)
        want = a * 2.0 if "*" in expr else 3.0 - a
        np.testing.assert_allclose(k(a, rand(32, 8)), want, rtol=1e-6)
