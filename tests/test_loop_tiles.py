"""Tiles allocated in a loop body are released when the program lets go of them, as the NKI
compiler allocates by liveness (an unrolled loop's tile lives from its allocation to its last
use; `nki-dynamic-loops.rst`: a dynamic loop's body tiles are "allocated once and reused
across iterations"), so a kernel shaped like the matmul tutorial's fully optimised one -- a
PSUM tile per inner iteration, added into SBUF result tiles kept across a sequential K loop --
runs and matches NumPy.  No fast path may keep a dropped tile allocated; a kernel that truly
keeps more tiles alive than the buffer holds (accessed after the allocation that overflows)
is still refused (APK302; `test_liveness` for tiles named but dead)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError

BLOCKED = 'import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n\n@nki.jit\ndef blocked_matmul(aT, b):\n    """out = aT.T @ b, accumulated in SBUF block by block: each (row tile, column tile) of a\n    K block is summed in a PSUM tile allocated in the loop body, then added into a result\n    tile that lives across the K blocks."""\n    K, M = aT.shape\n    _, N = b.shape\n    P, TN = 128, 512\n    KB = 2                        # K tiles per K block\n    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)\n    for nb in nl.affine_range(N // (2 * TN)):\n        acc = []\n        for mt in range(M // P):\n            row = []\n            for j in range(2):\n                t = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.sbuf)\n                nisa.memset(dst=t, value=0.0)\n                row.append(t)\n            acc.append(row)\n        for kb in nl.sequential_range(K // (KB * P)):\n            bt = []\n            for kt in range(KB):\n                tile = nl.ndarray((P, 2 * TN), dtype=b.dtype, buffer=nl.sbuf)\n                k0 = (kb * KB + kt) * P\n                nisa.dma_copy(dst=tile, src=b[k0:k0 + P, nb * 2 * TN:(nb + 1) * 2 * TN])\n                bt.append(tile)\n            at = []\n            for kt in nl.affine_range(KB):\n                tile = nl.ndarray((P, M), dtype=aT.dtype, buffer=nl.sbuf)\n                k0 = (kb * KB + kt) * P\n                nisa.dma_copy(dst=tile, src=aT[k0:k0 + P, 0:M])\n                at.append(tile)\n            for j in nl.affine_range(2):\n                for mt in nl.affine_range(M // P):\n                    part = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)\n                    for kt in nl.affine_range(KB):\n                        nisa.nc_matmul(dst=part, stationary=at[kt][0:P, mt * P:(mt + 1) * P],\n                                       moving=bt[kt][0:P, j * TN:(j + 1) * TN])\n                    nisa.tensor_tensor(dst=acc[mt][j], data1=acc[mt][j], data2=part,\n                                       op=nl.add)\n        for mt in nl.affine_range(M // P):\n            for j in nl.affine_range(2):\n                nisa.dma_copy(dst=out[mt * P:(mt + 1) * P,\n                                      nb * 2 * TN + j * TN:nb * 2 * TN + (j + 1) * TN],\n                              src=acc[mt][j])\n    return out\n'


def test_a_blocked_matmul_with_a_psum_tile_per_iteration_runs_and_matches_numpy(tmp_path):
    (tmp_path / "k.py").write_text(BLOCKED)
    rng = np.random.default_rng(1)
    a_t = rng.standard_normal((512, 1280)).astype(np.float32)
    b = rng.standard_normal((512, 1024)).astype(np.float32)
    np.save(tmp_path / "aT.npy", a_t)
    np.save(tmp_path / "b.npy", b)
    proc = subprocess.run([sys.executable, "-m", "apdsl", "run", "k.py", "-i", "aT=aT.npy",
                           "-i", "b=b.npy", "-o", "out.npy"], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    want = a_t.T.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-3)


F = 16384  # float32 elements a partition: 64 KiB, under a third of an SBUF partition


@nki.jit
def _reads_a_fresh_big_tile_each_iteration(a):
    keep = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=keep, value=0.0)
    for _ in range(8):  # 8 x 64 KiB: more than the partition holds, one at a time
        big = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=big, src=a)
        nisa.tensor_tensor(dst=keep, data1=keep, data2=big[:, 0:512], op=nl.add)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=keep)
    return out


def test_an_instruction_repeated_on_one_dst_keeps_no_dropped_tile_allocated():
    a = np.full((128, F), 0.25, np.float32)
    got = _reads_a_fresh_big_tile_each_iteration(a)
    np.testing.assert_array_equal(got, np.full((128, 512), 2.0, np.float32))


@nki.jit
def _keeps_nine_psum_tiles(a):
    x = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    kept = []
    for _ in range(9):  # nine 2 KiB tiles alive at once: PSUM holds eight
        t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=t[:, 0:128], stationary=x, moving=x)
        kept.append(t)
    for t in kept:  # read after the ninth allocation: all nine live at it
        nisa.tensor_copy(dst=x, src=t[:, 0:128])
    return a


@nki.jit
def _keeps_four_big_sbuf_tiles(a):
    kept = []
    for _ in range(4):
        t = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.add)
        kept.append(t)
    for t in kept:  # read after the fourth allocation: all four live at it
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.add)
    return a


@pytest.mark.parametrize("kernel,shape,buffer", [
    (_keeps_nine_psum_tiles, (128, 128), "psum"),
    (_keeps_four_big_sbuf_tiles, (128, F), "sbuf")])
def test_tiles_truly_alive_together_past_capacity_are_refused(kernel, shape, buffer):
    with pytest.raises(ApdslError) as err:
        kernel(np.ones(shape, np.float32))
    assert err.value.code == "APK302" and f"in {buffer} exceeds its capacity" in \
        err.value.message
