"""`apdsl profile` of a kernel on several Ascend cores (issue 22): its per-engine table lists
the pipes of the cores that ran something, core by core, and no pipe of no core; each row's
busy time is the sum of the durations of the instructions `--json` lists on that track, and
the text timeline draws the same rows.  The oracle is the run's own instruction list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PIPES = ("MTE2", "MTE1", "M", "FIX", "MTE3", "V", "S")


def profile(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apdsl", "profile", *args],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)


def pyasc_inputs(tmp_path: Path, cores: int, per_core: int) -> list[str]:
    n = cores * per_core
    np.save(tmp_path / "x.npy", np.arange(n, dtype=np.float32))
    np.save(tmp_path / "y.npy", np.ones(n, np.float32))
    np.save(tmp_path / "z.npy", np.zeros(n, np.float32))
    np.save(tmp_path / "n.npy", np.array(per_core))
    return ["-i", "x=x.npy", "-i", "y=y.npy", "-i", "z=z.npy", "-i", "per_core=n.npy"]


def check_rows(report: dict, text: str) -> dict[str, float]:
    """The table against the instructions: returns each row's busy time."""
    per_track: dict[str, float] = defaultdict(float)
    for s in report["scheduled"]:
        per_track[s["track"]] += s["end_ns"] - s["start_ns"]
    rows = report["engines"]
    # every row a track that ran something, every track that ran something a row
    assert set(rows) == set(per_track)
    for track, row in rows.items():
        assert row["busy_ns"] == pytest.approx(per_track[track], rel=1e-9, abs=1e-9)
        assert row["busy_ns"] > 0
    # the text prints the same rows in the same order, each once, aligned
    table = text.split("estimated busy time per engine:\n", 1)[1].split("\n\n", 1)[0]
    names = [re.match(r"  (.+?)\s{2,}\d", line).group(1) for line in table.splitlines()]
    assert names == list(rows)
    assert len({line.index(" us") for line in table.splitlines()}) == 1
    # the timeline (drawn up to 200 instructions) draws each busy row, and its #s cover what
    # the row's instructions cover
    if len(report["scheduled"]) > 200:
        return {t: r["busy_ns"] for t, r in rows.items()}
    timeline = text.split("estimated timeline", 1)[1].splitlines()[1:]
    drawn = {line.split("|")[0].strip(): line.split("|")[1] for line in timeline
             if "|" in line}
    assert list(drawn) == list(rows)
    total, width = report["total_ns"], 64
    for track, bar in drawn.items():
        cells = {i for i, c in enumerate(bar) if c == "#"}
        want = set()
        for s in report["scheduled"]:
            if s["track"] == track:
                a = min(width - 1, int(s["start_ns"] / total * width))
                b = max(a + 1, min(width, -int(-s["end_ns"] / total * width // 1)))
                want |= set(range(a, b))
        assert cells == want, track
    return {t: r["busy_ns"] for t, r in rows.items()}


def test_pyasc_kernel_on_four_cores(tmp_path):
    args = [str(ROOT / "examples/asc_python/add_queues.py"), "--grid", "4",
            *pyasc_inputs(tmp_path, 4, 256)]
    text = profile(tmp_path, *args)
    assert text.returncode == 0, text.stderr
    js = profile(tmp_path, *args, "--json")
    assert js.returncode == 0, js.stderr
    report = json.loads(js.stdout)
    busy = check_rows(report, text.stdout)
    # the kernel copies in on MTE2, adds on V and copies out on MTE3, on each of its cores
    assert list(busy) == [f"core {c}: {p}" for c in range(4) for p in ("MTE2", "MTE3", "V")]
    assert not set(busy) & set(PIPES)  # no row for a pipe of no core
    # every core does the same work: the same busy time per pipe
    for p in ("MTE2", "MTE3", "V"):
        assert len({round(busy[f"core {c}: {p}"], 6) for c in range(4)}) == 1
    # two tiles a core: two copies in of x and of y, two adds, two copies out
    count = defaultdict(int)
    for s in report["scheduled"]:
        count[s["track"]] += 1
    assert count == {f"core {c}: {p}": n for c in range(4)
                     for p, n in (("MTE2", 4), ("MTE3", 2), ("V", 2))}


def test_apk_program_launching_eight_cores(tmp_path):
    """The top level launches `vadd[8]`; then `profile` runs the kernel itself on one core:
    that run's pipes come first (unprefixed, as a one-core run's), then each core's."""
    path = str(ROOT / "examples/ascend_add_queues.apk")
    text = profile(tmp_path, path)
    assert text.returncode == 0, text.stderr
    report = json.loads(profile(tmp_path, path, "--json").stdout)
    busy = check_rows(report, text.stdout)
    alone = [t for t in busy if ": " not in t]
    assert alone == ["MTE2", "MTE3", "V"]
    launched = [t for t in busy if ": " in t]
    assert launched == [f"core {c}: {p}" for c in range(8) for p in ("MTE2", "MTE3", "V")]
    assert list(busy) == alone + launched


def test_one_core_keeps_its_seven_pipes(tmp_path):
    """A kernel on one core: the rows are its pipes, idle ones included (as before)."""
    args = [str(ROOT / "examples/asc_python/add_queues.py"), *pyasc_inputs(tmp_path, 1, 256)]
    report = json.loads(profile(tmp_path, *args, "--json").stdout)
    assert list(report["engines"]) == list(PIPES)
    per_track: dict[str, float] = defaultdict(float)
    for s in report["scheduled"]:
        per_track[s["track"]] += s["end_ns"] - s["start_ns"]
    for track, row in report["engines"].items():
        assert row["busy_ns"] == pytest.approx(per_track.get(track, 0.0), abs=1e-9)
