"""`.apk` kernels written for apdsl in the NKI style (tests/apk_kernels/): each runs on NumPy
inputs and is compared with NumPy, checks clean, and one runs from the command line.  They
cover what real NKI kernels do (tiled loops over HBM, a matmul accumulating K slabs in PSUM
with hoisted loads, a fused square-and-sum, per-partition scalars, an access pattern over a
tile, a reduction over two axes, an indirect scatter, a tail tile, bfloat16 rounding); the
public kernels themselves are measured from their repositories by `apdsl corpus`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import apdsl

KERNELS = Path(__file__).parent / "apk_kernels"
RNG = np.random.default_rng(24)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _bf16(x: np.ndarray) -> np.ndarray:
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def _scatter_inputs() -> dict[str, np.ndarray]:
    dest = RNG.permutation(256)[:128].astype(np.uint32).reshape(128, 1)
    return {"src": _f32(128, 32), "dest": dest, "base": _f32(256, 32)}


def _scattered(src: np.ndarray, dest: np.ndarray, base: np.ndarray) -> np.ndarray:
    out = base.copy()
    out[dest[:, 0]] = src
    return out


def _rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)


@dataclass(frozen=True)
class Case:
    file: str
    kernel: str
    inputs: Callable[[], dict[str, np.ndarray]]
    expect: Callable[..., np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-5


CASES = [
    Case("add_tiles.apk", "add_tiles", lambda: {"x": _f32(256, 1024), "y": _f32(256, 1024)},
         lambda x, y: x + y),
    Case("wide_matmul.apk", "wide_matmul",
         lambda: {"lhsT": _f32(256, 256), "rhs": _f32(256, 1024)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("row_rms.apk", "row_rms", lambda: {"x": _f32(256, 384)}, _rms, rtol=1e-4,
         atol=1e-4),
    Case("window_mean.apk", "window_mean",
         lambda: {"img": np.arange(4 * 6 * 8, dtype=np.float16).reshape(4, 6, 8)},
         lambda img: img.astype(np.float32).reshape(4, 3, 2, 4, 2).mean(axis=(2, 4)),
         rtol=1e-3, atol=1e-2),
    Case("scatter_rows.apk", "scatter_rows", _scatter_inputs, _scattered, rtol=0, atol=0),
    Case("exp_tail.apk", "exp_tail",
         lambda: {"x": _bf16(RNG.uniform(-3, 3, (200, 96)).astype(np.float32)).astype(
             ml_dtypes.bfloat16)},
         lambda x: _bf16(np.exp(x.astype(np.float32))), rtol=1e-2, atol=1e-2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_kernel_matches_numpy(case: Case) -> None:
    inputs = case.inputs()
    got = np.asarray(apdsl.run(KERNELS / case.file, case.kernel, inputs), dtype=np.float32)
    want = case.expect(**inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_kernel_checks_clean(case: Case) -> None:
    from apdsl.semantics.program import Program
    errors = Program.from_path(str(KERNELS / case.file)).check(kernel=case.kernel,
                                                               inputs=case.inputs())
    assert [e for e in errors if e.severity == "error"] == []


def test_every_kernel_file_has_a_case_and_says_it_was_written_here() -> None:
    files = sorted(p.name for p in KERNELS.glob("*.apk"))
    assert files == sorted(c.file for c in CASES)
    for name in files:
        assert (KERNELS / name).read_text().startswith("# Written for apdsl"), name


def test_a_kernel_runs_from_the_command_line(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.file == "wide_matmul.apk")
    inputs = case.inputs()
    args = []
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += ["-i", f"{name}={tmp_path / f'{name}.npy'}"]
    out = tmp_path / "out.npy"
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(KERNELS / case.file), *args,
                        "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out), case.expect(**inputs), rtol=1e-4, atol=1e-3)
