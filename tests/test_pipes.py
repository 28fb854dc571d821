"""Ascend pipes and events (SPEC section 13): each rule of the checker, the CLI's --sync and
`apdsl lower`'s pipes.  The brute-force oracle is tests/test_pipes_oracle.py.

The commands run through the command line's `main` in process (`support.apdsl_in_process`:
what they report); the read-after-write test runs a real `python -m apdsl`, as a user does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import apdsl_in_process, raises_code

import apdsl
from apdsl.runtime.sync.pipes import HARD_EVENTS
from apdsl.semantics.program import Program

HEAD = """\
kernel k(A: f16[16, 16] @ gm, B: f16[16, 16] @ gm) -> f32[16, 16] @ gm:
    C = ndarray((16, 16), f32, gm)
    a1 = ndarray((16, 16), f16, l1, "NZ")
    b1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    b0 = ndarray((16, 16), f16, l0b, "ZN")
    c0 = ndarray((16, 16), f32, l0c, "NZ")
"""
# The synchronised GEMM step: every cross-pipe dependency has its event.
SYNCED = [
    "dma_copy(a1, A)", "dma_copy(b1, B)", 'set_flag("MTE2_MTE1", 0)',
    'wait_flag("MTE2_MTE1", 0)', "dma_copy(a0, a1)", "dma_copy(b0, b1)",
    'set_flag("MTE1_M", 0)', 'wait_flag("MTE1_M", 0)', "mmad(c0, a0, b0)",
    'set_flag("M_FIX", 0)', 'wait_flag("M_FIX", 0)', "dma_copy(C, c0)",
]


def kernel(lines: list[str]) -> str:
    return HEAD + "".join(f"    {s}\n" for s in lines) + "    return C\n"


def run(source: str, tmp_path, *args: str, process: bool = False
        ) -> subprocess.CompletedProcess:
    """`apdsl COMMAND k.apk ARGS` on `source`: in a real process when `process`."""
    path = tmp_path / "k.apk"
    path.write_text(source)
    argv = [*args[:1], str(path), *args[1:]]
    if not process:
        return apdsl_in_process(*argv, cwd=tmp_path)
    return subprocess.run([sys.executable, "-m", "apdsl", *argv], capture_output=True,
                          text=True, cwd=tmp_path)


def program_run(source: str, tmp_path, inputs=None):
    path = tmp_path / "k.apk"
    path.write_text(source)
    return Program.from_path(str(path)).run("k", inputs)


def test_the_synchronised_step_passes_and_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16)).astype(np.float16) for _ in range(2))
    r = program_run(kernel(SYNCED), tmp_path, {"A": a, "B": b})
    assert r.warnings == []
    expect = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(r.value.numpy(), expect, rtol=1e-5, atol=1e-4)


def test_read_after_write_points_at_both_lines(tmp_path):
    lines = [s for s in SYNCED if "MTE1_M" not in s]
    r = run(kernel(lines), tmp_path, "run", process=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    head = r.stderr.splitlines()[0]
    assert "error[APK570]" in head and "read-after-write" in head
    assert "mmad on pipe M reads a0 @ l0a" in head and "pipe MTE1" in head
    mmad_line = HEAD.count("\n") + lines.index("mmad(c0, a0, b0)") + 1
    load_line = HEAD.count("\n") + lines.index("dma_copy(b0, b1)") + 1
    assert head.startswith(f"{tmp_path / 'k.apk'}:{mmad_line}:")
    assert "written here on pipe MTE1" in r.stderr and f"{load_line} |" in r.stderr
    assert 'set_flag("MTE1_M", 0)' in r.stderr and 'wait_flag("MTE1_M", 0)' in r.stderr


def test_write_after_read_and_write_after_write(tmp_path):
    # the next load into a1 while MTE1 may still read it (double-buffering's hazard)
    war = SYNCED[:6] + ["dma_copy(a1, A)"] + SYNCED[6:]
    r = run(kernel(war), tmp_path, "run")
    assert "error[APK570]" in r.stderr and "write-after-read" in r.stderr
    assert "dma_copy on pipe MTE2 writes a1 @ l1" in r.stderr
    assert 'set_flag("MTE1_MTE2", 0)' in r.stderr
    waw = ["memset(a1, 0)"] + SYNCED
    r = run(kernel(waw), tmp_path, "run")
    assert "error[APK570]" in r.stderr and "write-after-write" in r.stderr
    assert "pipe MTE1" in r.stderr and "pipe MTE2" in r.stderr


def test_json_diagnostic_has_the_earlier_instruction_as_a_label(tmp_path):
    lines = [s for s in SYNCED if "M_FIX" not in s]
    r = run(kernel(lines), tmp_path, "check", "--json")
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    race = [o for o in objs if o["code"] == "APK570"]
    assert len(race) == 1 and race[0]["labels"][0]["message"] == "written here on pipe M"
    assert race[0]["labels"][0]["line"] == HEAD.count("\n") + lines.index("mmad(c0, a0, b0)") + 1


@pytest.mark.parametrize("i", range(len(SYNCED)))
def test_removing_any_one_event_of_a_pair_is_an_error(tmp_path, i):
    if "flag" not in SYNCED[i]:
        return
    r = run(kernel(SYNCED[:i] + SYNCED[i + 1:]), tmp_path, "run")
    code = "APK575" if SYNCED[i].startswith("set") else "APK570"
    if SYNCED[i].startswith("wait"):  # a set without its wait: the race, then (no) warning
        assert f"error[{code}]" in r.stderr
    else:
        assert f"error[{code}]" in r.stderr
    assert r.returncode == 1


def test_sync_off_restores_the_old_behaviour(tmp_path):
    unsynced = [s for s in SYNCED if "flag" not in s]
    assert run(kernel(unsynced), tmp_path, "run").returncode == 1
    off = run(kernel(unsynced), tmp_path, "run", "--sync", "off")
    assert off.returncode == 0, off.stderr
    on = run(kernel(SYNCED), tmp_path, "run", "--sync", "on")
    assert on.returncode == 0 and on.stdout == off.stdout
    assert run(kernel(unsynced), tmp_path, "check", "--sync", "off").returncode == 0
    assert run(kernel(unsynced), tmp_path, "lower", "--sync", "off").returncode == 0
    bad = run(kernel(unsynced), tmp_path, "run", "--sync", "maybe")
    assert bad.returncode == 2


def test_deadlock_double_set_and_leftover(tmp_path):
    r = run(kernel(['wait_flag("M_MTE1", 3)'] + SYNCED), tmp_path, "run")
    assert "error[APK575]" in r.stderr and "deadlock" in r.stderr
    r = run(kernel(SYNCED[:3] + ['set_flag("MTE2_MTE1", 0)'] + SYNCED[3:]), tmp_path, "run")
    assert "error[APK574]" in r.stderr and "set here" in r.stderr
    r = run(kernel(SYNCED + ['set_flag("FIX_M", 0)']), tmp_path, "run")
    assert r.returncode == 0 and "warning[APK578]" in r.stderr
    # ids are per event name: id 0 of two events are two flags
    r = run(kernel(['set_flag("FIX_M", 0)', 'set_flag("M_MTE1", 0)', 'wait_flag("FIX_M", 0)',
                    'wait_flag("M_MTE1", 0)'] + SYNCED), tmp_path, "run")
    assert r.returncode == 0 and r.stderr == ""


def test_invalid_events_ids_and_barriers(tmp_path):
    r = run(kernel(['set_flag("MTE1_MM", 0)'] + SYNCED), tmp_path, "run")
    assert "error[APK572]" in r.stderr and "'MTE1_M'" in r.stderr
    r = run(kernel(['wait_flag("MTE1_M", 8)'] + SYNCED), tmp_path, "run")
    assert "error[APK573]" in r.stderr and "0-7" in r.stderr
    r = run(kernel(['pipe_barrier("S")'] + SYNCED), tmp_path, "run")
    assert "error[APK577]" in r.stderr
    r = run(kernel(['pipe_barrier("mte2")'] + SYNCED), tmp_path, "run")
    assert "error[APK576]" in r.stderr and "'MTE2'" in r.stderr
    for event in ("MTE1_FIX", "FIX_FIX", "MAX"):  # not in the documented enum
        assert event not in HARD_EVENTS
    assert len(HARD_EVENTS) == 32


def test_pipe_barrier_all_orders_everything(tmp_path):
    unsynced = [s for s in SYNCED if "flag" not in s]
    with_barriers = []
    for s in unsynced:
        with_barriers += [s, 'pipe_barrier("ALL")']
    assert program_run(kernel(with_barriers), tmp_path).warnings == []


def test_vector_pipe_needs_a_barrier_between_dependent_instructions():
    with raises_code("APK571"):
        with apdsl.pipes():
            u = apdsl.ndarray((16, 16), "float16", "ub")
            w = apdsl.ndarray((16, 16), "float16", "ub")
            apdsl.memset(u, 1)
            apdsl.dma_copy(w, u)
    with apdsl.pipes():
        u = apdsl.ndarray((16, 16), "float16", "ub")
        w = apdsl.ndarray((16, 16), "float16", "ub")
        g = apdsl.ndarray((16, 16), "float16", "gm")
        apdsl.memset(u, 1)
        apdsl.memset(w, 2)  # independent: no barrier needed
        apdsl.pipe_barrier("V")
        apdsl.dma_copy(w, u)
        apdsl.set_flag("V_MTE3", 0)
        apdsl.wait_flag("V_MTE3", 0)
        apdsl.dma_copy(g, w)  # UB -> GM on MTE3
    assert (g.numpy() == 1).all()


def test_python_api_and_top_level_are_unchecked_unless_asked(tmp_path):
    a = apdsl.ndarray((16, 16), "float16", "l1", "NZ")
    g = apdsl.from_numpy(np.ones((16, 16), np.float16), "gm")
    a0 = apdsl.ndarray((16, 16), "float16", "l0a", "ZZ")
    apdsl.dma_copy(a, g)
    apdsl.dma_copy(a0, a)  # unchecked: one instruction at a time
    with apdsl.options(sync=True):
        apdsl.dma_copy(a, g)
        with raises_code("APK570"):
            apdsl.dma_copy(a0, a)
    apdsl.dma_copy(a, g)
    apdsl.dma_copy(a0, a)  # unchecked again once the option is restored
    top = HEAD.replace("kernel k(A: f16[16, 16] @ gm, B: f16[16, 16] @ gm) -> f32[16, 16] @ gm:",
                       "if True:").replace("C = ndarray((16, 16), f32, gm)",
                                           "A = ndarray((16, 16), f16, gm) = 1")
    top = top.replace("A = ndarray((16, 16), f16, gm) = 1", "A: f16[16, 16] @ gm = 1")
    top += "    dma_copy(a1, A)\n    dma_copy(a0, a1)\n"
    path = tmp_path / "top.apk"
    path.write_text(top)
    Program.from_path(str(path)).run(None)  # top-level statements are not checked


def test_lower_names_the_pipe(tmp_path):
    r = run(kernel(SYNCED), tmp_path, "lower", "--json")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    pipes = [(o["op"], o.get("pipe")) for o in objs if "event" not in o]
    assert pipes == [("dma_copy", "MTE2"), ("dma_copy", "MTE2"), ("dma_copy", "MTE1"),
                     ("dma_copy", "MTE1"), ("mmad", "M"), ("dma_copy", "FIX")]
    # the events, in program order, on the pipe that executes each (a set on the event's
    # source pipe, a wait on its destination)
    events = [(o["op"], o["event"], o["pipe"]) for o in objs if "event" in o]
    assert events == [("set_flag", ["MTE2_MTE1", 0], "MTE2"),
                      ("wait_flag", ["MTE2_MTE1", 0], "MTE1"),
                      ("set_flag", ["MTE1_M", 0], "MTE1"), ("wait_flag", ["MTE1_M", 0], "M"),
                      ("set_flag", ["M_FIX", 0], "M"), ("wait_flag", ["M_FIX", 0], "FIX")]
    assert [o["op"] for o in objs] == [
        "dma_copy", "dma_copy", "set_flag", "wait_flag", "dma_copy", "dma_copy", "set_flag",
        "wait_flag", "mmad", "set_flag", "wait_flag", "dma_copy"]
    table = run(kernel(SYNCED), tmp_path, "lower").stdout
    assert "mmad  [pipe M]" in table and "dma_copy  [pipe FIX]" in table
    assert 'set_flag("MTE1_M", 0)  [pipe MTE1]' in table


GEMM = (Path(__file__).resolve().parent.parent / "stdlib" / "gemm.apk").read_text()
GEMM_KERNEL = """
kernel matmul(A: f16[40, 150] @ gm, B: f16[150, 30] @ gm, Bias: f16[30] @ gm) -> f32[40, 30] @ gm:
    C = ndarray((40, 30), f32, gm)
    return gemm(A, B, C, 32, 32, 32, 64, bias=Bias)
