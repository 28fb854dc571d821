"""The profile orders Ascend pipes by the kernel's events (SPEC sections 13 and 14), and runs
instructions the synchronisation checker did not see one after another (`--sync off`)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import apdsl
from apdsl.profile import profile

# Two independent streams: an MTE2 load into UB and an MTE1 move L1 -> L0A of other data.
HEAD = """\
kernel k(A: f16[64, 512] @ gm) -> f16[64, 512] @ ub:
    u = ndarray((64, 512), f16, ub)
    a1 = ndarray((16, 16), f16, l1, "NZ")
    memset(a1, 1.0)
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    pipe_barrier("ALL")
"""


def _kernel(lines: list[str]) -> str:
    return HEAD + "".join(f"    {s}\n" for s in lines) + "    return u\n"


def _slot(p, op, track):
    return next(s for s in p.slots if s.op == op and s.track == track)


def test_independent_pipes_overlap_without_an_event():
    p = profile(_kernel(["dma_copy(u, A)", "dma_copy(a0, a1)"]))
    load, move = _slot(p, "dma_copy", "MTE2"), _slot(p, "dma_copy", "MTE1")
    assert move.start < load.end  # no data and no event between them: they run together


def test_an_event_orders_the_later_pipe_after_the_earlier_one_even_without_data():
    p = profile(_kernel(['dma_copy(u, A)', 'set_flag("MTE2_MTE1", 0)',
                         'wait_flag("MTE2_MTE1", 0)', "dma_copy(a0, a1)"]))
    load, move = _slot(p, "dma_copy", "MTE2"), _slot(p, "dma_copy", "MTE1")
    assert move.start >= load.end
    assert move.pred == load.index  # the critical path names the wait's cause
    # the events themselves take no slot
    assert {s.op for s in p.slots} <= {"dma_copy", "memset"}


def test_an_event_waited_for_later_orders_only_what_follows_the_wait():
    p = profile(_kernel(['dma_copy(u, A)', 'set_flag("MTE2_MTE1", 0)', "dma_copy(a0, a1)",
                         'wait_flag("MTE2_MTE1", 0)', "dma_copy(a0, a1)"]))
    load = _slot(p, "dma_copy", "MTE2")
    first, second = [s for s in p.slots if s.track == "MTE1" and s.op == "dma_copy"]
    assert first.start < load.end <= second.start


def test_sync_off_runs_every_instruction_after_all_earlier_ones():
    with apdsl.options(sync=False):
        p = profile(_kernel(["dma_copy(u, A)", "dma_copy(a0, a1)"]))
    slots = sorted(p.slots, key=lambda s: s.index)
    for a, b in zip(slots, slots[1:]):
        assert b.start >= a.end
    assert any("one after another" in n for n in p.notes)


def test_the_stdlib_gemm_schedule_respects_every_event_of_its_trace():
    """An oracle independent of the scheduler's vector clocks: replay the traced events in
    program order; every instruction issued on a set's pipe before the set must end before any
    instruction the matching wait's pipe issues after the wait starts, and `pipe_barrier("ALL")`
    separates everything."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    p = profile(str(root / "examples" / "ascend_gemm.apk"))
    slots: dict[int, list] = {}
    for s in p.slots:
        slots.setdefault(s.record, []).append(s)
    issued: dict[str, list[int]] = {}      # pipe -> instructions (record indices) so far
    flags: dict[tuple[str, int], list[int]] = {}
    must_follow: dict[str, set[int]] = {}  # pipe -> instructions its next ones start after
    events = checked = 0
    for i, rec in enumerate(p._records):
        if rec.event is not None:
            events += 1
            if rec.op == "set_flag":
                flags[(rec.event[0], rec.event[1])] = list(issued.get(rec.engine, ()))
            elif rec.op == "wait_flag":
                must_follow.setdefault(rec.engine, set()).update(
                    flags.pop((rec.event[0], rec.event[1])))
            elif rec.event[0] == "ALL":
                for pipe in {*issued, "MTE2", "MTE1", "M", "FIX", "MTE3", "V"}:
                    must_follow.setdefault(pipe, set()).update(
                        j for js in issued.values() for j in js)
            continue
        if i not in slots:
            continue
        pipe = slots[i][0].track
        start = min(s.start for s in slots[i])
        for j in must_follow.get(pipe, ()):
            assert start >= max(s.end for s in slots[j]) - 1e-6, (rec.op, rec.location, j)
            checked += 1
        issued.setdefault(pipe, []).append(i)
    assert events > 20 and checked > 100
    # the events order the pipes, yet the double buffering still overlaps them
    assert p.total_ns < sum(p.busy_ns.values())


def test_cli_profile_of_a_python_kernel(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
        "@nki.jit\ndef copy(a):\n"
        "    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=a)\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n")
    np.save(tmp_path / "a.npy", np.ones((128, 256), np.float32))
    r = subprocess.run([sys.executable, "-m", "apdsl", "profile", str(src), "-i",
                        f"a={tmp_path / 'a.npy'}", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["estimate"] is True and out["target"] == "trn2"
    assert out["instructions"] == 2 and out["kernel"] == "copy"
    # the costliest lines are the user's two copies (in either order: they cost the same)
    assert {t["where"] for t in out["top"]} == {f"{src}:9", f"{src}:11"}
