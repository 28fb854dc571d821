"""`apdsl repl`: input splitting, the session, completion, the prompt, history.

The session is driven in-process through `run_script` (piped semantics) and through
prompt_toolkit's pipe input (interactive semantics); one subprocess pipes a script into
`python -m apdsl repl` and one drives it through a pseudo-terminal.
"""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apdsl.surfaces import repl
from apdsl.surfaces.repl import ScriptReader, continuation, run_script, scan
from apdsl.surfaces.session import Session
from apdsl.tensor.lowering import lower


def _session() -> tuple[Session, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Session(out, err), out, err


def _script(text: str) -> tuple[int, str, str, Session]:
    session, out, err = _session()
    try:
        status = run_script(io.StringIO(text), session)
    finally:
        session.close()
    return status, out.getvalue(), err.getvalue(), session


# -- where inputs end ---------------------------------------------------------------------------

def _split(text: str) -> list[tuple[str, int]]:
    reader = ScriptReader()
    out = []
    for line in text.splitlines(keepends=True):
        out += reader.feed(line)
    return out + reader.finish()


def test_script_reader_cuts_statements_with_file_semantics() -> None:
    text = ("x = 1\n"
            "\n"
            "# a comment\n"
            "if x == 1:\n"
            "    y = 2\n"
            "\n"
            "    z = 3\n"
            "else:\n"
            "    y = 4\n"
            "w = f(1,\n"
            "      2)\n"
            ":show t\n"
            "s = '''a\n"
            "b'''\n"
            "@nki.jit\n"
            "kernel k(A: f32[4, 4] @ hbm):\n"
            "    return A\n")
    got = _split(text)
    assert [first for _, first in got] == [1, 4, 10, 12, 13, 15]
    assert got[1][0] == "if x == 1:\n    y = 2\n\n    z = 3\nelse:\n    y = 4\n"
    assert got[2][0] == "w = f(1,\n      2)\n"
    assert got[3][0] == ":show t"
    assert got[5][0].startswith("@nki.jit\nkernel k(")


def test_script_reader_block_at_end_of_input() -> None:
    assert _split("for i in range(2):\n    print(i)") == [("for i in range(2):\n"
                                                        "    print(i)\n", 1)]


def test_scan_ignores_brackets_in_strings_and_comments() -> None:
    s = scan("x = '(['  # )]:\n")
    assert (s.depth, s.in_string, s.last_colon) == (0, False, False)
    assert scan('y = """ ( \n').in_string
    assert scan("a = [1,\n").depth == 1
    assert scan("a = 1 + \\\n").continued
    assert scan("if a:  # open\n").last_colon


@pytest.mark.parametrize("text,expected", [
    ("t: f32[4, 4] @ sbuf", None),
    ("if x:", "    "),
    ("if x:\n    y = 1", "    "),
    ("if x:\n    y = 1\n    ", None),  # a blank line ends the block
    ("for i in range(2):\n    if i:", "        "),
    ("z = f(1,", ""),
    ("    z = g([1,", "    "),
    (":show t", None),
    ("@nki.jit", ""),
])
def test_continuation(text: str, expected: str | None) -> None:
    assert continuation(text) == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["x = 1", "t: f32[4, 4] @ hbm", "print(x)", "u = t[0:2]",
                                 "if x:\n    x = 2\nelse:\n    x = 3",
                                 "for i in range(2):\n    x = x + i",
                                 "v = [1,\n     2]"]), min_size=1, max_size=8))
def test_script_reader_round_trips(parts: list[str]) -> None:
    """Cutting a script into inputs loses nothing and starts each input at its line."""
    text = "\n".join(parts) + "\n"
    got = _split(text)
    assert "".join(chunk for chunk, _ in got) == text
    lines = text.splitlines()
    for chunk, first in got:
        assert lines[first - 1] == chunk.splitlines()[0]


# -- the session, scripted ----------------------------------------------------------------------

TRANSCRIPT = """\
t: f32[16, 32] @ sbuf
u = t.slice(1, 8, 24)
v = u[0:8, ::2]
v
print(v.get_pattern(), v.offset)
w = v.slice(1, 0, 99)
w = v.slice(1, 0, 4)
w.shape
:lower v
:show v[0:2, 0:3]
:reset
v
"""


