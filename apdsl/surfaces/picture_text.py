"""A `Picture` drawn for the terminal: plain text, or the same text coloured through rich.

Every touched cell shows a symbol for *when* it is first accessed (0-9, a-z, A-Z from the first
access to the last; when a view has more accesses than symbols, each symbol stands for a run of
consecutive accesses), so the plain text alone shows the access order.  With colour, the cell's
background runs along a gradient from first to last as well.  Untouched cells are `.`; in a
summarised grid a block only partly touched is followed by `~`.  Fractal borders are `|` and
`-`.

The picture is built as rows of styled segments, then joined as plain text (`plain`) or turned
into a rich `Text` (`rich_text`); nothing here writes to a stream.
"""

from __future__ import annotations

from typing import Any

from .picture import Cells, Picture

__all__ = ["SYMBOLS", "MAX_ROWS", "MAX_COLS", "rows", "plain", "rich_text", "render",
           "heading", "symbol_bucket", "gradient"]

SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
MAX_ROWS = 32  # beyond this many storage rows (or columns) the grid is summarised in blocks
MAX_COLS = 64
WIDE_CELL_COLS = 32  # grids this narrow get two characters a cell (closer to square cells)
UNTOUCHED = "."
PARTIAL = "~"

# viridis at five stops: dark blue (first access) to yellow (last)
_STOPS = ((0x44, 0x01, 0x54), (0x3b, 0x52, 0x8b), (0x21, 0x91, 0x8c), (0x5e, 0xc9, 0x62),
          (0xfd, 0xe7, 0x25))

Segment = tuple[str, Any]
Row = list[Segment]


def gradient(x: float) -> tuple[int, int, int]:
    """The colour at `x` in [0, 1] from the first access (0) to the last (1)."""
    x = min(max(x, 0.0), 1.0) * (len(_STOPS) - 1)
    i = min(int(x), len(_STOPS) - 2)
    f = x - i
    a, b = _STOPS[i], _STOPS[i + 1]
    return tuple(round(a[k] + (b[k] - a[k]) * f) for k in range(3))  # type: ignore[return-value]


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{v:02x}" for v in rgb)


def dark(rgb: tuple[int, int, int]) -> bool:
    r, g, b = rgb
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


