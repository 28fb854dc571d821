"""Ascend copies (paths, alignment, TLA valid extents, the Nd2Nz row-tail zero-fill), the stdlib
tiled GEMM with tails in every dimension, the never-zeroed-padding tail bug, and the format
helpers.  Oracles: NumPy (`A.astype(float32) @ B`) and `formats.convert`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core import execute
from apdsl.runtime.core.options import options
from apdsl.semantics.program import Program
from apdsl.tensor import formats
from apdsl.tensor.tla import get_tile, make_tensor_like, tile_view
from apdsl.tensor.view import from_numpy, ndarray

ROOT = Path(__file__).resolve().parent.parent
GEMM = (ROOT / "stdlib" / "gemm.apk").read_text()




def data(shape, dtype=np.float16, seed=0):
    return np.random.default_rng(seed).integers(-8, 8, shape).astype(dtype)


def storage_of(t) -> np.ndarray:
    return t.storage.elements(t.storage.dtype).copy()


def written_of(t) -> np.ndarray:
    return t.storage.mask.copy()


# ---------------------------------------------------------------------------- copy rules

@pytest.mark.parametrize("buffer,fmt,view,code", [
    ("l1", "NZ", (slice(0, 16), slice(8, 24)), "APK524"),     # mid-fractal column: 16 bytes
    ("ub", "ND", (slice(0, 16), slice(3, 19)), "APK524"),     # 6 bytes into a row
    ("l1", "ND", (slice(1, 17), slice(0, 16)), "APK524"),     # a 40-byte row
])
def test_l1_and_ub_operands_start_32_byte_aligned(buffer, fmt, view, code):
    x = from_numpy(data((16, 16)), "gm")
    d = ndarray((20, 40), "float16", buffer, fmt)
    with raises_code(code) as err:
        apdsl.dma_copy(d[view], x)
    assert err.value.facts["bytes"] % 32 != 0
    if buffer == "ub":  # the source side of UB -> GM too
        execute.write_view(d, data((20, 40)))
        with raises_code(code):
            apdsl.dma_copy(ndarray((16, 16), "float16", "gm"), d[view])
    with raises_code(code):
        apdsl.memset(d[view], 0)


def test_aligned_starts_are_accepted():
    x = from_numpy(data((16, 16)), "gm")
    d = ndarray((20, 48), "float16", "l1", "NZ")
    apdsl.dma_copy(d[4:20, 16:32], x)  # a row inside a fractal is a 32-byte boundary
    np.testing.assert_array_equal(d[4:20, 16:32].numpy(), x.numpy())
    u = ndarray((4, 32), "float32", "ub")
    apdsl.memset(u[1:3, 8:16], 1.0)    # 32 bytes into a row of 128


@pytest.mark.parametrize("buffer,fmt", [("l0a", "ZZ"), ("l0b", "ZN"), ("l0c", "NZ")])
def test_l0_fractal_operands_start_on_a_fractal_boundary(buffer, fmt):
    dt = "float32" if buffer == "l0c" else "float16"
    t = ndarray((32, 32), dt, buffer, fmt)
    if buffer == "l0c":  # no memset of L0C: its Fixpipe source side has the rule too
        with raises_code("APK523") as err:
            apdsl.dma_copy(ndarray((16, 16), dt, "gm"), t[8:24, 0:16])
    else:
        apdsl.memset(t[16:32, 16:32], 0)
        with raises_code("APK523") as err:
            apdsl.memset(t[8:24, 0:16], 0)
    assert err.value.facts["fractal"] == 256


def test_tile_copies_need_equal_valid_extents():
    A = from_numpy(data((40, 40)), "gm")
    tail = tile_view(A, (1, 1), (32, 32))                       # valid (8, 8)
    with raises_code("APK525"):
        apdsl.dma_copy(ndarray((32, 32), "float16", "l1", "NZ"), tail)
    with raises_code("APK525"):
        apdsl.dma_copy(make_tensor_like("l1", tile_view(A, (0, 1), (32, 32)), "NZ"), tail)
    plain = ndarray((8, 8), "float16", "l1")                    # a plain tensor of that shape
    apdsl.dma_copy(plain, tail)
    np.testing.assert_array_equal(plain.numpy(), A.numpy()[32:, 32:])


def test_tile_copy_moves_the_valid_extent_coordinate_by_coordinate():
    a = data((50, 70))
    A = from_numpy(a, "gm")
    src = get_tile(A, (40, 48), (32, 32))                       # valid (10, 22)
    l1 = make_tensor_like("l1", src, "NZ")
    apdsl.dma_copy(l1, src)
    out = from_numpy(np.zeros((50, 70), np.float16), "gm")
    ub = make_tensor_like("ub", src, "ND")
    # L1 -> GM is not a path: go through UB by way of a GM round trip of the same tile
    with raises_code("APK308"):
        apdsl.dma_copy(get_tile(out, (40, 48), (32, 32)), l1)
    apdsl.dma_copy(ub, src)
    apdsl.dma_copy(get_tile(out, (40, 48), (32, 32)), ub)
    want = np.zeros((50, 70), np.float16)
    want[40:, 48:] = a[40:, 48:]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(l1.numpy(), a[40:, 48:])


@pytest.mark.parametrize("buffer,kib", [("l1", 512), ("l0a", 64), ("l0b", 64), ("l0c", 128),
                                        ("ub", 192)])
def test_ascend_a2_capacities(buffer, kib):
    fits = ndarray((kib * 256, 2), "float16", buffer)      # exactly the buffer
    with raises_code("APK302"):
        ndarray((16, 16), "float16", buffer)
    del fits
    ndarray((16, 16), "float16", buffer)                   # freed with its tensor
    with raises_code("APK302"):
        ndarray((kib * 256 + 16, 2), "float16", buffer)


def test_fractal_padding_counts_against_capacity():
    full = ndarray((128, 240), "float16", "l0a", "ZZ")     # 60 KiB
    with raises_code("APK302"):
        ndarray((20, 100), "float16", "l0a", "ZZ")        # 2000 elements, 32 x 112 in storage
    assert full.storage.nbytes == 60 * 1024
    ndarray((16, 120), "float16", "l0a", "ZZ")            # 16 x 128 fractals: 4 KiB, fits


# ---------------------------------------------------------------------------- Nd2Nz zero-fill

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.sampled_from(["float16", "int8", "float32"]))
def test_gm_to_nz_zero_fills_each_written_row_tail(rows, cols, dt):
    a = data((rows, cols), dt, seed=rows + cols)
    src = from_numpy(a, "gm")
    l1 = make_tensor_like("l1", src, "NZ")
    apdsl.dma_copy(l1, src)
    c0 = formats.c0_for(dt)
    padded = formats.convert(a, "ND", "NZ")             # zeros over all padding
    got, written = storage_of(l1), written_of(l1)
    # written: the valid rows, up to the fractal width; never the rows past the valid extent
    logical = np.zeros(l1.shape, bool)
    logical[:rows, :-(-cols // c0) * c0] = True
    expect_written = formats.convert(logical, "ND", "NZ", c0=c0).reshape(-1)
    np.testing.assert_array_equal(written, expect_written)
    np.testing.assert_array_equal(got[written], padded.reshape(-1)[written])


def test_plain_copy_into_nz_fills_the_storage_tails_of_its_rows():
    a = data((20, 28))
    t = ndarray((20, 28), "float16", "l1", "NZ")
    apdsl.dma_copy(t, from_numpy(a, "gm"))
    raw = storage_of(t).reshape(2, 2, 16, 16)           # (N1, M1, 16, C0)
    np.testing.assert_array_equal(raw, formats.convert(a, "ND", "NZ"))
    assert written_of(t).reshape(2, 2, 16, 16)[:, 1, 4:, :].sum() == 0   # rows 20..31 unwritten


def test_a_row_major_source_into_zn_and_other_views_do_not_fill():
    # Nd2Nz into ZN lays a column-major source's columns along K (tests/test_ascend_rules.py);
    # a row-major source has no such lines: only its elements are written
    a = data((16, 20))
    zn = ndarray((16, 20), "float16", "l1", "ZN")
    apdsl.dma_copy(zn, from_numpy(a, "gm"))
    np.testing.assert_array_equal(zn.numpy(), a)
    assert written_of(zn).sum() == 16 * 20
    # a transposed destination has no Nd2Nz rows: only its elements are written
    nz = ndarray((20, 20), "float16", "l1", "NZ")
    apdsl.dma_copy(nz.permute((1, 0)), from_numpy(data((20, 20)), "gm"))
    assert written_of(nz).sum() == 400
    # nor does a copy from anything but GM
    u = ndarray((20, 20), "float16", "ub", "NZ")
    v = ndarray((20, 20), "float16", "ub")
    execute.write_view(v, data((20, 20)))
    apdsl.dma_copy(u, v)
    assert written_of(u).sum() == 400


def test_fill_stays_inside_the_fractal_of_a_sub_view():
    t = ndarray((16, 64), "float16", "l1", "NZ")
    apdsl.dma_copy(t[:, 16:20], from_numpy(data((16, 4)), "gm"))
    w = written_of(t).reshape(4, 16, 16)                # (N1, M1 * 16, C0)
    assert w[1].all() and not w[0].any() and not w[2:].any()


# ---------------------------------------------------------------------------- stdlib GEMM

def run_gemm(a, b, tiles=(32, 32, 32, 64), acc="f32", strict=False, source=GEMM):
    dt = {np.dtype(np.float16): "f16", np.dtype(np.int8): "i8"}[a.dtype]
    src = (source + f"""

