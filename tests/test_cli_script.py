"""`apdsl script FILE.py ARG...`: a launch script runs as `python FILE.py ARG...` would, its
`__main__` block included, with `import nki` resolving to apdsl; its output and exit status are
its own, an apdsl diagnostic is located (exit 1), and its own exception is APK148."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
import sys

import numpy as np

import nki
import nki.language as nl
from helper import offset  # a module beside the script, as `python launch.py` finds it


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


if __name__ == "__main__":
    n = int(sys.argv[1])
    a = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    got = add_kernel(a, a + offset)
    print("match:", np.array_equal(got, 2 * a + offset), sys.argv[2:])
    if sys.argv[2:] == ["bad-shape"]:
        add_kernel(np.zeros((256, 4), np.float32), np.zeros((256, 4), np.float32))
    if sys.argv[2:] == ["raise"]:
        {}["missing"]
    sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
"""


def script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "launch.py").write_text(SCRIPT)
    (tmp_path / "helper.py").write_text("offset = 1.5\n")
    return subprocess.run([sys.executable, "-m", "apdsl", "script", "launch.py", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_the_main_block_runs_with_its_arguments_and_exit_status(tmp_path: Path) -> None:
    proc = script(tmp_path, "8", "--flag", "7")
    assert proc.stdout == "match: True ['--flag', '7']\n", proc.stderr
    assert proc.returncode == 7, proc.stderr  # the program's own sys.exit


@pytest.mark.parametrize("arg, code, line", [("bad-shape", "APK152", 13),
                                             ("raise", "APK148", 25)])
def test_what_stops_the_program_is_located(tmp_path: Path, arg: str, code: str,
                                           line: int) -> None:
    proc = script(tmp_path, "8", arg)
    assert proc.stdout.startswith("match: True"), proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert f"launch.py:{line}:" in proc.stderr and f"error[{code}]" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr.split("traceback of your code")[0], proc.stderr


def test_a_missing_file_is_apk601(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "apdsl", "script", "nowhere.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr


WARNS = """\
import sys

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_kernel(a):
    t = nl.load(a)
    u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype=nl.bfloat16)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, u)
    return out


if __name__ == "__main__":
    a = np.linspace(0, 1, 32, dtype=np.float32).reshape(8, 4)
    for _ in range(3):  # a benchmark's iterations: the same warning, reported once
        got = copy_kernel(a)
    print("exact:", np.array_equal(got, a))
    if sys.argv[1:] == ["exit"]:
        sys.exit(3)
    if sys.argv[1:] == ["raise"]:
        copy_kernel(np.zeros((256, 4), np.float32))
"""


@pytest.mark.parametrize("arg, status", [("end", 0), ("exit", 3), ("raise", 1)])
def test_the_kernels_warnings_are_reported_however_the_script_ends(tmp_path: Path, arg: str,
                                                                    status: int) -> None:
    (tmp_path / "launch.py").write_text(WARNS)
    proc = subprocess.run([sys.executable, "-m", "apdsl", "script", "launch.py", arg],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.stdout == "exact: True\n", proc.stderr
    assert proc.returncode == status, proc.stderr
    said = "launch.py:14:5: warning[APK182]: tensor_copy: dtype=bfloat16 has no effect: the " \
        "copy writes dst u's float32"
    assert proc.stderr.count("warning[APK182]") == 1 and said in proc.stderr, proc.stderr
    if arg == "raise":  # what ended it comes after the warning
        assert proc.stderr.index(said) < proc.stderr.index("error[APK152]"), proc.stderr
