"""`Picture`s drawn as one standalone SVG 1.1 document (`apdsl show --svg`).

Each picture has two panels over the same storage grid: *access order* (touched cells coloured
along a gradient from first to last access and labelled with the access number when the cells
are large enough) and *access count* (how many accesses touch each cell, so a broadcast or an
overlapping `.ap` shows counts above 1).  Fractal borders, axis labels, a legend and the view's
facts complete it.  Several pictures (`--steps`) are stacked, each under its title.

Cells carry `class="cell touched"` / `class="cell"` and `data-row`, `data-col`, `data-order`,
`data-count` attributes, so tools (and the tests) can read the picture back.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from .picture import Cells, Picture
from .picture_text import dark, gradient, heading, hex_colour

__all__ = ["render", "MAX_ROWS", "MAX_COLS"]

MAX_ROWS = 64  # SVG cells are small: summarise later than the terminal does
MAX_COLS = 64
MARGIN = 16
PANEL_GAP = 40
LABEL_W = 40  # room for row labels left of a grid
FONT = "font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\""
UNTOUCHED_FILL = "#f2f2f2"
UNTOUCHED_STROKE = "#d0d0d0"
ONCE_FILL = "#9ecae1"  # count panel: touched once; more than once runs orange to red


def _count_colour(count: int, most: int) -> str:
    if count <= 1:
        return ONCE_FILL
    x = (count - 2) / max(most - 2, 1)
    a, b = (0xfd, 0xae, 0x6b), (0xa6, 0x36, 0x03)
    return hex_colour(tuple(round(a[k] + (b[k] - a[k]) * x) for k in range(3)))  # type: ignore


def _cell_size(rows: int, cols: int) -> int:
    return max(6, min(28, 480 // max(cols, 1), 640 // max(rows, 1)))


def _text(x: float, y: float, s: str, size: float = 11, anchor: str = "start",
          fill: str = "#222", weight: str | None = None) -> str:
    w = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size:g}" text-anchor="{anchor}" '
            f'fill="{fill}"{w}>{escape(s)}</text>')


def _label_fits(text: str, cs: int) -> float:
    """Font size for `text` inside a cell of `cs` pixels, 0 when it does not fit."""
    size = min(cs * 0.5, (cs - 2) / (0.62 * max(len(text), 1)))
    return size if size >= 5.5 else 0


class _Panel:
    """One grid panel: order or count."""

    def __init__(self, pic: Picture, cells: Cells, kind: str, cs: int) -> None:
        self.pic, self.cells, self.kind, self.cs = pic, cells, kind, cs
        rows, cols = cells.shape
        self.width = LABEL_W + cols * cs
        self.height = 18 + rows * cs

    def draw(self, x0: float, y0: float) -> list[str]:
        pic, cells, cs = self.pic, self.cells, self.cs
        rows, cols = cells.shape
        gx, gy = x0 + LABEL_W, y0 + 18
        out = [f'<g class="panel {self.kind}">']
        title = "access order" if self.kind == "order" else "access count"
        out.append(_text(gx, y0 + 4, title, 11, weight="bold"))
        n = max(pic.drawn - 1, 1)
        most = int(cells.count.max()) if cells.count.size else 0
        step_c = max(1, 48 // cs)
        step_r = max(1, 16 // cs)
        if cells.fractal:
            step_c = cells.fractal[1] if cells.fractal[1] * cs >= 24 else step_c
            step_r = cells.fractal[0] if cells.fractal[0] * cs >= 14 else step_r
        for c in range(0, cols, step_c):
            out.append(_text(gx + c * cs + cs / 2, gy - 3, str(int(cells.col_start[c])), 9,
                             "middle", "#666"))
        for r in range(0, rows, step_r):
            out.append(_text(gx - 4, gy + r * cs + cs * 0.5 + 3, str(int(cells.row_start[r])),
                             9, "end", "#666"))
        # untouched cells share their paint through the group, which keeps large SVGs small
        out.append(f'<g class="untouched" fill="{UNTOUCHED_FILL}" stroke="{UNTOUCHED_STROKE}" '
                   'stroke-width="0.5">')
        for r, c in zip(*(cells.order < 0).nonzero()):
            out.append(f'<rect class="cell" x="{gx + c * cs:g}" y="{gy + r * cs:g}" '
                       f'width="{cs}" height="{cs}"/>')
        out.append("</g>")
        for r, c in zip(*(cells.order >= 0).nonzero()):
            out.extend(self._cell(gx + c * cs, gy + r * cs, int(r), int(c), n, most))
        if cells.fractal:
            fr, fc = cells.fractal
            for r in range(fr, rows, fr):
                y = gy + r * cs
                out.append(f'<line class="fractal" x1="{gx:g}" y1="{y:g}" '
                           f'x2="{gx + cols * cs:g}" y2="{y:g}" stroke="#111" '
                           'stroke-width="2"/>')
            for c in range(fc, cols, fc):
                x = gx + c * cs
                out.append(f'<line class="fractal" x1="{x:g}" y1="{gy:g}" x2="{x:g}" '
                           f'y2="{gy + rows * cs:g}" stroke="#111" stroke-width="2"/>')
        out.append(f'<rect x="{gx:g}" y="{gy:g}" width="{cols * cs}" height="{rows * cs}" '
                   'fill="none" stroke="#555" stroke-width="1"/>')
        out.append("</g>")
        return out

    def _cell(self, x: float, y: float, r: int, c: int, n: int, most: int) -> list[str]:
        cells, cs = self.cells, self.cs
        k, count = int(cells.order[r, c]), int(cells.count[r, c])
        data = (f'data-row="{int(cells.row_start[r])}" data-col="{int(cells.col_start[c])}" '
                f'data-order="{k}" data-count="{count}"')
        if self.kind == "order":
            rgb = gradient(k / n)
            fill, label = hex_colour(rgb), str(k)
            ink = "#fff" if dark(rgb) else "#000"
        else:
            fill, label = _count_colour(count, most), str(count)
            ink = "#fff" if count > 1 and count >= (most + 2) / 2 else "#000"
        partial = bool(cells.partial[r, c])
        cls = "cell touched partial" if partial else "cell touched"
        dash = ' stroke-dasharray="2,2"' if partial else ""
        rect = (f'<rect class="{cls}" x="{x:g}" y="{y:g}" width="{cs}" height="{cs}" '
                f'fill="{fill}" stroke="#fff" stroke-width="0.5"{dash} {data}')
        if self.kind == "order":  # a tooltip, once per cell
            rect += f'><title>{escape(self._tip(r, c, k, count, partial))}</title></rect>'
        else:
            rect += "/>"
        out = [rect]
        size = _label_fits(label, cs)
        if size:
            out.append(_text(x + cs / 2, y + cs / 2 + size * 0.35, label, size, "middle", ink))
        return out

    def _tip(self, r: int, c: int, k: int, count: int, partial: bool) -> str:
        cells = self.cells
        where = f"row {int(cells.row_start[r])}, column {int(cells.col_start[c])}"
        if cells.summarised:
            where = f"block at {where} ({cells.row_step} x {cells.col_step})"
            return (f"{where}: earliest access {k}, elements touched up to {count} times"
                    + (", partly touched" if partial else ""))
        return f"{where}: access {k}" + (f", touched {count} times" if count > 1 else "")


def _legend(pic: Picture, x0: float, y0: float, index: int) -> tuple[list[str], float]:
    out = ['<g class="legend">']
    gid = f"order-gradient-{index}"
    stops = "".join(f'<stop offset="{i / 8:g}" stop-color="{hex_colour(gradient(i / 8))}"/>'
                    for i in range(9))
    out.append(f'<defs><linearGradient id="{gid}" x1="0" y1="0" x2="1" y2="0">{stops}'
               "</linearGradient></defs>")
    out.append(f'<rect x="{x0:g}" y="{y0:g}" width="200" height="12" fill="url(#{gid})" '
               'stroke="#555" stroke-width="0.5"/>')
    out.append(_text(x0, y0 + 24, "first (0)", 10))
    out.append(_text(x0 + 200, y0 + 24, f"last ({max(pic.drawn - 1, 0)})", 10, "end"))
    x = x0 + 220
    out.append(f'<rect x="{x:g}" y="{y0:g}" width="12" height="12" fill="{UNTOUCHED_FILL}" '
               f'stroke="{UNTOUCHED_STROKE}"/>')
    out.append(_text(x + 16, y0 + 10, "untouched", 10))
    x += 90
    most = pic.max_count
    swatches = [(ONCE_FILL, "touched once")]
    if most > 1:
        swatches.append((_count_colour(most, most), f"touched {most} times"))
    for fill, label in swatches:
        out.append(f'<rect x="{x:g}" y="{y0:g}" width="12" height="12" fill="{fill}"/>')
        out.append(_text(x + 16, y0 + 10, label, 10))
        x += 16 + 7 * len(label) + 14
    out.append("</g>")
    return out, 30


def _facts(pic: Picture, cells: Cells) -> list[str]:
    lines = [f"view     {pic.view}", f"pattern  {pic.pattern}", f"offset   {pic.offset}",
             f"touched  {pic.accesses} accesses, {pic.distinct} distinct storage elements of "
             f"{pic.elements}" + (f" (some touched {pic.max_count} times)"
                                            if pic.max_count > 1 else "")]
    if cells.summarised:
        lines.append(f"summary  each cell is a block of {cells.row_step} x {cells.col_step} "
                     "elements, coloured by its earliest access; dashed = partly touched")
    if pic.geometry.fractal is not None:
        r0, c0 = pic.geometry.fractal
        lines.append(f"fractals {r0} x {c0}, borders drawn as thick lines")
    lines += [f"note     {n}" for n in pic.notes]
    return lines


def _picture(pic: Picture, y0: float, max_rows: int, max_cols: int,
             index: int) -> tuple[list[str], float, float]:
    """The SVG elements of one picture from `y0`; returns them, its width and height."""
    cells = pic.cells(max_rows, max_cols)
    rows, cols = cells.shape
    cs = _cell_size(rows, cols)
    order, count = _Panel(pic, cells, "order", cs), _Panel(pic, cells, "count", cs)
    out = ['<g class="picture">']
    y = y0
    if pic.title:
        out.append(_text(MARGIN, y + 14, pic.title, 14, weight="bold"))
        y += 22
    for line in heading(pic):
        out.append(_text(MARGIN, y + 12, line, 11, fill="#444"))
        y += 16
    y += 10
    side_by_side = order.width + PANEL_GAP + count.width <= 1100
    out += order.draw(MARGIN, y)
    if side_by_side:
        out += count.draw(MARGIN + order.width + PANEL_GAP, y)
        width = MARGIN + order.width + PANEL_GAP + count.width
        y += order.height
    else:
        y += order.height + 16
        out += count.draw(MARGIN, y)
        width = MARGIN + count.width
        y += count.height
    y += 16
    legend, h = _legend(pic, MARGIN + LABEL_W, y, index)
    out += legend
    y += h + 8
    facts = _facts(pic, cells)
    out.append(f'<g class="facts" {FONT}>')
    for line in facts:
        out.append(_text(MARGIN, y + 11, line, 11))
        y += 16
        width = max(width, MARGIN + 7 * len(line))
    out.append("</g></g>")
    return out, width + MARGIN, y - y0 + 12


def render(pictures: list[Picture], *, max_rows: int = MAX_ROWS,
           max_cols: int = MAX_COLS) -> str:
    """A standalone SVG document of the pictures, stacked top to bottom."""
    body: list[str] = []
    y, width = float(MARGIN), 200.0
    for i, pic in enumerate(pictures):
        if i:
            body.append(f'<line x1="{MARGIN}" y1="{y - 12:g}" x2="{MARGIN + 400}" '
                        f'y2="{y - 12:g}" stroke="#bbb" stroke-dasharray="4,3"/>')
        elements, w, h = _picture(pic, y, max_rows, max_cols, i)
        body += elements
        width = max(width, w)
        y += h + 24
    height = y
    title = pictures[0].title if pictures else "apdsl show"
    head = ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
            '<svg xmlns="http://www.w3.org/2000/svg" version="1.1" '
            f'width="{width:g}" height="{height:g}" viewBox="0 0 {width:g} {height:g}" '
            f'{FONT}>\n'
            f"<title>{escape(title or 'apdsl show')}</title>\n"
            f'<rect width="100%" height="100%" fill="#ffffff"/>\n')
    return head + "\n".join(body) + "\n</svg>\n"

