"""The outcome of a profile: the schedule and what it says, as numbers, text and JSON.

Every figure is an estimate of the target's cost model (`apdsl.profile.costs`), labelled so
wherever it is shown.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .costs import as_json
from .schedule import Slot, SlotTable, critical_path

GANTT_MAX = 200  # instructions: above this the text timeline is left out
SHORT_RUN = 512  # bytes: the run length under which a DMA is reported (SPEC section 14)


def _where(slot: Slot) -> str:
    loc = slot.location
    return f"{loc[0]}:{loc[1]}" if loc else "?"


def _us(ns: float) -> str:
    return f"{ns / 1000:.3f} us"


class ProfileResult:
    """An estimated timeline of one program run (`apdsl.profile(...)`).

    `total_ns`: the estimated end of the last instruction; `busy_ns`: per engine, DMA queue or
    pipe, the sum of its instructions' durations; `slots`: every scheduled hardware instruction
    (start, end, track, cost, operands); `critical_path`: the chain of instructions, each
    waiting for the one before, that ends last; `dmas`: per DMA its bytes, descriptors and
    contiguous-run length; `to_json()`, `text()`.
    """

    def __init__(self, target: str, slots: list[Slot] | SlotTable, tracks: list[str],
                 kernel: str | None = None, notes: list[str] | None = None,
                 trace: Any = None) -> None:
        self.target = target
        self._trace = trace  # the run's trace (`apdsl.runtime.core.trace.Trace`), if any
        self.kernel = kernel
        self.notes = list(notes or [])
        busy: dict[str, float] = {t: 0.0 for t in tracks}
        # NKI: slot index -> the slots whose output it reads (drawn as flow arrows)
        self.producers: dict[int, tuple[int, ...]] = {}
        if isinstance(slots, SlotTable):  # the schedule's rows: slots made when read
            self._table, self._slots = slots, None
            self.producers = slots.producers
            rows = slots.rows
            # (a row: index, record, i, n, op, name, location, track, start, end, ...)
            self.total_ns = max((r[9] for r in rows), default=0.0)
            for r in rows:
                busy[r[7]] = busy.get(r[7], 0.0) + (r[9] - r[8])
            path = []
            if rows:
                i = max(range(len(rows)), key=lambda k: rows[k][9])
                path.append(i)
                while rows[i][12] >= 0:
                    i = rows[i][12]
                    path.append(i)
            self.critical_path = [slots.slot(i) for i in reversed(path)]
        else:
            self._table, self._slots = None, slots
            self.total_ns = max((s.end for s in slots), default=0.0)
            for s in slots:
                busy[s.track] = busy.get(s.track, 0.0) + (s.end - s.start)
            self.critical_path = critical_path(slots)
        self.busy_ns = {t: v for t, v in busy.items() if v > 0 or t in tracks}

    @property
    def slots(self) -> list[Slot]:
        """Every scheduled hardware instruction, in program order."""
        if self._slots is None:
            self._slots = self._table.slots()  # type: ignore[union-attr]
        return self._slots

    @property
    def _records(self) -> list[Any]:
        """The trace's records (`Slot.record` indexes them), made when first read."""
        return self._trace.records if self._trace is not None else []

    # -- derived views ------------------------------------------------------------------------
    def utilisation(self, track: str) -> float:
        return self.busy_ns.get(track, 0.0) / self.total_ns if self.total_ns else 0.0

    def top(self, n: int = 10) -> list[dict[str, Any]]:
        """The source lines whose instructions take the most time (summed over executions).
        `count`: how many times the line's instruction executed (a trace record each);
        `pieces`: the hardware instructions they were cut into (a slot each)."""
        by: dict[tuple, list[Any]] = defaultdict(lambda: [0.0, set(), 0, set()])
        for s in self.slots:
            e = by[(s.op, _where(s), s.name)]
            e[0] += s.end - s.start
            e[1].add(s.record)
            e[2] += 1
            e[3].add(s.track)
        rows = sorted(by.items(), key=lambda kv: -kv[1][0])[:n]
        return [{"op": op, "where": where, "name": name, "time_ns": t, "count": len(runs),
                 "pieces": k, "tracks": sorted(tr)}
                for (op, where, name), (t, runs, k, tr) in rows]

    def dmas(self) -> list[dict[str, Any]]:
        """Per DMA source line: bytes, descriptors and run length (summed over executions;
        the run is the shortest seen), with `short` when runs are under 512 bytes.  `count`:
        the executions (trace records), however many pieces each was cut into."""
        by: dict[tuple, dict[str, Any]] = {}
        runs: dict[tuple, set[int]] = defaultdict(set)
        for s in self.slots:
            c = s.cost
            if not c.descriptors:
                continue
            key = (s.op, _where(s), s.name)
            e = by.get(key)
            if e is None:
                e = by[key] = {"op": s.op, "where": _where(s), "name": s.name, "count": 0,
                               "bytes": 0, "descriptors": 0, "run_bytes": c.run_bytes,
                               "time_ns": 0.0}
            runs[key].add(s.record)
            e["count"] = len(runs[key])
            e["bytes"] += c.bytes
            e["descriptors"] += c.descriptors
            e["run_bytes"] = min(e["run_bytes"], c.run_bytes)
            e["time_ns"] += s.end - s.start
        out = sorted(by.values(), key=lambda e: -e["time_ns"])
        for e in out:
            e["short"] = e["run_bytes"] < SHORT_RUN
        return out

    def rates(self) -> dict[str, Any]:
        """Achieved FLOP/s and bytes/s over the whole run, against the target's peaks (MFU: the
        matmul work over the peak of the cores the run used; MBU: the bytes through HBM or GM over
        the peak bandwidth).  Estimates, as everything else here."""
        from .costs import table
        f = table(self.target)
        flops = sum(s.cost.flops for s in self.slots)
        moved = sum(s.cost.shared_bytes for s in self.slots)
        secs = self.total_ns * 1e-9
        if "tensor_clock" in f:  # NKI: one NeuronCore; the bf16 rate of a 128 x 128 array
            peak_flops = 2 * 128 * 128 * f["tensor_clock"].value * 1e9
            peak_bytes = f["dma_engines"].value * f["dma_engine_bandwidth"].value * 1e9
            bytes_peak_of = "the DMA engines' aggregate"
        else:  # Ascend: every cube core the launch used
            cores = len({t.split(": ")[0] for t in self.busy_ns if ": " in t
                         and t.endswith(": M") and self.busy_ns[t] > 0}) or 1
            peak_flops = 2 * f["cube_fp16_macs"].value * f["clock"].value * 1e9 * cores
            peak_bytes = f["gm_bandwidth"].value * 1e9
            bytes_peak_of = "the chip's GM"
        flop_rate = flops / secs if secs else 0.0
        byte_rate = moved / secs if secs else 0.0
        return {"flops": flops, "flop_per_s": flop_rate, "peak_flop_per_s": peak_flops,
                "mfu": flop_rate / peak_flops if peak_flops else 0.0,
                "bytes": moved, "bytes_per_s": byte_rate, "peak_bytes_per_s": peak_bytes,
                "mbu": byte_rate / peak_bytes if peak_bytes else 0.0,
                "bytes_peak_of": bytes_peak_of}

    def instructions(self) -> list[dict[str, Any]]:
        """Every scheduled hardware instruction, in program order: op, name, source line, track,
        start and end (ns), and for a DMA its bytes and descriptors."""
        out = []
        for s in self.slots:
            e: dict[str, Any] = {"op": s.op, "name": s.name, "where": _where(s),
                                 "track": s.track, "start_ns": s.start, "end_ns": s.end}
            if s.piece[1] > 1:
                e["piece"] = list(s.piece)
            if s.cost.descriptors:
                e["bytes"] = s.cost.bytes
                e["descriptors"] = s.cost.descriptors
            if s.cost.flops:
                e["flops"] = s.cost.flops
            out.append(e)
        return out

    def path_summary(self) -> dict[str, Any]:
        """The critical path: its instructions, and per track the time it adds to the path
        (the part of each instruction after the previous one on the path ended: they sum to
        the path's length, which is the total)."""
        per: dict[str, float] = defaultdict(float)
        prev = 0.0
        briefs = []
        for s in self.critical_path:
            per[s.track] += max(0.0, s.end - max(s.start, prev))
            brief = _slot_brief(s)
            if s.start < prev:  # a DMA whose transfer waited for the previous one's engines
                brief += f" (its {_us(prev - s.start)} latency under the step before)"
            briefs.append(brief)
            prev = max(prev, s.end)
        return {"instructions": len(self.critical_path),
                "time_ns": sum(per.values()),
                "per_track_ns": dict(sorted(per.items(), key=lambda kv: -kv[1])),
                "first": briefs[:5], "last": briefs[-5:]}

    # -- output -------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "estimate": True,
            "target": self.target,
            "kernel": self.kernel,
            "total_ns": self.total_ns,
            "instructions": len(self.slots),
            "engines": {t: {"busy_ns": b, "utilisation": self.utilisation(t)}
                        for t, b in self.busy_ns.items()},
            "critical_path": self.path_summary(),
            "top": self.top(),
            "dmas": self.dmas(),
            "rates": self.rates(),
            "scheduled": self.instructions(),
            "notes": self.notes,
            "cost_model": as_json(self.target),
        }

    def text(self) -> str:
        lines = [f"estimated time on {self.target} (cost model estimate, not a measurement): "
                 f"{_us(self.total_ns)} for {len(self.slots)} instructions"]
        lines.append("")
        lines.append("estimated busy time per engine:")
        width = max([8, *map(len, self.busy_ns)])
        for t, b in self.busy_ns.items():
            lines.append(f"  {t:<{width}} {_us(b):>14}  {100 * self.utilisation(t):5.1f}%")
        r = self.rates()
        lines.append("")
        lines.append(f"estimated rates: {r['flop_per_s'] / 1e12:.2f} TFLOP/s of matmul "
                     f"({100 * r['mfu']:.1f}% of the {r['peak_flop_per_s'] / 1e12:.1f} TFLOP/s "
                     f"peak, MFU), {r['bytes_per_s'] / 1e9:.1f} GB/s through "
                     f"{'HBM' if 'DMA' in r['bytes_peak_of'] else 'GM'} "
                     f"({100 * r['mbu']:.1f}% of {r['bytes_peak_of']} "
                     f"{r['peak_bytes_per_s'] / 1e9:.0f} GB/s, MBU)")
        p = self.path_summary()
        lines.append("")
        lines.append(f"estimated critical path: {p['instructions']} instructions, "
                     f"{_us(p['time_ns'])} ("
                     + ", ".join(f"{t} {_us(v)}" for t, v in p["per_track_ns"].items()) + ")")
        for s in p["first"]:
            lines.append(f"  {s}")
        if p["instructions"] > 10:
            lines.append("  ...")
            for s in p["last"]:
                lines.append(f"  {s}")
        elif p["instructions"] > 5:
            for s in p["last"][5 - (p["instructions"] - 5):]:
                lines.append(f"  {s}")
        lines.append("")
        lines.append("estimated costliest instructions (summed over executions):")
        for r in self.top():
            label = f" {r['name']!r}" if r["name"] else ""
            cut = f" ({r['pieces']} pieces)" if r["pieces"] != r["count"] else ""
            lines.append(f"  {_us(r['time_ns']):>14}  {r['count']:>6}x  {r['op']}{label}  "
                         f"{r['where']}{cut}  [{', '.join(r['tracks'])}]")
        dmas = self.dmas()
        if dmas:
            lines.append("")
            lines.append("DMA (per source line; bytes and descriptors summed, shortest run):")
            for d in dmas:
                warn = "  warning: runs under 512 B lose DMA efficiency" if d["short"] else ""
                lines.append(f"  {d['where']}  {d['count']}x  {d['bytes']} B in "
                             f"{d['descriptors']} descriptors, run {d['run_bytes']} B{warn}")
        if 0 < len(self.slots) <= GANTT_MAX:
            lines.append("")
            lines.extend(self.timeline())
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)

    def _repr_svg_(self) -> str:
        """What a notebook shows of the profile: its estimated timeline (`--svg`)."""
        from .svg import render
        return render(self)

    def _repr_html_(self) -> str:
        """The timeline over the report `apdsl profile` prints."""
        from html import escape
        return (f"<div class='apdsl-profile'>{self._repr_svg_()}<pre>{escape(self.text())}"
                "</pre></div>")

    def __repr__(self) -> str:
        return self.text()

    def timeline(self, width: int = 64) -> list[str]:
        """A text Gantt chart: a row per busy track, `#` where an instruction runs."""
        total = self.total_ns or 1.0
        rows: dict[str, list[str]] = {t: [" "] * width for t, b in self.busy_ns.items() if b > 0}
        for s in self.slots:
            row = rows.setdefault(s.track, [" "] * width)
            a = min(width - 1, int(s.start / total * width))
            b = max(a + 1, min(width, -int(-s.end / total * width // 1)))
            for i in range(a, b):
                row[i] = "#"
        out = [f"estimated timeline (0 to {_us(self.total_ns)}, a column is "
               f"{_us(total / width)}):"]
        width = max([8, *map(len, rows)])
        out.extend(f"  {t:<{width}} |{''.join(r)}|" for t, r in rows.items())
        return out


def _slot_brief(s: Slot) -> str:
    label = f" {s.name!r}" if s.name else ""
    return (f"{s.op}{label} {_where(s)} on {s.track}: {s.start / 1000:.3f}-"
            f"{s.end / 1000:.3f} us")
