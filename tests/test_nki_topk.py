"""`nisa.topk` (NKI 0.6.0, GpSimd): the K largest of each 16-partition snake and their indices,
against NumPy (ties, the K and n limits), its rules as located errors, what it reads and
writes, and its cost (the docstring's 4 n + K cycles)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError


def _bf16(a: np.ndarray) -> np.ndarray:
    import ml_dtypes
    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


# -- nisa.topk -------------------------------------------------------------------------------------

def _topk_oracle(x: np.ndarray, n: int, k: int):
    """Per 16-partition group: (values, indices) of the snake's K largest, ascending, a smaller
    index the larger among equals (apdsl's stated choice where the docs are silent)."""
    out = []
    for g in range(x.shape[0] // 16):
        snake = x[16 * g:16 * g + 16].astype(np.float64).T.reshape(-1)[:n]
        order = sorted(range(n), key=lambda e: (-snake[e], e))[:k][::-1]
        out.append((snake[order], np.asarray(order)))
    return out


def _topk_kernel(n: int, k: int):
    @nki.jit
    def k_(a):
        parts, width = a.shape
        src = nl.ndarray((parts, width), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        val = nl.ndarray((parts, k), dtype=nl.bfloat16, buffer=nl.sbuf)
        idx = nl.ndarray((parts, k), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=val, idx_dst=idx, src=src, n=n)
        cols = (k + 15) // 16
        # read back the snake (positions q at [q % 16, q // 16] of each group): a memset
        # first, so the unwritten slots of the last column are defined
        vv = nl.ndarray((parts, cols), dtype=nl.float32, buffer=nl.sbuf)
        ii = nl.ndarray((parts, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=vv, value=-1.0)
        nisa.memset(dst=ii, value=-1.0)
        for q in range(k):
            for g in range(parts // 16):
                p, c = 16 * g + q % 16, q // 16
                nisa.tensor_copy(dst=vv[p:p + 1, c:c + 1], src=val[p:p + 1, c:c + 1])
                nisa.tensor_copy(dst=ii[p:p + 1, c:c + 1], src=idx[p:p + 1, c:c + 1])
        ov = nl.ndarray((parts, cols), dtype=nl.float32, buffer=nl.shared_hbm)
        oi = nl.ndarray((parts, cols), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=ov, src=vv)
        nisa.dma_copy(dst=oi, src=ii)
        return ov, oi

    return k_


@settings(max_examples=20, deadline=None, derandomize=True)
@given(groups=st.integers(1, 3), width=st.integers(1, 6), data=st.data(),
       ties=st.booleans(), seed=st.integers(0, 999))
def test_topk_against_numpy(groups, width, data, ties, seed):
    rng = np.random.default_rng(seed)
    n = data.draw(st.integers(max(8, 16 * width - 15), 16 * width), label="n")
    k = data.draw(st.sampled_from(sorted({1, min(n, 8), min(n, 17), n})), label="k")
    shape = (16 * groups, width)
    x = rng.integers(-3, 4, shape) if ties else rng.standard_normal(shape) * 10
    x = _bf16(x)
    ov, oi = _topk_kernel(n, k)(x)
    for g, (vals, idxs) in enumerate(_topk_oracle(x, n, k)):
        q = np.arange(k)
        np.testing.assert_array_equal(ov[16 * g + q % 16, q // 16],
                                      vals.astype(np.float32))
        np.testing.assert_array_equal(oi[16 * g + q % 16, q // 16], idxs)


def test_topk_of_the_docstring_example_shape():
    x = _bf16(np.arange(16 * 3, dtype=np.float32).reshape(3, 16).T[:, :])  # element e = e
    ov, oi = _topk_kernel(42, 8)(x)
    np.testing.assert_array_equal(oi[0:8, 0], np.arange(34, 42))
    np.testing.assert_array_equal(ov[0:8, 0], np.arange(34, 42))


def test_topk_reads_only_the_snake_and_writes_only_its_positions():
    seen = {}

    @nki.jit
    def k(a):
        src = nl.ndarray((16, 2), dtype=nl.bfloat16, buffer=nl.sbuf)
        # only the first 20 snake elements are written: [0:16, 0] and [0:4, 1]
        nisa.dma_copy(dst=src[:, 0:1], src=a[:, 0:1])
        nisa.dma_copy(dst=src[0:4, 1:2], src=a[0:4, 1:2])
        val = nl.ndarray((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        idx = nl.ndarray((16, 4), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=val, idx_dst=idx, src=src, n=20)
        out = nl.ndarray((16, 4), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        try:
            nisa.dma_copy(dst=out, src=val)  # position 4.. of the snake: unwritten
        except ApdslError as e:
            seen["code"] = e.code
        nisa.dma_copy(dst=out[0:4, 0:1], src=val[0:4, 0:1])
        return out[0:4, 0:1]

    x = _bf16(np.arange(32, dtype=np.float32).reshape(2, 16).T)
    got = k(x)
    np.testing.assert_array_equal(got[:, 0].astype(np.float32), [16, 17, 18, 19])
    assert seen["code"] == "APK404"


@pytest.mark.parametrize("src_shape, n, k, idx_shape, code", [
    ((16, 1), 7, 4, None, "APK937"),           # n < 8
    ((16, 4096), 65536, 4, None, "APK937"),    # n >= 65536
    ((16, 2), 20, 21, None, "APK937"),         # K > n
    ((16, 1), 20, 4, None, "APK937"),          # src narrower than ceil(n / 16)
    ((24, 2), 20, 4, None, "APK937"),          # partitions not a multiple of 16
    ((16, 2), 20, 4, (16, 5), "APK937"),       # idx_dst of another shape
])
def test_topk_rules(src_shape, n, k, idx_shape, code):
    @nki.jit
    def kern(a):
        src = nl.ndarray(src_shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=src, value=1.0)
        val = nl.ndarray((src_shape[0], k), dtype=nl.bfloat16, buffer=nl.sbuf)
        idx = nl.ndarray(idx_shape or (src_shape[0], k), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=val, idx_dst=idx, src=src, n=n)
        return a

    with pytest.raises(ApdslError) as e:
        kern(np.ones((2, 2), np.float32))
    assert e.value.code == code
    assert isinstance(e.value, nisa.NkiValidationError)


def test_topk_dtypes_and_nan():
    @nki.jit
    def kern(a, dt):
        src = nl.ndarray((16, 1), dtype=dt, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        val = nl.ndarray((16, 2), dtype=nl.bfloat16, buffer=nl.sbuf)
        idx = nl.ndarray((16, 2), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=val, idx_dst=idx, src=src, n=16)
        return a

    with pytest.raises(nisa.NkiValidationError):  # src must be bfloat16
        kern(np.ones((16, 1), np.float32), nl.float32)
    x = np.ones((16, 1), np.float32)
    x[3] = np.nan
    with pytest.raises(ApdslError) as e:
        kern(_bf16(x), nl.bfloat16)
    assert e.value.code == "APK937" and "NaN" in e.value.message


def test_topk_is_costed_as_the_docstring_says():
    from apdsl.profile.model import Model
    from apdsl.tensor.lowering import lower
    src = apdsl.ndarray((128, 64), "bfloat16", "sbuf")
    val = apdsl.ndarray((128, 16), "bfloat16", "sbuf")
    piece = {"val_dst": lower(val)[0], "idx_dst": lower(val)[0], "src": lower(src)[0]}
    cost = Model("trn2").cost("topk", piece, "gpsimd")  # the table's engine
    assert cost.engine == "GpSimd"
    clock = Model("trn2").v("gpsimd_clock")
    assert cost.ns == pytest.approx((4 * 16 * 64 + 16) / clock)


def test_topk_warns_once_a_call_site_that_the_order_is_apdsls():
    """Where each result lands in the snake is apdsl's reading (the docstring and nki-library's
    gpsimd_topk disagree, and hardware's order differs): every call site warns, once."""
    from apdsl.runtime.nki.topk import topk
    from apdsl.runtime.sync.warn import collect_warnings
    x = apdsl.from_numpy(_bf16(np.arange(32).reshape(16, 2)), "sbuf")
    v, i = apdsl.ndarray((16, 4), "bfloat16", "sbuf"), apdsl.ndarray((16, 4), "uint32", "sbuf")
    with collect_warnings() as warned:
        for _ in range(3):
            topk(v, i, x, n=20)
    assert [w.code for w in warned] == ["APK936"], warned
    assert "order of the results within the snake is apdsl's" in warned[0].message
    assert "set of (value, index) pairs" in warned[0].help
