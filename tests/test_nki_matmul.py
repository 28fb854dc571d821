"""nc_matmul: accumulate inference over the PSUM state (SPEC section 4) and the dtype, tiling,
perf-mode and transpose rules of the NKI nc_matmul docstring, each value checked against
NumPy."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.instructions import dma_copy, memset, nc_matmul, tensor_copy
from apdsl.tensor import targets
from apdsl.tensor.view import from_numpy, ndarray

RNG = np.random.default_rng(8)


def _sb(a, dtype=None):
    return from_numpy(np.asarray(a), "sbuf", dtype=dtype)


def _ones(shape, dtype="float32"):
    return _sb(np.ones(shape, np.float32), dtype)


# -- the NKI tiled-matmul tutorial ------------------------------------------------------------

def tutorial_tiled_matmul(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`nki_matmul_tiled_` of the NKI "Matrix multiplication" tutorial (aws-neuron-sdk,
    nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py, NKI_EXAMPLE_18),
    re-typed on apdsl's Python API.  Its nc_matmul passes no `accumulate`: the first matmul
    into each fresh PSUM tile overwrites, the later ones accumulate."""
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_
    TILE_M, TILE_K, TILE_N = 128, 128, 512  # gemm_stationary_fmax, pmax, gemm_moving_fmax
    lhsT_hbm, rhs_hbm = from_numpy(lhsT), from_numpy(rhs)
    result = ndarray((M, N), "float32", "shared_hbm")
    for m in range(M // TILE_M):
        for n in range(N // TILE_N):
            res_psum = ndarray((TILE_M, TILE_N), "float32", "psum")
            for k in range(K // TILE_K):
                lhsT_tile = ndarray((TILE_K, TILE_M), "float32", "sbuf")
                rhs_tile = ndarray((TILE_K, TILE_N), "float32", "sbuf")
                dma_copy(dst=lhsT_tile, src=lhsT_hbm[k * TILE_K:(k + 1) * TILE_K,
                                                     m * TILE_M:(m + 1) * TILE_M])
                dma_copy(dst=rhs_tile, src=rhs_hbm[k * TILE_K:(k + 1) * TILE_K,
                                                   n * TILE_N:(n + 1) * TILE_N])
                nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = ndarray(res_psum.shape, "float32", "sbuf")
            tensor_copy(dst=res_sb, src=res_psum)
            dma_copy(dst=result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                     src=res_sb)
    return result.numpy()


def test_tutorial_tiled_matmul_matches_numpy():
    lhsT = RNG.standard_normal((384, 256)).astype(np.float32)
    rhs = RNG.standard_normal((384, 1024)).astype(np.float32)
    np.testing.assert_allclose(tutorial_tiled_matmul(lhsT, rhs), lhsT.T @ rhs,
                               rtol=1e-4, atol=1e-3)


TUTORIAL_APK = """
kernel nki_matmul_tiled_(lhsT: f32[K, M] @ hbm, rhs: f32[K, N] @ hbm) -> f32[M, N] @ shared_hbm:
    TILE_M = 128
    TILE_K = 128
    TILE_N = 512
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.ndarray((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * TILE_K:(k + 1) * TILE_K,
                                                      m * TILE_M:(m + 1) * TILE_M])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * TILE_K:(k + 1) * TILE_K,
                                                    n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=res_psum, stationary=lhsT_tile, moving=rhs_tile)
            res_sb = nl.ndarray(res_psum.shape, dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(dst=result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
                          src=res_sb)
    return result
"""


def test_tutorial_as_apk_matches_numpy():
    lhsT = RNG.standard_normal((256, 128)).astype(np.float32)
    rhs = RNG.standard_normal((256, 1024)).astype(np.float32)
    out = apdsl.run(TUTORIAL_APK, inputs={"lhsT": lhsT, "rhs": rhs})
    np.testing.assert_allclose(out, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


def test_psum_tile_reused_after_eviction_starts_fresh():
    """One PSUM tile for every output tile: the tensor_copy that evicts it makes it fresh, so
    the next group's first matmul overwrites instead of adding the old result."""
    a = RNG.standard_normal((256, 128)).astype(np.float32)
    b = RNG.standard_normal((256, 1024)).astype(np.float32)
    acc = ndarray((128, 512), "float32", "psum")
    out = np.empty((128, 1024), np.float32)
    for n in range(2):
        for k in range(2):
            nc_matmul(acc, _sb(a[k * 128:(k + 1) * 128]),
                      _sb(b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]))
        res = ndarray((128, 512), "float32", "sbuf")
        tensor_copy(res, acc)
        out[:, n * 512:(n + 1) * 512] = res.numpy()
    np.testing.assert_allclose(out, a.T @ b, rtol=1e-4, atol=1e-3)


def test_host_reads_do_not_end_an_accumulation():
    s, mv = _sb(RNG.standard_normal((8, 4)).astype(np.float32)), _ones((8, 6))
    dst = ndarray((4, 6), "float32", "psum")
    nc_matmul(dst, s, mv)
    first = dst.numpy()  # host read: excepted from the rule
    nc_matmul(dst, s, mv)
    np.testing.assert_allclose(dst.numpy(), 2 * first, rtol=1e-6)


def test_inference_is_per_element():
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal((16, 64)).astype(np.float32)
    dst = ndarray((8, 64), "float32", "psum")
    nc_matmul(dst[:, 0:32], _sb(a), _sb(b[:, 0:32]))  # fresh: overwrite
    nc_matmul(dst[:, 32:64], _sb(a), _sb(b[:, 32:64]))  # also fresh, beside it
    nc_matmul(dst, _sb(a), _sb(b))  # every element accumulating now
    np.testing.assert_allclose(dst.numpy(), 2 * (a.T @ b), rtol=1e-5, atol=1e-5)
    other = ndarray((8, 64), "float32", "sbuf")
    tensor_copy(other[:, 0:32], dst[:, 0:32])  # a read of half the tile: that half is fresh
    with raises_code("APK330"):
        nc_matmul(dst, _sb(a), _sb(b))
    nc_matmul(dst[:, 0:32], _sb(a), _sb(b[:, 0:32]))  # fresh half: overwrite
    np.testing.assert_allclose(dst.numpy()[:, 0:32], a.T @ b[:, 0:32], rtol=1e-5, atol=1e-5)


def test_explicit_accumulate_flags():
    a = RNG.standard_normal((16, 8)).astype(np.float32)
    b = RNG.standard_normal((16, 32)).astype(np.float32)
    dst = ndarray((8, 32), "float32", "psum")
    nc_matmul(dst, _sb(a), _sb(b), accumulate=False)
    nc_matmul(dst, _sb(a), _sb(b), accumulate=True)
    nc_matmul(dst, _sb(a), _sb(b))
    np.testing.assert_allclose(dst.numpy(), 3 * (a.T @ b), rtol=1e-5, atol=1e-5)
    nc_matmul(dst, _sb(a), _sb(b), accumulate=False)  # restarts though accumulating
    np.testing.assert_allclose(dst.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)
    evict = ndarray((8, 32), "float32", "sbuf")
    tensor_copy(evict, dst)  # read by another instruction: fresh, matmul still last writer
    nc_matmul(dst, _sb(a), _sb(b), accumulate=True)  # defined: adds to the matmul result
    np.testing.assert_allclose(dst.numpy(), 2 * (a.T @ b), rtol=1e-5, atol=1e-5)


def test_accumulation_bit_equal_to_numpy_sums_through_strided_views():
    # the in-place accumulation into dst's strided view (every element written) and the
    # general read-add-store path (partly written storage) give NumPy's float32 sums exactly,
    # and the PSUM state still says the elements are accumulating
    a = [RNG.standard_normal((16, 8)).astype(np.float32) for _ in range(3)]
    b = [RNG.standard_normal((16, 24)).astype(np.float32) for _ in range(3)]
    for whole in (True, False):
        dst = ndarray((8, 64), "float32", "psum")
        if whole:
            memset(dst, 0.0)  # every element written: the in-place path
        view = dst[:, 8:56:2]  # strided columns
        want = a[0].T @ b[0]
        nc_matmul(view, _sb(a[0]), _sb(b[0]), accumulate=False)
        for x, y in zip(a[1:], b[1:]):
            nc_matmul(view, _sb(x), _sb(y))  # inferred: accumulate
            want = want + x.T @ y
        np.testing.assert_array_equal(view.numpy(), want)
        with raises_code("APK330"):  # half accumulating, half fresh: inference refuses
            nc_matmul(dst[:, 0:16], _sb(a[0]), _sb(b[0][:, 0:16]))


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_accumulate_true_where_no_matmul_wrote(target):
    with targets.target(target):
        dst = ndarray((4, 8), "float32", "psum")
        with raises_code("APK331"):
            nc_matmul(dst, _ones((8, 4)), _ones((8, 8)), accumulate=True)
        memset(dst, 0.0)
        with raises_code("APK331"):
            nc_matmul(dst, _ones((8, 4)), _ones((8, 8)), accumulate=True)


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_accumulate_true_after_a_non_matmul_write_trn1_trn2(target):
    with targets.target(target):
        dst = ndarray((4, 8), "float32", "psum")
        nc_matmul(dst, _ones((8, 4)), _ones((8, 8)))
        memset(dst[:, 0:2], 1.0)
        with raises_code("APK332"):
            nc_matmul(dst, _ones((8, 4)), _ones((8, 8)), accumulate=True)


def test_accumulate_true_after_a_non_matmul_write_trn3_adds():
    with targets.target("trn3"):
        dst = ndarray((4, 8), "float32", "psum")
        nc_matmul(dst, _ones((8, 4)), _ones((8, 8)))
        memset(dst[:, 0:2], 1.0)
        nc_matmul(dst, _ones((8, 4)), _ones((8, 8)), accumulate=True)
        expect = np.full((4, 8), 16.0, np.float32)
        expect[:, 0:2] = 9.0
        np.testing.assert_array_equal(dst.numpy(), expect)


def test_accumulate_must_be_a_bool_or_none():
    with raises_code("APK420"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4)), _ones((8, 8)),
                  accumulate=1)


# -- dtypes ---------------------------------------------------------------------------------

def test_integer_inputs_refused():
    with raises_code("APK333"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4), "int8"),
                  _ones((8, 8), "int8"))


