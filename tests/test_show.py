"""`apdsl show`: pictures of access patterns.

The access data of a picture is checked against NumPy and einops oracles (the storage offsets a
view reads are `np.arange(storage).reshape(shape)` pushed through the same indexing); terminal
output against reviewed golden files in tests/golden/show/; SVG as well-formed XML whose
highlighted cells are exactly the distinct storage elements touched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import einops
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apdsl.surfaces import picture_svg, picture_text, show
from apdsl.surfaces.picture import Picture, geometry
from apdsl.tensor import formats
from apdsl.tensor.view import ndarray

GOLDEN = Path(__file__).parent / "golden" / "show"
UPDATE = bool(os.environ.get("APDSL_UPDATE_GOLDEN"))
SVG_NS = "{http://www.w3.org/2000/svg}"

# name -> (program, NAME, --steps)
CASES = {
    # seed 000 "A Concrete Example": t[0:16, 8:16] as a hand-written access pattern
    "seed_concrete": ("t: f32[16, 16] @ sbuf\n"
                      "access = t.ap([[16, 16], [1, 8]], offset=8)\n", "access", False),
    "transpose_hbm": ("h: f32[6, 8] @ hbm\nht = h.permute((1, 0))\n", "ht", False),
    "broadcast_hbm": ("h: f32[4, 8] @ hbm\nb = h[1:2].broadcast(0, 4)\n", "b", False),
    "chain_steps": ("t: f32[8, 32] @ sbuf\n"
                    "u = t.slice(1, 8, 24)\n"
                    "w = u[0:4, ::2].rearrange(\"p (a b) -> p b a\", a=2)\n", "w", True),
    "nz_tile_pieces": ("n: f16[32, 32] @ l1 as NZ\nm = n[0:16, 8:24]\n", "m", False),
    "nz_rows_across_fractals": ("n: f16[32, 32] @ l1 as NZ\nm = n[8:24, 0:16]\n", "m", False),
    "large_summary": ("big: f32[128, 512] @ sbuf\nv = big[0:100, 3:300:3]\n", "v", False),
    "vector_select_unresolved": ("A: f32[16, 8] @ hbm\noffsets: i32[4, 1] @ sbuf\n"
                                 "g = A.vector_select(0, offsets)\n", "g", False),
    "select_resolved": ("A: f32[6, 8] @ hbm\nidx: i32[1, 1] @ sbuf = 3\n"
                        "s = A.select(0, idx)\n", "s", False),
}


def _args(file: Path, name: str, steps: bool = False, svg: str | None = None,
          target: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(file=str(file), name=name, svg=svg, steps=steps, target=target)


def _run(tmp_path: Path, source: str, name: str, capsys, **kw) -> tuple[int, str, str]:
    path = tmp_path / "prog.apk"
    path.write_text(source, encoding="utf-8")
    status = show.command(_args(path, name, **kw))
    out, err = capsys.readouterr()
    return status, out, err


# -- golden terminal pictures ---------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, tmp_path: Path, capsys) -> None:
    source, name, steps = CASES[case]
    status, out, err = _run(tmp_path, source, name, capsys, steps=steps)
    assert status == 0, err
    golden = GOLDEN / f"{case}.txt"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert out == golden.read_text(encoding="utf-8")
    assert "\x1b[" not in out  # no colour when stdout is not a terminal


def test_golden_files_have_cases() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(CASES)


# -- access data against NumPy / einops ----------------------------------------------------------

def _expected(offsets: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """First access and access count per storage element, straight from the offsets."""
    order = np.full(total, -1, np.int64)
    count = np.zeros(total, np.int64)
    for k, o in enumerate(offsets.reshape(-1)):
        if order[o] < 0:
            order[o] = k
        count[o] += 1
    return order, count


def _check(view, offsets: np.ndarray) -> Picture:
    pic = Picture.of(view)
    total = pic.geometry.elements
    order, count = _expected(offsets, total)
    np.testing.assert_array_equal(pic.order.reshape(-1), order)
    np.testing.assert_array_equal(pic.count.reshape(-1), count)
    assert pic.distinct == len(np.unique(offsets))
    assert pic.accesses == offsets.size
    return pic


slices = st.tuples(st.integers(0, 5), st.integers(1, 6), st.integers(1, 3))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), cols=st.integers(1, 9), rs=slices, cs=slices,
       transpose=st.booleans())
def test_hbm_slices_match_numpy(rows, cols, rs, cs, transpose) -> None:
    r0, rn, rstep = rs
    c0, cn, cstep = cs
    r0, c0 = min(r0, rows - 1), min(c0, cols - 1)
    r1, c1 = min(r0 + rn, rows), min(c0 + cn, cols)
    t = ndarray((rows, cols), "float32", "hbm", name="t")
    v = t[r0:r1:rstep, c0:c1:cstep]
    oracle = np.arange(rows * cols).reshape(rows, cols)[r0:r1:rstep, c0:c1:cstep]
    if transpose:
        v, oracle = v.permute((1, 0)), oracle.T
    _check(v, oracle)


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 3), h=st.integers(1, 4), w=st.integers(1, 4), c=st.integers(1, 3),
       pattern=st.sampled_from(["b c h w -> b (h w) c", "b c h w -> (b h w) c",
                                "b c h w -> b w h c", "b c h w -> c b (w h)"]))
def test_rearrange_matches_einops(b, h, w, c, pattern) -> None:
    t = ndarray((b, c, h, w), "float32", "hbm", name="t")
    v = t.rearrange(pattern)
    oracle = einops.rearrange(np.arange(b * c * h * w).reshape(b, c, h, w), pattern)
    _check(v, oracle)


def test_broadcast_counts_match_numpy() -> None:
    t = ndarray((3, 5), "float32", "hbm", name="t")
    v = t[1:2].broadcast(0, 4)
    oracle = np.broadcast_to(np.arange(15).reshape(3, 5)[1:2], (4, 5))
    pic = _check(v, oracle)
    assert pic.max_count == 4 and pic.distinct == 5


def test_overlapping_ap_counts() -> None:
    t = ndarray((4, 16), "float32", "hbm", name="t")
    v = t.ap([[2, 6], [1, 4]], offset=1)  # windows of 4 stepping by 2 overlap
    oracle = 1 + 2 * np.arange(6)[:, None] + np.arange(4)[None, :]
    pic = _check(v, oracle)
    assert pic.max_count == 2


def test_dtype_reinterpret_maps_to_native_elements() -> None:
    t = ndarray((4, 8), "int32", "hbm", name="t")
    v = t.view("bfloat16")[1:3, 2:6]  # two bf16 per int32: each native element read twice
    pic = Picture.of(v)
    native = (np.arange(64).reshape(4, 16)[1:3, 2:6] // 2).reshape(-1)
    order, count = _expected(native, 32)
    np.testing.assert_array_equal(pic.order.reshape(-1), order)
    np.testing.assert_array_equal(pic.count.reshape(-1), count)


def test_onchip_rows_are_partitions() -> None:
    t = ndarray((4, 3, 5), "float32", "sbuf", name="t")
    geo = geometry(t)
    assert (geo.rows, geo.cols, geo.row_axis) == (4, 15, "partition")
    h = ndarray((2, 3, 5), "float32", "hbm", name="h")
    assert (geometry(h).rows, geometry(h).cols) == (6, 5)  # leading dims fold into rows
    one = ndarray((7,), "float32", "hbm", name="one")
    assert (geometry(one).rows, geometry(one).cols) == (1, 7)


@pytest.mark.parametrize("fmt,shape,dtype,buffer", [("NZ", (40, 24), "float16", "l1"),
                                                    ("ZZ", (20, 40), "int8", "l1"),
                                                    ("ZN", (33, 17), "float32", "l1"),
                                                    ("NZ", (32, 32), "float32", "l0c")])
def test_fractal_grid_is_the_fractal_storage(fmt, shape, dtype, buffer) -> None:
    """Every logical element lands on its fractal storage cell: the grid's fractal j of band i
    is storage block (i, j), and blocks are fractal-sized."""
    t = ndarray(shape, dtype, buffer, fmt, name="t")
    pic = Picture.of(t)
    geo = pic.geometry
    c0 = 16 if buffer == "l0c" else None
    storage = formats.storage_shape(fmt, shape, dtype, c0)
    assert geo.fractal == storage[-2:]
    assert geo.elements == int(np.prod(storage))
    modes = formats.dim_modes(fmt, shape, dtype, c0)
    offsets = formats.offsets(modes, shape)  # storage offset of every logical element
    order, count = _expected(offsets, geo.elements)
    np.testing.assert_array_equal(geo.grid(order), pic.order)
    np.testing.assert_array_equal(geo.grid(count), pic.count)
    # the band layout: storage element (i, j, r, c) is drawn at row i*r0 + r, col j*c0 + c
    r0, c0_ = geo.fractal
    flat = np.arange(geo.elements)
    grid = geo.grid(flat)
    i, j, r, c = 0, geo.per_band - 1, 1, 2
    assert grid[i * r0 + r, j * c0_ + c] == ((i * geo.per_band + j) * r0 + r) * c0_ + c


def test_fractal_grid_uses_the_c0_the_tensor_was_made_with() -> None:
    """A tensor made with a C0 that is not its dtype's (c0=32 for float16: 16 x 32 fractals) is
    drawn on its own fractal storage: the storage records the C0, nothing is guessed from the
    storage size (which once fell back to the dtype's 16 x 16 fractals)."""
    shape = (20, 40)
    t = ndarray(shape, "float16", "gm", "NZ", name="t", c0=32)
    pic = Picture.of(t)
    storage = formats.storage_shape("NZ", shape, "float16", 32)
    assert storage == (2, 2, 16, 32)
    assert pic.geometry.storage_shape == storage and pic.geometry.fractal == (16, 32)
    offsets = formats.offsets(formats.dim_modes("NZ", shape, "float16", 32), shape)
    order, count = _expected(offsets, pic.geometry.elements)
    np.testing.assert_array_equal(pic.geometry.grid(order), pic.order)
    np.testing.assert_array_equal(pic.geometry.grid(count), pic.count)


def test_summary_blocks_take_earliest_access_and_mark_partial() -> None:
    t = ndarray((64, 256), "float32", "hbm", name="t")
    v = t[0:40:3, 5:200:7]
    pic = Picture.of(v)
    cells = pic.cells(16, 32)
    fr, fc = cells.row_step, cells.col_step
    assert (fr, fc) == (4, 8)
    order = pic.order
    for br, bc in [(0, 0), (2, 3), (9, 24), (15, 31)]:
        block = order[br * fr:(br + 1) * fr, bc * fc:(bc + 1) * fc]
        touched = block[block >= 0]
        assert cells.order[br, bc] == (touched.min() if touched.size else -1)
        assert cells.partial[br, bc] == (0 < touched.size < block.size)
        assert cells.count[br, bc] == pic.count[br * fr:(br + 1) * fr,
                                                 bc * fc:(bc + 1) * fc].max()


def test_summary_respects_fractal_borders() -> None:
    t = ndarray((512, 256), "float16", "gm", "NZ", name="t")
    cells = Picture.of(t[0:64, 0:64]).cells(32, 32)
    assert 16 % cells.row_step == 0 or cells.row_step % 16 == 0
    assert 16 % cells.col_step == 0 or cells.col_step % 16 == 0


def test_plain_grid_shows_every_touched_cell_once() -> None:
    t = ndarray((12, 20), "float32", "hbm", name="t")
    pic = Picture.of(t[2:9:2, 3:17:3])
    text = picture_text.render(pic, color=False)
    grid_rows = [line for line in text.split("\n")[2:14]]
    assert len(grid_rows) == 12
    symbols = sum(ch in picture_text.SYMBOLS for line in grid_rows for ch in line[3:])
    assert symbols == pic.distinct == 20


def test_symbols_follow_access_order() -> None:
    t = ndarray((4, 4), "float32", "hbm", name="t")
    text = picture_text.render(Picture.of(t.permute((1, 0))), color=False)
    rows = text.split("\n")[2:6]
    # column j of the storage is read j-th: access k = 4 * col + row
    assert [r.split()[1:] for r in rows] == [["0", "4", "8", "c"], ["1", "5", "9", "d"],
                                             ["2", "6", "a", "e"], ["3", "7", "b", "f"]]


def test_colour_output_uses_gradient_backgrounds() -> None:
    from rich.console import Console
    t = ndarray((2, 4), "float32", "hbm", name="t")
    console = Console(force_terminal=True, color_system="truecolor", width=120, record=True,
                      file=open(os.devnull, "w"))
    console.print(picture_text.render(Picture.of(t), color=True))
    ansi = console.export_text(styles=True)
    first, last = picture_text.gradient(0.0), picture_text.gradient(1.0)
    assert f"48;2;{first[0]};{first[1]};{first[2]}" in ansi
    assert f"48;2;{last[0]};{last[1]};{last[2]}" in ansi


# -- SVG ----------------------------------------------------------------------------------------

def _panel_cells(root: ET.Element, kind: str) -> list[ET.Element]:
    out = []
    for g in root.iter(f"{SVG_NS}g"):
        if g.get("class") == f"panel {kind}":
            out += [r for r in g.iter(f"{SVG_NS}rect") if "touched" in (r.get("class") or "")]
    return out


def test_svg_highlights_distinct_elements_and_counts_broadcast(tmp_path, capsys) -> None:
    source = "h: f32[6, 8] @ hbm\nb = h[2:3, 1:7].broadcast(0, 5)\n"
    out_svg = tmp_path / "b.svg"
    status, out, err = _run(tmp_path, source, "b", capsys, svg=str(out_svg))
    assert status == 0, err
    assert out.strip() == f"wrote {out_svg}"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    root = ET.parse(out_svg).getroot()
    assert root.tag == f"{SVG_NS}svg" and root.get("version") == "1.1"
    order = _panel_cells(root, "order")
    counts = _panel_cells(root, "count")
    assert len(order) == len(counts) == 6  # distinct storage elements touched
    assert sorted(int(r.get("data-col")) for r in order) == [1, 2, 3, 4, 5, 6]
    assert {int(r.get("data-count")) for r in counts} == {5}
    assert sorted(int(r.get("data-order")) for r in order) == [0, 1, 2, 3, 4, 5]


def test_svg_order_labels_and_fractal_borders() -> None:
    n = ndarray((32, 32), "float16", "l1", "NZ", name="n")
    pic = Picture.of(n[0:16, 0:16], "n[0:16, 0:16]")
    root = ET.fromstring(picture_svg.render([pic]))
    order = _panel_cells(root, "order")
    assert len(order) == 256 == pic.distinct
    texts = {t.text for t in root.iter(f"{SVG_NS}text")}
    assert {"0", "255", "n[0:16, 0:16]"} <= texts  # each cell labelled by its access number
    fractal_lines = [e for e in root.iter(f"{SVG_NS}line") if e.get("class") == "fractal"]
    assert len(fractal_lines) == 4  # one horizontal and one vertical border in each panel


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 90), step=st.integers(1, 4))
def test_svg_well_formed_and_counts_touched(rows, cols, step) -> None:
    t = ndarray((rows, cols), "float32", "hbm", name="t<&>")
    pic = Picture.of(t[:, ::step], "t[:, ::step] & <friends>")
    root = ET.fromstring(picture_svg.render([pic]))
    cells = pic.cells(picture_svg.MAX_ROWS, picture_svg.MAX_COLS)
    assert len(_panel_cells(root, "order")) == cells.touched
    if not cells.summarised:
        assert cells.touched == pic.distinct


