"""NKI 2.33's device scalars: `nisa.scalar_load` gives an `NkiScalar` of the loaded tensor's
width, whose arithmetic wraps at that width, whose 32-bit comparisons condition `nl.if_else`,
and which bounds `nl.fori_loop`.  The kernels are written for these tests; NumPy's fixed-width
integers (which wrap the same way) and the same branches and loops on the arrays are the
oracles."""

from __future__ import annotations

import numpy as np
import pytest
from support import apdsl_in_process, raises_code

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.tensor.scalars import NkiScalar

RNG = np.random.default_rng(31)
EDGES32 = [0, 1, -1, 7, 100000, 2**31 - 1, -2**31, 65536, -99999]


@pytest.mark.parametrize("dtype,np_dtype", [("int32", np.int32), ("int64", np.int64)])
def test_arithmetic_wraps_at_the_scalar_width(dtype, np_dtype):
    info = np.iinfo(np_dtype)
    values = EDGES32 + [int(info.max), int(info.min), int(RNG.integers(info.min, info.max))]
    with np.errstate(over="ignore"):
        for a in values:
            for b in values:
                x, y = np.array([a], np_dtype), np.array([b], np_dtype)
                s, t = NkiScalar(a, dtype), NkiScalar(b, dtype)
                assert (s + t).value == int((x + y)[0])
                assert (s - t).value == int((x - y)[0])
                assert (s * t).value == int((x * y)[0])
                assert (s * b).value == (b * s).value == int((x * y)[0])
                assert (b - s).value == int((y - x)[0])
                assert (-s).value == int((-x)[0])
    # the reference's own example: 32 bits never widen
    assert (NkiScalar(100000, "int32") * 100000).value == 1410065408
    assert (NkiScalar(2**31 - 1, "int32") + 1).value == -2**31


@pytest.mark.parametrize("a", EDGES32)
@pytest.mark.parametrize("b", [0, 7, -1, 100000])
def test_int32_comparisons_give_a_comparison_scalar(a, b):
    s = NkiScalar(a, "int32")
    for got, want in ((s < b, a < b), (s <= b, a <= b), (s > b, a > b), (s >= b, a >= b),
                      (s == b, a == b), (s != b, a != b)):
        assert got.comparison and got.value == int(want)


@nki.jit
def branch_on_scalar(flag, data, compare):
    """data + 10 where the loaded flag (compared > 0, or taken as it is) selects then_fn,
    else -data: the reference's if_else example."""
    flag_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flag_sb, src=flag)
    s = nisa.scalar_load(flag_sb)
    condition = s > 0 if compare else s
    res = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=res, src=data)

    def then_branch():
        nisa.tensor_scalar(dst=res, data=res, op0=nl.add, operand0=10.0)

    def else_branch():
        nisa.tensor_scalar(dst=res, data=res, op0=nl.multiply, operand0=-1.0)

    nl.if_else(condition, then_branch, else_branch)
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out


@pytest.mark.parametrize("flag", [3, 0, -2, 2**31 - 1])
@pytest.mark.parametrize("compare", [True, False])
def test_a_loaded_scalar_selects_the_branch(flag, compare):
    data = RNG.standard_normal((4, 8)).astype(np.float32)
    got = branch_on_scalar(np.array([[flag]], np.int32), data, compare)
    taken = flag > 0 if compare else flag != 0  # any nonzero value, a negative one too
    np.testing.assert_array_equal(got, data + np.float32(10.0) if taken else -data)


@nki.jit
def scaled_count(data, count):
    """out[i] = 2 * data[i] for i < 2 * count[0, 0] - 1 (a fori_loop bound computed from a
    loaded scalar), the other rows 0."""
    rows, cols = data.shape
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=count)
    n = nisa.scalar_load(n_sb) * 2 - 1
    zeros = nl.ndarray((rows, cols), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=row, src=data.ap([[cols, 1], [1, cols]], scalar_offset=i,
                                           indirect_dim=0))
        nisa.tensor_scalar(dst=row, data=row, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0),
                      src=row)

    nl.fori_loop(0, n, body)
    return out