kernel matmul(A: {dt}[M, K] @ gm, B: {dt}[K, N] @ gm) -> {acc}[M, N] @ gm:
    C = ndarray((A.shape[0], B.shape[1]), {acc}, gm)
    gemm(A, B, C, {', '.join(map(str, tiles))})
    return C
""")
    with options(strict_padding=strict):
        return Program(src, "gemm_test.apk").run("matmul", {"A": a, "B": b}).value.numpy()


@pytest.mark.parametrize("m,k,n", [(40, 50, 30), (33, 100, 65), (64, 64, 64), (1, 17, 1),
                                   (97, 31, 16)])
@pytest.mark.parametrize("strict", [False, True])
def test_stdlib_gemm_with_tails_in_every_dimension(m, k, n, strict):
    rng = np.random.default_rng(m * 1000 + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    got = run_gemm(a, b, strict=strict)
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-4)


def test_stdlib_gemm_int8_accumulates_in_int32():
    rng = np.random.default_rng(9)
    a = rng.integers(-128, 128, (45, 80)).astype(np.int8)
    b = rng.integers(-128, 128, (80, 20)).astype(np.int8)
    got = run_gemm(a, b, tiles=(32, 32, 32, 64), acc="i32", strict=True)
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_stdlib_gemm_through_the_public_api_and_default_tiles():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((130, 300)).astype(np.float16)
    b = rng.standard_normal((300, 270)).astype(np.float16)
    src = ("from gemm import gemm\n"
           "kernel mm(A: f16[M, K] @ gm, B: f16[K, N] @ gm) -> f32[M, N] @ gm:\n"
           "    C = ndarray((A.shape[0], B.shape[1]), f32, gm)\n"
           "    return gemm(A, B, C)\n")
    got = apdsl.run(src, "mm", {"A": a, "B": b})
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-3)


def test_the_tail_bug_is_caught_with_strict_padding():
    """Without the memset of B's L1 tile, a K tail's padding is never written: the result is
    right (mmad computes the valid K), but the hardware reads that padding -- strict mode says
    where."""
    lines = GEMM.splitlines()
    i = next(i for i, line in enumerate(lines) if "% kb != 0" in line)
    indent = len(lines[i]) - len(lines[i].lstrip())
    j = next(j for j in range(i + 1, len(lines))
             if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= indent)
    buggy = "\n".join(lines[:i] + lines[j:])  # the whole if block (memset and its event)
    assert "memset(" in GEMM and "memset(" not in buggy
    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 50)).astype(np.float16)
    b = rng.standard_normal((50, 30)).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(run_gemm(a, b, source=buggy), want, rtol=1e-5, atol=1e-4)
    with raises_code("APK404") as err:
        run_gemm(a, b, source=buggy, strict=True)
    assert err.value.message.startswith("mmad")
    assert err.value.span is not None and err.value.span.file == "gemm_test.apk"
    # K a multiple of the fractal: no tail, nothing to zero
    a2, b2 = a[:, :48], b[:48, :]
    run_gemm(a2, b2, source=buggy, strict=True)


def test_gemm_tiles_beyond_the_buffers_are_refused():
    a = np.zeros((64, 64), np.float16)
    with raises_code("APK302") as err:
        run_gemm(a, a, tiles=(64, 256, 256, 256))         # L0B 256x256 float16 = 128 KiB
    assert "l0b" in err.value.message


def test_gemm_checks_clean_and_lowers():
    src = GEMM + """