def test_e4m3fn_needs_trn3_and_never_mixes_with_e4m3():
    for target in ("trn1", "trn2"):
        with targets.target(target), raises_code("APK333"):
            nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4), "float8_e4m3fn"),
                      _ones((8, 8), "float8_e4m3fn"))
    with targets.target("trn3"):
        a = RNG.uniform(-2, 2, (8, 4)).astype(np.float32)
        b = RNG.uniform(-2, 2, (8, 8)).astype(np.float32)
        sa, sb = _sb(a, "float8_e4m3fn"), _sb(b, "float8_e5m2")
        dst = ndarray((4, 8), "float32", "psum")
        nc_matmul(dst, sa, sb)
        qa = a.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
        qb = b.astype(ml_dtypes.float8_e5m2).astype(np.float32)
        np.testing.assert_allclose(dst.numpy(), qa.T @ qb, rtol=1e-6, atol=1e-6)
        with raises_code("APK334"):
            nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4), "float8_e4m3"),
                      _ones((8, 8), "float8_e4m3fn"))


@pytest.mark.parametrize("wide,narrow", [("float32", "bfloat16"), ("tfloat32", "float16"),
                                         ("tfloat32", "float8_e5m2")])
def test_float32_and_tfloat32_pair_only_with_each_other(wide, narrow):
    with raises_code("APK317"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4), wide), _ones((8, 8), narrow))
    with raises_code("APK317"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((8, 4), narrow), _ones((8, 8), wide))


