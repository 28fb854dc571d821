"""Diagnostics as the command line prints them: a long source line keeps the start of its
statement and the underlined part, the terminal's width (`COLUMNS`) is used, and a report ends
with where to read more about its codes (`apdsl explain CODE`, as rustc's `--explain`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apdsl.errors import ApdslError, Span
from apdsl.surfaces.diagnostics import render

# the src slice is out of bounds (768 > 512): the error points at `x[...]`, far right on a long
# line
LONG = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        for j in nl.affine_range(1):
            nisa.dma_copy(dst=out[0:128, i * 256:(i + 1) * 256], src=x[0:128, i * 256 + j * 256:(i + 1) * 256 + 512])
    return out
'''


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**environ, "NO_COLOR": "1", **env},
                          timeout=120)


@pytest.fixture
def long_kernel(tmp_path: Path) -> Path:
    (tmp_path / "long.py").write_text(LONG)
    np.save(tmp_path / "x.npy", np.ones((128, 512), np.float32))
    return tmp_path


def _excerpt(stderr: str) -> tuple[str, str]:
    """The source row and the underline row of the first report."""
    rows = stderr.splitlines()
    at = next(i for i, r in enumerate(rows) if r.startswith("11 | "))
    return rows[at], rows[at + 1]


def test_a_long_line_keeps_the_statement_start_and_the_span(long_kernel):
    proc = cli("run", "long.py", "-i", "x=x.npy", cwd=long_kernel)
    assert proc.returncode == 1 and "error[APK" in proc.stderr, proc.stderr
    code, marks = _excerpt(proc.stderr)
    assert len(code) <= 100 and "nisa.dma_copy(" in code, proc.stderr
    assert "....dma_copy" not in code  # never cut inside the call's name
    first = marks.index("^") if "^" in marks else marks.index("-")
    line = LONG.splitlines()[10]
    err = proc.stderr.splitlines()[0]
    column = int(err.split(":")[2])
    assert code[first] == line[column - 1], proc.stderr  # the span's first character is shown


def test_columns_widens_the_excerpt(long_kernel):
    proc = cli("run", "long.py", "-i", "x=x.npy", cwd=long_kernel, COLUMNS="200")
    code, _ = _excerpt(proc.stderr)
    assert code == "11 | " + LONG.splitlines()[10], proc.stderr


@pytest.mark.parametrize("column", range(13, 117, 7))  # the line has 117 characters
def test_every_span_on_a_long_line_is_shown_from_its_start(column):
    line = LONG.splitlines()[10]
    for end in (column + 3, column + 40, len(line) + 1):
        span = Span("f.py", 1, column, 1, min(end, len(line) + 1))
        err = ApdslError("m", code="APK306", span=span)
        rows = render(err, {"f.py": line + "\n"}, color=False).splitlines()
        code, marks = rows[2], rows[3]
        at = marks.index("^")
        assert code[at] == line[column - 1], "\n".join(rows)
        assert "nisa.dma_copy(" in code or column < 30


def test_a_report_ends_with_where_to_read_more(tmp_path):
    (tmp_path / "one.apk").write_text("x: f32[128, 64] @ sbuf\nu = x.slice(1, 8, 80)\n")
    (tmp_path / "two.apk").write_text("x: f32[128, 64] @ sbuf\nu = x.slice(1, 8, 80)\n"
                                      "y = x.slcie(1, 0, 4)\n")
    proc = cli("run", "one.apk", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == \
        "For more information about this error, try `apdsl explain APK203`."
    proc = cli("check", "two.apk", cwd=tmp_path)
    assert proc.stderr.splitlines()[-2:] == [
        "Some errors have detailed explanations: APK103, APK203.",
        "For more information about an error, try `apdsl explain APK103`."], proc.stderr
    proc = cli("check", "two.apk", "--json", cwd=tmp_path)  # stdout: JSON lines only
    assert [json.loads(line)["code"] for line in proc.stdout.splitlines()] == ["APK203", "APK103"]
    assert "apdsl explain" not in proc.stdout + proc.stderr
    (tmp_path / "fine.apk").write_text("x: f32[128, 64] @ sbuf\n")
    proc = cli("check", "fine.apk", cwd=tmp_path)
    assert proc.returncode == 0 and "explain" not in proc.stderr