def test_svg_steps_stack_pictures(tmp_path, capsys) -> None:
    source, name, _ = CASES["chain_steps"]
    out_svg = tmp_path / "steps.svg"
    status, _, err = _run(tmp_path, source, name, capsys, steps=True, svg=str(out_svg))
    assert status == 0, err
    root = ET.parse(out_svg).getroot()
    pictures = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "picture"]
    assert len(pictures) == 4  # t, u, u[0:4, ::2], the rearrange


# -- steps, names, errors --------------------------------------------------------------------------

def test_steps_follow_names_back_to_the_declaration(tmp_path, capsys) -> None:
    from apdsl.semantics.program import Program
    src = ("t: f32[8, 16] @ hbm\n"
           "a = t.slice(1, 0, 8)\n"
           "a = a.permute((1, 0))\n"  # reassigned: the chain must use the earlier a
           "b = a[0:4].reshape((2, 2, 8))\n")
    path = tmp_path / "p.apk"
    path.write_text(src)
    program = Program.from_path(str(path))
    interp = program.interpreter()
    ns: dict = {}
    interp.exec_module(program.module, ns)
    steps = show.chain_steps(program.module, "b", interp, ns)
    assert [s.title for s in steps] == [
        "t: f32[8, 16] @ hbm", "a = t.slice(1, 0, 8)", "a = a.permute((1, 0))", "a[0:4]",
        "b = a[0:4].reshape((2, 2, 8))"]
    assert [tuple(s.tensor.shape) for s in steps] == [(8, 16), (8, 8), (8, 8), (4, 8), (2, 2, 8)]
    assert steps[-1].tensor.get_pattern() == ns["b"].get_pattern()