def _tf32_oracle(x: float) -> float:
    """Round to 11 significant bits (10 stored), nearest even, with Python's exact round()."""
    if x == 0 or not math.isfinite(x):
        return x
    m, e = math.frexp(x)
    return math.ldexp(round(m * 2**11), e - 11)


def test_tfloat32_inputs_keep_10_mantissa_bits():
    a = RNG.standard_normal((16, 4)).astype(np.float32)
    b = RNG.standard_normal((16, 8)).astype(np.float32)
    dst = ndarray((4, 8), "float32", "psum")
    nc_matmul(dst, _sb(a, "tfloat32"), _sb(b, "float32"))
    qa = np.vectorize(_tf32_oracle)(a.astype(np.float64)).astype(np.float32)
    assert not np.array_equal(qa, a)  # the rounding is visible
    np.testing.assert_allclose(dst.numpy(), qa.T @ b, rtol=1e-6, atol=1e-6)


def test_bfloat16_dst_on_trn3_only():
    a = RNG.standard_normal((8, 4)).astype(np.float32)
    b = RNG.standard_normal((8, 8)).astype(np.float32)
    with raises_code("APK315"):
        nc_matmul(ndarray((4, 8), "bfloat16", "psum"), _sb(a, "bfloat16"), _sb(b, "bfloat16"))
    with targets.target("trn3"):
        dst = ndarray((4, 8), "bfloat16", "psum")
        nc_matmul(dst, _sb(a, "bfloat16"), _sb(b, "bfloat16"))
        qa = a.astype(ml_dtypes.bfloat16).astype(np.float32)
        qb = b.astype(ml_dtypes.bfloat16).astype(np.float32)
        expect = (qa.T @ qb).astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(dst.numpy(), expect)