M = 40
K = 50
N = 30
kernel matmul(A: f16[M, K] @ gm, B: f16[K, N] @ gm) -> f32[M, N] @ gm:
    C = ndarray((M, N), f32, gm)
    return gemm(A, B, C, 32, 32, 32, 64)
"""
    program = Program(src, "g.apk")
    assert program.check() == []
    result = program.run("matmul", trace=True)
    ops = [r.op for r in result.trace.records]
    assert ops.count("mmad") == 2 * 1 * 2 and "memset" in ops   # (m, n) blocks x K tiles


# ---------------------------------------------------------------------------- examples, CLI

@pytest.mark.parametrize("name", ["ascend_gemm.apk", "nchw_to_nc1hwc0.apk",
                                  "fractal_z_weights.apk"])
def test_examples_run_with_no_arguments(name):
    program = Program.from_path(str(ROOT / "examples" / name))
    assert program.check() == []
    kernels = [k.name for k in program.kernels()]
    with options(strict_padding=True):
        assert program.run(kernels[0]).value is not None


def test_cli_strict_padding_flag():
    proc = subprocess.run([sys.executable, "-m", "apdsl", "run",
                           str(ROOT / "examples" / "ascend_gemm.apk"), "--strict-padding"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "float32[200, 90] @ gm" in proc.stdout


# ---------------------------------------------------------------------------- stdlib formats

FORMATS_SRC = (ROOT / "stdlib" / "formats.apk").read_text()


@pytest.mark.parametrize("fmt,shape,buffer", [
    ("NC1HWC0", (2, 20, 3, 5), "ub"), ("FRACTAL_Z", (20, 24, 3, 3), "l1"),
    ("NZ", (20, 28), "ub"), ("ZZ", (20, 28), "l1"), ("ZN", (20, 28), "l1"),
    ("NCHW", (2, 3, 4, 5), "ub")])
def test_format_helpers_match_formats_convert(fmt, shape, buffer):
    x = data(shape, seed=len(shape))
    logical = {"NC1HWC0": "NCHW", "FRACTAL_Z": "NCHW", "NCHW": "NCHW"}.get(fmt, "ND")
    src = FORMATS_SRC + f"""

kernel conv(x: f16[{', '.join(map(str, shape))}] @ gm) -> f16[{', '.join(map(str, shape))}] @ {buffer}:
    y = to_format(x, {buffer}, "{fmt}")
    assert storage_shape(y) == {formats.storage_shape(fmt, shape, "float16")}
    return y
"""
    result = Program(src, "fmt.apk").run("conv", {"x": x})
    y = result.value
    np.testing.assert_array_equal(y.numpy(), x)
    raw = y.storage.elements(y.dtype).reshape(formats.storage_shape(fmt, shape, "float16"))
    np.testing.assert_array_equal(raw, formats.convert(x, logical, fmt))
