"""The profile's timeline as an SVG picture (`apdsl profile --svg OUT.svg`): a row per busy
engine, DMA queue or pipe, a bar per instruction coloured by its op (hover for its source
line and estimated time), a time axis, and the word "estimate" in the title.  Plain SVG 1.1,
no script, so it shows in a browser, in GitHub's README view and in a document."""

from __future__ import annotations

from html import escape
from typing import Any, Protocol


class Timeline(Protocol):
    """What the picture reads of a profile (`ProfileResult`, which draws itself with it in a
    notebook: named here, not imported, so the two modules do not import each other)."""

    target: str
    kernel: str | None
    total_ns: float
    busy_ns: dict[str, float]
    slots: Any

_ROW, _LABEL, _WIDTH, _TOP = 22, 84, 820, 34
# a colour per op, in order of first appearance (cycled): distinguishable on white
_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b",
            "#9d755d", "#bab0ac", "#ff9da6")


def _ticks(total_ns: float) -> list[float]:
    """About five round tick times (ns) from 0 to the total."""
    if total_ns <= 0:
        return [0.0]
    step = 10 ** len(str(int(total_ns / 5))) / 10 if total_ns >= 5 else 1.0
    for m in (1, 2, 5, 10):
        if total_ns / (step * m) <= 6:
            step *= m
            break
    n = int(total_ns // step)
    return [i * step for i in range(n + 1)]


def render(p: Timeline) -> str:
    """The SVG document of a profile's estimated timeline."""
    tracks = [t for t in p.busy_ns if p.busy_ns[t] > 0]
    tracks += [t for t in dict.fromkeys(s.track for s in p.slots) if t not in tracks]
    total = p.total_ns or 1.0
    scale = _WIDTH / total
    height = _TOP + _ROW * len(tracks) + 40
    colour: dict[str, str] = {}
    for s in p.slots:
        colour.setdefault(s.op, _PALETTE[len(colour) % len(_PALETTE)])
    row = {t: i for i, t in enumerate(tracks)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LABEL + _WIDTH + 20}" '
           f'height="{height}" font-family="monospace" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="8" y="18">{escape(p.kernel or "program")} on {escape(p.target)}: '
           f'{total / 1000:.3f} us (cost model estimate, not a measurement)</text>']
    for t, i in row.items():
        y = _TOP + i * _ROW
        out.append(f'<text x="8" y="{y + 15}">{escape(t)}</text>')
        out.append(f'<rect x="{_LABEL}" y="{y}" width="{_WIDTH}" height="{_ROW - 4}" '
                   'fill="#f4f4f4"/>')
    for s in p.slots:
        if s.track not in row:
            continue
        y = _TOP + row[s.track] * _ROW
        x, w = _LABEL + s.start * scale, max((s.end - s.start) * scale, 0.5)
        loc = f"{s.location[0]}:{s.location[1]}" if s.location else "?"
        tip = f"{s.op} {loc}: {s.start / 1000:.3f}-{s.end / 1000:.3f} us"
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{_ROW - 4}" '
                   f'fill="{colour[s.op]}" stroke="white" stroke-width="0.5"><title>{escape(tip)}</title></rect>')
    axis = _TOP + _ROW * len(tracks) + 4
    out.append(f'<line x1="{_LABEL}" y1="{axis}" x2="{_LABEL + _WIDTH}" y2="{axis}" '
               'stroke="black"/>')
    for t in _ticks(total):
        x = _LABEL + t * scale
        out.append(f'<line x1="{x:.2f}" y1="{axis}" x2="{x:.2f}" y2="{axis + 4}" '
                   'stroke="black"/>')
        out.append(f'<text x="{x:.2f}" y="{axis + 16}" text-anchor="middle">'
                   f'{t / 1000:g} us</text>')
    x = _LABEL
    for op, c in colour.items():  # the legend
        out.append(f'<rect x="{x}" y="{axis + 22}" width="10" height="10" fill="{c}"/>')
        out.append(f'<text x="{x + 14}" y="{axis + 31}">{escape(op)}</text>')
        x += 14 + 8 * len(op) + 16
    out.append("</svg>")
    return "\n".join(out) + "\n"