# -- perf_mode, tiling, transpose -------------------------------------------------------------

def test_double_row_contracts_partitions_and_the_pair_dim():
    # the docstring's example: [1, 256] @ [256, 3] with stationary [128, 2, 1], moving [128, 2, 3]
    x = RNG.uniform(-1, 1, (256,)).astype(np.float32)
    y = RNG.uniform(-1, 1, (256, 3)).astype(np.float32)
    # contraction index kappa = 2 * p + j: partition p, pair element j
    st = _sb(x.reshape(128, 2, 1), "float8_e4m3")
    mv = _sb(y.reshape(128, 2, 3), "float8_e5m2")
    dst = ndarray((1, 3), "float32", "psum")
    nc_matmul(dst, st, mv, perf_mode="double_row")
    qx = x.astype(ml_dtypes.float8_e4m3).astype(np.float64)
    qy = y.astype(ml_dtypes.float8_e5m2).astype(np.float64)
    np.testing.assert_allclose(dst.numpy(), (qx @ qy)[None, :], rtol=1e-5, atol=1e-5)


def test_double_row_rules():
    st, mv = _ones((128, 2, 4), "float8_e4m3"), _ones((128, 2, 8), "float8_e4m3")
    with targets.target("trn1"), raises_code("APK337"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), st, mv, perf_mode="double_row")
    with raises_code("APK333"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((128, 2, 4), "bfloat16"),
                  _ones((128, 2, 8), "bfloat16"), perf_mode="double_row")
    with raises_code("APK337"):  # no column tiling
        nc_matmul(ndarray((4, 8), "float32", "psum"), st, mv, perf_mode="double_row",
                  tile_position=(0, 0), tile_size=(128, 64))
    with raises_code("APK337"):  # the pair dim must be 2
        nc_matmul(ndarray((4, 8), "float32", "psum"), _ones((128, 4), "float8_e4m3"),
                  _ones((128, 8), "float8_e4m3"), perf_mode="double_row")
    with raises_code("APK337"):
        nc_matmul(ndarray((4, 8), "float32", "psum"), st, mv, perf_mode="quad_row")


