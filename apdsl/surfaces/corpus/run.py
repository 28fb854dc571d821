"""`apdsl corpus DIR`: every NKI kernel entry point under DIR run unchanged, each in its own
process with a time limit, and the table and counts of what each came to (SPEC section 19)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...records import record
from .drivers import find_entry_points, reaching
from .find import EntryPoint, Source, checkout_top, kernels, parse, python_files, read
from .verdict import PASSING, STATUSES, Verdict


@record
class Measured:
    label: str
    api: str
    verdict: Verdict
    seconds: float  # wall clock
    cpu: float  # CPU seconds of the worker (the time limit counts these)


def discover(root: str) -> list[EntryPoint]:
    """The kernels under `root`, each with its drivers from anywhere in the checkout `root`
    lies in (a folder of kernels is driven by the checkout's tests, wherever they are)."""
    sources = [s for s in (parse(p) for p in python_files(root)) if s is not None]
    top = checkout_top(root)
    if top == root:
        return find_entry_points(sources)
    return find_entry_points(sources, list(_may_drive(sources, top, root)))


def _may_drive(sources: list[Source], top: str, root: str) -> Iterator[Source]:
    """The files of the checkout outside `root` that name a kernel of `sources`, or a function
    calling one (only those can drive one: a test names the kernel it calls, or the wrapper
    that calls it), each read once and parsed once."""
    wanted = {qual.split(".")[-1] for src in sources for qual, _ in kernels(src)}
    if not wanted:
        return
    wanted |= reaching(sources, wanted)
    inside = os.path.join(root, "")
    pending = {}
    for path in python_files(top):
        text = None if path.startswith(inside) else read(path)
        if text is not None:
            pending[path] = text
    while wanted and pending:
        naming = re.compile("|".join(re.escape(n) for n in sorted(wanted)))
        matched = [p for p, t in pending.items() if naming.search(t)]
        found = [s for s in (parse(p, pending.pop(p)) for p in matched) if s is not None]
        yield from found
        wanted = reaching(found, wanted)  # the wrappers those files define, named elsewhere


def _job(entry: EntryPoint, root: str, timeout: float | None = None) -> dict[str, Any]:
    """The worker's job; with the kernel's `timeout`, the CPU seconds its tests for one
    platform may use before reaching it while tests for another wait: a third of what the
    driver has before the call (`HARNESS_FACTOR`), the rest theirs."""
    job: dict[str, Any] = {
        "root": root, "file": entry.file, "qualname": entry.qualname,
        "drivers": [{"kind": d.kind, "file": d.file, "tests": list(d.tests),
                     "line": d.line, "argument": d.argument} for d in entry.drivers]}
    if timeout is not None:
        job["budget"] = HARNESS_FACTOR * timeout / 3
    return job


# A kernel's time limit counts the CPU time its worker spends, so that a figure does not depend
# on how many other processes share the machine (a run that takes 15 s of CPU needs minutes of
# wall clock on a loaded machine); a worker that waits rather than computes (a deadlocked
# harness) is stopped after WALL_FACTOR times the limit of wall clock.
WALL_FACTOR = 10
POLL_SECONDS = 0.25
# What a driver does before it calls the kernel (collecting tests: nki-library's attention_cte
# tests spend minutes of CPU in allpairspy generating their parameter sweep; making the test's
# data: its MX MoE tests loop in Python over every scaling group) and after it returned (its
# reference, its comparisons) is the repository's cost, not the kernel's: each has this many
# times the kernel's limit, and the kernel's limit counts from its call.
HARNESS_FACTOR = 5
# apdsl's tile products run on one BLAS thread, as the benchmarks run both sides: a
# multithreaded BLAS spinning on a loaded machine counted up to ten times the CPU time of a
# product against the limit
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process `pid` and the children it waited for have used,
    or None where the system does not say (no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def marker(out_path: str, phase: str) -> str:
    """The file a worker writing its verdict to `out_path` creates when its run reaches
    `phase`: "started" (the kernel was first called) or "returned" (it returned)."""
    return f"{out_path}.{phase}"


def touch(path: str) -> None:
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8"):
            pass


def _run_limited(proc: subprocess.Popen[bytes], limit: float, out: str) -> tuple[str, float]:
    """Wait for the worker within its CPU allowance (and WALL_FACTOR times that of wall
    clock); ('' when it ended, else what limit stopped it; the CPU seconds it used).  The
    `limit` is the kernel's: what its driver does before calling it (collecting tests, making
    their data) and after it returned (its reference, its comparisons) have HARNESS_FACTOR *
    `limit` each.  `out` is the worker's verdict file, beside which it marks those phases."""
    start = time.monotonic()
    began: float | None = None  # CPU used when the kernel was first called
    after: float | None = None  # ... and when it returned
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:  # ended: its own account of the CPU it used, its children's included
            proc.returncode = os.waitstatus_to_exitcode(status)
            return "", usage.ru_utime + usage.ru_stime
        cpu = cpu_seconds(proc.pid)
        wall = time.monotonic() - start
        used = cpu if cpu is not None else wall
        if began is None and os.path.exists(marker(out, "started")):
            began = used
        if after is None and os.path.exists(marker(out, "returned")):
            after = used
        allowed = HARNESS_FACTOR * limit if began is None else began + limit
        if after is not None:
            allowed = max(allowed, after + HARNESS_FACTOR * limit)
        if used > allowed or wall > WALL_FACTOR * allowed:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return _late(limit, allowed, used, wall, began, after, cpu is not None), used
        time.sleep(POLL_SECONDS)


def _late(limit: float, allowed: float, used: float, wall: float, began: float | None,
          after: float | None, cpu: bool) -> str:
    """What stopped a worker at its allowance (see `_run_limited`)."""
    unit = "s of CPU time" if cpu else "s"
    if wall > WALL_FACTOR * allowed and used <= allowed:
        return f"no end within {WALL_FACTOR * allowed:g} s of wall clock (it used {used:.0f} s " \
               "of CPU)"
    if began is None:
        return f"its driver did not call the kernel within {allowed:g} {unit}"
    if after is not None:
        return f"no end within {HARNESS_FACTOR * limit:g} {unit} after the kernel returned"
    before = f" (its driver had used {began:.0f} s before calling it)" if began >= 1 else ""
    return f"no end within {limit:g} {unit}{before}"


def measure_one(entry: EntryPoint, root: str, timeout: float) -> Measured:
    """Run the worker for one kernel in a new process (its own session, so a timeout ends
    everything it started)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="apdsl-corpus-") as tmp:
        job, out = os.path.join(tmp, "job.json"), os.path.join(tmp, "verdict.json")
        with open(job, "w", encoding="utf-8") as f:
            json.dump(_job(entry, root, timeout), f)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg", **ONE_THREAD)
        with open(os.path.join(tmp, "stderr"), "w+b") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "apdsl.surfaces.corpus.worker", job, out], cwd=tmp,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                env=env, start_new_session=True)
            late, used = _run_limited(proc, timeout, out)
            if late:
                verdict = _interim(out, late)
            else:
                err.seek(0)
                verdict = _read(out, proc.returncode, err.read())
    return Measured(entry.label(root), entry.api, verdict, time.monotonic() - start, used)


def _interim(path: str, late: str) -> Verdict:
    """A run stopped at the time limit: how the kernel had done by then (the worker keeps it
    after each event), or a timeout when it had not ended yet."""
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
        if "unreached" in found:  # tests stopped at other kernels, and time ran out
            return Verdict("timeout", "", "", f"{late}; {found['unreached']}"[:300])
        found.pop("interim", None)
        v = Verdict(**found)
    except (OSError, ValueError, TypeError):
        return Verdict("timeout", "", "", late)
    return Verdict(v.status, v.code, v.where,
                   f"{v.detail}; the driver went on past the limit ({late})", v.driver)


def _read(path: str, status: int, err: bytes) -> Verdict:
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
        if found.pop("interim", False):  # the worker died after the kernel's run
            found["detail"] += f"; then the worker died (exit {status})"
        return Verdict(**found)
    except (OSError, ValueError, TypeError):
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return Verdict("crash", f"exit {status}", "", f"the worker died: {tail[0][:200]}")


def measure_all(root: str, timeout: float, jobs: int,
                progress: Callable[[Measured], None] | None = None,
                entries: list[EntryPoint] | None = None) -> list[Measured]:
    """Measure `entries` (every entry point under `root` when None)."""
    if entries is None:
        entries = discover(root)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(measure_one, e, root, timeout) for e in entries]
        results = []
        for fut in futures:
            m = fut.result()
            if progress is not None:
                progress(m)
            results.append(m)
    return results


def counts(results: list[Measured]) -> dict[str, int]:
    c = Counter(m.verdict.status for m in results)
    return {s: c.get(s, 0) for s in STATUSES}


def summary(results: list[Measured]) -> str:
    n = len(results)
    c = counts(results)
    passing = sum(c[s] for s in PASSING)
    shown = ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s])
    pct = f" ({100 * c['matches'] / n:.0f}% match, {100 * passing / n:.0f}% run)" if n else ""
    return f"{n} kernel entry point{'' if n == 1 else 's'}: {shown or 'none'}{pct}"


def table(results: list[Measured]) -> str:
    rows = [("kernel", "status", "code", "where", "detail")]
    for m in results:
        v = m.verdict
        rows.append((m.label, v.status, v.code, v.where, v.detail))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for r in rows:
        cells = [r[i].ljust(widths[i]) for i in range(4)] + [r[4]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def kernel_json(m: Measured) -> dict[str, Any]:
    return {"kernel": m.label, "api": m.api, "seconds": round(m.seconds, 2),
            "cpu_seconds": round(m.cpu, 2), **m.verdict.as_json()}


def json_document(root: str, results: list[Measured]) -> dict[str, Any]:
    return {"root": root, "counts": counts(results), "total": len(results),
            "kernels": [kernel_json(m) for m in results]}
