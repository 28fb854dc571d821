"""Run mode's generated sites for NKI-style calls (`nisa.dma_copy(dst=..., src=A[k * T:(k + 1)
* T, ...])`, `nl.ndarray(..., dtype=X.dtype, buffer=nl.sbuf)`) against the general closures they
stand in for: the same results, trace, steps and errors (code, span, labels, message).  The
oracle is the general path itself, with every fast path switched off
(`apdsl.options(plans=False)`), and NumPy."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_callsites import outcome, same
from test_nki_matmul import TUTORIAL_APK as TUTORIAL  # the NKI tutorial kernel, re-typed

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


def test_nki_calls_compile_to_sites():
    source = "def f(t, A, k):\n    nisa.dma_copy(dst=t, src=A[k * 2:(k + 1) * 2, 0:4])\n"
    program = Program(source, "p.apk")
    call = program.module.body[0].body[0].expr
    assert program.interpreter().compile_expr(call).__code__.co_filename == "<apdsl site>"


@pytest.mark.parametrize("trace", [False, True])
def test_the_tutorial_kernel_runs_and_traces_as_the_general_path(trace):
    rng = np.random.default_rng(5)
    inputs = {"lhsT": rng.standard_normal((256, 256)).astype(np.float32),
              "rhs": rng.standard_normal((256, 1024)).astype(np.float32)}
    fast = outcome(TUTORIAL, "nki_matmul_tiled_", inputs, trace=trace)
    with apdsl.options(plans=False):
        slow = outcome(TUTORIAL, "nki_matmul_tiled_", inputs, trace=trace)
    same(fast, slow)
    np.testing.assert_allclose(fast[1], inputs["lhsT"].T @ inputs["rhs"], rtol=1e-4, atol=1e-3)


# A slice of a tensor argument with bounds of every kind: in range, out of range, negative,
# past the int limit, not ints; a value that is not a tensor, a name that is not a local.
BOUNDS = ["0", "1", "k", "k + 1", "(k + 1) * 2", "k * 2", "-2", "k - 9", "2 ** 1024",
          "(k + 2 ** 1023) * 2", "1.5", "'s'", "None", "t", "k // 0", "k % z", "G", "k // 2"]
SLICED = ["A", "G", "t", "k", "h"]
SLICE = """G = 3

kernel f(A: f32[8, 16] @ hbm) -> f32[2, 4] @ hbm:
    k = 1
    z = 0
    h = (1, 2, 3)
    t = nl.ndarray((2, 4), dtype=A.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src={value}[{lo}:{hi}, {col}])
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def _result(source: str, kernel: str):
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    if "A: f32[2, 4]" in source:
        a = a[:2, :4].copy()
    out = io.StringIO()
    try:
        r = Program(source, "p.apk").run(kernel, {"A": a} if "A:" in source else None, out=out)
    except ApdslError as e:
        return ("error", e.code, e.span, e.message, [(x.span, x.message) for x in e.labels])
    return ("ok", r.value.numpy().tolist() if hasattr(r.value, "numpy") else r.value,
            out.getvalue(), r.interpreter.budget.used)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(SLICED), st.sampled_from(BOUNDS), st.sampled_from(BOUNDS),
       st.sampled_from(["0:4", "k * 4:(k + 1) * 4", "4:k * 8", ":", "k", "k:"]))
def test_inline_slices_give_what_the_general_subscript_gives(value, lo, hi, col):
    source = SLICE.format(value=value, lo=lo, hi=hi, col=col)
    fast = _result(source, "f")
    with apdsl.options(plans=False):
        slow = _result(source, "f")
    assert fast == slow


def test_an_inline_slice_copies_the_numpy_slice():
    source = SLICE.format(value="A", lo="(k + 1) * 2", hi="(k + 2) * 2", col="k * 4:(k + 1) * 4")
    got = _result(source, "f")
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    assert got[0] == "ok" and got[1] == a[4:6, 4:8].tolist()


def test_an_out_of_range_inline_slice_is_the_general_located_error():
    source = SLICE.format(value="A", lo="k * 6", hi="k * 6 + 2", col="k * 20:(k + 1) * 20")
    fast = _result(source, "f")
    with apdsl.options(plans=False):
        slow = _result(source, "f")
    assert fast[0] == "error" and fast == slow


# NKI names and tensor fields as arguments: a builtin's NKI meaning, a plain builtin under the
# prefix, an unknown name; `.dtype` / `.shape` of a tensor, of a non-tensor, of a global.
NAME_ARGS = ["nl.sbuf", "nl.psum", "nl.float32", "nl.bogus", "nisa.sbuf", "A.dtype", "t.dtype",
             "k.dtype", "G.dtype", "A.shape", "h.shape"]
ARGS = """G = 3

kernel f(A: f32[8, 16] @ hbm) -> i32:
    k = 1
    h = (1, 2)
    t = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
    u = nl.ndarray((2, 4), dtype={dtype}, buffer={buffer})
    print(u.dtype, u.buffer)
    return 0
"""


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NAME_ARGS), st.sampled_from(NAME_ARGS))
def test_inline_nki_names_and_fields_give_what_the_general_closures_give(dtype, buffer):
    source = ARGS.format(dtype=dtype, buffer=buffer)
    fast = _result(source, "f")
    with apdsl.options(plans=False):
        slow = _result(source, "f")
    assert fast == slow


def test_a_program_binding_the_builtin_name_keeps_the_nki_meaning():
    # `nisa.dma_copy` is NKI's, never the program's `dma_copy`; both paths agree
    source = """
def dma_copy(dst, src):
    print("mine")

kernel f(A: f32[2, 4] @ hbm) -> f32[2, 4] @ hbm:
    t = nl.ndarray((2, 4), dtype=A.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=A)
    dma_copy(t, A)
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    fast = _result(source, "f")
    with apdsl.options(plans=False):
        slow = _result(source, "f")
    assert fast == slow and fast[2] == "mine\n"


UNWRITTEN = """
kernel f(A: f32[2, 4] @ hbm) -> f32[2, 4] @ hbm:
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.hbm)
    for i in range(2):
        t = nl.ndarray((2, 4), dtype=A.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=A[i * 0:i * 0 + 2, 0:4])
        u = nl.ndarray((2, 4), dtype=A.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=out, src=u[i * 0:i * 0 + 2, 0:4])
    return out
"""
FREED = """
kernel f(A: f32[2, 4] @ hbm) -> f32[2, 4] @ hbm:
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.hbm)
    for i in range(2):
        t: f32[2, 4] @ sbuf
        nisa.dma_copy(dst=t, src=A[i * 0:i * 0 + 2, 0:4])
        keep = t
    nisa.dma_copy(dst=out, src=keep[i * 0:i * 0 + 2, 0:4])
    return out
"""


@pytest.mark.parametrize("source, code", [(UNWRITTEN, "APK404"), (FREED, "APK408")])
def test_an_unwritten_or_freed_source_is_the_general_error(source, code):
    fast = _result(source, "f")
    with apdsl.options(plans=False):
        slow = _result(source, "f")
    assert fast[0] == "error" and fast[1] == code and fast == slow
