"""What `apdsl profile` reports about executions and the critical path, as a user runs it: a
line's count is how many times it executed, whatever the pieces each execution was cut into,
and the critical path is a chain in time, each step starting its work after the one before
it ended (a DMA's fixed latency may run under the transfer it waited for)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PIECES = """\
kernel k(A: f32[8, 8] @ hbm) -> f32[8, 6] @ sbuf:
    s: f32[8, 8] @ sbuf
    dma_copy(dst=s, src=A)
    t: f32[8, 6] @ sbuf
    for i in range(2):
        tensor_copy(dst=t, src=s.rearrange("p (a b) -> p (b a)", a=2)[:, 1:7])
    return t
"""

FOUR_LOADS = """\
kernel k(A: f32[128, 2048] @ hbm, B: f32[128, 2048] @ hbm, C: f32[128, 2048] @ hbm,
         D: f32[128, 2048] @ hbm) -> f32[128, 2048] @ sbuf:
    a: f32[128, 2048] @ sbuf
    b: f32[128, 2048] @ sbuf
    c: f32[128, 2048] @ sbuf
    d: f32[128, 2048] @ sbuf
    dma_copy(dst=a, src=A)
    dma_copy(dst=b, src=B)
    dma_copy(dst=c, src=C)
    dma_copy(dst=d, src=D)
    nisa.tensor_tensor(dst=a, data1=c, data2=d, op=nl.add)
    return a
"""


def _profile(tmp_path, source, *flags):
    f = tmp_path / "k.apk"
    f.write_text(source)
    return subprocess.run([sys.executable, "-m", "apdsl", "profile", str(f), *flags],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


def test_a_line_cut_into_pieces_counts_its_executions(tmp_path):
    proc = _profile(tmp_path, PIECES)
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if "tensor_copy" in ln and "k.apk:6" in ln
               and "x  " in ln]
    assert " 2x  tensor_copy" in line and "(6 pieces)" in line, line  # 2 runs of 3 pieces
    doc = json.loads(_profile(tmp_path, PIECES, "--json").stdout)
    (row,) = [r for r in doc["top"] if r["op"] == "tensor_copy"]
    assert (row["count"], row["pieces"]) == (2, 6)


def test_the_critical_path_is_a_chain_in_time(tmp_path):
    proc = _profile(tmp_path, FOUR_LOADS, "--trace", str(tmp_path / "t.json"))
    assert proc.returncode == 0, proc.stderr
    steps = [ln for ln in proc.stdout.split("estimated critical path")[1].split("\n\n")[0]
             .splitlines()[1:]]
    assert len(steps) == 5 and all("dma_copy" in s for s in steps[:4]), steps
    times = [tuple(float(x) for x in s.split(": ")[1].split(" us")[0].split("-"))
             for s in steps]
    fixed = 1.3  # us: the DMA's fixed latency on trn2 (the cost table's dma_fixed)
    for (s0, e0), (s1, e1) in zip(times, times[1:]):
        assert s1 > s0 and e1 > e0  # not four DMAs all starting at 0
        assert s1 + fixed >= e0 - 1e-3  # its transfer starts after the one before ended
    # a queue is busy while its DMA runs, not while it waits for the engines
    busy = {ln.split()[1]: float(ln.split()[2]) for ln in proc.stdout.splitlines()
            if ln.startswith("  DMA q") and ln.endswith("%")}
    assert max(busy.values()) - min(busy.values()) < 1e-3, busy
