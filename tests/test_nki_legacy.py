"""The legacy NKI API (`neuronxcc.nki`) on the current model: index grids and masks become
access patterns, instructions without `dst` return their tiles, tile writes issue the
instructions the compiler would.  Every kernel here is written for these tests; NumPy is the
oracle, and the current API's form of the same kernel is the oracle for `lower`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError
from apdsl.tensor.grid_view import IndexedTile
from tests.support import lowered_rows, raises_code

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# -- index grids are access patterns -----------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 16), cols=st.integers(1, 16), sp=st.integers(1, 3),
       sf=st.integers(1, 3), cp=st.integers(0, 5), cf=st.integers(0, 5),
       start=st.integers(0, 3))
def test_affine_index_selects_what_numpy_indexing_selects(rows, cols, sp, sf, cp, cf, start):
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    t = apdsl.from_numpy(a)
    i_p = nl.arange(start, start + rows)[:, None]
    i_f = nl.arange(cols)[None, :]
    view = t[sp * i_p + cp, i_f * sf + cf]
    assert isinstance(view, IndexedTile) and view.shape == (rows, cols)
    ip = np.arange(start, start + rows)[:, None]
    jf = np.arange(cols)[None, :]
    np.testing.assert_array_equal(view.view().numpy(), a[sp * ip + cp, jf * sf + cf])


def test_mgrid_is_numpys_mgrid_with_named_axes():
    a = rand(32, 48)
    t = apdsl.from_numpy(a)
    g = nl.mgrid[0:16, 8:40:2]
    i, j = g
    want = a[np.mgrid[0:16, 8:40:2][0], np.mgrid[0:16, 8:40:2][1]]
    np.testing.assert_array_equal(t[i, j].view().numpy(), want)
    np.testing.assert_array_equal(t[g.p, g.x].view().numpy(), want)


def test_an_integer_next_to_grid_indices_selects_that_index():
    a = rand(4, 16, 8)
    t = apdsl.from_numpy(a)
    i_p = nl.arange(16)[:, None]
    i_f = nl.arange(8)[None, :]
    np.testing.assert_array_equal(t[2, i_p, i_f].view().numpy(), a[2])


@pytest.mark.parametrize("expr, code", [
    ("i_p // 2", "APK940"), ("i_p * i_p", "APK940"), ("i_p % 4", "APK940"),
])
def test_an_index_that_is_not_affine_is_refused(expr, code):
    i_p = nl.arange(8)[:, None]  # noqa: F841  # the expressions below read it
    with raises_code(code):
        eval(expr)


# -- masks --------------------------------------------------------------------------------------

def test_a_masked_load_compute_store_touches_the_kept_box_only():
    @nki.jit
    def kernel(x):
        out = nl.ndarray([64, 256], dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(512)[None, :]
        t = nl.load(x[i_p, i_f])
        sq = nl.square(t, mask=((i_p < 64) & (i_f < 256)))
        assert sq.shape == (128, 512)  # the whole tile; the mask's part is computed
        nl.store(out[i_p, i_f], sq[i_p, i_f], mask=((i_p < 64) & (i_f < 256)))
        return out

    x = rand(128, 512)
    np.testing.assert_allclose(kernel(x), x[:64, :256] ** 2, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 128), m=st.integers(1, 64), lo=st.integers(0, 10))
def test_a_mask_keeps_exactly_the_positions_numpy_keeps(n, m, lo):
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(64)[None, :]
        nl.store(out, nl.zeros((128, 64), nl.float32))
        t = nl.load(x[i_p, i_f], mask=(i_p < n) & (i_f < m) & (i_f >= lo))
        nl.store(out[i_p, i_f], value=t, mask=(i_p < n) & (i_f < m) & (i_f >= lo))
        return out

    x = rand(128, 64) + 10
    want = np.zeros_like(x)
    want[:n, lo:m] = x[:n, lo:m]
    np.testing.assert_array_equal(kernel(x), want)


def test_python_and_between_masks_is_a_located_error():
    @nki.jit
    def kernel(x):
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(64)[None, :]
        return nl.load(x[i_p, i_f], mask=(i_p < 4 and i_f < 2))

    with raises_code("APK942") as err:
        kernel(rand(128, 64))
    assert err.value.span.file == __file__ and "&" in err.value.help


# -- instructions returning their tiles ---------------------------------------------------------

def test_legacy_forms_compute_what_numpy_computes():
    @nki.jit
    def kernel(x, y):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        a, b = nl.load(x), nl.load(y)
        s = nisa.tensor_tensor(a, b, np.add)              # NumPy ufuncs as operators
        e = nisa.activation(op=nl.exp, data=s, scale=0.5)
        m = nisa.tensor_reduce(np.maximum, e, axis=1)      # [128, 1]
        r = nisa.tensor_scalar(e, nl.subtract, m)
        c = nisa.tensor_copy(r, dtype=nl.bfloat16)
        nl.store(out, nisa.tensor_copy(c, dtype=nl.float32))
        return out

    x, y = rand(128, 64), rand(128, 64)
    e = np.exp(0.5 * (x + y))
    want = e - e.max(axis=1, keepdims=True)
    np.testing.assert_allclose(kernel(x, y), want, rtol=1e-2, atol=1e-2)


def test_a_current_form_with_a_positional_dst_and_a_number_operand_is_current():
    # `activation(dst, op=..., data=..., scale=0.5, bias=t)`: dst given by position and scale
    # a number (the current signature allows a float) is the current form, not a legacy call
    @nki.jit
    def kernel(x, b):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        a = nl.load(x)
        r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(r[...], op=nl.exp, data=a[...], scale=0.5, bias=nl.load(b))
        s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(s, data=r, op0=nl.multiply, operand0=3)
        nl.store(out, s)
        return out

    x, b = rand(128, 64), rand(128, 1)
    np.testing.assert_allclose(kernel(x, b), 3 * np.exp(0.5 * x + b), rtol=1e-5)


def test_iota_and_affine_select_take_index_expressions():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((2, 64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        i_p = nl.arange(64)[:, None]
        i_f = nl.arange(64)[None, :]
        ramp = nisa.iota(3 * i_p - i_f + 5, dtype=nl.float32)
        nl.store(out[0], ramp)
        tri = nisa.affine_select(pred=(i_p - i_f >= 0), on_true_tile=nl.load(x),
                                 on_false_value=nl.fp32.min)
        nl.store(out[1], tri)
        return out

    x = rand(64, 64)
    got = kernel(x)
    p, f = np.mgrid[0:64, 0:64]
    np.testing.assert_array_equal(got[0], 3 * p - f + 5)
    np.testing.assert_array_equal(got[1], np.where(p >= f, x, np.finfo(np.float32).min))


def test_an_index_tile_gathers_rows_as_an_indirect_dma():
    @nki.jit
    def kernel(data):
        out = nl.ndarray((32, 16), dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(32)[:, None]
        i_f = nl.arange(16)[None, :]
        idx = nisa.iota(3 * i_p + 1, dtype=nl.int32)
        nl.store(out, nl.load(data[idx, i_f]))
        return out

    data = rand(128, 16)
    np.testing.assert_array_equal(kernel(data), data[3 * np.arange(32) + 1])


# -- tile writes ----------------------------------------------------------------------------------

def matmul_kernels():
    @nki.jit
    def legacy(a_t, b, start):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.full((128, 512), start, nl.float32, buffer=nl.psum)
        for k in nl.affine_range(a_t.shape[0] // 128):
            acc += nisa.nc_matmul(nl.load(a_t[k * 128:(k + 1) * 128, :]),
                                  nl.load(b[k * 128:(k + 1) * 128, :]))
        res = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        res[...] = nisa.tensor_copy(acc)
        nl.store(out, res)
        return out

    return legacy


@pytest.mark.parametrize("start", [0.0, 1.5])
def test_plus_equals_of_a_matmul_accumulates_onto_the_psum_tile(start):
    a_t, b = rand(384, 128), rand(384, 512)
    got = matmul_kernels()(a_t, b, start)
    np.testing.assert_allclose(got, start + a_t.T @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("lazy", [True, False])
def test_lazy_initialization_changes_when_a_tile_is_filled_not_what_it_holds(lazy):
    # legacy `nl.zeros/full(..., lazy_initialization=...)` (NxDI's sliding-window attention)
    @nki.jit
    def kernel(a_t, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum, lazy_initialization=lazy)
        low = nl.full((128, 512), -2.5, nl.float32, buffer=nl.sbuf, lazy_initialization=lazy)
        acc += nisa.nc_matmul(nl.load(a_t), nl.load(b))
        nl.store(out, nl.add(nl.copy(acc), low))
        return out

    a_t, b = rand(128, 128), rand(128, 512)
    np.testing.assert_allclose(kernel(a_t, b), a_t.T @ b - 2.5, rtol=1e-4, atol=1e-3)


def test_plus_equals_onto_an_untouched_psum_tile_starts_the_accumulation():
    # nki-samples' attention v8a-v11: one PSUM slot per query tile, never zeroed; the first
    # `+=` overwrites (the NKI reference's inference: first write overwrites, later ones add)
    @nki.jit
    def kernel(a_t, b):
        out = nl.ndarray((3, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((3, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for q in nl.affine_range(3):
            for k in nl.affine_range(2):
                acc[q, :, :] += nisa.nc_matmul(nl.load(a_t[q, k * 128:(k + 1) * 128, :]),
                                               nl.load(b[k * 128:(k + 1) * 128, :]))
            res = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
            res[...] = nisa.tensor_copy(acc[q, :, :])
            nl.store(out[q], res)
        return out

    a_t, b = rand(3, 256, 128), rand(256, 512)
    want = np.einsum("qkm,kn->qmn", a_t, b)
    np.testing.assert_allclose(kernel(a_t, b), want, rtol=1e-4, atol=1e-3)


def test_plus_equals_onto_a_partly_untouched_psum_tile_is_refused():
    @nki.jit
    def kernel(a_t, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        acc[:, 0:256] = nisa.nc_matmul(nl.load(a_t), nl.load(b[:, 0:256]))
        acc += nisa.nc_matmul(nl.load(a_t), nl.load(b))  # half accumulating, half untouched
        nl.store(out, nisa.tensor_copy(acc))
        return out

    with pytest.raises(ApdslError) as e:
        kernel(rand(128, 128), rand(128, 512))
    assert e.value.code == "APK404", e.value  # the untouched half, read by the add


def test_assigning_a_result_computes_it_into_the_target():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        red = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
        for j in nl.static_range(4):
            red[:, j] = nisa.tensor_reduce(op=nl.add, data=t[:, nl.ds(j * 16, 16)], axis=1)
        red += 1.0
        red *= red
        nl.store(out, red)
        return out

    x = rand(128, 64)
    want = (x.reshape(128, 4, 16).sum(axis=2) + 1) ** 2
    np.testing.assert_allclose(kernel(x), want, rtol=1e-5)


def test_a_tile_write_outside_a_kernel_is_a_located_error():
    t = apdsl.ndarray((4, 4), "float32", "sbuf")
    with raises_code("APK946"):
        t[0:2, :] = 1.0


# -- the same instructions as the current API: `lower` ---------------------------------------

LEGACY_FILE = """\
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def k(a_t, b, x):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        acc += nisa.nc_matmul(nl.load(a_t[k * 128:(k + 1) * 128, :]),
                              nl.load(b[k * 128:(k + 1) * 128, :]))
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    t = nisa.tensor_copy(acc)
    e = nisa.activation(op=nl.exp, data=nl.load(x[i_p, i_f]), mask=(i_f < 256))
    u = nisa.tensor_tensor(t, e, nl.add, mask=(i_f < 256))
    nl.store(out[i_p, i_f], value=u, mask=(i_f < 256))
    return out