def test_double_row_gen3_is_double_row_on_trn2_only():
    # the SDK's nc_matmul test names double_row "double_row_gen3" on trn2 (nc_version gen3,
    # "Trn2 target"), its golden np.einsum("kli,klj->ij"); the name means nothing elsewhere
    a = RNG.uniform(-2, 2, (128, 2, 3)).astype(np.float32)
    b = RNG.uniform(-2, 2, (128, 2, 40)).astype(np.float32)
    st, mv = _sb(a, "float8_e5m2"), _sb(b, "float8_e4m3")
    dst = ndarray((3, 40), "float32", "psum")
    nc_matmul(dst, st, mv, perf_mode="double_row_gen3")
    qa = a.astype(ml_dtypes.float8_e5m2).astype(np.float64)
    qb = b.astype(ml_dtypes.float8_e4m3).astype(np.float64)
    np.testing.assert_allclose(dst.numpy(), np.einsum("kli,klj->ij", qa, qb), rtol=1e-5,
                               atol=1e-5)
    for name in ("trn1", "trn3"):
        with targets.target(name):
            s3, m3 = _ones((128, 2, 3), "float8_e4m3"), _ones((128, 2, 40), "float8_e4m3")
            with raises_code("APK337") as err:
                nc_matmul(ndarray((3, 40), "float32", "psum"), s3, m3,
                          perf_mode="double_row_gen3")
            assert "trn2" in err.value.message


def test_tile_position_and_size():
    a = RNG.standard_normal((64, 32)).astype(np.float32)
    b = RNG.standard_normal((64, 16)).astype(np.float32)
    dst = ndarray((32, 16), "float32", "psum")
    nc_matmul(dst, _sb(a), _sb(b), tile_position=(64, 0), tile_size=(64, 128))
    np.testing.assert_allclose(dst.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)
    with raises_code("APK338"):  # start not a multiple of the size
        nc_matmul(dst, _sb(a), _sb(b), tile_position=(32, 0), tile_size=(64, 128))
    with raises_code("APK338"):  # only one of the two given
        nc_matmul(dst, _sb(a), _sb(b), tile_position=(0, 0))
    with raises_code("APK314"):  # K = 64 does not fit 32 rows
        nc_matmul(dst, _sb(a), _sb(b), tile_position=(0, 0), tile_size=(32, 128))
    with targets.target("trn1"), raises_code("APK338"):  # 32-row tiles from trn2 on
        nc_matmul(dst, _sb(a[:32]), _sb(b[:32]), tile_position=(0, 0), tile_size=(32, 128))


def test_transpose_moves_bits_and_does_not_accumulate():
    data = RNG.standard_normal((32, 16)).astype(ml_dtypes.bfloat16)
    data[3, 5] = np.nan
    data[7, 1] = np.inf
    st = _sb(data, "bfloat16")
    eye = _sb(np.eye(32, dtype=np.float32), "bfloat16")
    dst = ndarray((16, 32), "bfloat16", "psum")
    nc_matmul(dst, st, eye, is_transpose=True)
    np.testing.assert_array_equal(dst.numpy().view(np.uint16), data.T.view(np.uint16))
    # a transpose is not an accumulating-kind matmul: the next inferred matmul overwrites
    nc_matmul(dst, st, eye, is_transpose=True)
    np.testing.assert_array_equal(dst.numpy().view(np.uint16), data.T.view(np.uint16))
    with raises_code("APK336"):
        nc_matmul(dst, st, eye, is_transpose=True, accumulate=True)
    with raises_code("APK336"):  # dst of another dtype
        nc_matmul(ndarray((16, 32), "float32", "psum"), st, eye, is_transpose=True)
    with raises_code("APK336"):  # moving not a selection matrix
        nc_matmul(dst, st, _sb(np.full((32, 32), 2.0, np.float32), "bfloat16"),
                  is_transpose=True)


