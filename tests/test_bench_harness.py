"""The benchmark harness (bench/harness.py) follows SPEC section 10's method: the two sides
interleaved, each over a loop of at least 20 ms, best of 7, a miss only after three misses in a
row.  Time is a fake clock here, so nothing depends on the machine's speed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import harness  # noqa: E402


class FakeClock:
    """A clock that advances only when a side runs (each side's call costs what it says)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def side(self, name: str, costs: list[float]):
        """A side whose k-th call takes costs[k] seconds (the last cost repeats)."""
        count = [0]

        def run() -> None:
            k = count[0]
            self.now += costs[min(k, len(costs) - 1)]
            count[0] += 1
            self.calls.append(name)
        return run


def test_a_side_is_timed_over_a_loop_of_at_least_20_ms():
    clock = FakeClock()
    per_call = harness.loop_time(clock.side("a", [0.003]), clock=clock)
    assert len(clock.calls) == 7  # 7 x 3 ms is the first loop of at least 20 ms
    assert per_call == pytest.approx(0.003)
    clock.calls.clear()
    assert harness.loop_time(clock.side("b", [0.5]), clock=clock) == pytest.approx(0.5)
    assert clock.calls == ["b"]  # one long call is a loop of its own


def test_the_sides_are_interleaved_and_the_best_loop_of_each_kept():
    clock = FakeClock()
    ours = clock.side("ours", [0.04, 0.03, 0.05, 0.0225, 0.06, 0.07, 0.08])
    base = clock.side("base", [0.03, 0.025, 0.04, 0.045, 0.05, 0.06, 0.07])
    t_ours, t_base = harness.measure(ours, base, clock=clock)
    assert clock.calls == ["ours", "base"] * 7
    assert (t_ours, t_base) == (pytest.approx(0.0225), pytest.approx(0.025))


def _case(target: float, ours: list[float], base: list[float], clock: FakeClock
          ) -> harness.Case:
    return harness.Case("case", "baseline", target,
                        lambda: (clock.side("ours", ours), clock.side("base", base)))


def test_a_miss_is_reported_only_after_three_misses_in_a_row():
    clock = FakeClock()
    # two measurements of 7 loops miss (3x), the third meets the 2x target
    result = harness.run_case(_case(2.0, [0.03] * 14 + [0.015], [0.01], clock), clock=clock)
    assert result.ok and result.attempts == 3
    assert result.ratio == pytest.approx(1.5)
    clock = FakeClock()
    result = harness.run_case(_case(2.0, [0.03], [0.01], clock), clock=clock)
    assert not result.ok and result.attempts == 3
    assert result.ratio == pytest.approx(3.0)
    assert clock.calls.count("ours") == 3 * 7


def test_a_case_that_meets_its_target_is_measured_once():
    clock = FakeClock()
    result = harness.run_case(_case(1.2, [0.021], [0.02], clock), clock=clock)
    assert result.ok and result.attempts == 1
    assert "ok" in harness.table([result]) and "<= 1.2x" in harness.table([result])


def test_self_timed_sides_report_their_own_seconds():
    clock = FakeClock()
    case = harness.Case("case", "baseline", 1.5, lambda: ((lambda: 0.03), (lambda: 0.025)),
                        self_timed=True)
    result = harness.run_case(case, clock=clock)
    assert result.ratio == pytest.approx(1.2) and result.ok


def _disagree():
    raise AssertionError("got 3, want 4")


def test_main_prints_ratio_target_status_and_exits_non_zero_on_a_miss(capsys):
    fast = harness.Case("fast", "itself", 1e9, lambda: ((lambda: None), (lambda: None)))
    never = harness.Case("never", "itself", 0.0, lambda: ((lambda: None), (lambda: None)))
    wrong = harness.Case("wrong", "itself", 1e9, _disagree)
    argv = ["--repeats", "1", "--attempts", "1"]
    assert harness.main([fast], "t", argv) == 0
    out = capsys.readouterr().out
    assert "fast vs itself" in out and "<= 1e+09x" in out and out.rstrip().endswith("ok")
    assert harness.main([fast, never], "t", argv) == 1
    out = capsys.readouterr().out
    assert "never vs itself" in out and "MISS" in out
    assert harness.main([wrong], "t", argv) == 1
    assert "the two sides disagree: got 3, want 4" in capsys.readouterr().out


def test_every_bench_script_declares_cases_on_the_harness():
    bench = Path(harness.__file__).parent
    for path in sorted(bench.glob("bench_*.py")):
        text = path.read_text()
        assert "def cases(" in text and "harness" in text, path.name
    assert "run_all" in {p.stem for p in bench.glob("*.py")}


def test_a_validation_row_prints_its_miss_and_does_not_fail_the_run(capsys):
    """Calibration rows (SPEC 14) must lie in their band; a validation row (a kernel the model
    was not fitted to) is printed ok or MISS as it comes out and its miss fails nothing."""
    inside = harness.Case("in", "published 1 s", 0.0, lambda: (1.1, 1.0), band=(0.8, 1.25))
    outside = harness.Case("out", "published 1 s", 0.0, lambda: (1.3, 1.0), band=(0.8, 1.25))
    seen = harness.Case("seen", "published 1 s", 0.0, lambda: (1.3, 1.0), band=(0.8, 1.25),
                        validation=True)
    assert harness.main([inside], "t", []) == 0
    assert harness.main([inside, seen], "t", []) == 0
    out = capsys.readouterr().out
    assert "1.30x  0.8-1.25  MISS (validation: not fitted)" in out
    assert "1.10x  0.8-1.25  ok" in out
    assert harness.main([inside, seen, outside], "t", []) == 1


def test_run_all_runs_every_bench_script():
    """One run of bench/run_all.py prints every benchmark, the calibration table included."""
    bench = Path(harness.__file__).parent
    import run_all
    assert set(run_all.MODULES) == {p.stem for p in bench.glob("bench_*.py")}
