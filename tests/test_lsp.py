"""`apdsl lsp` driven as an editor drives it: pygls's language client starts `apdsl lsp` as a
process and talks LSP to it over stdio (SPEC section 20).  The oracle for diagnostics is
`apdsl check --json` run on the same files as a user runs it; for a hover on a view, the
element strides NumPy gives the same slice of an array."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pygls")
from lsprotocol import types as lsp  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

TWO_ERRORS = """\
t: f32[128, 64] @ sbuf
u = t.slice(1, 8, 80)
v = t.rearrange("p (a b) -> p a b", a=3)
w = t.slice(1, 8, 24)
"""

ONE_ERROR = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_kernel():
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=0.0)
    out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""

ENDLESS = """\
count = 0
while True:
    count = count + 1
"""

MAX_STEPS = 20_000


class Editor:
    """A language client on an event loop of its own thread: what the editor sends, and the
    diagnostics the server publishes, as they arrive."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("apdsl-tests", "1")
        self.published: dict[str, list[lsp.PublishDiagnosticsParams]] = {}
        self.versions: dict[str, int] = {}

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)

        self.call(self.client.start_io(sys.executable, "-m", "apdsl", "lsp"))
        self.call(self.client.initialize_async(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(), initialization_options=options)))
        self.client.initialized(lsp.InitializedParams())

    def call(self, coroutine: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def send(self, method: Any, params: Any) -> None:
        self.loop.call_soon_threadsafe(method, params)

    def open(self, path: Path, text: str) -> None:
        self.versions[path.as_uri()] = 1
        self.send(self.client.text_document_did_open, lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=path.as_uri(), language_id="apk" if path.suffix == ".apk" else "python",
                version=1, text=text)))

    def change(self, path: Path, text: str) -> None:
        uri = path.as_uri()
        self.versions[uri] += 1
        self.send(self.client.text_document_did_change, lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))

    def close(self, path: Path) -> None:
        self.send(self.client.text_document_did_close,
                  lsp.DidCloseTextDocumentParams(
                      text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))

    def diagnostics(self, path: Path, timeout: float = 300) -> list[lsp.Diagnostic]:
        """The diagnostics published for the file's current version."""
        uri = path.as_uri()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for params in self.published.get(uri, []):
                if params.version == self.versions.get(uri):
                    return list(params.diagnostics)
            time.sleep(0.05)
        raise AssertionError(f"no diagnostics for {path.name} version {self.versions[uri]}")

    def hover(self, path: Path, line: int, character: int) -> lsp.Hover | None:
        return self.call(self.client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
            position=lsp.Position(line=line, character=character))))

    def definition(self, path: Path, line: int, character: int) -> Any:
        return self.call(self.client.text_document_definition_async(lsp.DefinitionParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
            position=lsp.Position(line=line, character=character))))

    def complete(self, path: Path, line: int, character: int) -> list[str]:
        found = self.call(self.client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
            position=lsp.Position(line=line, character=character))))
        items = found.items if isinstance(found, lsp.CompletionList) else found
        return [i.label for i in items]

    def stop(self) -> None:
        try:
            self.call(self.client.shutdown_async(None), timeout=30)
            self.client.exit(None)
            self.call(self.client.stop(), timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


@pytest.fixture(scope="module")
def editor() -> Any:
    # (a wall-clock limit far above what a loaded machine needs: only the budgets may stop)
    e = Editor({"maxSteps": MAX_STEPS, "timeLimit": 600})
    yield e
    e.stop()


def check_json(path: Path, *extra: str) -> list[dict[str, Any]]:
    """`apdsl check --json FILE` as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "apdsl", "check", "--json", str(path), *extra],
                          capture_output=True, text=True, timeout=300)
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_diagnostics_are_check_json_and_follow_edits(editor: Editor, tmp_path: Path) -> None:
    apk, py = tmp_path / "two_errors.apk", tmp_path / "one_error.py"
    apk.write_text(TWO_ERRORS)
    py.write_text(ONE_ERROR)
    editor.open(apk, TWO_ERRORS)
    editor.open(py, ONE_ERROR)
    got_apk, got_py = editor.diagnostics(apk), editor.diagnostics(py)
    want_apk, want_py = check_json(apk), check_json(py)
    assert [d["code"] for d in want_apk] == ["APK203", "APK717"]
    assert [d["code"] for d in want_py] == ["APK306"]
    for got, want in ((got_apk, want_apk), (got_py, want_py)):
        assert [d.data for d in got] == want
        for d, obj in zip(got, want):
            assert d.code == obj["code"] and d.source == "apdsl"
            assert d.severity == lsp.DiagnosticSeverity.Error
            assert d.message.splitlines()[0] == obj["message"]
            assert [f"note: {n}" for n in obj["notes"]] + [f"help: {obj['help']}"] == \
                d.message.splitlines()[1:]
            assert (d.range.start.line + 1, d.range.start.character + 1,
                    d.range.end.line + 1, d.range.end.character + 1) == \
                (obj["line"], obj["column"], obj["end_line"], obj["end_column"])
            related = [(r.location.range.start.line + 1, r.message)
                       for r in d.related_information or ()]
            assert related == [(lab["line"], lab["message"]) for lab in obj["labels"]]
    # the first has a secondary span (where t was declared): related information
    assert got_apk[0].related_information[0].message == "t declared here"
    assert got_apk[0].related_information[0].location.uri == apk.as_uri()

    # an edit (unsaved: the file on disk keeps its errors) fixes the first error
    fixed = TWO_ERRORS.replace("8, 80", "8, 40")
    editor.change(apk, fixed)
    got = editor.diagnostics(apk)
    apk.write_text(fixed)
    assert [d.data for d in got] == check_json(apk)
    assert [d.code for d in got] == ["APK717"]
    editor.change(py, ONE_ERROR.replace("(128, 32)", "(128, 64)"))
    assert editor.diagnostics(py) == []


def test_hover_on_a_view_gives_its_access_pattern(editor: Editor, tmp_path: Path) -> None:
    apk = tmp_path / "views.apk"
    text = TWO_ERRORS.replace("8, 80", "8, 40").replace("a=3", "a=4")
    apk.write_text(text)
    editor.open(apk, text)
    assert editor.diagnostics(apk) == []
    hover = editor.hover(apk, 3, 0)  # w = t.slice(1, 8, 24)
    shown = hover.contents.value
    # the oracle: the same slice of a NumPy array of t's shape, in elements
    a = np.zeros((128, 64), dtype=np.float32)
    w = a[:, 8:24]
    strides = [s // a.itemsize for s in w.strides]
    offset = (w.__array_interface__["data"][0] - a.__array_interface__["data"][0]) // a.itemsize
    pattern = [[s, n] for s, n in zip(strides, w.shape)]
    assert f"shape    {w.shape}" in shown
    assert f"strides  {tuple(strides)}" in shown
    assert f"AP       offset {offset}  {pattern}" in shown
    assert "dtype    float32" in shown and "buffer   sbuf" in shown
    assert shown.splitlines()[1] == "w = t.slice(1, 8, 24)"
    assert hover.range.start == lsp.Position(3, 0)


def test_hover_on_names_and_codes(editor: Editor, tmp_path: Path) -> None:
    py = tmp_path / "names.py"
    editor.open(py, ONE_ERROR)
    shown = editor.hover(py, 10, 11).contents.value  # nisa.dma_copy
    assert "nisa.dma_copy(dst" in shown and "Copy `src` to `dst`" in shown
    apk = tmp_path / "code.apk"
    text = "# fails with APK203\nt: f32[4] @ sbuf\n"
    editor.open(apk, text)
    shown = editor.hover(apk, 0, 14).contents.value
    explained = subprocess.run([sys.executable, "-m", "apdsl", "explain", "APK203"],
                               capture_output=True, text=True, timeout=120).stdout.strip()
    assert explained in shown
    assert "element type" in editor.hover(apk, 1, 4).contents.value  # f32


def test_definition_and_completion(editor: Editor, tmp_path: Path) -> None:
    (tmp_path / "helpers.apk").write_text("def double(x):\n    return 2 * x\n")
    text = ("from helpers import double\n"
            "def twice(x):\n    return double(x)\n\n"
            "kernel k(a: f32[128, 4] @ hbm) -> f32[128, 4] @ hbm:\n"
            "    s: f32[128, 4] @ sbuf\n    y = twice(3)\n    s.\n    nl.\n    return a\n")
    apk = tmp_path / "main.apk"
    editor.open(apk, text)
    there = editor.definition(apk, 6, 9)  # twice(3)
    assert there.uri == apk.as_uri() and there.range.start == lsp.Position(1, 4)
    there = editor.definition(apk, 2, 12)  # double(x): imported
    assert there.uri == (tmp_path / "helpers.apk").as_uri()
    assert there.range.start == lsp.Position(0, 4)
    there = editor.definition(apk, 0, 8)  # the module's name
    assert there.uri == (tmp_path / "helpers.apk").as_uri()
    members = editor.complete(apk, 7, 6)  # s.
    assert {"slice", "rearrange", "shape", "ap"} <= set(members)
    nl = editor.complete(apk, 8, 7)  # nl.
    assert {"exp", "ndarray", "float32", "sbuf"} <= set(nl)
    names = editor.complete(apk, 6, 6)  # y = tw...: every name in scope
    assert {"twice", "double", "dma_copy", "ndarray", "float32", "sbuf", "kernel"} <= set(names)
    py = tmp_path / "compl.py"
    editor.open(py, ONE_ERROR + "    nisa.\n")
    assert {"dma_copy", "nc_matmul", "tensor_tensor"} <= set(editor.complete(py, 12, 9))


def test_endless_loop_stops_at_the_step_budget_without_blocking(editor: Editor,
                                                                tmp_path: Path) -> None:
    apk = tmp_path / "endless.apk"
    apk.write_text(ENDLESS)
    editor.open(apk, ENDLESS)
    # while the check runs, the server answers at once
    started = time.monotonic()
    assert "count" in editor.complete(apk, 2, 15)  # count = cou|
    assert time.monotonic() - started < 30
    got = editor.diagnostics(apk)
    want = check_json(apk, "--max-steps", str(MAX_STEPS))
    assert [d.data for d in got] == want
    assert [d.code for d in got] == ["APK801"]
    editor.close(apk)