def test_unknown_name_suggests_close_matches(tmp_path, capsys) -> None:
    status, out, err = _run(tmp_path, "tile: f32[4, 4] @ hbm\n", "tiel", capsys)
    assert status == 1 and out == ""
    assert "<command line>: error[APK101]: unknown name 'tiel'" in err
    assert "did you mean 'tile'?" in err


def test_not_a_tensor(tmp_path, capsys) -> None:
    status, _, err = _run(tmp_path, "n = 3\n", "n", capsys)
    assert status == 1 and "error[APK110]: 'n' is an int, not a tensor view" in err


def test_program_error_is_a_diagnostic(tmp_path, capsys) -> None:
    status, out, err = _run(tmp_path, "t: f32[4, 8] @ hbm\nu = t.slice(1, 0, 9)\n", "u",
                            capsys)
    assert status == 1 and out == ""
    assert "prog.apk:2:19: error[APK203]" in err and "Traceback" not in err


def test_missing_file_and_bad_target(tmp_path, capsys) -> None:
    assert show.command(_args(tmp_path / "nope.apk", "t")) == 1
    assert "error[APK601]" in capsys.readouterr().err
    path = tmp_path / "p.apk"
    path.write_text("t: f32[4, 8] @ hbm\n")
    assert show.command(_args(path, "t", target="trn9")) == 2
    assert "unknown target 'trn9'" in capsys.readouterr().err


