"""Legacy (`neuronxcc.nki`) instructions given PSUM tiles that the legacy docs settle:
`affine_select` of a matmul's PSUM tile (GpSimd cannot read PSUM, so the tile goes through
SBUF first, as `nl.store` of a PSUM tile does), and `nc_transpose` whose result is written to a
tile of another dtype or given `dtype=` (the transpose, then a cast).  Every kernel is written
for these tests; NumPy is the oracle for the values, and `lower` shows the instructions."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
from support import apdsl_in_process, raises_code

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

RNG = np.random.default_rng(24)
NEG = -9984.0


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def bf16(x):
    return np.asarray(x, dtype=np.float32).astype(nl.bfloat16.np).astype(np.float32)


# -- affine_select of a PSUM tile ---------------------------------------------------------------

@nki.jit
def masked_scores(q_t, k, q_start, k_start):
    """A causal mask on q.T @ k, straight from PSUM, then a second select of the SBUF result
    under a mask (the sliding window's form), into one bfloat16 buffer."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((nl.par_dim(128), 256), dtype=nl.bfloat16, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        scores = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
        scores[:, :] = nl.matmul(nl.load(q_t), nl.load(k[:, nl.ds(j * 128, 128)]),
                                 transpose_x=True)
        i_p, i_f = nl.mgrid[0:128, 0:128]
        res[:, nl.ds(j * 128, 128)] = nisa.affine_select(
            pred=(q_start + i_p >= k_start + j * 128 + i_f), on_true_tile=scores,
            on_false_value=NEG, dtype=nl.bfloat16)
        res[:, nl.ds(j * 128, 128)] = nisa.affine_select(
            pred=(k_start + j * 128 + i_f > q_start + i_p - 40),
            on_true_tile=res[:, nl.ds(j * 128, 128)], on_false_value=NEG,
            dtype=nl.bfloat16, mask=(j < 1))
    nl.store(out, value=nl.copy(res, dtype=nl.float32))
    return out


def test_affine_select_of_a_psum_tile_selects_from_the_matmul():
    q_t, k = rand(64, 128), rand(64, 256)
    got = masked_scores(q_t, k, 100, 0)
    scores = q_t.T.astype(np.float64) @ k
    p, f = np.mgrid[0:128, 0:256]
    want = np.where(100 + p >= f, bf16(scores), NEG)
    want = np.where((f > 100 + p - 40) | (f >= 128), want, NEG)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    # the selection itself is exact: the masked-off entries are the value, the others the sum
    assert np.array_equal(got == NEG, want == NEG)


LOWERED = """\
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl


    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
        acc[...] = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
        i_p, i_f = nl.mgrid[0:128, 0:128]
        sel = nisa.affine_select(pred=(i_p - i_f >= 0), on_true_tile=acc,
                                 on_false_value=-1.0)
        nl.store(out, value=sel)
        return out
    """


def _lower(tmp_path: Path, source: str, inputs: dict[str, np.ndarray]) -> list[dict]:
    (tmp_path / "kern.py").write_text(textwrap.dedent(source))
    args = []
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += ["-i", f"{name}={name}.npy"]
    proc = apdsl_in_process("lower", "kern.py", *args, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_lower_shows_the_psum_tile_copied_to_sbuf_before_the_select(tmp_path):
    rows = _lower(tmp_path, LOWERED, {"a": rand(32, 128), "b": rand(32, 128)})
    ops = [r["op"] for r in rows]
    at = ops.index("affine_select")
    assert ops[at - 1] == "tensor_copy", ops
    copy, select = rows[at - 1], rows[at]
    assert copy["operands"]["src"]["buffer"] == "psum"
    assert copy["operands"]["dst"]["buffer"] == "sbuf"
    assert select["operands"]["on_true_tile"]["buffer"] == "sbuf"
    assert select["operands"]["on_true_tile"]["tensor"] == copy["operands"]["dst"]["tensor"]
    assert copy["line"] == select["line"] == 13  # the copy is the select's, at its line


def test_the_current_form_still_takes_on_true_tile_from_sbuf_only():
    # the current docstring: "The input on_true_tile must also be in SBUF"
    @nki.jit
    def kernel(a):
        t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=t, value=1.0)
        d = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(dst=d, pattern=[[-1, 128]], channel_multiplier=1, on_true_tile=t,
                           on_false_value=0.0, cmp_op=nl.greater_equal)
        return d

    with raises_code("APK309"):
        kernel(rand(128, 128))


# -- nc_transpose into a tile of another dtype ----------------------------------------------------

@nki.jit
def transposes(x):
    """x (128, 256) bfloat16: its two 128-column blocks transposed into a float32 PSUM tile
    (the result, of x's dtype, converted where it is written), and the first block
    transposed with dtype=float32."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    first = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    wide = nl.ndarray((nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(2):
        wide[:, nl.ds(j * 128, 128)] = nisa.nc_transpose(t[:, nl.ds(j * 128, 128)])
    nl.store(out, value=nl.copy(wide, dtype=nl.float32))
    cast = nisa.nc_transpose(t[:, 0:128], dtype=nl.float32)
    nl.store(first, value=nl.copy(cast, dtype=nl.float32))
    return out, first


def test_nc_transpose_written_to_another_dtype_is_the_transpose_converted():
    x = rand(128, 256).astype(nl.bfloat16.np)
    wide, first = transposes(x)
    xf = x.astype(np.float32)
    want = np.concatenate([xf[:, :128].T, xf[:, 128:].T], axis=1)
    np.testing.assert_array_equal(wide, want)  # bfloat16 to float32 is exact
    np.testing.assert_array_equal(first, xf[:, :128].T)


TRANSPOSE_LOWERED = """\
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl


    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        wide = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
        half = nl.copy(nl.load(x), dtype=nl.bfloat16)
        wide[...] = nisa.nc_transpose(half)
        nl.store(out, value=wide)
        return out
    """


def test_lower_shows_the_transpose_in_its_dtype_then_the_cast(tmp_path):
    rows = _lower(tmp_path, TRANSPOSE_LOWERED, {"x": rand(128, 128)})
    ops = [r["op"] for r in rows]
    at = ops.index("nc_transpose")
    assert ops[at + 1] == "tensor_copy", ops
    tr, cast = rows[at], rows[at + 1]
    assert tr["operands"]["dst"]["dtype"] == "bfloat16"
    assert cast["operands"]["src"]["tensor"] == tr["operands"]["dst"]["tensor"]
    assert cast["operands"]["dst"]["dtype"] == "float32"
    assert tr["line"] == cast["line"] == 11
