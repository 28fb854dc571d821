"""`nl.load_transpose2d(src, dtype=None)`: an HBM [N, M] tensor loaded as the SBUF tile [M, N],
by one dma_copy through the transposed view, on every target; the cast and the refusals.
Oracle: NumPy's transpose."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from support import raises_code

import apdsl.nki as nki
import apdsl.nki.language as nl


def loaded(a, dtype=None):
    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=dtype or a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load_transpose2d(a, dtype=dtype))
    return out


@pytest.mark.parametrize("target", ["trn1", "trn2"])
@pytest.mark.parametrize("shape", [(512, 128), (7, 3), (1, 1)])
def test_the_tile_is_the_transpose(target, shape):
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    got = nki.jit(loaded, platform_target=target)(a)
    np.testing.assert_array_equal(got, a.T)


def test_dtype_casts_the_tile():
    a = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    got = nki.jit(lambda a: loaded(a, nl.bfloat16))(a)
    np.testing.assert_array_equal(got.astype(np.float32),
                                  a.T.astype(ml_dtypes.bfloat16).astype(np.float32))


@pytest.mark.parametrize("body, code", [
    ("nl.load_transpose2d(a)", "APK152"),  # [4, 8, 2]: not 2-D
    ("nl.load_transpose2d(nl.load(a[0]))", "APK151"),  # already on chip
    ("nl.load_transpose2d(b)", "APK152"),  # [2, 200]: 200 partitions once transposed
])
def test_refusals(body, code):
    def k(a, b):
        return eval(body)

    with raises_code(code):
        nki.jit(k)(np.zeros((4, 8, 2), np.float32), np.zeros((2, 200), np.float32))


def test_lower_shows_the_transposed_read(tmp_path):
    (tmp_path / "k.py").write_text(
        "import nki\nimport nki.language as nl\n\n@nki.jit\ndef k(a):\n"
        "    out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, nl.load_transpose2d(a))\n    return out\n")
    np.save(tmp_path / "a.npy", np.zeros((256, 64), np.float32))
    r = subprocess.run([sys.executable, "-m", "apdsl", "lower", "k.py", "-i", "a=a.npy"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    # the HBM side read column by column: element stride 64 across 256 rows, then 1 a partition
    assert "[[1, 64], [64, 256]]" in r.stdout, r.stdout