"""

CURRENT_FILE = """\
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def k(a_t, b, x):
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(2):
        nisa.nc_matmul(dst=acc, stationary=nl.load(a_t[k * 128:(k + 1) * 128, :]),
                       moving=nl.load(b[k * 128:(k + 1) * 128, :]))
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t, src=acc)
    e = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e[:, 0:256], op=nl.exp, data=nl.load(x)[:, 0:256])
    u = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=u[:, 0:256], data1=t[:, 0:256], data2=e[:, 0:256], op=nl.add)
    nl.store(out[:, 0:256], value=u[:, 0:256])
    return out
"""


def _lower(tmp_path: Path, source: str) -> list[dict]:
    return lowered_rows(tmp_path, source, {"a_t": rand(256, 128), "b": rand(256, 512),
                                           "x": rand(128, 512)})


def test_legacy_and_current_forms_lower_to_the_same_instructions(tmp_path):
    legacy = _lower(tmp_path, LEGACY_FILE)
    current = _lower(tmp_path, CURRENT_FILE)
    assert [r["op"] for r in legacy] == [r["op"] for r in current]
    assert legacy == current


def test_legacy_kernel_runs_from_the_command_line(tmp_path):
    (tmp_path / "kern.py").write_text(LEGACY_FILE)
    a_t, b, x = rand(256, 128), rand(256, 512), rand(128, 512)
    for name, arr in (("a_t", a_t), ("b", b), ("x", x)):
        np.save(tmp_path / f"{name}.npy", arr)
    proc = subprocess.run([sys.executable, "-m", "apdsl", "run", "kern.py", "-i", "a_t=a_t.npy",
                           "-i", "b=b.npy", "-i", "x=x.npy", "-o", "out.npy"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    want = a_t.T @ b + np.exp(x)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want[:, :256],
                               rtol=1e-4, atol=1e-3)


def test_errors_point_at_the_users_line():
    source = textwrap.dedent("""\
        import apdsl.nki as nki
        import apdsl.nki.language as nl

        @nki.jit
        def kernel(a):
            i_p = nl.arange(128)[:, None]
            return nl.load(a[i_p, nl.arange(8)[None, :] + 4])
        """)
    scope: dict = {}
    exec(compile(source, "user_kernel.py", "exec"), scope)
    with pytest.raises(ApdslError) as err:
        scope["kernel"](rand(128, 8))
    assert err.value.code == "APK944"


# -- block dimensions and direct allocation --------------------------------------------------

def test_block_dimensions_are_tiles_indexed_by_ints():
    @nki.jit
    def kernel(x):
        n = x.shape[0] // 128
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((n, 2, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        acc = nl.zeros((n, nl.par_dim(128), 64), dtype=nl.float32)
        for i in nl.affine_range(n):
            for j in nl.affine_range(2):
                buf[i, j] = nl.load(x[i * 128:(i + 1) * 128, j * 64:(j + 1) * 64])
                acc[i] += buf[i, j]
        for i in nl.affine_range(n):
            nl.store(out[i * 128:(i + 1) * 128, 0:64], value=acc[i, :, :])
            nl.store(out[i * 128:(i + 1) * 128, 64:128], value=buf[i][1])
        assert buf.shape == (n, 2, 128, 64)
        return out

    x = rand(384, 128)
    want = np.concatenate([x[:, :64] + x[:, 64:], x[:, 64:]], axis=1)
    np.testing.assert_allclose(kernel(x), want, rtol=1e-6)


def test_a_block_tensor_takes_the_capacity_of_one_block():
    # 64 blocks of a full PSUM bank each: 32 times PSUM, which the compiler placed block by
    # block; apdsl charges one block
    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        ps = nl.ndarray((8, 8, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        t = nl.load(a)
        ps[3, 5] = nisa.nc_matmul(t[:, 0:128], t)
        nl.store(out, nisa.tensor_copy(ps[3, 5]))
        return out

    a = rand(128, 512)
    np.testing.assert_allclose(kernel(a), a[:, :128].T @ a, rtol=1e-4, atol=1e-3)


def test_indexing_the_blocks_with_a_slice_is_a_located_error():
    @nki.jit
    def kernel(a):
        t = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        return t[0:2]

    with raises_code("APK150") as err:
        kernel(rand(128, 64))
    assert err.value.span.file == __file__


def test_direct_allocation_places_tiles_and_a_shared_slot_shares_the_bytes():
    import apdsl.nki.compiler as ncc

    @nki.jit
    def kernel(x):
        out = nl.ndarray((256, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        for i in nl.affine_range(2):
            buf[i] = nl.load(x[i * 128:(i + 1) * 128, :])
        for i in nl.affine_range(2):
            nl.store(out[i * 128:(i + 1) * 128, :], value=buf[i])
        return out

    x = rand(256, 64)
    np.testing.assert_array_equal(kernel(x), x)

    @nki.jit
    def aliased(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        # one slot for two blocks: both are names of the same bytes, so block 0 read after
        # block 1 was written holds what block 1 wrote (as on hardware)
        buf = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(1,)))
        buf[0] = nl.load(x[0:128, :])
        buf[1] = nl.load(x[128:256, :])
        nl.store(out, value=buf[0])
        return out

    np.testing.assert_array_equal(aliased(x), x[128:256])


def test_psum_modulo_allocation_uses_banks():
    import apdsl.nki.compiler as ncc

    @nki.jit
    def kernel(a):
        out = nl.ndarray((2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        ps = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32,
                        buffer=ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)))
        for i in nl.affine_range(2):
            ps[i] = nisa.nc_matmul(t[:, i * 128:(i + 1) * 128], t)
            nl.store(out[i], nisa.tensor_copy(ps[i]))
        return out

    a = rand(128, 512)
    got = kernel(a)
    for i in range(2):
        np.testing.assert_allclose(got[i], a[:, i * 128:(i + 1) * 128].T @ a, rtol=1e-4,
                                   atol=1e-3)


# -- the rest of the legacy surface ----------------------------------------------------------

def test_reductions_are_operators_as_values():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 2), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out[:, 0:1], nisa.tensor_reduce(op=nl.max, data=t, axis=1))
        nl.store(out[:, 1:2], nisa.tensor_reduce(op=nl.sum, data=t, axis=1))
        return out

    x = rand(128, 32)
    got = kernel(x)
    np.testing.assert_allclose(got[:, 0], x.max(axis=1))
    np.testing.assert_allclose(got[:, 1], x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_static_cast_and_dtype_constants():
    np.testing.assert_array_equal(nl.static_cast(np.array([1.5, 2.5, 1e9]), nl.int16),
                                  np.array([2, 2, 32767], np.int16))
    assert nl.fp32.min == float(np.finfo(np.float32).min)
    assert nl.float32.min == np.finfo(np.float32).min and nl.int8.max == 127
    assert np.zeros(2, dtype=nl.bfloat16).dtype == nl.bfloat16.np


def test_benchmark_gives_the_profile_estimate():
    @nki.benchmark(warmup=5, iters=10)
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(x)))
        return out

    x = rand(128, 512)
    np.testing.assert_allclose(kernel(x), np.exp(x), rtol=1e-5)
    latency = kernel.benchmark_result.nc_latency.get_latency_percentile(50)
    assert 0 < latency < 1000  # microseconds: three instructions on one 256 KiB tile


def test_a_one_dimensional_load_is_a_per_partition_column():
    """The legacy fused-mamba tutorial loads `A[c:c + 128, i]` (1-D on HBM: an integer index
    drops its dimension) as "A_i: [par_dim(channels)]" and uses it as a per-partition scale:
    apdsl's (n, 1) tile, one element a partition."""
    @nki.jit
    def kernel(a, d):
        out = nl.ndarray(d.shape, dtype=d.dtype, buffer=nl.shared_hbm)
        for c in nl.affine_range(2):
            col = nl.load(a[c * 64:(c + 1) * 64, 3])
            assert tuple(col.shape) == (64, 1)
            t = nl.load(d[c * 64:(c + 1) * 64, :])
            nl.store(out[c * 64:(c + 1) * 64, :], nisa.tensor_scalar(t, np.multiply, col))
        return out

    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 5)).astype(np.float32)
    d = rng.standard_normal((128, 16)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(kernel)(a, d), d * a[:, 3:4])