def test_transcript_results_errors_and_recovery() -> None:
    status, out, err, _ = _script(TRANSCRIPT)
    assert status == 1  # an input failed; the rest still ran
    # the tensor panel
    for field in ("name", "shape", "dtype", "buffer", "format", "strides", "offset",
                  "pattern", "contiguous", "indirect"):
        assert re.search(rf"│ {field}\s", out), field
    assert "(8, 8)" in out and "[[32, 8], [2, 8]]" in out and "(32, 2)" in out
    assert "[[32, 8], [2, 8]] 8" in out  # print()
    # the mistake, at its line of the script, then the recovery
    assert "<repl>:6:19: error[APK203]: slice: end 99 is past the end" in err
    assert " 6 | w = v.slice(1, 0, 99)" in err or "6 | w = v.slice(1, 0, 99)" in err
    assert "(8, 4)" in out
    # :lower prints the lowered access pattern
    assert "v: 1 access pattern" in out
    assert "t@sbuf float32 offset=8 [[32, 8], [2, 8]]" in out
    # :show draws the picture
    assert "v[0:2, 0:3]" in out and "6 accesses, 6 distinct storage elements" in out
    # :reset forgets names (silently: a script prints results only)
    assert "session reset" not in out
    assert "<repl>:12:1: error[APK101]: unknown name 'v'" in err
    assert "Traceback" not in err


def test_error_never_loses_names_and_labels_point_into_earlier_inputs() -> None:
    session, out, err = _session()
    session.handle("a = 5")
    session.handle("t: f32[4, 8] @ hbm")
    session.handle("b = a + undefined_name")
    session.handle("a * 2")
    assert out.getvalue().strip().endswith("10")
    assert "<repl>:3:9: error[APK101]: unknown name 'undefined_name'" in err.getvalue()
    assert session.lookup("t") is not None and session.failures == 1
    session.close()


def test_lower_matches_lowering_and_reports_entry_limit() -> None:
    session, out, _ = _session()
    session.handle("t: f32[8, 2, 3, 5, 7, 3] @ sbuf")
    session.handle("u = t[:, :, :, :, 0:4, :]")
    session.handle(":lower u")
    text = out.getvalue()
    aps = lower(session.lookup("u"), check_entries=False)
    assert aps[0].describe() in text and "[[630, 8], [21, 30], [1, 12]]" in text
    assert "free entries" not in text
    session.handle("w = t.rearrange('p a b c d e -> p e d c b a')")
    session.handle(":lower w")
    assert "needs 5 free entries; trn2 allows 4, so an instruction would reject this view " \
        "(APK304)" in out.getvalue()
    session.close()


def test_lower_and_show_argument_errors_point_into_the_command() -> None:
    status, _, err, _ = _script("t: f32[4, 8] @ hbm\n:show t.slice(1, 0, 99)\n:lower 3\n"
                                ":bogus\n:show\n")
    assert status == 1
    assert "<repl>:2:21: error[APK203]" in err and "2 | :show t.slice(1, 0, 99)" in err
    assert "<repl>:3:8: error[APK110]: :lower takes a view or a kernel; '3' is an int" in err
    assert "unknown command :bogus" in err
    assert ":show needs a view or kernel name" in err


def test_load_runs_a_file_into_the_session(tmp_path: Path) -> None:
    (tmp_path / "lib.apk").write_text("def half(x):\n    return x // 2\n"
                                      "base: f32[8, 8] @ hbm\n")
    session, out, err = _session()
    session.handle(f":load {tmp_path / 'lib.apk'}")
    session.handle("half(10)")
    session.handle("base[0:2].shape")
    session.handle(f":load {tmp_path / 'missing.apk'}")
    assert out.getvalue() == "5\n(2, 8)\n"
    assert "error[APK601]: cannot read" in err.getvalue()
    session.close()


def test_load_error_renders_against_the_loaded_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.apk"
    path.write_text("t: f32[4, 8] @ hbm\nu = t.slice(0, 0, 9)\n")
    session, _, err = _session()
    session.handle(f":load {path}")
    assert f"{path}:2:19: error[APK203]" in err.getvalue()
    assert "2 | u = t.slice(0, 0, 9)" in err.getvalue()
    assert session.lookup("t") is not None  # what ran before the error stays
    session.close()