@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_a_scalar_expression_bounds_fori_loop(count):
    data = RNG.standard_normal((8, 4)).astype(np.float32)
    got = scaled_count(data, np.array([[count]], np.int32))
    want = np.zeros_like(data)
    want[:max(2 * count - 1, 0)] = 2 * data[:max(2 * count - 1, 0)]
    np.testing.assert_array_equal(got, want)


@nki.jit
def misuse(a, how):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    t32 = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=t32, value=2)
    t64 = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.hbm)
    nisa.dma_copy(dst=t64, src=t32)
    s, w = nisa.scalar_load(t32), nisa.scalar_load(t64)
    if how == "int64 comparison":
        _ = w < 3
    elif how == "mixed widths":
        _ = s + w
    elif how == "python if":
        if s:
            pass
    elif how == "range":
        range(s)
    elif how == "division":
        _ = s // 2
    elif how == "comparison as bound":
        nl.fori_loop(0, s < 3, lambda i: None)
    elif how == "int64 bound":
        nl.fori_loop(0, w, lambda i: None)
    elif how == "int64 condition":
        nl.if_else(w, lambda: None)
    elif how == "comparison arithmetic":
        _ = (s < 3) + 1
    elif how == "scalar offset":
        a.ap([[a.shape[1], 1], [1, a.shape[1]]], scalar_offset=s, indirect_dim=0)
    elif how == "unsigned":
        u = nl.ndarray((1, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=u, value=1)
        nisa.scalar_load(u)
    elif how == "wide":
        v = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=v, value=1)
        nisa.scalar_load(v)
    return out


@pytest.mark.parametrize("how,code", [
    ("int64 comparison", "APK178"), ("mixed widths", "APK178"), ("python if", "APK178"),
    ("range", "APK178"), ("division", "APK178"), ("comparison as bound", "APK178"),
    ("int64 bound", "APK178"), ("int64 condition", "APK178"),
    ("comparison arithmetic", "APK178"), ("scalar offset", "APK178"), ("unsigned", "APK319"),
    ("wide", "APK319")])
def test_a_misused_scalar_is_refused_where_it_is_used(how, code):
    with raises_code(code):
        misuse(np.ones((4, 4), np.float32), how)


def test_an_int64_scalar_is_not_truncated():
    # 2**20 loaded at 64 bits and squared is 2**40; at 32 bits the same product wraps to 0
    @nki.jit
    def k(small):
        wide = nl.ndarray((1, 1), dtype=nl.int64, buffer=nl.hbm)
        nisa.dma_copy(dst=wide, src=small)
        narrow = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=narrow, src=small)
        w, n = nisa.scalar_load(wide), nisa.scalar_load(narrow)
        seen.extend([w * w + 1, n * n + 1])
        out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=narrow)
        return out

    seen: list[NkiScalar] = []
    k(np.array([[2**20]], np.int32))
    assert (seen[0].dtype, seen[0].value) == ("int64", 2**40 + 1)
    assert (seen[1].dtype, seen[1].value) == ("int32", 1)


CHECKED = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(flag, data):
    f = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=f, src=flag)
    res = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=res, src=data)
    wrong = nl.ndarray((2, 3), dtype=data.dtype, buffer=nl.sbuf)

    def then_branch():
        nisa.tensor_scalar(dst=res, data=res, op0=nl.add, operand0=1.0)

    def else_branch():
        nisa.tensor_tensor(dst=res, data1=res, data2=wrong, op=nl.add)

    nl.if_else(nisa.scalar_load(f) > 0, then_branch, else_branch)
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_check_checks_both_callbacks_and_run_takes_one(tmp_path):
    # check mode reads no memory, so the condition is unknown and the compiler emits both
    # callbacks: the shape mistake in else_branch is found; run with a flag selecting
    # then_branch never reaches it and matches NumPy
    (tmp_path / "k.py").write_text(CHECKED)
    data = RNG.standard_normal((4, 8)).astype(np.float32)
    np.save(tmp_path / "d.npy", data)
    np.save(tmp_path / "f.npy", np.array([[1]], np.int32))
    args = ("k.py", "-i", "flag=f.npy", "-i", "data=d.npy")
    proc = apdsl_in_process("check", *args, cwd=tmp_path)
    assert proc.returncode == 1 and "k.py:19" in proc.stderr, proc.stderr
    proc = apdsl_in_process("run", *args, "-o", "o.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), data + np.float32(1.0))
