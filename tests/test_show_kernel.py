"""`apdsl show` of views inside kernels (KERNEL.NAME), the names it offers, and windows of
large storage grids (--rows/--cols/--zoom).  Which cells a picture marks is checked against the
storage offsets NumPy gives for the same indexing.  The commands run through the command
line's `main` in process (what `show` reports and writes); the first picture of a view in a
kernel is drawn by a real `python -m apdsl`, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import apdsl_in_process

from apdsl.surfaces.picture import Picture
from apdsl.tensor.view import ndarray

SVG_NS = "{http://www.w3.org/2000/svg}"

PROGRAM = """\
big: f32[128, 64] @ sbuf
small = big[4:8, 10:16]
n = 3

def helper(x):
    inner = x[0:2]
    return inner

kernel k(A: f32[16, 8] @ hbm):
    acc = ndarray((16, 8), f32, hbm)
    for i in range(2):
        tile: f32[128, 64] @ sbuf
        v = tile[i * 4:i * 4 + 4, 2:8]
        w = helper(v)
    head = A[1:3]
    count = 5
    v = 7
    dma_copy(dst=acc, src=A)
    return acc

kernel g(A: f32[M, N] @ hbm):
    head = A[1:3]
    return A
"""


def apdsl(*args: str, cwd: Path, process: bool = False) -> subprocess.CompletedProcess:
    """`apdsl ARGS` in `cwd`: in a real process when `process`."""
    if not process:
        return apdsl_in_process(*args, cwd=cwd)
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=120)


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    (tmp_path / "p.apk").write_text(PROGRAM)
    np.save(tmp_path / "a.npy", np.zeros((5, 6), np.float32))
    return tmp_path


def svg_cells(path: Path) -> dict[tuple[int, int], int]:
    """(row, col) -> access order of the touched cells of the order panel."""
    root = ET.parse(path).getroot()
    out: dict[tuple[int, int], int] = {}
    for el in root.iter(f"{SVG_NS}rect"):
        if "touched" in (el.get("class") or "") and el.get("data-order") is not None:
            key = (int(el.get("data-row")), int(el.get("data-col")))
            out.setdefault(key, int(el.get("data-order")))
    return out


def oracle(shape: tuple[int, int], rows: slice, cols: slice) -> dict[tuple[int, int], int]:
    """Storage (row, col) -> access order of `storage[rows, cols]`, from NumPy."""
    offsets = np.arange(shape[0] * shape[1]).reshape(shape)[rows, cols].reshape(-1)
    return {(int(o) // shape[1], int(o) % shape[1]): k for k, o in enumerate(offsets)}


def test_kernel_view_is_the_last_view_bound_even_after_its_storage_is_freed(prog) -> None:
    proc = apdsl("show", "p.apk", "k.v", "--zoom", "--svg", "v.svg", cwd=prog, process=True)
    assert proc.returncode == 0, proc.stderr
    # the second iteration's tile[4:8, 2:8]; `v = 7` later is not a view
    assert svg_cells(prog / "v.svg") == oracle((128, 64), slice(4, 8), slice(2, 8))
    text = apdsl("show", "p.apk", "k.v", "--zoom", cwd=prog).stdout
    assert text.startswith("k.v = tile[i * 4:i * 4 + 4, 2:8]\n")


def test_kernel_view_uses_inputs_or_seeded_ones(prog) -> None:
    given_input = apdsl("show", "p.apk", "g.head", "-i", "A=a.npy", cwd=prog)
    assert given_input.returncode == 0, given_input.stderr
    assert "storage A: float32[5, 6] @ hbm (5 rows x 6 columns)" in given_input.stdout
    proc = apdsl("show", "p.apk", "g.head", "-i", "A=a.npy", "--svg", "h.svg", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    assert svg_cells(prog / "h.svg") == oracle((5, 6), slice(1, 3), slice(None))
    seeded = apdsl("show", "p.apk", "k.head", "--svg", "s.svg", cwd=prog)
    assert seeded.returncode == 0, seeded.stderr
    assert svg_cells(prog / "s.svg") == oracle((16, 8), slice(1, 3), slice(None))
    # a shape-generic kernel without -i cannot run: a diagnostic, exit 1
    assert apdsl("show", "p.apk", "g.head", cwd=prog).returncode == 1
    # -i without KERNEL.NAME, and a NAME of no kernel: command-line mistakes
    assert apdsl("show", "p.apk", "small", "-i", "A=a.npy", cwd=prog).returncode == 2
    proc = apdsl("show", "p.apk", "kk.v", cwd=prog)
    assert proc.returncode == 2 and "did you mean 'k.v'" in proc.stderr


def test_kernel_name_never_bound_or_not_a_view_is_an_error(prog) -> None:
    proc = apdsl("show", "p.apk", "k.inner", cwd=prog)  # bound in a helper, not the kernel
    assert proc.returncode == 1 and "error[APK101]" in proc.stderr, proc.stderr
    assert "views bound in k: A, acc, head, tile, v, w" in proc.stderr
    proc = apdsl("show", "p.apk", "k.count", cwd=prog)
    assert proc.returncode == 1 and "error[APK110]" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_names_offered_are_only_views(tmp_path: Path) -> None:
    (tmp_path / "q.apk").write_text("n = 3\nsizes = [1, 2]\n"
                                    "kernel k(A: f32[4] @ hbm):\n    return A\n")
    proc = apdsl("show", "q.apk", "nope", cwd=tmp_path)
    assert proc.returncode == 1 and "error[APK101]" in proc.stderr
    help_line = next(line for line in proc.stderr.splitlines() if "help:" in line)
    assert "sizes" not in help_line and " n," not in help_line and "views defined" not in \
        help_line
    assert "k.nope" in help_line  # where a kernel's view would be
    proc = apdsl("show", "q.apk", "k", cwd=tmp_path)
    assert proc.returncode == 1 and "k.NAME draws a view bound inside the kernel" in proc.stderr


def test_zoom_draws_a_small_view_of_a_large_tile_element_by_element(prog) -> None:
    plain = apdsl("show", "p.apk", "small", cwd=prog).stdout
    assert "each cell is a block" in plain and "--zoom draws the 4 x 6" in plain
    proc = apdsl("show", "p.apk", "small", "--zoom", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "each cell is a block" not in proc.stdout
    grid = [line.split() for line in lines[3:7]]
    assert [row[0] for row in grid] == ["4", "5", "6", "7"]  # partition labels
    assert lines[2].split() == ["10", "14"]  # column labels start at the window
    symbols = "0123456789abcdefghijklmn"
    assert ["".join(row[1:]) for row in grid] == [symbols[i:i + 6] for i in range(0, 24, 6)]
    assert "touched of 8192" in proc.stdout  # facts stay those of the whole storage


def test_rows_and_cols_window(prog) -> None:
    proc = apdsl("show", "p.apk", "small", "--rows", "0:6", "--cols", "8:12", "--svg",
                 "w.svg", cwd=prog)
    assert proc.returncode == 0, proc.stderr
    want = {k: v for k, v in oracle((128, 64), slice(4, 8), slice(10, 16)).items()
            if k[0] < 6 and 8 <= k[1] < 12}
    assert svg_cells(prog / "w.svg") == want
    for bad in ("5:2", "x", "3"):
        proc = apdsl("show", "p.apk", "small", "--rows", bad, cwd=prog)
        assert proc.returncode == 2, (bad, proc.stderr)
    proc = apdsl("show", "p.apk", "small", "--rows", "200:300", cwd=prog)
    assert proc.returncode == 2 and "empty" in proc.stderr


def test_help_documents_the_window_options(prog) -> None:
    text = apdsl("show", "--help", cwd=prog).stdout
    for word in ("--rows", "--cols", "--zoom", "KERNEL.NAME", "-i"):
        assert word in text


def test_fractal_window_grows_to_whole_fractals() -> None:
    t = ndarray((64, 64), "float16", "l1", "NZ")
    pic = Picture.of(t[0:16, 0:16], "nz")
    fr, fc = pic.geometry.fractal
    w = pic.window((3, 5), (20, 21))
    assert (w.geometry.row_origin, w.geometry.rows) == (0, fr)
    assert w.geometry.col_origin % fc == 0 and w.geometry.cols == fc
    r0, c0 = w.geometry.row_origin, w.geometry.col_origin
    np.testing.assert_array_equal(w.order, pic.order[r0:r0 + fr, c0:c0 + fc])


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(2, 40), cols=st.integers(2, 70), data=st.data())
def test_window_is_the_slice_of_the_grid(rows: int, cols: int, data) -> None:
    a = data.draw(st.integers(0, rows - 1))
    b = data.draw(st.integers(a + 1, rows))
    c = data.draw(st.integers(0, cols - 1))
    d = data.draw(st.integers(c + 1, cols))
    r0 = data.draw(st.integers(0, rows - 1))
    c0 = data.draw(st.integers(0, cols - 1))
    t = ndarray((rows, cols), "float32", "hbm")
    pic = Picture.of(t[r0:, c0::2], "v")
    w = pic.window((a, b), (c, d))
    np.testing.assert_array_equal(w.order, pic.order[a:b, c:d])
    np.testing.assert_array_equal(w.count, pic.count[a:b, c:d])
    cells = w.cells(10 ** 6, 10 ** 6)
    assert list(cells.row_start) == list(range(a, b))
    assert list(cells.col_start) == list(range(c, d))
    assert w.distinct == pic.distinct and w.elements == rows * cols
    z = pic.zoomed()
    touched = np.argwhere(pic.order >= 0)
    assert (z.geometry.row_origin, z.geometry.col_origin) == tuple(touched.min(axis=0))
    assert (z.geometry.rows, z.geometry.cols) == tuple(touched.max(axis=0) -
                                                       touched.min(axis=0) + 1)