# -- the rule against an independent model ----------------------------------------------------

W = 8
# column ranges on a coarse grid, so that operations overlap often; nonzero values, so that
# every overwrite and accumulation shows
_start, _width, _value = st.sampled_from([0, 2, 4]), st.sampled_from([2, 4, 8]), \
    st.sampled_from([-2, 1, 3])
_op = st.one_of(
    st.tuples(st.just("matmul"), _start, _width, st.sampled_from([None, None, True, False]),
              _value),
    st.tuples(st.just("memset"), _start, _width, st.none(), _value),
    st.tuples(st.just("read"), _start, _width, st.none(), st.just(0)))


class _Model:
    """SPEC section 4's words per column: last access, whether a matmul ever wrote it, whether
    a non-matmul instruction wrote it after the last matmul, and its value."""

    def __init__(self, target):
        self.target = target
        self.last = ["new"] * W
        self.mm = [False] * W
        self.other_after = [False] * W
        self.written = [False] * W
        self.value = [0.0] * W

    def matmul(self, cols, acc, v):
        if acc is None:
            kinds = {self.last[j] == "mm" for j in cols}
            if kinds == {True, False}:
                return "APK330"
            adding = kinds == {True}
        elif acc:
            if not all(self.mm[j] for j in cols):
                return "APK331"
            if self.target != "trn3" and any(self.other_after[j] for j in cols):
                return "APK332"
            adding = True
        else:
            adding = False
        for j in cols:
            self.value[j] = (self.value[j] if adding else 0.0) + 2.0 * v
            self.last[j], self.mm[j], self.other_after[j] = "mm", True, False
            self.written[j] = True
        return None

    def memset(self, cols, v):
        for j in cols:
            self.value[j], self.last[j], self.written[j] = float(v), "other", True
            self.other_after[j] = self.mm[j]
        return None

    def read(self, cols):  # into SBUF: unwritten elements propagate, no error (SPEC 4)
        for j in cols:
            self.last[j] = "other"
        return None


def _apply(dst, kind, a, b, acc, v):
    if kind == "matmul":
        mv = _sb(np.full((2, b - a), float(v), np.float32))
        nc_matmul(dst[:, a:b], _ones((2, 4)), mv, accumulate=acc)
    elif kind == "memset":
        memset(dst[:, a:b], float(v))
    else:
        tensor_copy(ndarray((4, b - a), "float32", "sbuf"), dst[:, a:b])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["trn2", "trn3"]), st.lists(_op, min_size=1, max_size=8))
def test_accumulate_rule_matches_a_model(target, ops):
    with targets.target(target):
        model = _Model(target)
        dst = ndarray((4, W), "float32", "psum")
        for kind, a, width, acc, v in ops:
            b = min(W, a + width)
            cols = range(a, b)
            want = (model.matmul(cols, acc, v) if kind == "matmul" else
                    model.memset(cols, v) if kind == "memset" else model.read(cols))
            if want is None:
                _apply(dst, kind, a, b, acc, v)
            else:
                with raises_code(want):
                    _apply(dst, kind, a, b, acc, v)
                return  # past an error the model and the tile are not compared further
        cols = [j for j in range(W) if model.written[j]]
        if cols:
            got = np.stack([dst[:, j:j + 1].numpy()[:, 0] for j in cols], axis=1)
            np.testing.assert_array_equal(got, np.tile([model.value[j] for j in cols], (4, 1)))


# The docstring's input rule, restated: which (stationary, moving) dtype pairs each target's
# tensor engine takes.
_DOC_INPUTS = {"float8_e4m3", "float8_e5m2", "bfloat16", "float16", "tfloat32", "float32"}
_ALL_DTYPES = ["float32", "tfloat32", "float16", "bfloat16", "float8_e4m3", "float8_e4m3fn",
               "float8_e5m2", "int8", "uint8", "int16", "int32", "uint32", "int64"]