@pytest.mark.parametrize("value, dtype", [(100, np.int32), (2.5, np.float32), (-3, np.float32)])
def test_storing_a_number_fills_every_element(value, dtype):
    """The SDK's nl.store example stores a scalar into an HBM tensor, "effectively a memset"."""
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value)
        return out

    got = nki.simulate(kernel)(np.zeros((128, 40), dtype))
    np.testing.assert_array_equal(got, np.full((128, 40), value, dtype))


def test_an_index_expression_reduces_free_axes_that_are_not_trailing():
    """The legacy AveragePool2D tutorial reduces axes F2 and F4 of a 5-D index expression:
    its access pattern takes the reduced axes last; the kept axes stay in their order."""
    @nki.jit
    def window_sums(x, w):
        c, h, wd = x.shape
        out = nl.ndarray((c, h // w, wd // w), dtype=x.dtype, buffer=nl.shared_hbm)
        ic, ir, jr, icol, jcol = nl.mgrid[0:c, 0:h // w, 0:w, 0:wd // w, 0:w]
        whole = nl.load(x)
        nl.store(out, value=nl.sum(whole[ic, w * ir + jr, w * icol + jcol], axis=(2, 4)))
        return out

    @nki.jit
    def sliding_max(x):
        rows, cols = x.shape
        out = nl.ndarray((rows - 1, cols - 1), dtype=x.dtype, buffer=nl.shared_hbm)
        r, dr, c = nl.mgrid[0:rows - 1, 0:2, 0:cols]
        pairs = nl.load(x[r + dr, c])
        r, dr, c, dc = nl.mgrid[0:rows - 1, 0:2, 0:cols - 1, 0:2]
        nl.store(out, value=nl.max(pairs[r, dr, c + dc], axis=[1, 3]))
        return out

    rng = np.random.default_rng(5)
    x = rng.integers(-8, 8, (16, 6, 9)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(window_sums)(x, 3),
                                  x.reshape(16, 2, 3, 3, 3).sum(axis=(2, 4)))
    y = rng.standard_normal((33, 7)).astype(np.float32)
    want = np.maximum.reduce([y[:-1, :-1], y[1:, :-1], y[:-1, 1:], y[1:, 1:]])
    np.testing.assert_array_equal(nki.simulate(sliding_max)(y), want)


def test_a_plain_tile_still_reduces_trailing_axes_only():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((8, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.sum(nl.load(x), axis=[1, 3]))
        return out

    with raises_code("APK158") as err:
        nki.simulate(kernel)(np.ones((8, 2, 3, 4), np.float32))
    assert "last contiguous dim(s)" in str(err.value)


def test_a_tiles_broadcast_to_method_is_nl_broadcast_to():
    """The legacy reference's `tensor.broadcast_to(shape)` (NumPy's broadcast rules), as the
    legacy fused-mamba tutorial calls it on a one-row `nl.load` result: the same tile as
    `nl.broadcast_to(t, shape)`, across partitions and along the free dimension."""
    @nki.jit
    def kernel(x, row, col):
        out = nl.ndarray((96, 40), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        across = nl.load(row).broadcast_to((96, 40))     # [1, 40] -> every partition
        along = nl.load(col)
        along_b = along.broadcast_to((96, 40))             # [96, 1] -> every column
        same = nl.broadcast_to(nl.load(row), shape=(96, 40))
        prod = nisa.tensor_tensor(t, across, op=nl.multiply)
        summed = nisa.tensor_tensor(prod, along_b, op=nl.add)
        nl.store(out, nisa.tensor_tensor(summed, same, op=nl.subtract))
        return out

    x, row, col = rand(96, 40), rand(1, 40), rand(96, 1)
    np.testing.assert_allclose(kernel(x, row, col), x * row + col - row, rtol=1e-6, atol=1e-6)


def test_a_broadcast_to_the_shape_numpy_refuses_is_a_located_error():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((8, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.load(x).broadcast_to((8, 8)))
        return out

    with raises_code("APK926") as err:
        kernel(rand(4, 8))
    assert err.value.span.file == __file__
    with raises_code("APK946"):
        apdsl.ndarray((1, 4), "float32", "sbuf").broadcast_to((4, 4))


@nki.jit
def window_sums_2x2(x):
    """out[r, c] = x[r:r + 2, c:c + 2].sum(), 128 output rows a tile; the last tile's rows past
    the end are masked off (a tile may keep none of them)."""
    h, w = x.shape
    out = nl.ndarray((h - 1, w - 1), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((h + 127) // 128):
        i_p, i_dr, i_c = nl.mgrid[0:128, 0:2, 0:w]
        rows = nl.load(x[t * 128 + i_p + i_dr, i_c], mask=(t * 128 + i_p < h - 1))
        i_p, i_dr, i_c, i_dc = nl.mgrid[0:128, 0:2, 0:w - 1, 0:2]
        sums = nl.sum(rows[i_p, i_dr, i_c + i_dc], axis=[1, 3], mask=(t * 128 + i_p < h - 1))
        assert tuple(sums.shape) == (128, w - 1)   # the whole tile, less the reduced axes
        o_p, o_c = nl.mgrid[0:128, 0:w - 1]
        nl.store(out[t * 128 + o_p, o_c], value=sums, mask=(t * 128 + o_p < h - 1))
    return out


@pytest.mark.parametrize("h", [129, 200, 256])
def test_a_masked_reduction_gives_the_whole_tile_less_its_reduced_axes(h):
    """A masked nl reduction's result is its operand's tile less the reduced axes, of which the
    mask's part is computed (so a later mask over the result's own grid narrows it); a mask that
    keeps nothing (h=129: the second tile) still gives the tile, with nothing computed."""
    x = rand(h, 9)
    want = x[:-1, :-1] + x[1:, :-1] + x[:-1, 1:] + x[1:, 1:]
    np.testing.assert_allclose(nki.simulate(window_sums_2x2)(x), want, rtol=1e-5, atol=1e-5)


def test_a_masked_call_that_keeps_nothing_issues_nothing(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent("""\
        import nki
        import nki.language as nl

        @nki.jit
        def k(x):
            out = nl.ndarray((64, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            i_p, i_f = nl.mgrid[0:64, 0:8]
            t = nl.load(x[i_p + 64, i_f], mask=(i_p + 64 < 64))
            e = nl.exp(t, mask=(i_p < 0))
            nl.store(out[i_p, i_f], value=e, mask=(i_p < 0))
            nl.store(out, value=2.0)
            return out
        """))
    np.save(tmp_path / "x.npy", rand(64, 8))
    proc = subprocess.run([sys.executable, "-m", "apdsl", "lower", "k.py", "-i", "x=x.npy",
                           "--json"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # the store of a number only (memset, then the DMA): no load, no exp, no masked store
    assert [json.loads(line)["op"] for line in proc.stdout.splitlines()] == ["memset",
                                                                             "dma_copy"]


@pytest.mark.parametrize("grid", [0, (2, 0), (0, 3)])
def test_a_launch_grid_with_no_program_says_so(grid):
    """Neither reference defines a launch of no program (current: the number of logical
    cores, 1 or 2; legacy: SPMD grid sizes, one program per position): APK141 says that the
    kernel would never run, at the launch."""
    @nki.jit
    def kernel(x):
        return x

    with raises_code("APK141") as err:
        kernel[grid]
    assert "no program" in err.value.message and "never run" in err.value.message
    assert err.value.span.file == __file__


# -- nl.divide in the legacy API ---------------------------------------------------------------

LEGACY_DIVIDE = """\
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def k(a, b, c):
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y, col = nl.load(a), nl.load(b), nl.load(c)
    nl.store(out[0], nl.divide(x, y))
    nl.store(out[1], x / col)
    nl.store(out[2], 1.0 / y)
    t = nl.copy(x)
    t /= 8.0
    nl.store(out[3], 3.0 / y + t)
    return out
"""


def _divide_inputs(tmp_path: Path) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(17)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = (rng.uniform(0.25, 4.0, (128, 64)) * rng.choice([-1.0, 1.0], (128, 64))
         ).astype(np.float32)
    c = rng.uniform(0.25, 4.0, (128, 1)).astype(np.float32)
    for name, arr in (("a", a), ("b", b), ("c", c)):
        np.save(tmp_path / f"{name}.npy", arr)
    return a, b, c


def _apdsl_divide(tmp_path: Path, source: str, command: str, *extra: str):
    (tmp_path / "kern.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "apdsl", command, "kern.py", "-i", "a=a.npy",
                           "-i", "b=b.npy", "-i", "c=c.npy", *extra],
                          cwd=tmp_path, capture_output=True, text=True)


def test_legacy_nl_divide_is_the_reciprocal_then_a_multiply(tmp_path):
    """The legacy reference's nl.divide ("a tile that has x / y"), `/` and `/=`: the
    divisor's float32 reciprocal, then a multiply (as the legacy attention tutorial's nki.isa
    version divides): bit-exact to NumPy doing the same in float32, within 1 ulp of x / y."""
    a, b, c = _divide_inputs(tmp_path)
    proc = _apdsl_divide(tmp_path, LEGACY_DIVIDE, "run", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    got = np.load(tmp_path / "out.npy")
    one = np.float32(1.0)
    wants = [a * (one / b), a * (one / c), one / b, np.float32(3.0) * (one / b) + a / 8]
    for g, w, exact in zip(got, wants, [a / b, a / c, 1 / b, 3 / b + a / 8]):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, exact, rtol=2.5e-7, atol=0)
    proc = _apdsl_divide(tmp_path, LEGACY_DIVIDE, "lower", "--json")
    assert proc.returncode == 0, proc.stderr
    by_line: dict[int, list[str]] = {}
    for row in map(json.loads, proc.stdout.splitlines()):
        by_line.setdefault(row["line"], []).append(row["op"])
    assert by_line[11] == ["reciprocal", "tensor_tensor", "dma_copy"]    # tile / tile
    assert by_line[12] == ["reciprocal", "tensor_scalar", "dma_copy"]    # tile / [P, 1]
    assert by_line[13] == ["reciprocal", "dma_copy"]                     # 1.0 / tile
    assert by_line[15] == ["tensor_scalar"]                              # t /= 8.0


@pytest.mark.parametrize("change, code", [
    (("from neuronxcc import nki\nimport neuronxcc.nki.isa as nisa\n"
      "import neuronxcc.nki.language as nl\n",
      "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"), "APK183"),
    (("nl.divide(x, y)", "nisa.tensor_tensor(x, y, op=nl.divide)"), "APK183"),
    (("x, y, col = nl.load(a), nl.load(b), nl.load(c)",
      "x, y, col = nl.load(a, dtype=nl.int32), nl.load(b), nl.load(c)"), "APK183"),
])
def test_divide_stays_refused_outside_the_legacy_function(tmp_path, change, code):
    """The current API (its reference: divide "not supported"), divide as an instruction's
    operator in either API (no instruction takes it), and integer tiles (the legacy reference
    does not say how their quotient rounds) stay located refusals."""
    _divide_inputs(tmp_path)
    proc = _apdsl_divide(tmp_path, LEGACY_DIVIDE.replace(*change), "run")
    assert proc.returncode == 1 and f"error[{code}]" in proc.stderr, proc.stderr
    assert "kern.py:11:" in proc.stderr.splitlines()[0] and "Traceback" not in proc.stderr


LEGACY_MATMUL = """\
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def k(a, b, c):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a[0:64, :])
    y = nl.load(b)
    y_t = nl.transpose(y)
    nl.store(out, nl.matmul(y_t, x, transpose_x=True))
    return out
"""


def test_legacy_matmul_takes_a_psum_tile_through_sbuf(tmp_path):
    """The legacy nl.matmul takes its operands in SBUF and the legacy API leaves tiles' memory
    to the compiler: an nl.transpose result (PSUM) is copied to SBUF first, as the legacy
    attention example's nki.isa version does (nc_transpose, then tensor_copy).  The current
    API keeps its located refusal."""
    a, b, _ = _divide_inputs(tmp_path)
    proc = _apdsl_divide(tmp_path, LEGACY_MATMUL, "run", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), b @ a[0:64, :],
                               rtol=1e-4, atol=1e-4)
    proc = _apdsl_divide(tmp_path, LEGACY_MATMUL, "lower", "--json")
    assert proc.returncode == 0, proc.stderr
    ops = [(row["line"], row["op"]) for row in map(json.loads, proc.stdout.splitlines())]
    assert ops[2:] == [(10, "nc_transpose"), (11, "tensor_copy"), (11, "nc_matmul"),
                       (11, "tensor_copy"), (11, "dma_copy")]
    current = LEGACY_MATMUL.replace("from neuronxcc import nki\nimport neuronxcc.nki.language",
                                    "import nki\nimport nki.language")
    proc = _apdsl_divide(tmp_path, current, "run")
    assert proc.returncode == 1 and "error[APK309]" in proc.stderr, proc.stderr
