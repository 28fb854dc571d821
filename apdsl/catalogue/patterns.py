"""APK7xx: rearrange patterns, raised by `apdsl.tensor.rearrange`."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK701", "pattern has no '->'", """
A rearrange pattern has an input side and an output side separated by `->`, as in einops:
`"b (h w) -> b w h"`. Without the arrow apdsl cannot tell which axes are read and which written.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) b w h", h=4)
"""),
    entry("APK702", "pattern has more than one '->'", """
A pattern describes one rearrangement: exactly one `->`. To chain two rearrangements, call
`rearrange` twice.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b h w -> b w h", h=4)
"""),
    entry("APK703", "unbalanced parentheses", """
Every `(` that opens a group must be closed by a `)` on the same side of the `->`, and every `)`
must close a group. The error points at the parenthesis left without a partner.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w -> b w h", h=4)
"""),
    entry("APK704", "nested groups", """
A group merges or splits one dimension into a flat list of axes; groups cannot contain groups.
Write `(a b c)` instead of `(a (b c))`. In the tuple form an entry of a group is an axis name,
never another tuple.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h (w)) -> b w h", h=4)
"""),
    entry("APK705", "invalid character in a pattern", """
A pattern holds axis names, `...`, `1`, parentheses, spaces and a single `->`. Any other
character (a comma, a `*`, a stray `-`) is an error at that character.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b, (h w) -> b w h", h=4)
"""),
    entry("APK706", "invalid axis name", """
An axis name is an identifier: a letter or `_` followed by letters, digits or `_`. As in einops,
names starting or ending with `_` are reserved, and an ellipsis is exactly `...` written apart
from other axes (`a...` is neither a name nor an ellipsis).
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h 2w) -> b 2w h", h=4)
"""),
    entry("APK707", "numbered axis other than 1", """
`1` in a pattern is an anonymous size-1 axis (on the input side it drops a size-1 dimension, on
the output side it adds one). Any other number would need a size that the name does not carry, so
rearrange rejects it: name the axis and pass its size instead.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (4 w) -> b w", w=6)
"""),
    entry("APK708", "axis repeated on one side", """
Each axis name stands for one elementary axis, so it appears at most once per side (rearrange
neither takes diagonals nor copies). Rename the second occurrence.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h h) -> b h", h=4)
"""),
    entry("APK709", "'...' twice on one side", """
The ellipsis stands for all the dimensions the named entries do not match, so one side can use it
once at most.
""", """
t: f32[128, 4, 6] @ sbuf
u = t.rearrange("b ... ... -> b ...")
"""),
    entry("APK710", "'...' inside parentheses on the input side", """
On the input side `...` matches whole dimensions of the tensor, so it cannot be part of a group
that splits one dimension. Merging them is fine on the output side: `"b ... -> b (...)"`.
""", """
t: f32[128, 4, 6] @ sbuf
u = t.rearrange("b (...) -> b ...")
"""),
    entry("APK711", "axis on one side only", """
rearrange only moves elements, so both sides name the same axes (the einops rule). To drop a
size-1 dimension write `1` or `()` on the input side; to add one, write `1` or `()` on the output
side.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w c", h=4)
"""),
    entry("APK712", "'...' on one side only", """
An ellipsis on the input side stands for dimensions that must go somewhere on the output side,
and an ellipsis on the output side must come from the input side: use it on both or neither.
""", """
t: f32[128, 4, 6] @ sbuf
u = t.rearrange("b ... -> b")
"""),
    entry("APK713", "size given for an axis the pattern does not have", """
The keyword sizes (or the dict of the tuple form) give the sizes of axes named in the pattern.
A size for any other name is almost always a typo, so it is an error.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w h", hh=4)
"""),
    entry("APK714", "axis size is not a positive integer", """
An axis size is an integer of at least 1. To have a size inferred, leave the axis out of the
sizes rather than passing -1 or 0.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w h", h=-1, w=6)
"""),
    entry("APK715", "pattern and tensor have different numbers of dimensions", """
Each entry of the input side (a name, a group, `1` or `()`) matches one dimension of the tensor;
`...` matches any number of them. The error points at the input side and notes the shape.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b h w -> b w h")
"""),
    entry("APK716", "axis sizes cannot be inferred", """
A group on the input side splits one dimension; its size fixes at most one unknown axis. Give the
sizes of all the group's axes but one.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w h")
"""),
    entry("APK717", "dimension does not split evenly", """
When a group has an unknown axis, the dimension must be divisible by the product of the given
sizes; the error points at the group and notes the tensor's shape.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w h", h=5)
"""),
    entry("APK718", "dimension size does not match the pattern", """
When every axis of an input entry has a known size, their product must equal the dimension: a
named axis with a given size must match, a fully sized group must multiply to the dimension, and
`1` or `()` on the input side matches only a size-1 dimension.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange("b (h w) -> b w h", h=4, w=4)
"""),
    entry("APK719", "malformed pattern argument", """
A pattern is either an einops string or the NKI tuple form: two tuples whose entries are axis
names (strings), `'...'`, `1`, or tuples of those for groups, as in
`t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4})`. Any other kind of entry, or a
pattern that is neither a string nor a tuple, is an error.
""", """
t: f32[128, 24] @ sbuf
u = t.rearrange(('b', ('h', None)), ('b', 'h'), {'h': 4})
"""),
]
