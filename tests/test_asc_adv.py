"""asc.adv's Matmul API and asc.lib.host's tiling (pyasc's high-level matmul), on kernels
written for apdsl in the tutorials' style: the host tiling's fields describe a split the kernel
reads; `iterate_all` writes each core's block, `with matmul.iterate() as count:` runs once per
base block and `get_tensor_c` delivers it to UB for a vector epilogue; a mixed kernel's cube
core serves (its run ends at `register_matmul`), a `matmul_cube_only` kernel's cube core calls
the API itself.  Oracle: NumPy's A @ B (+ bias) in float32."""

from __future__ import annotations

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc

asc.install()
import asc.lib.host as host  # noqa: E402


def _tiling(m, n, k, dim, bias=False, split=None, first_n=False):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT16, False)
    t.set_c_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(dim)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    if split is not None:
        t.set_fix_split(*split)
    if first_n:
        t.set_traverse(host.MatrixTraverse.FIRSTN)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


@asc.jit
def _block_offsets(tiling: asc.adv.TCubeTiling):
    idx = asc.get_block_idx()
    rows = tiling.m.ceildiv(tiling.single_core_m)
    mi = idx % rows
    ni = idx // rows
    tail_m = min(tiling.m - mi * tiling.single_core_m, tiling.single_core_m)
    tail_n = min(tiling.n - ni * tiling.single_core_n, tiling.single_core_n)
    return (mi * tiling.single_core_m * tiling.k_a, ni * tiling.single_core_n,
            mi * tiling.single_core_m * tiling.n + ni * tiling.single_core_n, tail_m, tail_n)


@asc.jit
def _mixed(a: asc.GlobalAddress, b: asc.GlobalAddress, bias: asc.GlobalAddress,
           c: asc.GlobalAddress, tiling: asc.adv.TCubeTiling, use_bias: int):
    oa, ob, oc, tm, tn = _block_offsets(tiling)
    ag, bg, cg, zg = (asc.GlobalTensor() for _ in range(4))
    ag.set_global_buffer(a + oa)
    bg.set_global_buffer(b + ob)
    cg.set_global_buffer(c + oc)
    zg.set_global_buffer(bias + ob)
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(asc.TPipe(), c, mm, tiling)
    if asc.get_block_idx() < tiling.used_core_num:
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        if use_bias == 1:
            mm.set_bias(zg)
        mm.set_tail(tm, tn)
        mm.iterate_all(cg)
        mm.end()


def _data(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-4, 5, n).astype(np.float32)
    return a, b, bias


@pytest.mark.parametrize(("m", "n", "k", "dim", "bias"), [
    (64, 96, 32, 4, False), (100, 70, 48, 6, True), (32, 512, 16, 2, False)])
