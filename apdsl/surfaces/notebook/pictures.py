"""A view's picture in a notebook: `Tensor._repr_svg_` and `_repr_html_` ask the drawing
installed here (the tensor layer defines the interface, `apdsl.tensor.machine.Drawing`, and
never imports the surfaces).  `apdsl/__init__.py` imports this module, so a view shows its
picture in any notebook that imports apdsl; importing it is cheap (the pictures load on first
use)."""

from __future__ import annotations

from html import escape
from typing import Any

from ...errors import ApdslError
from ...tensor.machine import Machine


class Pictures:
    """The access picture of `apdsl show` (`apdsl.surfaces.picture`), as SVG and as HTML with
    the view's facts."""

    def svg(self, t: Any) -> str | None:
        from ..picture import Picture
        from ..picture_svg import render
        try:
            return render([Picture.of(t, t.name)])
        except ApdslError:  # a view apdsl show cannot draw either: the text repr remains
            return None

    def html(self, t: Any) -> str | None:
        picture = self.svg(t)
        if picture is None:
            return None
        from ..picture import pattern_text
        strides = "(" + ", ".join("nested" if s is None else str(s) for s in t.strides) + \
            ("," if len(t.strides) == 1 else "") + ")"
        rows = [("shape", str(tuple(t.shape))), ("dtype", str(t.dtype)), ("buffer", t.buffer),
                ("format", t.format), ("strides", strides), ("offset", str(t.offset)),
                ("pattern", pattern_text(t))]
        cells = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{k}</th>"
                        f"<td style='text-align:left'><code>{escape(v)}</code></td></tr>"
                        for k, v in rows)
        return (f"<div class='apdsl-view'><table><caption style='text-align:left'><b>"
                f"{escape(t.name)}</b></caption>{cells}</table>{picture}</div>")


def install() -> None:
    """Make the access picture what a notebook shows of every view."""
    Machine.drawing = Pictures()


install()
