"""A repository's assertion of wall-clock time is not a comparison of values (`corpus.timing`):
a benchmark test asserting the host time around a kernel's call (neuronx-distributed-inference's
sliding-window attention asserts `actual_latency <= 12000` microseconds) fails on a simulator
and says nothing of the answer, so the kernel's row is decided by the tests that compare values;
an assertion that mixes a value of the kernel's result into a time stays a mismatch.  Run as a
user runs `apdsl corpus`, on kernels and tests written here, and the source reading alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus.timing import is_timing

KERNELS = kernel_module(*(hbm_kernel(f"{name}_kernel", "nl.multiply(nl.load(a), 2.0)")
                          for name in ("timed", "wrong", "disguised", "only")))

# each kernel's tests: a timing test first (it fails: no kernel runs in a nanosecond here),
# then what decides the row
TESTS = '''
from time import perf_counter

import numpy as np
import pytest

from kern import disguised_kernel, only_kernel, timed_kernel, wrong_kernel

X = np.arange(16, dtype=np.float32).reshape(4, 4)


@pytest.mark.parametrize("latency", [1])
def test_timed_perf(latency):
    t0 = perf_counter()
    timed_kernel(X)
    elapsed = (perf_counter() - t0) * 1e9
    assert elapsed <= latency


def test_timed_values():
    np.testing.assert_allclose(timed_kernel(X), 2 * X)


@pytest.mark.parametrize("latency", [1])
def test_wrong_perf(latency):
    t0 = perf_counter()
    wrong_kernel(X)
    assert (perf_counter() - t0) * 1e9 <= latency


def test_wrong_values():
    np.testing.assert_allclose(wrong_kernel(X), 3 * X)


def test_disguised():
    t0 = perf_counter()
    out = disguised_kernel(X)
    elapsed = perf_counter() - t0 + float(out.sum())
    assert elapsed <= 1.0


LIMIT = 1e-9


def test_only_perf():
    t0 = perf_counter()
    only_kernel(X)
    assert perf_counter() - t0 <= LIMIT
'''


def test_a_failed_timing_assertion_is_no_mismatch_and_a_value_assertion_stays_one(
        tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(KERNELS)
    (tmp_path / "test_kern.py").write_text(TESTS)
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--jsonl",
                           "--timeout", "60"], capture_output=True, text=True, timeout=300)
    rows = {row["kernel"].split("::")[1]: row for row in map(json.loads,
                                                             done.stdout.splitlines())
            if "kernel" in row}
    got = {name: rows[name]["status"] for name in rows}
    assert got == {"timed_kernel": "matches", "wrong_kernel": "mismatch",
                   "disguised_kernel": "mismatch", "only_kernel": "runs"}, done.stdout
    # the timing test failed first; the row says so, and where
    assert "wall-clock time failed at test_kern.py:17" in rows["timed_kernel"]["detail"]
    assert "wall-clock time failed at test_kern.py:48" in rows["only_kernel"]["detail"]
    # the mismatches are the value comparisons', not the timing tests'
    assert rows["wrong_kernel"]["where"] == "test_kern.py:32", rows["wrong_kernel"]
    assert rows["disguised_kernel"]["where"] == "test_kern.py:39", rows["disguised_kernel"]


def timing_lines(folder: Path, source: str) -> set[int]:
    """The lines of `source` holding an assertion `is_timing` reads as one of time."""
    text = textwrap.dedent(source)
    path = folder / "src.py"
    path.write_text(text)
    return {n for n in range(1, text.count("\n") + 2) if is_timing(str(path), n)}


def test_the_source_reading_tells_clocks_from_values(tmp_path: Path) -> None:
    found = timing_lines(tmp_path, '''
        import time as clock
        import timeit
        import pytest
        import numpy as np
        BUDGET = 2 * 1000
        NAME = "x"

        @pytest.mark.parametrize("bs, latency", [(1, 5)])
        def test_perf(bs, latency, k, x):
            start = clock.perf_counter_ns()
            out = k(x)
            spent = abs(clock.perf_counter_ns() - start) / 1e3
            assert spent <= latency              # 14: a clock against a parametrised limit
            assert spent < BUDGET                # 15: a module constant
            assert 0 <= spent < latency * 2      # 16: chained, arithmetic of a limit
            assert spent <= NAME                 # 17: a string constant is no time
            assert spent <= bs + out.sum()       # 18: a value of the result
            err = np.abs(out - x).max()
            assert err <= latency                # 20: no clock: a value
            t = timeit.default_timer()
            assert timeit.default_timer() - t < 1   # 22

        def helper(out, limit):
            t0 = clock.time()
            assert clock.time() - t0 < limit     # 26: a helper's argument may be anything
            for t1 in out:
                assert clock.time() - t1 < 5     # 28: a loop variable
            t2 = out[0]
            assert clock.time() - t2 < 5         # 30: bound to a subscript
            t3 = clock.time()
            t3 = t3 + out.sum()
            assert clock.time() - t3 < 5         # 33: rebound to a value
            assert clock.time(out) < 5           # 34: a clock called with arguments
        ''')
    assert found == {14, 15, 16, 22}