"""  # with a bias: every event of the gemm runs (the bias buffers have their own)
EVENT_LINES = [i for i, line in enumerate(GEMM.splitlines()) if "_flag(" in line]


def run_gemm_source(source: str):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 150)).astype(np.float16)
    b = rng.standard_normal((150, 30)).astype(np.float16)
    bias = rng.standard_normal(30).astype(np.float16)
    r = Program(source + GEMM_KERNEL, "gemm_sync.apk").run("matmul", {"A": a, "B": b,
                                                                      "Bias": bias})
    return r, a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32)


def test_the_synchronised_stdlib_gemm_passes_and_matches_numpy():
    r, want = run_gemm_source(GEMM)
    assert r.warnings == []
    np.testing.assert_allclose(r.value.numpy(), want, rtol=1e-4, atol=1e-3)
    assert len(EVENT_LINES) >= 30


@pytest.mark.parametrize("i", EVENT_LINES)
def test_removing_any_one_event_of_the_stdlib_gemm_is_reported(i):
    lines = GEMM.splitlines()
    indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
    source = "\n".join(lines[:i] + [indent + "pass"] + lines[i + 1:]) + "\n"
    tail = GEMM[GEMM.rindex("# wait for the last"):]  # the final waits of the "free" flags
    try:
        r, _ = run_gemm_source(source)
    except apdsl.ApdslError as e:
        assert e.code in ("APK570", "APK574", "APK575"), e
        if e.code == "APK570":  # a race: both lines
            assert e.span is not None and e.labels and e.labels[0].span.line != e.span.line
        if e.code == "APK574":  # a double set (a flag nothing else consumes): the earlier set
            # is labelled (in a loop it may be the same line, one iteration before)
            assert e.span is not None and e.labels and "set here" in e.labels[0].message
        return
    # only a final wait may go: the kernel's end orders everything, the flag is left over
    assert lines[i].strip() in tail
    assert r.warnings and {w.code for w in r.warnings} == {"APK578"}
