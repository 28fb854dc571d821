"""Jupyter (SPEC section 20): the `%%apk` cell magic, the rich representations of views,
patterns and profiles, and the example notebook executed headlessly (nbclient, a real
IPython kernel) with its saved outputs compared to what it prints now.

`python tests/test_notebook.py --refresh` re-executes the example and saves its outputs."""

from __future__ import annotations

import copy
import html
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import apdsl
from apdsl.surfaces.notebook.magic import Diagnostics, run_cell

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook" / "apdsl.ipynb"

DOUBLE = """\
kernel double(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    t = ndarray((128, 64), f32, sbuf)
    dma_copy(t, A)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    out = ndarray((128, 64), f32, hbm)
    dma_copy(out, t)
    print("scaled", A.shape)
    return out
"""


def _cell(line: str, cell: str, namespace: dict[str, Any]) -> tuple[Any, list[Any]]:
    shown: list[Any] = []
    return run_cell(line, cell, namespace, shown.append), shown


def test_a_cell_runs_its_kernel_on_notebook_arrays(capsys: Any) -> None:
    a = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    namespace: dict[str, Any] = {"a": a}
    value, shown = _cell("double -i A=a -o doubled", DOUBLE, namespace)
    assert shown == []
    np.testing.assert_array_equal(value, a * 2)  # NumPy's own product: exact in float32
    assert namespace["doubled"] is value
    assert capsys.readouterr().out == "scaled (128, 64)\n"


def test_a_diagnostic_is_html_with_the_cells_lines(tmp_path: Path) -> None:
    cell = "t: f32[128, 64] @ sbuf\nu = t.slice(1, 8, 80)\n"
    value, (shown,) = _cell("", cell, {})
    assert value is None and isinstance(shown, Diagnostics) and shown.codes == ["APK203"]
    page = shown._repr_html_()
    assert page.startswith('<pre class="apdsl-diagnostic"')
    assert "error[APK203]" in page and "&lt;cell&gt;:2:19" in page
    # the plain text is what `apdsl check` prints for the same lines in a file
    path = tmp_path / "cell.apk"
    path.write_text(cell)
    done = subprocess.run([sys.executable, "-m", "apdsl", "check", str(path)],
                          capture_output=True, text=True, timeout=300)
    cli = done.stderr.split("\n" + str(path) + ": 1 error")[0]
    assert repr(shown) == cli.replace(str(path), "<cell>")
    assert "u = t.slice(1, 8, 80)" in repr(shown)
    # and the HTML shows that text, line for line
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert [line.rstrip() for line in text.split("\n")] == repr(shown).split("\n")


def test_usage_check_and_profile() -> None:
    value, (shown,) = _cell("double -i A=nothing", DOUBLE, {})
    assert value is None and shown.codes == ["APK983"]
    assert "no variable 'nothing'" in repr(shown)
    value, (shown,) = _cell("--nonsense", DOUBLE, {})
    assert shown.codes == ["APK983"]
    value, (shown,) = _cell("--check", "t: f32[4, 8] @ hbm\nu = t.slice(1, 0, 9)\n", {})
    assert value is None and shown.codes == ["APK203"]
    value, shown = _cell("--profile", DOUBLE, {})
    assert shown == []
    assert value._repr_svg_().startswith("<svg") and "estimate" in value._repr_svg_()
    assert value.text() in repr(value)
    assert apdsl.profile(DOUBLE).text().replace("<string>", "<cell>") == value.text()


def test_views_and_patterns_draw_themselves() -> None:
    from apdsl.surfaces.picture import Picture
    from apdsl.surfaces.picture_svg import render
    t = apdsl.ndarray((8, 16), "float32", "sbuf")
    v = t.slice(1, 4, 12)
    svg = v._repr_svg_()
    assert svg == render([Picture.of(v, v.name)])  # the picture `apdsl show` draws
    page = v._repr_html_()
    assert svg in page and "<code>(8, 8)</code>" in page and "<code>(16, 1)</code>" in page
    (ap,) = apdsl.lower(v)
    assert "<code>[[16, 8], [1, 8]]</code>" in ap._repr_html_()


def _outputs(nb: Any) -> list[list[dict[str, Any]]]:
    """Each code cell's outputs as compared: streams of one name joined, standard error (the
    kernel's own warnings) left out, no execution counts or metadata."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        out: list[dict[str, Any]] = []
        for o in cell.outputs:
            if o.output_type == "stream":
                if o.name == "stderr":
                    continue
                if out and out[-1].get("stream") == o.name:
                    out[-1]["text"] += o.text
                else:
                    out.append({"stream": o.name, "text": o.text})
            elif o.output_type == "error":
                out.append({"error": f"{o.ename}: {o.evalue}"})
            else:
                out.append({"type": o.output_type, "data": dict(o.data)})
        cells.append(out)
    return cells


def execute(path: Path, folder: Path) -> Any:
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, startup_timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def test_the_example_notebook_prints_its_saved_outputs(tmp_path: Path) -> None:
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    import nbformat
    saved = nbformat.read(NOTEBOOK, as_version=4)
    ran = execute(NOTEBOOK, tmp_path)
    got, want = _outputs(ran), _outputs(saved)
    assert not any("error" in o for cell in got for o in cell)
    assert got == want
    kinds = {k for cell in got for o in cell for k in o.get("data", {})}
    assert {"image/svg+xml", "text/html", "text/plain"} <= kinds


if __name__ == "__main__" and sys.argv[1:] == ["--refresh"]:
    import nbformat
    ran = execute(NOTEBOOK, NOTEBOOK.parent)
    for cell in ran.cells:  # what the test compares, without the kernel's warnings
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and o.name == "stderr")]
    ran.metadata = copy.deepcopy(nbformat.read(NOTEBOOK, as_version=4).metadata)
    nbformat.write(ran, NOTEBOOK)
