"""`nl.if_else(cond, then_fn, else_fn=None)`, NKI 2.33's compiled conditional: a Python bool
or int condition is resolved when the kernel is traced, so only the selected callback runs; a
register condition is refused as the reference refuses it.  The kernels are written for these
tests; NumPy (the same branch taken on the array) is the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from support import raises_code, run_nki_file

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

RNG = np.random.default_rng(29)


@nki.jit
def shifted_or_negated(data, flag, with_else):
    """data + 10 when flag is nonzero; else -data (with_else) or data unchanged."""
    res = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=res, src=data)

    def then_branch():
        nisa.tensor_scalar(dst=res, data=res, op0=nl.add, operand0=10.0)

    def else_branch():
        nisa.tensor_scalar(dst=res, data=res, op0=nl.multiply, operand0=-1.0)

    nl.if_else(flag, then_branch, else_branch if with_else else None)
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@pytest.mark.parametrize("flag", [True, False, 1, 0, -3, 7])
@pytest.mark.parametrize("with_else", [True, False])
def test_the_condition_selects_one_callback(flag, with_else):
    # any nonzero value, a negative one too, selects then_fn
    data = RNG.standard_normal((4, 8)).astype(np.float32)
    got = shifted_or_negated(data, flag, with_else)
    if flag:
        want = data + np.float32(10.0)
    else:
        want = -data if with_else else data
    np.testing.assert_array_equal(got, want)


@nki.jit
def counted_branches(data, limit):
    """A comparison of Python ints as the condition, in a loop: rows below `limit` doubled,
    the others zeroed; the branch not taken issues nothing."""
    rows, cols = data.shape
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)
    for r in range(rows):
        nisa.dma_copy(dst=row, src=data[r:r + 1, :])

        def double():
            nisa.tensor_scalar(dst=row, data=row, op0=nl.multiply, operand0=2.0)

        def zero():
            nisa.memset(dst=row, value=0.0)

        nl.if_else(r < limit, double, zero)
        nisa.dma_copy(dst=out[r:r + 1, :], src=row)
    return out


def test_a_comparison_of_ints_is_a_condition():
    data = RNG.standard_normal((6, 4)).astype(np.float32)
    got = counted_branches(data, 4)
    want = np.concatenate([2 * data[:4], np.zeros_like(data[4:])])
    np.testing.assert_array_equal(got, want)


@nki.jit
def misuse(a, how):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    if how == "register":
        nl.if_else(nisa.register_alloc(1), lambda: None)
    elif how == "float":
        nl.if_else(1.0, lambda: None)
    elif how == "argument":
        nl.if_else(True, lambda x: None)
    elif how == "else argument":
        nl.if_else(False, lambda: None, lambda x: None)
    elif how == "not callable":
        nl.if_else(True, 3)
    elif how == "returns":
        nl.if_else(True, lambda: 5)
    return out


@pytest.mark.parametrize("how", ["register", "float", "argument", "else argument",
                                 "not callable", "returns"])
def test_a_misused_conditional_is_refused_at_the_call(how):
    with raises_code("APK155") as e:
        misuse(np.ones((4, 4), np.float32), how)
    assert "if_else" in e.value.message


def test_a_callback_not_taken_is_not_run():
    # the condition is resolved at trace time: the other callback is never called, so an
    # error it would raise does not happen
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)

        def boom():
            raise RuntimeError("not taken")

        nl.if_else(0, boom, lambda: nisa.dma_copy(dst=out, src=a))
        return out

    a = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a)


def test_the_command_line_locates_the_refusal(tmp_path):
    proc = run_nki_file(tmp_path, "nl.if_else(nisa.register_alloc(1), lambda: None)")
    assert proc.returncode == 1
    assert "APK155" in proc.stderr and "kern.py:9" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