def test_lower_kernel_traces_instructions() -> None:
    src = ("kernel copy(A: f32[4, 8] @ hbm) -> f32[4, 8] @ shared_hbm:\n"
           "    out = ndarray((4, 8), f32, shared_hbm)\n"
           "    dma_copy(dst=out, src=A)\n"
           "    return out\n")
    session, out, err = _session()
    run_script(io.StringIO(src + ":lower copy\n"), session)
    assert err.getvalue() == ""
    text = out.getvalue()
    assert "dma_copy" in text and "<repl>:3" in text
    assert "[[8, 4], [1, 8]]" in text or "[[1, 32]]" in text
    session.close()


def test_values_print_with_show() -> None:
    status, out, err, _ = _script("x = (1, [2, 3])\nx\n'text'\nNone\nf32\n")
    assert status == 0, err
    assert out.split("\n")[:3] == ["(1, [2, 3])", "text", "float32"]


def test_warnings_do_not_count_as_failures() -> None:
    session, _, _ = _session()
    session.handle("x = 1")
    assert session.failures == 0
    session.close()


# -- completion ---------------------------------------------------------------------------------

def _names(candidates: list[tuple[str, int, str]]) -> list[str]:
    return [c for c, _, _ in candidates]


def test_completion_of_tensor_methods_names_keywords_and_commands() -> None:
    session, _, _ = _session()
    session.handle("tile: f32[16, 32] @ sbuf")
    session.handle("tally = 3")
    c = repl.ApkCompleter(session)
    assert _names(c.candidates("u = tile.sl")) == ["slice"]
    methods = c.candidates("tile.")
    assert {"slice", "rearrange", "get_pattern", "shape", "offset"} <= set(_names(methods))
    assert dict((n, m) for n, _, m in methods)["slice"] == "method"
    assert dict((n, m) for n, _, m in methods)["shape"] == "attribute"
    assert set(_names(c.candidates("x = ta"))) >= {"tally"}
    assert "tile" in _names(c.candidates("x = ti"))
    assert "float32" in _names(c.candidates("a: float3"))
    assert "shared_hbm" in _names(c.candidates("@ shared"))
    assert "kernel" in _names(c.candidates("ker"))
    assert "dma_copy" in _names(c.candidates("nisa.dma"))
    assert _names(c.candidates(":lo")) == [":load", ":lower"]
    assert _names(c.candidates(":show ti")) == ["tile"]
    assert c.candidates("x = 3.") == [] and c.candidates("x = 12ab") == []
    assert c.candidates("tally.") == []  # an int has no completable attributes
    # chains of view methods and subscripts are tensors too, without evaluating anything
    assert _names(c.candidates("x = tile[0:4].slice(1, 0, 2).get_p")) == ["get_pattern"]
    assert "shape" in _names(c.candidates("tile.reshape((16, 4, 8))."))
    assert c.candidates("tile.shape.") == [] and c.candidates("(tile + 1).") == []
    assert all(start == -2 for _, start, _ in c.candidates("tile.sl"))
    session.close()


def test_completion_of_files_after_load(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "gemm.apk").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "lib").mkdir()
    monkeypatch.chdir(tmp_path)
    session, _, _ = _session()
    c = repl.ApkCompleter(session)
    assert _names(c.candidates(":load ")) == ["gemm.apk", "lib/"]
    assert _names(c.candidates(":load ge")) == ["gemm.apk"]
    session.close()


# -- the interactive prompt (prompt_toolkit pipe input) -----------------------------------------

def _interactive(keys: str, tmp_path: Path) -> tuple[str, str, Path]:
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput
    session, out, err = _session()
    history = tmp_path / "history"
    with create_pipe_input() as inp:
        inp.send_text(keys)
        status = repl.run_interactive(session, input=inp, output=DummyOutput(),
                                      history=FileHistory(str(history)), banner=False)
    session.close()
    assert status == 0
    return out.getvalue(), err.getvalue(), history


