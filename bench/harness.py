"""The timing method of SPEC section 10, shared by every benchmark in `bench/`.

A `Case` compares apdsl ("ours") with the NumPy or CPython code a user would write instead
("baseline").  One *measurement* interleaves the two sides: side A timed over a loop of at least
20 ms, then side B over its own loop, seven times, and keeps the best time per call of each.
Time is CPU time (`cpu_clock`), so helpers sharing the machine do not decide a ratio.
The ratio is ours / baseline; it must be at most the case's target.  A measurement that misses
is repeated, and the case is a MISS only when three consecutive measurements miss, so a noisy
moment on a shared machine does not fail a benchmark that meets its target.

Each bench script builds its cases and calls `main(cases)`, which prints one line per case
(times, ratio, target, ok/MISS) and returns 1 on any miss; `bench/run_all.py` runs every
script's cases into one table.
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

MIN_LOOP = 0.02  # seconds: each side is timed over a loop at least this long
REPEATS = 7  # best of this many loops per side
ATTEMPTS = 3  # a miss only after this many consecutive missing measurements

Side = Callable[[], object]
Clock = Callable[[], float]


def cpu_clock() -> float:
    """Seconds of CPU this process and its waited-for children have used (user and system).
    Every side is single-threaded (`run_cases` pins NumPy's BLAS to one thread) and CPU-bound,
    so on an idle machine this is its wall time; on a machine shared with other jobs it leaves
    out the time spent waiting for a core, which wall time charges to whichever side was
    unlucky (measured at load 12: the .apk tile loop 6.2x by wall time, 9.6x by CPU time).  A
    side that runs a subprocess (`apdsl check` cold) is charged the child's CPU."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


@dataclass
class Case:
    """One row of SPEC section 10.  `prepare()` builds the data (outside any timing), checks
    that both sides compute the same thing (raising AssertionError when they do not) and
    returns the two sides `(ours, baseline)`.  With `self_timed`, each side returns the seconds
    it measured itself (a subprocess timing its own work) instead of being timed here."""

    name: str
    baseline: str
    target: float
    prepare: Callable[[], tuple[Side, Side]]
    self_timed: bool = False
    notes: list[str] = field(default_factory=list)
    # a calibration row (SPEC section 14): `prepare()` returns two figures in seconds (an
    # estimate and a published time), computed once, and the ratio must lie in this band
    band: tuple[float, float] | None = None
    # a validation row: a calibration row of a kernel the model was not fitted to, printed
    # with ok/MISS as it comes out; a miss there does not fail the run (it is a finding)
    validation: bool = False


@dataclass
class Result:
    name: str
    baseline: str
    target: float
    ours: float  # seconds per call, best of the measurement that decided the case
    base: float
    attempts: int  # measurements made (1 when the first one met the target)
    error: str | None = None  # the sides disagreed or failed: always a miss
    band: tuple[float, float] | None = None  # a calibration row's band (else: <= target)
    validation: bool = False  # a validation row: its miss is reported, not failed

    @property
    def passed(self) -> bool:
        """The run's verdict on this row: ok, or a validation row (whose miss is a finding)."""
        return self.ok or (self.validation and self.error is None)

    @property
    def ratio(self) -> float:
        return self.ours / self.base if self.base > 0 else float("inf")

    @property
    def ok(self) -> bool:
        if self.error is not None:
            return False
        if self.band is not None:
            return self.band[0] <= self.ratio <= self.band[1]
        return self.ratio <= self.target


def loop_time(fn: Side, *, self_timed: bool = False, min_loop: float = MIN_LOOP,
              clock: Clock = cpu_clock) -> float:
    """Seconds per call of `fn`, over a loop of at least `min_loop` seconds.  The clock is read
    after 1, 3, 7, ... calls (the batch doubling), not after each: reading CPU time is a system
    call of about 5 us here, which would weigh on a side of 10 us a call."""
    calls, total, batch = 0, 0.0, 1
    start = clock()
    while True:
        for _ in range(batch):
            got = fn()
            if self_timed:
                total += float(got)  # type: ignore[arg-type]
        calls += batch
        elapsed = clock() - start
        if not self_timed:
            total = elapsed
        if total >= min_loop or elapsed >= min_loop:
            return total / calls
        batch = calls + 1


def measure(ours: Side, base: Side, *, repeats: int = REPEATS, self_timed: bool = False,
            min_loop: float = MIN_LOOP, clock: Clock = cpu_clock
            ) -> tuple[float, float]:
    """Best time per call of each side, the sides interleaved `repeats` times."""
    best_ours = best_base = float("inf")
    for _ in range(repeats):
        best_ours = min(best_ours, loop_time(ours, self_timed=self_timed, min_loop=min_loop,
                                             clock=clock))
        best_base = min(best_base, loop_time(base, self_timed=self_timed, min_loop=min_loop,
                                             clock=clock))
    return best_ours, best_base


def run_case(case: Case, *, attempts: int = ATTEMPTS, repeats: int = REPEATS,
             min_loop: float = MIN_LOOP, clock: Clock = cpu_clock) -> Result:
    """Measure `case` until a measurement meets its target, at most `attempts` times (a
    calibration row is computed once: the model is deterministic)."""
    if case.band is not None:
        estimate, published = case.prepare()  # type: ignore[misc]
        return Result(case.name, case.baseline, case.target, float(estimate), float(published),
                      1, band=case.band, validation=case.validation)
    try:
        ours, base = case.prepare()
    except AssertionError as e:
        return Result(case.name, case.baseline, case.target, float("nan"), float("nan"), 0,
                      error=f"the two sides disagree: {e}")
    try:
        result = None
        for k in range(1, attempts + 1):
            gc.collect()  # garbage of the previous measurement is not this one's cost
            t_ours, t_base = measure(ours, base, repeats=repeats, self_timed=case.self_timed,
                                     min_loop=min_loop, clock=clock)
            result = Result(case.name, case.baseline, case.target, t_ours, t_base, k)
            if result.ok:
                return result
        assert result is not None
        return result
    finally:
        del ours, base  # let the case's data go before the next case allocates its own


def _time_text(seconds: float) -> str:
    if seconds != seconds:  # nan: not measured
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e9:.0f} ns"


