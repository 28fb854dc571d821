"""`apdsl lsp` on Python kernels that take parameters, and positions as LSP counts them
(issue 29), through the real server (`test_lsp.Editor`: pygls's client over stdio).

A kernel with parameters is checked as `apdsl check FILE.py -i ...` checks it, with the inputs
the file itself gives: parameters annotated `nki.typing.tensor[shape, dtype]`, else the first
call of the kernel in the file's `__main__` block.  The oracle is `apdsl check --json` with
`-i` files of those shapes.  When the file gives no inputs, the note (APK981) says why.

LSP positions count UTF-16 code units (the client here offers no other encoding): a line
with `é` (one unit) and `𝑥` (two) before a name is where the test measures both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pygls")
from lsprotocol import types as lsp  # noqa: E402
from test_lsp import Editor, check_json  # noqa: E402

HEAD = """\
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt

"""

# a kernel whose second instruction is wrong for a (128, 64) input: dst is twice data's width
BODY = """\
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((a.shape[0], a.shape[1] * 2), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=factor)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
"""

DRIVEN = HEAD + "@nki.jit\ndef scale(a, factor=2.0):\n" + BODY + """

if __name__ == "__main__":
    x = np.ones((128, 64), np.float32)
    print(scale(x, factor=3.0))
"""

ANNOTATED = HEAD + ("@nki.jit\ndef scale(a: nt.tensor[128, 64, nl.float32], factor=2.0):\n"
                    + BODY)

UNDRIVEN = HEAD + "@nki.jit\ndef scale(a, factor=2.0):\n" + BODY

FAILING_DRIVER = UNDRIVEN + """

if __name__ == "__main__":
    raise ValueError("no data today")
"""

WIDE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_kernel():
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=0.0)
    out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    s = "é𝑥"; nisa.dma_copy(dst=out, src=a)
    return out
"""


@pytest.fixture(scope="module")
def editor() -> Any:
    e = Editor({"maxSteps": 200_000, "timeLimit": 600})
    yield e
    e.stop()


def oracle(tmp_path: Path, path: Path) -> list[dict[str, Any]]:
    np.save(tmp_path / "x.npy", np.ones((128, 64), np.float32))
    return check_json(path, "-i", f"a={tmp_path / 'x.npy'}")


@pytest.mark.parametrize("text", [DRIVEN, ANNOTATED], ids=["driver", "annotations"])
def test_a_kernel_with_parameters_is_checked_as_check_does(editor, tmp_path, text):
    py = tmp_path / "scale.py"
    py.write_text(text)
    editor.open(py, text)
    got = editor.diagnostics(py)
    want = oracle(tmp_path, py)
    assert [d["code"] for d in want] == ["APK460"]
    assert [d.data for d in got] == want
    # an edit that fixes it clears it
    fixed = text.replace("a.shape[1] * 2", "a.shape[1]")
    editor.change(py, fixed)
    assert editor.diagnostics(py) == []


@pytest.mark.parametrize(("text", "why"), [
    (UNDRIVEN, ["a has no annotation", "the file has no `if __name__ == \"__main__\":` block"]),
    (FAILING_DRIVER, ["a has no annotation", "its `__main__` block stopped before calling it: "
                      "ValueError: no data today"]),
    (UNDRIVEN.replace("def scale(a,", "def scale(a: nt.tensor[128, 64],"),
     ["a's annotation gives no shape and dtype"]),
], ids=["no-driver", "driver-fails", "no-dtype"])
def test_why_a_kernel_is_not_checked(editor, tmp_path, text, why):
    py = tmp_path / "unchecked.py"
    py.write_text(text)
    editor.open(py, text)
    got = editor.diagnostics(py)
    assert [d.code for d in got] == ["APK981"]
    assert got[0].severity == lsp.DiagnosticSeverity.Information
    message = got[0].message.splitlines()[0]
    assert message.startswith("kernel scale is not checked as you type: nothing in the file "
                              "gives its inputs (a): ")
    for part in why:
        assert part in message
    assert got[0].range.start == lsp.Position(7, 4)  # at the kernel's name in its def


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_positions_count_utf16_code_units(editor, tmp_path):
    py = tmp_path / "wide.py"
    py.write_text(WIDE)
    editor.open(py, WIDE)
    line = WIDE.splitlines()[10]
    call = line.index("nisa.dma_copy")
    # the diagnostic: check --json counts characters, LSP UTF-16 units (𝑥 is two)
    want = check_json(py)
    assert [d["code"] for d in want] == ["APK306"]
    assert want[0]["column"] == call + 1 and want[0]["end_column"] == len(line) + 1
    got = editor.diagnostics(py)
    assert [d.data for d in got] == want
    assert got[0].range == lsp.Range(start=lsp.Position(10, utf16(line[:call])),
                                     end=lsp.Position(10, utf16(line)))
    # a hover at the first unit of `dma_copy`, and at its last
    name = line.index("dma_copy")
    for unit in (utf16(line[:name]), utf16(line[:name + len("dma_copy")]) - 1):
        hover = editor.hover(py, 10, unit)
        assert hover is not None and "nisa.dma_copy(dst" in hover.contents.value
        assert hover.range == lsp.Range(start=lsp.Position(10, utf16(line[:call])),
                                        end=lsp.Position(10, utf16(line[:name + 8])))
    # the `;` after them: no name there
    assert editor.hover(py, 10, utf16(line[:line.index(";")])) is None


def test_apk_positions_count_utf16_code_units(editor, tmp_path):
    text = 't: f32[128, 64] @ sbuf\nv = ["é𝑥", t.slice(1, 8, 80)]\n'
    apk = tmp_path / "wide.apk"
    apk.write_text(text)
    editor.open(apk, text)
    line = text.splitlines()[1]
    want = check_json(apk)
    assert [d["code"] for d in want] == ["APK203"]
    got = editor.diagnostics(apk)
    assert [d.data for d in got] == want
    start = want[0]["column"] - 1
    end = want[0]["end_column"] - 1
    assert line[start:].startswith("t.slice") or line[start:].startswith("80")
    assert got[0].range.start == lsp.Position(1, utf16(line[:start]))
    assert got[0].range.end == lsp.Position(1, utf16(line[:end]))
    # the related span (where t was declared) is on an ASCII line: as it is
    assert got[0].related_information[0].location.range.start == lsp.Position(0, 0)
