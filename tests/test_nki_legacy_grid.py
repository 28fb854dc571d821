"""The legacy API's one-number launch: `kernel[n]` in a file that imports `neuronxcc` is an SPMD
grid of n programs (the legacy tutorials launch `kernel[batch]`), each with its
`nl.program_id(0)`; in the current API it stays a number of logical cores (1 or 2, APK141).
Run as users do: a script under `apdsl.nki.install()`, and `apdsl run --grid N`.  Oracle:
NumPy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

KERNEL = """\
import numpy as np
import {module}.nki as nki
import {module}.nki.language as nl


@nki.jit
def scale_rows(a):
    # program i scales its 32-row block by i + 1
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    t = nl.load(a[i * 32:(i + 1) * 32, :])
    nl.store(out[i * 32:(i + 1) * 32, :], nl.multiply(t, float(i + 1)))
    return out
"""

LAUNCH = """
a = np.load("a.npy")
np.save("out.npy", scale_rows[{n}](a))
"""


def _script(tmp_path: Path, module: str, n: int) -> subprocess.CompletedProcess:
    (tmp_path / "k.py").write_text(KERNEL.format(module=module) + LAUNCH.format(n=n))
    runner = "import apdsl.nki, runpy; apdsl.nki.install(); runpy.run_path('k.py')"
    return subprocess.run([sys.executable, "-c", runner], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                      "PATH": "/usr/bin:/bin"})


def _want(a: np.ndarray, n: int) -> np.ndarray:
    scale = np.repeat(np.arange(1, n + 1, dtype=np.float32), 32)[:, None]
    return a[:32 * n] * scale


@pytest.mark.parametrize("n", [1, 4])
def test_a_legacy_launch_of_n_runs_n_programs(tmp_path, n):
    a = np.random.default_rng(n).standard_normal((32 * n, 16)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    r = _script(tmp_path, "neuronxcc", n)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), _want(a, n))


def test_the_current_api_keeps_logical_cores(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((128, 16), np.float32))
    (tmp_path / "k.py").write_text(KERNEL.format(module="neuronxcc").replace(
        "import neuronxcc.nki as nki", "import nki").replace(
        "import neuronxcc.nki.language as nl", "import nki.language as nl") + LAUNCH.format(n=4))
    runner = "import apdsl.nki, runpy; apdsl.nki.install(); runpy.run_path('k.py')"
    r = subprocess.run([sys.executable, "-c", runner], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                   "PATH": "/usr/bin:/bin"})
    assert r.returncode != 0 and "APK141" in r.stderr and "logical NeuronCores" in r.stderr


def test_grid_on_the_command_line_follows_the_files_api(tmp_path):
    a = np.random.default_rng(7).standard_normal((96, 8)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    (tmp_path / "k.py").write_text(KERNEL.format(module="neuronxcc"))
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", "k.py", "--grid", "3", "-i",
                        "a=a.npy", "-o", "out.npy"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), _want(a, 3))


GRID_KERNEL = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiles(a):
    # program (i, j) writes block (i, j) of a, plus i * 10 + j
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i, j = nl.program_id(0), nl.program_id(1)
    t = nl.load(a[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4])
    nl.store(out[i * 8:(i + 1) * 8, j * 4:(j + 1) * 4], nl.add(t, float(i * 10 + j)))
    return out


a = np.load("a.npy")
for k, launched in enumerate([{grids}]):
    np.save(f"out{{k}}.npy", launched(a))
"""


GRIDS = ["nl.spmd_dim(2, nl.nc(2)), 3", "nl.spmd_dim(nl.nc(2), 2), 3", "nl.nc(2) * 2, 3",
         "2 * nl.nc(2), 3", "4, 3"]


def test_nc_and_spmd_dim_make_one_grid_dimension_of_their_product(tmp_path):
    """Every spelling of the (4, 3) grid runs the 12 programs, each with its ids."""
    a = np.random.default_rng(5).standard_normal((32, 12)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    launches = ", ".join(f"tiles[{g}]" for g in GRIDS)
    (tmp_path / "k.py").write_text(GRID_KERNEL.format(grids=launches))
    runner = "import apdsl.nki, runpy; apdsl.nki.install(); runpy.run_path('k.py')"
    r = subprocess.run([sys.executable, "-c", runner], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                   "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    i, j = np.meshgrid(np.arange(4), np.arange(3), indexing="ij")
    plus = np.kron(i * 10 + j, np.ones((8, 4))).astype(np.float32)
    for k in range(len(GRIDS)):
        np.testing.assert_array_equal(np.load(tmp_path / f"out{k}.npy"), a + plus)


@pytest.mark.parametrize("target, expr", [("trn2", "nl.nc(3)"), ("trn2", "nl.nc(0)"),
                                          ("trn1", "nl.nc(2)"), ("trn2", "nl.spmd_dim(2, 0)")])
def test_a_core_count_the_target_lacks_is_refused(target, expr):
    import apdsl
    import apdsl.nki.language as nl
    with apdsl.target(target), pytest.raises(apdsl.errors.ApdslError) as e:
        eval(expr, {"nl": nl})
    assert e.value.code == "APK141"
