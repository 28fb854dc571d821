"""The command line as a user runs it: subprocesses, exit codes, stdout/stderr, files written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import SPEC_EXAMPLE

ROOT = Path(__file__).resolve().parent.parent


def apdsl(*args: str, cwd: Path | None = None, env: dict | None = None):
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env=full_env, timeout=120)


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "gather.apk"
    path.write_text(SPEC_EXAMPLE)
    return path


def test_run_with_seeded_inputs(spec_file):
    r = apdsl("run", str(spec_file))
    assert r.returncode == 0, r.stderr
    assert "gather_rows -> float32[64, 512] @ shared_hbm" in r.stdout
    assert r.stderr == ""
    again = apdsl("run", str(spec_file))
    assert again.stdout == r.stdout  # seeded data is the same every run


def test_run_with_input_and_output(spec_file, tmp_path):
    a = np.arange(128 * 512, dtype=np.float64).reshape(128, 512)  # cast to f32 on input
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "out.npy"
    r = apdsl("run", str(spec_file), "-i", f"A={tmp_path / 'a.npy'}", "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = np.load(out)
    assert got.dtype == np.float32 and np.array_equal(got, a[::2].astype(np.float32))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_bf16_results_are_widened(tmp_path):
    src = ("kernel k(A: bf16[4, 4] @ hbm) -> bf16[4, 4] @ hbm:\n"
           "    out = ndarray((4, 4), bf16, hbm)\n    dma_copy(out, A)\n    return out\n")
    (tmp_path / "k.apk").write_text(src)
    r = apdsl("run", str(tmp_path / "k.apk"), "-o", str(tmp_path / "o.npy"))
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "o.npy").dtype == np.float32


@pytest.mark.parametrize("args,needle", [
    (["run"], "the following arguments are required"),
    (["run", "{f}", "nope"], "has no kernel 'nope'"),
    (["run", "{f}", "-i", "B=x.npy"], "no kernel parameter is called 'B'"),
    (["run", "{f}", "-i", "Ax.npy"], "-i expects NAME=PATH.npy"),
    (["run", "{f}", "--target", "trn9"], "unknown target"),
    (["frobnicate"], "invalid choice"),
    (["explain", "APK999"], "unknown error code"),
])
def test_command_line_mistakes_exit_2(spec_file, args, needle):
    r = apdsl(*[a.replace("{f}", str(spec_file)) for a in args])
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_file_and_bad_npy_exit_1(spec_file, tmp_path):
    r = apdsl("run", str(tmp_path / "none.apk"))
    assert r.returncode == 1 and "error[APK601]" in r.stderr
    (tmp_path / "bad.npy").write_text("nope")
    r = apdsl("run", str(spec_file), "-i", f"A={tmp_path / 'bad.npy'}")
    assert r.returncode == 1 and "error[APK605]" in r.stderr
    np.save(tmp_path / "wrong.npy", np.zeros((3, 3), np.float32))
    out = tmp_path / "never.npy"
    r = apdsl("run", str(spec_file), "-i", f"A={tmp_path / 'wrong.npy'}", "-o", str(out))
    assert r.returncode == 1 and "error[APK131]" in r.stderr and not out.exists()
    assert "Traceback" not in r.stderr


def test_check_ok_and_errors(spec_file, tmp_path):
    r = apdsl("check", str(spec_file))
    assert r.returncode == 0 and "ok" in r.stdout
    bad = tmp_path / "bad.apk"
    bad.write_text("t: f32[128, 64] @ sbuf\nu = t.slice(1, 8, 80)\nv = u.slice(1, 0, 2)\n"
                   "w = tt.permute((0, 1))\nx = t.select(0, 3)\n")
    r = apdsl("check", str(bad))
    assert r.returncode == 1
    codes = [line for line in r.stderr.splitlines() if "error[" in line]
    # independent errors are all reported; v depends on u and is not reported again
    assert [c.split("error[")[1][:6] for c in codes] == ["APK203", "APK101", "APK228"]
    assert f"{bad}:2:" in r.stderr


def test_check_json(tmp_path):
    bad = tmp_path / "bad.apk"
    bad.write_text("t: f32[128, 64] @ sbuf\nu = t.slice(1, 8, 80)\n")
    r = apdsl("check", str(bad), "--json")
    assert r.returncode == 1
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(objs) == 1
    o = objs[0]
    assert set(o) >= {"severity", "code", "message", "file", "line", "column", "end_line",
                      "end_column", "notes", "help"}
    assert (o["code"], o["line"], o["file"]) == ("APK203", 2, str(bad))


def test_syntax_error_report(tmp_path):
    bad = tmp_path / "syn.apk"
    bad.write_text("t: f32[128, 64] @ sbuf\nu = t.slice(1, 8, 24\n")
    r = apdsl("check", str(bad))
    assert r.returncode == 1
    assert "error[APK" in r.stderr and "expected" in r.stderr
    assert "Traceback" not in r.stderr


def test_lower_json(spec_file):
    r = apdsl("lower", str(spec_file), "--json")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    ops = [o["op"] for o in objs]
    assert ops == ["iota", "dma_copy"]
    dma = objs[1]
    assert set(dma) >= {"op", "file", "line", "name", "operands"}
    assert dma["line"] == 10
    src = dma["operands"]["src"]
    assert src["tensor"] == "A" and src["buffer"] == "hbm" and src["vector_offset"] == "offsets"
    assert src["pattern"] == [[512, 64], [1, 512]]
    assert dma["operands"]["dst"]["pattern"] == [[1, 32768]]


def test_lower_table(spec_file):
    r = apdsl("lower", str(spec_file))
    assert r.returncode == 0
    assert "dma_copy" in r.stdout and "offsets[p] * 512" in r.stdout


def test_explain():
    r = apdsl("explain", "APK203")
    assert r.returncode == 0 and "APK203" in r.stdout and "slice" in r.stdout
    r = apdsl("explain", "--list")
    assert r.returncode == 0 and len(r.stdout.splitlines()) > 50


def test_module_entry_point_and_console_script(spec_file):
    exe = Path(sys.executable).parent / "apdsl"
    if exe.exists():
        r = subprocess.run([str(exe), "check", str(spec_file)], capture_output=True, text=True)
        assert r.returncode == 0


def test_no_colour_when_piped(tmp_path):
    bad = tmp_path / "bad.apk"
    bad.write_text("x = y\n")
    r = apdsl("check", str(bad), env={"NO_COLOR": "1"})
    assert "\x1b[" not in r.stderr


def test_check_of_a_file_of_several_kernels_checks_them_all(tmp_path):
    """`check` needs no KERNEL: it checks every kernel (only `-i` needs a kernel to match)."""
    f = tmp_path / "two.apk"
    f.write_text("kernel a(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:\n    return A\n"
                 "kernel b(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:\n"
                 "    t = ndarray((4, 8), f32, sbuf)\n    dma_copy(t, A[:, 0:4])\n"
                 "    return A\n")
    r = apdsl("check", str(f))
    assert r.returncode == 1 and "error[APK" in r.stderr and f"{f}:5:" in r.stderr
    f.write_text("kernel a(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:\n    return A\n"
                 "kernel b(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:\n    return A\n")
    r = apdsl("check", str(f))
    assert r.returncode == 0 and "ok (2 kernels)" in r.stdout, r.stderr
    r = apdsl("check", str(f), "-i", f"A={tmp_path / 'none.npy'}")
    assert r.returncode == 2 and "name the one to run" in r.stderr