def _doc_accepts(st_dt, mv_dt, target):
    allowed = _DOC_INPUTS | ({"float8_e4m3fn"} if target == "trn3" else set())
    if st_dt not in allowed or mv_dt not in allowed:
        return False
    if {st_dt, mv_dt} == {"float8_e4m3", "float8_e4m3fn"}:
        return False
    wide = {"float32", "tfloat32"}
    return (st_dt in wide) == (mv_dt in wide)


def test_input_dtype_pairs_follow_the_docstring():
    for target in ("trn1", "trn2", "trn3"):
        with targets.target(target):
            for st_dt in _ALL_DTYPES:
                for mv_dt in _ALL_DTYPES:
                    dst = ndarray((2, 2), "float32", "psum")
                    st, mv = _ones((2, 2), st_dt), _ones((2, 2), mv_dt)
                    if _doc_accepts(st_dt, mv_dt, target):
                        nc_matmul(dst, st, mv)
                        np.testing.assert_array_equal(dst.numpy(), np.full((2, 2), 2.0))
                    else:
                        with pytest.raises(apdsl.ApdslError) as err:
                            nc_matmul(dst, st, mv)
                        assert err.value.code in ("APK333", "APK334", "APK317"), \
                            (target, st_dt, mv_dt, err.value.code)


def test_trn3_bfloat16_dst_reaches_8192_columns():
    with targets.target("trn3"):
        b = RNG.standard_normal((2, 8192)).astype(np.float32)
        dst = ndarray((2, 8192), "bfloat16", "psum")
        nc_matmul(dst, _ones((2, 2), "bfloat16"), _sb(b, "bfloat16"))
        qb = b.astype(ml_dtypes.bfloat16).astype(np.float32)
        expect = np.tile(qb.sum(axis=0), (2, 1)).astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(dst.numpy(), expect)


def test_trn1_transpose_flag_is_a_plain_matmul_that_never_accumulates():
    with targets.target("trn1"):
        a = RNG.standard_normal((8, 4)).astype(np.float32)
        b = RNG.standard_normal((8, 6)).astype(np.float32)
        dst = ndarray((4, 6), "float32", "psum")
        nc_matmul(dst, _sb(a), _sb(b), is_transpose=True)  # a profiler label on trn1
        nc_matmul(dst, _sb(a), _sb(b), is_transpose=True)  # overwrites again
        np.testing.assert_allclose(dst.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)
        nc_matmul(dst, _sb(a), _sb(b))  # fresh after a transpose-kind write: overwrite
        np.testing.assert_allclose(dst.numpy(), a.T @ b, rtol=1e-5, atol=1e-5)
        with raises_code("APK336"):
            nc_matmul(dst, _sb(a), _sb(b), is_transpose=True, accumulate=True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("whole", [True, False])
def test_first_matmul_into_psum_is_numpys_product_bit_for_bit(dtype, whole):
    # the first matmul into a PSUM tile writes NumPy's float32 product itself (into the tile
    # when it is one C-contiguous matrix, else stored from a temporary); the next adds to it
    npd = np.float32 if dtype == "float32" else ml_dtypes.bfloat16
    a = RNG.standard_normal((128, 64)).astype(npd)
    b = RNG.standard_normal((128, 256)).astype(npd)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    tile = ndarray((64, 512 if not whole else 256), "float32", "psum")
    dst = tile if whole else tile[:, 128:384]
    stationary, moving = _sb(a, dtype), _sb(b, dtype)
    nc_matmul(dst, stationary, moving)
    first = np.matmul(a32.T, b32)
    assert np.array_equal(dst.numpy(), first)
    nc_matmul(dst, stationary, moving)
    assert np.array_equal(dst.numpy(), np.add(first, np.matmul(a32.T, b32)))
