"""The garbage-collector policy is the command line's: the library never disables, freezes or
retunes the collector of the process that imports it; `apdsl ...` sets its own."""

from __future__ import annotations

import gc
import subprocess
import sys

from apdsl.semantics.program import Program
from apdsl.surfaces import collector

SOURCE = """\
kernel add(a: f32[4, 8] @ hbm) -> f32[4, 8] @ shared_hbm:
    t: f32[4, 8] @ sbuf
    dma_copy(t, a)
    out: f32[4, 8] @ shared_hbm
    dma_copy(out, t)
    x = 0
    for i in range(10):
        x = x + i
    return out
"""


def test_the_library_leaves_the_callers_collector_alone(monkeypatch) -> None:
    calls: list[str] = []
    for name in ("disable", "enable", "freeze", "set_threshold"):
        monkeypatch.setattr(gc, name, lambda *a, _n=name: calls.append(_n))
    before = gc.get_threshold()
    program = Program(SOURCE, "lib.apk")  # parse
    program.check()  # static check and dry run
    import numpy as np
    program.run("add", {"a": np.ones((4, 8), np.float32)})  # compile and execute
    assert calls == [] and gc.get_threshold() == before


def test_the_command_line_sets_its_policy(tmp_path) -> None:
    path = tmp_path / "k.apk"
    path.write_text(SOURCE)
    code = ("import gc, sys\nfrom apdsl.surfaces.cli import main\n"
            "status = main(['check', sys.argv[1]])\n"
            "print(status, gc.isenabled(), gc.get_threshold(), gc.get_freeze_count() > 0)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = (collector.GEN0_THRESHOLD, collector.GEN1_EVERY, collector.GEN2_EVERY)
    assert r.stdout.split("\n")[-2] == f"0 True {want} True"