def test_iterate_all_on_a_mixed_kernel_matches_numpy(m, n, k, dim, bias):
    t = _tiling(m, n, k, dim, bias=bias, split=(32, 32, -1))
    assert 1 <= t.used_core_num <= dim and t.single_core_m % t.base_m == 0
    a, b, z = _data(m, n, k)
    c = np.zeros((m, n), np.float32)
    _mixed[-(-dim // 2), None](a, b, z, c, t, int(bias))
    want = a.astype(np.float32) @ b.astype(np.float32) + (z if bias else 0)
    np.testing.assert_array_equal(c, want)


@asc.jit
def _epilogue(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
              tiling: asc.adv.TCubeTiling, alpha: float):
    oa, ob, oc, tm, tn = _block_offsets(tiling)
    ag, bg, cg = (asc.GlobalTensor() for _ in range(3))
    ag.set_global_buffer(a + oa)
    bg.set_global_buffer(b + ob)
    cg.set_global_buffer(c + oc)
    pipe = asc.TPipe()
    out = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=out, num=1, len=tiling.base_m * tiling.base_n * 4)
    mm = asc.adv.Matmul(
        a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
        b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
        c=asc.adv.MatmulType(asc.TPosition.VECCALC, asc.CubeFormat.ND, cg.dtype))
    asc.adv.register_matmul(pipe, c, mm, tiling)
    mm.set_tensor_a(ag)
    mm.set_tensor_b(bg)
    rows = tiling.single_core_m // tiling.base_m
    with mm.iterate() as count:
        t = out.alloc_tensor(asc.float32)
        mm.get_tensor_c(t, en_sequential_write=True)
        asc.muls(t, t, alpha, count=tiling.base_m * tiling.base_n)
        out.enque(t)
        t = out.deque(asc.float32)
        start = count % rows * tiling.base_m * tiling.n + count // rows * tiling.base_n
        asc.data_copy(cg[start:], t, asc.DataCopyParams(
            tiling.base_m, tiling.base_n * 4 // 32, 0, (tiling.n - tiling.base_n) * 4 // 32))
        out.free_tensor(t)
    mm.end()


def test_iterate_runs_its_body_once_per_base_block_into_ub():
    m, n, k = 128, 96, 32
    t = _tiling(m, n, k, 2, split=(32, 32, -1))
    assert t.used_core_num == 2 and t.single_core_m % 32 == 0 and t.single_core_n % 32 == 0
    a, b, _ = _data(m, n, k, 1)
    c = np.zeros((m, n), np.float32)
    _epilogue[1, None](a, b, c, t, 0.5)
    np.testing.assert_array_equal(c, (a.astype(np.float32) @ b.astype(np.float32)) * 0.5)


@asc.jit(matmul_cube_only=True)
def _cube(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress,
          tiling: asc.adv.TCubeTiling):
    if asc.ascend_is_aic():
        oa, ob, oc, tm, tn = _block_offsets(tiling)
        ag, bg, cg = (asc.GlobalTensor() for _ in range(3))
        ag.set_global_buffer(a + oa)
        bg.set_global_buffer(b + ob)
        cg.set_global_buffer(c + oc)
        mm = asc.adv.Matmul(
            a=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, ag.dtype),
            b=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, bg.dtype),
            c=asc.adv.MatmulType(asc.TPosition.GM, asc.CubeFormat.ND, cg.dtype))
        asc.adv.register_matmul(asc.TPipe(), c, mm, tiling)
        mm.set_tensor_a(ag)
        mm.set_tensor_b(bg)
        mm.set_tail(tm, tn)
        mm.iterate_all(cg)
        mm.end()


def test_a_cube_only_kernel_calls_the_api_on_its_cube_cores():
    m, n, k = 32, 256, 16
    t = _tiling(m, n, k, 4)
    a, b, _ = _data(m, n, k, 2)
    c = np.zeros((m, n), np.float32)
    _cube[t.used_core_num, None](a, b, c, t)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_the_split_uses_the_cores_in_whole_base_blocks():
    t = _tiling(1024, 640, 256, 2, split=(256, 128, -1))
    assert (t.used_core_num, t.single_core_m, t.single_core_n) == (2, 512, 640)
    t = _tiling(128, 30720, 64, 24)
    assert t.used_core_num == 24 and t.single_core_n * 24 >= 30720


def test_asc_adv_names_apdsl_lacks_are_apk660_naming_them():
    with pytest.raises(apdsl.ApdslError, match=r"asc\.adv\.softmax") as e:
        asc.adv.softmax  # noqa: B018
    assert e.value.code == "APK660" and e.value.span.file == __file__


def _typed_tiling(m, n, k, dtype, c_position, bias, trans_b=False):
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_a_type(host.TPosition.GM, host.CubeFormat.ND, dtype, False)
    t.set_b_type(host.TPosition.GM, host.CubeFormat.ND, dtype, trans_b)
    t.set_c_type(c_position, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_bias_type(host.TPosition.GM, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_dim(16)
    t.set_org_shape(m, n, k)
    t.set_shape(m, n, k)
    t.enable_bias(bias)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0
    return tiling


@pytest.mark.parametrize("dtype", ["DT_FLOAT16", "DT_FLOAT"])
@pytest.mark.parametrize("c_position", ["GM", "VECCALC"])
@pytest.mark.parametrize(("m", "n", "k", "bias", "trans_b"), [
    (1024, 512, 256, True, False), (128, 30720, 64, False, False), (40, 8, 8, True, True),
    (4096, 4096, 4096, True, False), (96, 1000, 24, False, True)])
def test_the_tiling_keeps_every_base_block_within_the_documented_limits(dtype, c_position, m,
                                                                         n, k, bias, trans_b):
    # oracle: the AscendC TCubeTiling page's table 2 (sizes of Atlas A2), and two C blocks in
    # UB for a C the kernel takes into a vector position
    t = _typed_tiling(m, n, k, host.DataType[dtype], host.TPosition[c_position], bias, trans_b)
    size = 4 if dtype == "DT_FLOAT" else 2
    bm, bn, bk = t.base_m, t.base_n, t.base_k
    assert bm * bk * size * t.db_l0a <= 64 * 1024 and bk * bn * size * t.db_l0b <= 64 * 1024
    assert bm * bn * 4 * t.db_l0c <= 128 * 1024
    assert not bias or bn * 4 <= 1024
    assert c_position == "GM" or 2 * bm * bn * 4 <= 192 * 1024
    assert bm % 16 == 0 and bn % 16 == 0 and bk % (32 // size if trans_b else 16) == 0
    assert bm <= -(-t.single_core_m // 16) * 16 and bn <= -(-t.single_core_n // 16) * 16
    assert t.single_core_m % bm == 0 and t.single_core_n % bn == 0


def test_a_fixed_base_block_past_l0c_is_apk674():
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_shape(512, 512, 64)
    t.set_fix_split(256, 256, -1)
    with pytest.raises(apdsl.ApdslError, match="exceeds L0C") as e:
        t.get_tiling(asc.adv.TCubeTiling())
    assert e.value.code == "APK674"


@pytest.mark.parametrize(("x", "y"), [(10, 3), (9, 3), (1, 16), (0, 5), (30720, 1280), (-5, 2)])
def test_ceildiv_is_pyascs_rounding_up_division(x, y):
    assert asc.ceildiv(x, y) == (x + y - 1) // y  # pyasc's definition
    if y > 0:
        assert asc.ceildiv(x, y) == -(-x // y)  # the ceiling of x / y
    import asc as plain
    assert plain.ceildiv is asc.ceildiv and plain.language.ceildiv is asc.ceildiv


@pytest.mark.parametrize("args", [(5, 0), (5.0, 2), (True, 2)])
def test_ceildiv_of_no_ints_is_a_located_apk666(args):
    with pytest.raises(apdsl.ApdslError) as e:
        asc.ceildiv(*args)
    assert e.value.code == "APK666" and e.value.span.file == __file__


def test_a_fixed_split_is_not_held_to_apdsls_own_ub_choice():
    # tutorial 05: set_fix_split(256, 128, -1) with C in VECCALC; its kernel takes one 128 KiB
    # C block into UB (a queue of depth 1), which fits: not APK674
    t = host.MultiCoreMatmulTiling(host.get_ascendc_platform())
    t.set_c_type(host.TPosition.VECCALC, host.CubeFormat.ND, host.DataType.DT_FLOAT)
    t.set_shape(1024, 640, 256)
    t.set_fix_split(256, 128, -1)
    tiling = asc.adv.TCubeTiling()
    assert t.get_tiling(tiling) == 0 and (tiling.base_m, tiling.base_n) == (256, 128)