HEADER = ("case", "apdsl", "baseline", "ratio", "target", "")


def rows(results: Sequence[Result]) -> list[tuple[str, ...]]:
    out = []
    for r in results:
        status = "ok" if r.ok else "MISS"
        if r.validation:
            status += " (validation: not fitted)"
        if r.error is None and r.attempts > 1:
            status += f" ({r.attempts} tries)"
        ratio = "-" if r.error else f"{r.ratio:.2f}x"
        target = f"{r.band[0]:g}-{r.band[1]:g}" if r.band else f"<= {r.target:g}x"
        out.append((f"{r.name} vs {r.baseline}", _time_text(r.ours), _time_text(r.base),
                    ratio, target, status))
    return out


def table(results: Sequence[Result]) -> str:
    """One aligned line per result under a header; errors follow the table."""
    body = [HEADER, *rows(results)]
    widths = [max(len(row[i]) for row in body) for i in range(len(HEADER))]
    lines = []
    for row in body:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in
                                             zip(row[1:5], widths[1:5])] + [row[5]]
        lines.append("  ".join(cells).rstrip())
    for r in results:
        if r.error:
            lines.append(f"{r.name}: {r.error}")
    return "\n".join(lines)


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--repeats", type=int, default=REPEATS,
                    help=f"loops per side in one measurement (default {REPEATS})")
    ap.add_argument("--attempts", type=int, default=ATTEMPTS,
                    help=f"measurements before a miss is reported (default {ATTEMPTS})")
    ap.add_argument("-k", dest="only", default=None,
                    help="run only the cases whose name contains this text")
    return ap


def run_cases(cases: Sequence[Case], args: argparse.Namespace, *,
              progress: Callable[[str], None] | None = None) -> list[Result]:
    """Run the selected cases; `progress` gets each result's line as it comes.

    Both sides run with NumPy's BLAS on one thread: apdsl's `mmad` pins its tile products to
    one thread, and a multi-threaded BLAS on the NumPy side of a tile loop spends its time
    waking and waiting for workers (on this 2-core machine, shared with the apdsl side's
    interpreter), which would flatter apdsl.  The same work on the same thread is the honest
    comparison."""
    from apdsl.runtime.core.blas import threads as blas_threads
    fns = blas_threads()
    saved = fns[0]() if fns is not None else 1
    if fns is not None:
        fns[1](1)
    try:
        results = []
        for case in cases:
            if args.only and args.only not in case.name:
                continue
            r = run_case(case, attempts=args.attempts, repeats=args.repeats)
            results.append(r)
            if progress is not None:
                progress(table([r]).split("\n", 1)[1])
        return results
    finally:
        if fns is not None:
            fns[1](saved)


def notes(cases: Sequence[Case]) -> list[str]:
    """The cases' notes (figures their `prepare` measured for scale, such as a floor)."""
    return [f"  {case.name}: {note}" for case in cases for note in case.notes]


def main(cases: Sequence[Case] | Callable[[argparse.Namespace], Sequence[Case]],
         description: str, argv: Sequence[str] | None = None,
         add_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """A bench script's command line: run its cases, print the table, 1 on any miss."""
    ap = parser(description)
    if add_arguments is not None:
        add_arguments(ap)
    args = ap.parse_args(argv)
    chosen = cases(args) if callable(cases) else cases
    results = run_cases(chosen, args)
    print(table(results))
    for line in notes(chosen):
        print(line)
    return 0 if results and all(r.passed for r in results) else 1