def test_svg_unwritable_path_is_a_diagnostic(tmp_path, capsys) -> None:
    status, _, err = _run(tmp_path, "t: f32[4, 8] @ hbm\n", "t", capsys,
                          svg=str(tmp_path / "no" / "such" / "dir" / "x.svg"))
    assert status == 1 and "error[APK606]" in err


def test_command_line_end_to_end(tmp_path) -> None:
    """The console entry point: exit statuses and streams (one subprocess)."""
    path = tmp_path / "p.apk"
    path.write_text("t: f32[4, 8] @ hbm\nu = t[1:3, 2:6]\n")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    r = subprocess.run([sys.executable, "-m", "apdsl", "show", str(path), "u"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "storage t: float32[4, 8] @ hbm" in r.stdout
    assert "8 accesses, 8 distinct storage elements touched of 32" in r.stdout


def test_tail_tile_draws_its_valid_extent():
    import apdsl
    from apdsl.surfaces.picture import Picture
    A = apdsl.ndarray((40, 40), "float16", "gm")
    tile = apdsl.tile_view(A, (1, 1), (32, 32))   # valid extent (8, 8)
    pic = Picture.of(tile)
    assert pic.distinct == 64 and pic.outside == 0
    assert any("valid extent (8, 8)" in n for n in pic.notes)
