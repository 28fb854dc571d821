"""Legacy (`neuronxcc.nki`) calls whose meaning the NKI docs settle, run as the same
instructions as their current forms: `dma_transpose(src, dge_mode=...)`, `local_gather(src,
index, n, valid)` returning its tile, `nl.par_dim` in an HBM shape, and the legacy
`nl.shared_identity_matrix` (a shared HBM constant the kernel loads).  Every kernel is written
for these tests; NumPy is the oracle, and the current form's `lower` output is the oracle for
the legacy form's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from support import apdsl_in_process, lowered_rows, raises_code

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

RNG = np.random.default_rng(11)


def _run(tmp_path: Path, source: str, inputs: dict[str, np.ndarray], *extra: str):
    (tmp_path / "kern.py").write_text(textwrap.dedent(source))
    args = []
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += ["-i", f"{name}={name}.npy"]
    return apdsl_in_process("run", "kern.py", *args, "-o", "out.npy", *extra, cwd=tmp_path)


# -- dma_transpose(src, dge_mode=...) ------------------------------------------------------------

LEGACY_TRANSPOSE = """\
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl
    from neuronxcc.nki.isa.constants import dge_mode


    @nki.jit
    def k(a):
        t = nisa.dma_transpose(a[:, :], dge_mode=dge_mode.MODE)
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out
    """

CURRENT_TRANSPOSE = """\
    import nki
    import nki.isa as nisa
    import nki.language as nl


    @nki.jit
    def k(a):
        t = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=a, dge_mode=nisa.dge_mode.MODE)
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=t)
        return out
    """


@pytest.mark.parametrize("mode", ["hwdge", "unknown"])
def test_legacy_dma_transpose_takes_dge_mode_as_its_docstring_says(tmp_path, mode):
    # the legacy docstring: ":param dge_mode: (optional) specify which Descriptor Generation
    # Engine (DGE) mode to use ... HWDGE is only supported for NeuronCore-v3+"
    a = RNG.standard_normal((16, 96)).astype(np.float16)
    legacy = LEGACY_TRANSPOSE.replace("MODE", mode)
    proc = _run(tmp_path, legacy, {"a": a})
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), a.T)
    rows = lowered_rows(tmp_path, textwrap.dedent(legacy), {"a": a})
    assert rows == lowered_rows(tmp_path, textwrap.dedent(CURRENT_TRANSPOSE.replace("MODE", mode)), {"a": a})
    assert rows[0]["op"] == "dma_transpose"


def test_legacy_dma_transpose_keeps_the_hwdge_rules(tmp_path):
    # hwdge: a 2-d source has 16 rows (the isa reference), whichever form calls it
    a = RNG.standard_normal((32, 96)).astype(np.float16)
    proc = _run(tmp_path, LEGACY_TRANSPOSE.replace("MODE", "hwdge"), {"a": a})
    assert proc.returncode == 1 and "APK396" in proc.stderr


# -- local_gather(src_buffer, index, num_elem_per_idx, num_valid_indices) -> tile ----------------

def _gathered(src: np.ndarray, index: np.ndarray, n: int, valid: int) -> np.ndarray:
    """The legacy docstring's NumPy semantics: each 16-partition core flattens its index slice
    partition-first, keeps `valid` indices, and takes `n` elements at each (an element offset,
    a multiple of n) from each of its own partitions."""
    parts = src.shape[0]
    flat = src.reshape(parts, -1)
    out = np.empty((parts, valid, n), src.dtype)
    for core in range(0, parts, 16):
        starts = index[core:core + 16].flatten(order="F")[:valid].astype(np.int64)
        for j, s in enumerate(starts):
            out[core:core + 16, j] = flat[core:core + 16, s:s + n]
    return out


@nki.jit
def _legacy_gather(src, index):
    out = nl.ndarray((32, 2, 6, 4), dtype=src.dtype, buffer=nl.shared_hbm)
    g = nisa.local_gather(nl.load(src), nl.load(index), 4, 12)
    assert tuple(g.shape) == (32, 12, 4)  # (partitions, num_valid_indices, num_elem_per_idx)
    nl.store(out, g)
    return out


@nki.jit
def _legacy_gather_defaults(src, index):
    out = nl.ndarray((32, 48), dtype=src.dtype, buffer=nl.shared_hbm)
    g = nisa.local_gather(nl.load(src), nl.load(index))
    nl.store(out, g)
    return out


def test_legacy_local_gather_returns_the_gathered_tile():
    src = RNG.standard_normal((32, 30, 4)).astype(np.float32)
    index = RNG.integers(0, 30, (32, 1)).astype(np.uint16) * 4
    got = nki.simulate(_legacy_gather)(src, index)
    np.testing.assert_array_equal(got.reshape(32, 12, 4), _gathered(src, index, 4, 12))
    # by default one element per index, every index of a core's slice (16 * 3 here) valid
    index = RNG.integers(0, 120, (32, 3)).astype(np.uint16)
    got = nki.simulate(_legacy_gather_defaults)(src, index)
    np.testing.assert_array_equal(got, _gathered(src, index, 1, 48)[:, :, 0])


def test_legacy_local_gather_checks_its_numbers_as_the_instruction_does():
    @nki.jit
    def k(src, index):
        nisa.local_gather(nl.load(src), nl.load(index), 3)
        return src

    with raises_code("APK489"):
        k(np.zeros((16, 8), np.float32), np.zeros((16, 1), np.uint16))


def test_legacy_and_current_local_gather_lower_alike(tmp_path):
    head = textwrap.dedent("""\
        import nki
        import nki.isa as nisa
        import nki.language as nl


        @nki.jit
        def k(src, index):
            out = nl.ndarray((32, 40), dtype=src.dtype, buffer=nl.shared_hbm)
            s, i = nl.load(src), nl.load(index)
        """)
    legacy = head + "    nl.store(out, nisa.local_gather(s, i, 2, 20))\n    return out\n"
    current = head + textwrap.indent(textwrap.dedent("""\
        g = nl.ndarray((32, 20, 2), dtype=src.dtype, buffer=nl.sbuf)
        nisa.local_gather(g, s, i, num_elem_per_idx=2, num_valid_indices=20)
        nl.store(out, g)
        return out
        """), "    ")
    inputs = {"src": RNG.standard_normal((32, 16)).astype(np.float32),
              "index": (RNG.integers(0, 8, (32, 2)) * 2).astype(np.uint16)}
    rows = lowered_rows(tmp_path, textwrap.dedent(legacy), inputs)
    assert [r["op"] for r in rows] == ["dma_copy", "dma_copy", "local_gather", "dma_copy"]
    assert rows == lowered_rows(tmp_path, textwrap.dedent(current), inputs)


# -- nl.par_dim in an HBM shape -----------------------------------------------------------------

@nki.jit
def _blocks_out(a):
    b, n, m = a.shape
    tiles = nl.ndarray((b, nl.par_dim(n), m), dtype=a.dtype, buffer=nl.sbuf)
    out = nl.ndarray((b, nl.par_dim(n), m), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(b):
        tiles[i] = nl.load(a[i])
        nl.store(out[i], value=nl.multiply(tiles[i], 3.0))
    return out


def test_par_dim_in_an_hbm_shape_marks_nothing():
    # only SBUF and PSUM tensors have partitions (the legacy programming model); an HBM
    # tensor declared with par_dim is the plain (B, N, M) tensor, row-major
    a = RNG.standard_normal((3, 64, 10)).astype(np.float32)
    got = nki.simulate(_blocks_out)(a)
    assert got.shape == (3, 64, 10)
    np.testing.assert_array_equal(got, a * np.float32(3.0))


# -- the legacy nl.shared_identity_matrix: a shared HBM constant --------------------------------

LEGACY_IDENTITY = """\
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl


    @nki.jit
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        ident = nl.shared_identity_matrix(n=a.shape[0], dtype=nl.bfloat16)
        assert ident.buffer == "shared_hbm"
        moving = nl.load(ident, dtype=a.dtype)
        nl.store(out, nl.copy(nisa.nc_matmul(nl.load(a), moving)))
        return out
    """


def test_the_legacy_identity_matrix_is_a_constant_in_hbm(tmp_path):
    # legacy docstring: "the same behavior to nki.language.shared_constant", which the legacy
    # kernels nl.load; a.T @ I is a's transpose
    a = RNG.standard_normal((96, 40)).astype(np.float32)
    proc = _run(tmp_path, LEGACY_IDENTITY, {"a": a})
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), a.T, rtol=1e-6, atol=1e-6)


def test_the_current_identity_matrix_stays_an_sbuf_tile():
    @nki.jit
    def k(a):
        ident = nl.shared_identity_matrix(a.shape[0], dtype=nl.float32)
        assert ident.buffer == "sbuf"
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(ident))
        return out

    np.testing.assert_array_equal(k(np.zeros((8, 8), np.float32)), np.identity(8))


# -- refusals the docs confirm: their diagnostics quote the rule ---------------------------------

def test_returning_an_sbuf_tile_quotes_the_top_level_rule():
    @nki.jit
    def k(a):
        return nl.load(a)

    with raises_code("APK143") as err:
        k(np.zeros((4, 4), np.float32))
    assert any("Top-level tensors must be on HBM" in n for n in err.value.notes)


def test_and_between_masks_quotes_the_conjunction_rule():
    @nki.jit
    def k(a):
        i_p, i_f = nl.mgrid[0:8, 0:8]
        nl.load(a[i_p, i_f], mask=(i_p < 4 and i_f < 4))
        return a

    with raises_code("APK942") as err:
        k(np.zeros((8, 8), np.float32))
    assert any("Use & to combine masks" in n for n in err.value.notes)


def test_a_partly_written_result_quotes_the_garbage_rule():
    @nki.jit
    def k(a):
        out = nl.ndarray((8, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:4, :], nl.load(a))
        return out

    with raises_code("APK180") as err:
        k(np.zeros((4, 4), np.float32))
    assert any("Unwritten output tensor will have garbage data" in n for n in err.value.notes)


def test_a_legacy_double_row_matmul_returns_m_by_n():
    # the SDK's test: stationary [128, 2, 1], moving [128, 2, 512] -> [1, 512], golden
    # np.einsum("kli,klj->ij")
    @nki.jit
    def k(a, b):
        out = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
        c = nisa.nc_matmul(nl.load(a), nl.load(b), perf_mode="double_row_gen3")
        nl.store(out, value=c)
        return out

    a = RNG.integers(-3, 4, (128, 2, 3)).astype(np.float32)
    b = RNG.integers(-3, 4, (128, 2, 40)).astype(np.float32)
    a8, b8 = a.astype(nl.float8_e5m2), b.astype(nl.float8_e5m2)
    np.testing.assert_array_equal(k(a8, b8), np.einsum("kli,klj->ij", a, b))
