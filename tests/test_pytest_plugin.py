"""The pytest plugin as a user runs it (`python -m pytest -p apdsl.nki`, or `--apdsl-nki` through
the entry point): each test runs on a fresh simulated device, so what one test sets cannot hide
a bug from the next, and a test failing on an apdsl error has `error[APKnnn]: message` as its
short summary line, in one process or in parallel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

KERNEL = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_through_sbuf(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((x.shape[0], 2 * x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:x.shape[1]], src=x)
    nisa.dma_copy(dst=out, src=t[:, x.shape[1]:])  # the half nothing wrote
    return out


@nki.jit
def wide_psum(x):
    t = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.psum)
    return t
'''

# The first test changes the options and the target; the ones after it must not see that.
TESTS = '''\
import numpy as np
import pytest

import apdsl
from apdsl.tensor.targets import target_for
from kernels import copy_through_sbuf, wide_psum


def test_1_changes_the_session():
    apdsl.options(init_check=False)
    apdsl.set_target("trn3")
    copy_through_sbuf(np.ones((4, 8), np.float32))  # reads zeros: no error with the check off


def test_2_reads_unwritten_memory():
    with pytest.raises(apdsl.ApdslError) as e:
        copy_through_sbuf(np.ones((4, 8), np.float32))
    assert e.value.code == "APK404"


def test_3_runs_on_the_default_target():
    assert apdsl.options().__repr__().startswith("options(init_check=True")
    assert target_for("sbuf").name == "trn2"


def test_4_breaks_a_rule():
    wide_psum(np.ones((4, 256), np.float32))
'''


def run_pytest(folder: Path, *flags: str, autoload: bool = True) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": f"{ROOT}:{folder}", "PATH": "/usr/bin:/bin", "COLUMNS": "200"}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf",
                           *flags, str(folder)], cwd=folder, capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "kernels.py").write_text(KERNEL)
    (tmp_path / "test_kernels.py").write_text(TESTS)
    return tmp_path


@pytest.mark.parametrize("flags", [["-p", "apdsl.nki"], ["-p", "apdsl.nki", "-p", "xdist",
                                                         "-n", "2"]],
                         ids=["one process", "xdist"])
def test_each_test_gets_a_fresh_machine_and_a_coded_summary(suite, flags):
    proc = run_pytest(suite, *flags, autoload=False)
    out = proc.stdout
    assert "1 failed, 3 passed" in out, out + proc.stderr
    summary = out.split("short test summary info")[1]
    assert ("FAILED test_kernels.py::test_4_breaks_a_rule - error[APK301]: psum tensor has 256 "
            "partitions; trn2 has 128") in summary, out
    assert "Traceback" not in summary
    # the failure itself still shows the user's frames and the located diagnostic
    assert "kernels.py:17:9: error[APK301]" in out and "test_4_breaks_a_rule" in out


def test_the_entry_point_option_gives_the_same(suite):
    proc = run_pytest(suite, "-p", "apdsl.nki.entry", "--apdsl-nki", autoload=False)
    assert "1 failed, 3 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "- error[APK301]: psum tensor has 256 partitions" in proc.stdout
