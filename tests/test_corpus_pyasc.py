"""`apdsl corpus DIR` on pyasc kernels (SPEC 19), run as a user runs it on a repository made
here of kernels written for this test: entry points are the `@asc.jit` functions no other
`@asc.jit` function calls, the repository's own tests and `__main__` blocks drive them, and a
name apdsl lacks is a located error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from apdsl.surfaces.corpus.drivers import find_entry_points
from apdsl.surfaces.corpus.find import parse, python_files

KERNELS = '''
import asc

TILE = 64


@asc.jit
def scale_kernel(x: asc.GlobalAddress, z: asc.GlobalAddress, per_core: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x + asc.get_block_idx() * per_core, per_core)
    zg = asc.GlobalTensor()
    zg.set_global_buffer(z + asc.get_block_idx() * per_core, per_core)
    pipe = asc.TPipe()
    q_in = asc.TQue(asc.TPosition.VECIN, 1)
    q_out = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(q_in, 1, TILE * 4)
    pipe.init_buffer(q_out, 1, TILE * 4)
    for t in range(per_core // TILE):
        stage_in(t, xg, q_in)
        stage_scale(xg, q_in, q_out)
        stage_out(t, zg, q_out)


@asc.jit
def stage_in(t: int, xg: asc.GlobalTensor, q_in: asc.TQue):
    a = q_in.alloc_tensor(xg.dtype)
    asc.data_copy(a, xg[t * TILE:], TILE)
    q_in.enque(a)


@asc.jit
def stage_scale(xg: asc.GlobalTensor, q_in: asc.TQue, q_out: asc.TQue):
    a = q_in.deque(xg.dtype)
    b = q_out.alloc_tensor(xg.dtype)
    asc.muls(b, a, 3.0, TILE)
    q_out.enque(b)
    q_in.free_tensor(a)


@asc.jit
def stage_out(t: int, zg: asc.GlobalTensor, q_out: asc.TQue):
    b = q_out.deque(zg.dtype)
    asc.data_copy(zg[t * TILE:], b, TILE)
    q_out.free_tensor(b)


if __name__ == "__main__":
    import numpy as np
    import asc.lib.runtime as rt
    x = np.arange(4 * 128, dtype=np.float32)
    z = np.zeros_like(x)
    scale_kernel[4, rt.current_stream()](x, z, 128)
    np.testing.assert_array_equal(z, x * 3)
'''

ADV = '''
import asc


@asc.jit
def tiled_kernel(x: asc.GlobalAddress, tiling: asc.adv.SoftmaxTiling):
    pass
'''

TESTS = '''
import asc.runtime.config as config
import numpy as np
from kern import scale_kernel


def test_scale():
    config.set_platform(config.Backend.Model)
    x = np.linspace(-1, 1, 2 * 64).astype(np.float32)
    z = np.zeros_like(x)
    scale_kernel[2, None](x, z, 64)
    assert np.allclose(z, x * 3)
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pyasc_repo")
    (root / "kern.py").write_text(textwrap.dedent(KERNELS))
    (root / "test_kern.py").write_text(textwrap.dedent(TESTS))
    (root / "adv.py").write_text(textwrap.dedent(ADV))
    return root


def test_entry_points_are_the_jit_functions_no_jit_function_calls(repo: Path) -> None:
    sources = [parse(p) for p in python_files(str(repo))]
    entries = find_entry_points([s for s in sources if s is not None])
    assert sorted(e.qualname for e in entries) == ["scale_kernel", "tiled_kernel"]
    assert {e.api for e in entries} == {"pyasc"}
    scale = next(e for e in entries if e.qualname == "scale_kernel")
    assert [d.kind for d in scale.drivers] == ["pytest", "main", "signature"]


def test_the_repositorys_tests_drive_them_and_a_missing_name_is_located(repo: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(repo), "--json",
                           "--timeout", "200", "-j", "2"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    k = {row["kernel"].split("::")[-1]: row for row in doc["kernels"]}
    assert k["scale_kernel"]["status"] == "matches" and k["scale_kernel"]["api"] == "pyasc"
    assert k["scale_kernel"]["driver"] == "pytest:test_kern.py"
    assert k["tiled_kernel"]["status"] == "error" and k["tiled_kernel"]["code"] == "APK660"
    assert k["tiled_kernel"]["where"] == "adv.py:6" and "asc.adv" in k["tiled_kernel"]["detail"]
    assert doc["total"] == 2
