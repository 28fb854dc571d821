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


def _job(entry: EntryPoint, root: str) -> dict[str, Any]:
    return {"root": root, "file": entry.file, "qualname": entry.qualname,
            "drivers": [{"kind": d.kind, "file": d.file, "tests": list(d.tests),
                         "line": d.line, "argument": d.argument} for d in entry.drivers]}


# A kernel's time limit counts the CPU time its worker spends, so that a figure does not depend
# on how many other processes share the machine (a run that takes 15 s of CPU needs minutes of
# wall clock on a loaded machine); a worker that waits rather than computes (a deadlocked
# harness) is stopped after WALL_FACTOR times the limit of wall clock.
WALL_FACTOR = 10
POLL_SECONDS = 0.25
# A pytest driver's collection (importing the test module, a harness generating its parameter
# sweep: nki-library's attention_cte tests spend minutes of CPU in allpairspy before the first
# test) is the repository's cost, not the kernel's: it has its own limit, this many times the
# kernel's, and the kernel's limit counts from the end of collection.
COLLECT_FACTOR = 5


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
    `phase`: "collected" (its first pytest driver's tests are collected) or "returned" (the
    kernel returned)."""
    return f"{out_path}.{phase}"


def touch(path: str) -> None:
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8"):
            pass


def _run_limited(proc: subprocess.Popen[bytes], limit: float, out: str, collects: bool
                 ) -> tuple[str, float]:
    """Wait for the worker within `limit` CPU seconds (and WALL_FACTOR times its CPU allowance
    of wall clock); ('' when it ended, else what limit stopped it; the CPU seconds it used).
    The limit is the kernel's: when the worker `collects` tests first, collection has
    COLLECT_FACTOR * `limit` and the kernel's `limit` counts from its end; once the kernel has
    returned, what the driver does next (its reference, its comparisons) has COLLECT_FACTOR *
    `limit` more.  `out` is the worker's verdict file, beside which it marks those phases."""
    start = time.monotonic()
    collected, returned = marker(out, "collected"), marker(out, "returned")
    setup: float | None = None if collects else 0.0  # CPU spent collecting
    after: float | None = None  # CPU used when the kernel returned
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:  # ended: its own account of the CPU it used, its children's included
            proc.returncode = os.waitstatus_to_exitcode(status)
            return "", usage.ru_utime + usage.ru_stime
        cpu = cpu_seconds(proc.pid)
        wall = time.monotonic() - start
        used = cpu if cpu is not None else wall
        if setup is None and os.path.exists(collected):
            setup = used
        if after is None and os.path.exists(returned):
            after = used
        allowed = COLLECT_FACTOR * limit if setup is None else setup + limit
        if after is not None:
            allowed = max(allowed, after + COLLECT_FACTOR * limit)
        if used > allowed or wall > WALL_FACTOR * allowed:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            unit = "s of CPU time" if cpu is not None else "s"
            if wall > WALL_FACTOR * allowed and used <= allowed:
                late = f"{WALL_FACTOR * allowed:g} s of wall clock (it used {used:.0f} s of CPU)"
            elif setup is None:
                return f"its tests' collection did not end within {allowed:g} {unit}", used
            elif after is not None:
                late = f"{COLLECT_FACTOR * limit:g} {unit} after the kernel returned"
            else:
                late = f"{limit:g} {unit}" + (f" (after {setup:.0f} s collecting its tests)"
                                              if setup >= 1 else "")
            return f"no end within {late}", used
        time.sleep(POLL_SECONDS)


def measure_one(entry: EntryPoint, root: str, timeout: float) -> Measured:
    """Run the worker for one kernel in a new process (its own session, so a timeout ends
    everything it started)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="apdsl-corpus-") as tmp:
        job, out = os.path.join(tmp, "job.json"), os.path.join(tmp, "verdict.json")
        with open(job, "w", encoding="utf-8") as f:
            json.dump(_job(entry, root), f)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
        with open(os.path.join(tmp, "stderr"), "w+b") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "apdsl.surfaces.corpus.worker", job, out], cwd=tmp,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                env=env, start_new_session=True)
            collects = bool(entry.drivers) and entry.drivers[0].kind == "pytest"
            late, used = _run_limited(proc, timeout, out, collects)
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
                progress: Callable[[Measured], None] | None = None) -> list[Measured]:
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