def test_interactive_completion_blocks_errors_and_history(tmp_path: Path) -> None:
    keys = ("t: f32[16, 32] @ sbuf\r"
            "t.resh\t((16, 4, 8)).sh\t\r"  # Tab completes a tensor's methods
            "total = 0\r"
            "for i in range(3):\r"  # auto-indent, then a blank line ends the block
            "total = total + i\r"
            "\r"
            "total\r"
            "oops(\r)\r"  # an error ...
            "t.slice(1, 0, 8).shape\r"  # ... followed by more work
            "half_typed\x03"  # Ctrl-C cancels the input, not the session
            ":quit\r")
    out, err, history = _interactive(keys, tmp_path)
    assert out.split("\n")[:3] == ["(16, 4, 8)", "3", "(16, 8)"]
    assert "error[APK101]: unknown name 'oops'" in err
    assert "half_typed" not in err
    saved = history.read_text()
    assert "+t.reshape((16, 4, 8)).shape" in saved
    assert "+for i in range(3):\n+    total = total + i\n" in saved


def test_interactive_eof_ends_the_session(tmp_path: Path) -> None:
    out, err, _ = _interactive("x = 41\rx + 1\r\x04", tmp_path)
    assert out.strip() == "42" and err == ""


def test_history_path(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("APDSL_HISTORY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert repl.history_path() == tmp_path / "data" / "apdsl" / "history"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert repl.history_path() == tmp_path / ".local" / "share" / "apdsl" / "history"
    monkeypatch.setenv("APDSL_HISTORY", str(tmp_path / "h.txt"))
    assert repl.history_path() == tmp_path / "h.txt"


# -- the real command (two subprocesses) --------------------------------------------------------

def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "APDSL_HISTORY")}
    env.update(extra)
    return env


def test_piped_repl_subprocess(tmp_path: Path) -> None:
    script = ("t: f32[8, 8] @ hbm\n"
              "u = t.permute((1, 0))[0:2]\n"
              "u\n"
              "if u.offset == 0:\n"
              "    print('aligned')\n"
              "x = t.slice(0, 0, 9)\n"
              "u.shape\n")
    r = subprocess.run([sys.executable, "-m", "apdsl", "repl"], input=script, text=True,
                       capture_output=True, timeout=60, cwd=tmp_path,
                       env=_env(APDSL_HISTORY=str(tmp_path / "h")))
    assert r.returncode == 1
    assert "apk>" not in r.stdout and "apdsl" not in r.stdout  # no prompts, no banner
    assert "[[1, 2], [8, 8]]" in r.stdout and "aligned" in r.stdout
    assert r.stdout.rstrip().endswith("(2, 8)")
    assert r.stderr.startswith("<repl>:6:19: error[APK203]")
    assert not (tmp_path / "h").exists()  # scripted sessions keep no history


def test_pty_repl_highlights_runs_and_saves_history(tmp_path: Path) -> None:
    history = tmp_path / "state" / "history"
    master, slave = os.openpty()
    env = _env(APDSL_HISTORY=str(history), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1",
               COLUMNS="100", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "apdsl", "repl"], stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True, cwd=tmp_path)
    os.close(slave)
    seen = b""

    def wait_for(token: bytes, timeout: float = 30) -> bool:
        nonlocal seen
        end = time.time() + timeout
        while token not in seen and time.time() < end:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        return token in seen

    try:
        assert wait_for(b"apk>")
        os.write(master, b"t: f32[4, 8] @ sbuf\r")
        os.write(master, b"t.shape\r")
        assert wait_for(b"(4, 8)")
        os.write(master, b":quit\r")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode(errors="replace")
    assert "\x1b[" in text  # rendered (and highlighted) by prompt_toolkit
    assert "+t: f32[4, 8] @ sbuf" in history.read_text()


def test_tensor_panel_describes_a_view() -> None:
    from rich.console import Console

    from apdsl.surfaces.session import tensor_panel
    from apdsl.tensor.view import ndarray
    t = ndarray((4, 8), "float32", "hbm", name="t")
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(tensor_panel(t.permute((1, 0)), "t.permute((1, 0))"))
    text = console.file.getvalue()
    assert "t.permute((1, 0))" in text and "│ shape       (8, 4)" in text
    assert "│ strides     (1, 8)" in text and "│ contiguous  no" in text
    assert "│ pattern     [[1, 8], [8, 4]]" in text