def symbol_bucket(accesses: int) -> int:
    """Consecutive accesses per symbol: 1 when every access gets its own symbol."""
    return max(1, -(-accesses // len(SYMBOLS)))


def _legend(pic: Picture, cells: Cells) -> list[Row]:
    n = max(pic.drawn, 1)
    per = symbol_bucket(n)
    last = SYMBOLS[(n - 1) // per]
    if per == 1:
        order = (f"order: 0 = first access, then 1, 2, ... 9, a-z, A-Z; {last} = access "
                 f"{n - 1} (the last)")
    else:
        start = (n - 1) // per * per
        tail = f"{start}-{n - 1}" if start < n - 1 else f"{start}"
        order = (f"order: each symbol covers {per} consecutive accesses: 0 = 0-{per - 1}, "
                 f"1 = {per}-{2 * per - 1}, ..., {last} = {tail} (the last)")
    out = [[(order, "legend")]]
    marks = f"{UNTOUCHED} = untouched"
    if cells.summarised:
        out.append([(f"each cell is a block of {cells.row_step} x {cells.col_step} storage "
                     "elements, shown with its earliest access", "legend")])
        marks = f"x{PARTIAL} = block partly touched; " + marks
    if cells.fractal is not None or (pic.geometry.fractal is not None and not cells.summarised):
        r0, c0 = pic.geometry.fractal or (0, 0)
        marks += f"; | and - are fractal borders ({r0} x {c0})"
    out.append([(marks, "legend")])
    return out


def _facts(pic: Picture) -> list[Row]:
    touched = (f"{pic.accesses} access{'es' if pic.accesses != 1 else ''}, "
               f"{pic.distinct} distinct storage element{'s' if pic.distinct != 1 else ''} "
               f"touched of {pic.elements}")
    if pic.drawn != pic.accesses:
        touched += f" ({pic.drawn} accesses drawn)"
    if pic.max_count > 1:
        touched += f"; some touched {pic.max_count} times"
    out = [[("view     ", "key"), (pic.view, None)],
           [("pattern  ", "key"), (pic.pattern, None)],
           [("offset   ", "key"), (pic.offset, None)],
           [("touched  ", "key"), (touched, None)]]
    out += [[("note     ", "note"), (n, None)] for n in pic.notes]
    return out


def _cell_segment(cells: Cells, r: int, c: int, width: int, n: int, per: int) -> Segment:
    k = int(cells.order[r, c])
    if k < 0:
        return (UNTOUCHED.ljust(width), "untouched")
    text = SYMBOLS[min(k // per, len(SYMBOLS) - 1)]
    if width > 1:
        text += PARTIAL if cells.partial[r, c] else " "
    return (text, ("cell", k / max(n - 1, 1)))


def heading(pic: Picture) -> list[str]:
    """The lines saying what the grid is: the storage and how it is laid out."""
    geo = pic.geometry
    rows, cols = geo.full or (geo.rows, geo.cols)
    if geo.fractal is None:
        return [f"storage {pic.storage} ({rows} {geo.row_axis}s x {cols} "
                f"{geo.col_axis}s)"]
    return [f"storage {pic.storage}",
            f"drawn as {rows} rows x {cols} columns: each storage band's "
            f"{geo.per_band} fractal{'s' if geo.per_band != 1 else ''} side by side"]


def _header(pic: Picture) -> list[Row]:
    out: list[Row] = [[(pic.title, "title")]] if pic.title else []
    return out + [[(line, "heading")] for line in heading(pic)]


def rows(pic: Picture, *, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> list[Row]:
    """The picture as rows of (text, style) segments.  Styles: a name ("title", "legend", ...)
    or ("cell", x) with x the position of the cell's access between first (0) and last (1)."""
    cells = pic.cells(max_rows, max_cols)
    if cells.summarised and cells.shape[1] > WIDE_CELL_COLS:
        # summarised cells need two characters, for the partly-touched mark
        cells = pic.cells(max_rows, WIDE_CELL_COLS)
    n_rows, n_cols = cells.shape
    width = 2 if n_cols <= WIDE_CELL_COLS else 1
    n = max(pic.drawn, 1)
    per = symbol_bucket(n)
    fr, fc = cells.fractal or (0, 0)
    vborder = [fc > 0 and c > 0 and c % fc == 0 for c in range(n_cols)]
    hborder = [fr > 0 and r > 0 and r % fr == 0 for r in range(n_rows)]
    label_w = max(len(str(int(cells.row_start[-1]))), 1)

    # x position of each column (borders take a character)
    xs, x = [], 0
    for c in range(n_cols):
        if vborder[c]:
            x += 1
        xs.append(x)
        x += width
    grid_w = x

    # column labels: one every 8 characters, or at each fractal border when they fit
    header = [" "] * (grid_w + 8)
    step = fc if fc and fc * width >= 4 else max(1, 8 // width)
    for c in range(0, n_cols, step):
        text = str(int(cells.col_start[c]))
        pos = xs[c]
        if all(ch == " " for ch in header[max(pos - 1, 0):pos + len(text) + 1]):
            header[pos:pos + len(text)] = text
    out = _header(pic)
    out.append([(" " * (label_w + 1) + "".join(header).rstrip(), "axis")])
    for r in range(n_rows):
        if hborder[r]:
            line = ["-"] * grid_w
            for c in range(n_cols):
                if vborder[c]:
                    line[xs[c] - 1] = "+"
            out.append([(" " * (label_w + 1), None), ("".join(line), "border")])
        row: Row = [(str(int(cells.row_start[r])).rjust(label_w) + " ", "axis")]
        for c in range(n_cols):
            if vborder[c]:
                row.append(("|", "border"))
            row.append(_cell_segment(cells, r, c, width, n, per))
        out.append(row)
    return out + _legend(pic, cells) + _facts(pic)


def plain(row_list: list[Row]) -> str:
    """The rows as plain text (no trailing spaces), without a final newline."""
    return "\n".join("".join(text for text, _ in row).rstrip() for row in row_list)


_STYLES = {"title": "bold", "heading": "bold", "axis": "dim", "border": "bright_black",
           "untouched": "dim", "legend": "dim", "key": "bold", "note": "bold yellow"}


def _style(style: Any) -> str:
    if isinstance(style, tuple) and style[0] == "cell":
        rgb = gradient(float(style[1]))
        fg = "white" if dark(rgb) else "black"
        return f"{fg} on {hex_colour(rgb)}"
    return _STYLES.get(style, "") if isinstance(style, str) else ""


def rich_text(row_list: list[Row]) -> Any:
    """The rows as a rich `Text` with the access-order gradient as cell backgrounds."""
    from rich.text import Text
    text = Text(no_wrap=True, overflow="ignore")
    for i, row in enumerate(row_list):
        if i:
            text.append("\n")
        for segment, style in row:
            text.append(segment, style=_style(style) or None)
    return text


def render(pic: Picture, *, color: bool, max_rows: int = MAX_ROWS,
           max_cols: int = MAX_COLS) -> Any:
    """Plain text (`color=False`) or a rich renderable (`color=True`)."""
    built = rows(pic, max_rows=max_rows, max_cols=max_cols)
    return rich_text(built) if color else plain(built)
