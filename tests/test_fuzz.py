"""Generated and mutated programs, bad `.npy` files and command lines never crash apdsl.

The harness is `tests/fuzzer.py`: programs run in a memory-capped worker process with a
per-program time limit, command lines as subprocesses (see its docstring for what counts as a
finding). Here it runs a fixed-seed sample (250 programs, about 10 s); `APDSL_FUZZ=N` runs N
programs and N / 50 command lines, `APDSL_FUZZ_SEED` picks another seed.
"""

from __future__ import annotations

import os

import fuzzer


def test_fuzz_harness_finds_nothing():
    n = int(os.environ.get("APDSL_FUZZ", "0")) or 250
    report = fuzzer.campaign(n, max(12, n // 50), seed=int(os.environ.get("APDSL_FUZZ_SEED", "0")))
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
