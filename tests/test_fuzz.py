"""Generated and mutated programs, bad `.npy` files and command lines never crash apdsl.

The harness is `tests/fuzzer.py`: programs run in a memory-capped worker process with a
per-program time limit, command lines as subprocesses (see its docstring for what counts as a
finding). Here it runs a fixed-seed sample: the first 125 programs and 12 command lines (about
15 s of CPU), 250 programs in the long run (`APDSL_DEEP=1`); `APDSL_FUZZ=N` runs N programs and
N / 50 command lines (at least 12), `APDSL_FUZZ_SEED` picks another seed.  The campaign runs in
parts (a third of the programs each, then the command lines) that the suite's workers share,
so it is not one long test that the rest of the suite waits for.
"""

from __future__ import annotations

import os

import fuzzer
import pytest
from support import DEEP

PARTS = 3


@pytest.mark.parametrize("part", [*range(PARTS), "command lines"],
                         ids=[*(f"programs {k + 1} of {PARTS}" for k in range(PARTS)),
                              "command lines"])
def test_fuzz_harness_finds_nothing(part):
    n = int(os.environ.get("APDSL_FUZZ", "0")) or (250 if DEEP else 125)
    lines = part == "command lines"
    report = fuzzer.campaign(n, max(12, n // 50), seed=int(os.environ.get("APDSL_FUZZ_SEED", "0")),
                             share=None if lines else (part, PARTS), command_lines=lines)
    assert report.programs + report.cli > 0
    shown = "\n\n".join(
        f"{f['finding']} ({f['kind']} {f['index']}):\n"
        f"{f.get('source') or ' '.join(f.get('argv', []))}\n{f['detail'][-1200:]}"
        for f in report.findings[:5])
    assert not report.findings, f"{report.summary()}\n\n{shown}"


def test_the_harness_sees_a_crash(monkeypatch):
    """The harness is not blind: an exception escaping apdsl is reported as a finding."""
    from apdsl.semantics import program

    def broken(self, out=None):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(program.Program, "check", broken)
    outcome = fuzzer.exercise("x = 1\n", ".")
    assert outcome["finding"] == "exception" and "planted" in outcome["detail"]
