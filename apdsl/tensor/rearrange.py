"""einops-style rearrange patterns: parse the string or NKI tuple form, then plan it over a shape.

A plan is integer bookkeeping only: each input dimension splits into elementary axes, the axes are
permuted, then consecutive axes merge into output dimensions.  The tensor model applies a plan as
views, so nothing here touches data.

Positions: `start`/`end` are 0-based character offsets into `Pattern.text`, end exclusive, so the
language can underline the exact characters inside the string literal.  Patterns built from the
tuple form have no source text to point into, so their positions are None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from difflib import get_close_matches
from functools import lru_cache
from math import prod
from numbers import Integral
from typing import Any, NoReturn

import numpy as np

from ..errors import PatternError
from ..records import record

ELLIPSIS = "..."
_TOKEN = re.compile(r"\s+|\(|\)|[^\s()]+")


@record
class Axis:
    """A named elementary axis, or the ellipsis, written at `text[start:end]`."""

    name: str
    start: int | None = None
    end: int | None = None


@record
class Dim:
    """One dimension of one side: a bare axis, `...`, `1`, or a parenthesised group.

    Anonymous `1`s are not kept in `axes`: they contribute nothing to the dimension's size.
    """

    axes: tuple[Axis, ...]
    grouped: bool
    start: int | None = None
    end: int | None = None

    @property
    def is_ellipsis(self) -> bool:
        return not self.grouped and len(self.axes) == 1 and self.axes[0].name == ELLIPSIS


@record
class Pattern:
    """A checked pattern.  Equal (and hashed) by its text, which determines everything else."""

    text: str
    positioned: bool
    left: tuple[Dim, ...]
    right: tuple[Dim, ...]
    arrow: int | None = None

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.text, self.positioned) == (other.text, other.positioned)  # type: ignore

    def __hash__(self) -> int:
        return hash((self.text, self.positioned))

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The named axes in input order (the ellipsis excluded)."""
        return tuple(a.name for d in self.left for a in d.axes if a.name != ELLIPSIS)

    @property
    def has_ellipsis(self) -> bool:
        return any(d.is_ellipsis for d in self.left)

    def find(self, name: str) -> Axis | None:
        """Where `name` is first written (input side first)."""
        for dim in self.left + self.right:
            for axis in dim.axes:
                if axis.name == name:
                    return axis
        return None


@record
class Plan:
    """How a rearrange maps a shape: split into elementary axes, permute, merge.

    Applying it to an array `x`: `x.reshape(sizes).transpose(order).reshape(output_shape)`,
    where `sizes` is `axis_sizes`.
    """

    input_axes: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    order: tuple[int, ...]
    output_groups: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        """The elementary axes' sizes in input order (parallel to `names`)."""
        return tuple(s for dim in self.input_axes for s in dim)


class _Fail:
    """Raises PatternError for one pattern text, dropping positions the source does not have."""

    def __init__(self, text: str | None, positioned: bool) -> None:
        self.text, self.positioned = text, positioned

    def __call__(self, code: str, message: str, start: int | None = None,
                 end: int | None = None, **kwargs: Any) -> NoReturn:
        if not self.positioned:
            start = end = None
        raise PatternError(message, pattern=self.text, start=start, end=end, code=code, **kwargs)


# ---------------------------------------------------------------------------------------- parse

def parse(text: str) -> Pattern:
    """Parse `"b (h w) c -> b w (h c)"`; cached by text because interpreter loops re-parse."""
    if not isinstance(text, str):
        raise PatternError(f"a rearrange pattern is a string, not {type(text).__name__}",
                           code="APK719", help='write "b (h w) -> b w h"')
    return _parse(text, True)


@lru_cache(maxsize=2048)
def _parse(text: str, positioned: bool) -> Pattern:
    fail = _Fail(text, positioned)
    arrow = text.find("->")
    if arrow < 0:
        fail("APK701", "the pattern has no '->'", 0, len(text),
             help='write the input and output sides around "->": "b (h w) -> b w h"')
    second = text.find("->", arrow + 2)
    if second >= 0:
        fail("APK702", "the pattern has more than one '->'", second, second + 2,
             help='a pattern has exactly one "->" between the input and the output side')
    left = _parse_side(text, 0, arrow, True, fail)
    right = _parse_side(text, arrow + 2, len(text), False, fail)
    _check_sides(left, right, fail)
    if not positioned:
        left, right = _strip(left), _strip(right)
    return Pattern(text, positioned, left, right, arrow if positioned else None)


def _strip(dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """Drop positions: they index a rendering of the tuple form, not anything the user wrote."""
    return tuple(Dim(tuple(Axis(a.name) for a in d.axes), d.grouped) for d in dims)


def _parse_side(text: str, lo: int, hi: int, is_left: bool, fail: _Fail) -> tuple[Dim, ...]:
    dims: list[Dim] = []
    group: list[Axis] | None = None
    group_start = 0
    seen: dict[str, Axis] = {}
    for m in _TOKEN.finditer(text, lo, hi):
        token, s, e = m.group(), m.start(), m.end()
        if token.isspace():
            continue
        if token == "(":
            if group is not None:
                fail("APK704", "parentheses cannot be nested", s, e,
                     help="a group is one level deep: write (a b c), not (a (b c))")
            group, group_start = [], s
            continue
        if token == ")":
            if group is None:
                fail("APK703", "')' has no matching '('", s, e,
                     help="remove the ')' or open the group with '('")
            dims.append(Dim(tuple(group), True, group_start, e))
            group = None
            continue
        axis = _word(token, s, fail)
        if axis is None:  # an anonymous 1: a size-1 dimension alone, nothing inside a group
            if group is None:
                dims.append(Dim((), False, s, e))
            continue
        if axis.name in seen:
            if axis.name == ELLIPSIS:
                fail("APK709", "'...' appears twice on one side", s, e,
                     help="an ellipsis stands for all remaining dimensions, so it is used at "
                          "most once per side")
            fail("APK708", f"axis '{axis.name}' appears twice on one side", s, e,
                 notes=[f"first written at character {seen[axis.name].start}"],
                 help="each axis names one dimension; give the second one another name")
        if axis.name == ELLIPSIS and is_left and group is not None:
            fail("APK710", "'...' cannot be inside parentheses on the input side", s, e,
                 help="on the input side '...' matches whole dimensions; merge them on the "
                      "output side instead: \"b ... -> b (...)\"")
        seen[axis.name] = axis
        if group is None:
            dims.append(Dim((axis,), False, s, e))
        else:
            group.append(axis)
    if group is not None:
        fail("APK703", "'(' is never closed", group_start, group_start + 1,
             help="close the group with ')' before the end of the side")
    return tuple(dims)


def _word(token: str, start: int, fail: _Fail) -> Axis | None:
    """Classify one word: an axis name, the ellipsis, or an anonymous `1` (None)."""
    end = start + len(token)
    if token == ELLIPSIS:
        return Axis(ELLIPSIS, start, end)
    if token.isdecimal():
        if int(token) == 1:
            return None
        fail("APK707", f"'{token}' is an anonymous axis; only 1 is allowed in a rearrange",
             start, end,
             help="name the axis and pass its size, e.g. \"b (h w) -> b h w\" with h=4")
    for i, ch in enumerate(token):
        if not (ch.isalnum() or ch in "_."):
            fail("APK705", f"invalid character {ch!r} in the pattern", start + i, start + i + 1,
                 help="a pattern holds axis names, '...', '1', parentheses, spaces and one '->'")
    if "." in token:
        fail("APK706", f"'{token}' is not an axis name", start, end,
             help="an ellipsis is exactly '...', separated from axis names by spaces")
    if not token.isidentifier():
        fail("APK706", f"'{token}' is not an axis name", start, end,
             help="an axis name is an identifier: a letter, then letters, digits or '_'")
    if token[0] == "_" or token[-1] == "_":
        fail("APK706", f"axis name '{token}' starts or ends with '_'", start, end,
             help="as in einops, names starting or ending with '_' are reserved")
    return Axis(token, start, end)


def _check_sides(left: tuple[Dim, ...], right: tuple[Dim, ...], fail: _Fail) -> None:
    """einops' rule for rearrange: both sides name the same axes and both or neither use '...'.

    The output side is checked first: an output axis that comes from nowhere is usually a typo.
    """
    axes = [{a.name: a for d in side for a in d.axes} for side in (left, right)]
    only = [[a for n, a in axes[i].items() if n not in axes[1 - i]] for i in (0, 1)]
    for side, where in ((1, "output"), (0, "input")):
        for axis in only[side]:
            if axis.name == ELLIPSIS:
                fail("APK712", f"'...' is only on the {where} side", axis.start, axis.end,
                     help="use '...' on both sides or on neither")
            others = [a.name for a in only[1 - side] if a.name != ELLIPSIS]
            add_or_drop = "add" if side else "drop"
            fail("APK711", f"axis '{axis.name}' is only on the {where} side",
                 axis.start, axis.end,
                 notes=[f"only on the {'input' if side else 'output'} side: "
                        f"{', '.join(others)}"] if others else [],
                 help="every named axis appears on both sides; to "
                      f"{add_or_drop} a size-1 dimension write '1' or '()' instead of a name")


# ----------------------------------------------------------------------------------- tuple form

def from_tuples(src: Sequence[Any], dst: Sequence[Any],
                sizes: Mapping[str, int] | None = None) -> Pattern:
    """The NKI form `(('b', ('h', 'w')), ('b', 'w', 'h'))`: strings are axes, inner tuples groups.

    `'...'` and `1` (or `'1'`) mean what they mean in the string form.  `sizes` (NKI's
    `fixed_sizes`), when given, is checked against the pattern's axes here too.
    """
    if _plain(src) and _plain(dst):
        pattern = _tuples_cached(src, dst)
    else:
        pattern = _tuples_uncached(src, dst)
    if sizes is not None:
        check_sizes(pattern, sizes)
    return pattern


def _tuples_uncached(src: Any, dst: Any) -> Pattern:
    shown = f"{src!r}, {dst!r}"
    text = f"{_render(src, 'source', shown)} -> {_render(dst, 'destination', shown)}"
    return _parse(text, False)


_tuples_cached = lru_cache(maxsize=2048)(_tuples_uncached)


def _plain(side: Any) -> bool:
    """Only str, int and tuple entries are safe cache keys: True and 1.0 hash equal to 1."""
    return type(side) is tuple and all(
        type(x) in (str, int) or (type(x) is tuple and all(type(y) in (str, int) for y in x))
        for x in side)


def _render(side: Any, role: str, shown: str) -> str:
    fail = _Fail(shown, False)
    if not isinstance(side, (tuple, list)):
        fail("APK719", f"the {role} pattern must be a tuple, not {type(side).__name__}",
             help="write the tuple form as (('b', ('h', 'w')), ('b', 'w', 'h'))")
    parts = []
    for item in side:
        if isinstance(item, (tuple, list)):
            parts.append("(" + " ".join(_render_axis(x, role, fail) for x in item) + ")")
        else:
            parts.append(_render_axis(item, role, fail))
    return " ".join(parts)


def _render_axis(item: Any, role: str, fail: _Fail) -> str:
    if isinstance(item, (tuple, list)):
        fail("APK704", f"groups cannot be nested in the {role} pattern",
             help="a group is one level deep: ('a', 'b', 'c'), not ('a', ('b', 'c'))")
    if isinstance(item, Integral) and not isinstance(item, (bool, np.bool_)):
        item = str(int(item))
    if not isinstance(item, str):
        fail("APK719", f"{item!r} in the {role} pattern is not an axis name",
             help="entries are axis names (strings), '...', 1, or tuples of those")
    _word(item, 0, fail)  # the same rules as the string form, so both forms accept alike
    return item


# ----------------------------------------------------------------------------------------- plan

def is_size(value: Any) -> bool:
    """A positive integer: a Python or NumPy int (as einops accepts), never a bool."""
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)) and value >= 1


def check_sizes(pattern: Pattern, sizes: Mapping[str, Any]) -> None:
    """Every given size names an axis of the pattern and is a positive int."""
    fail = _Fail(pattern.text, pattern.positioned)
    known = pattern.axis_names
    names = set(known)  # a set: patterns may have many thousands of axes
    for name, value in sizes.items():
        if name not in names:
            close = get_close_matches(str(name), known, n=1)
            fail("APK713", f"a size is given for '{name}', which is not an axis of the pattern",
                 notes=[f"the pattern's axes: {', '.join(known) or '(none)'}"],
                 help=f"did you mean '{close[0]}'?" if close else "remove the size")
        if not is_size(value):
            axis = pattern.find(name)
            fail("APK714", f"the size of '{name}' must be a positive integer, not {value!r}",
                 axis.start if axis else None, axis.end if axis else None,
                 help="leave an axis out of the sizes to have it inferred")


def plan(pattern: Pattern | str, shape: Sequence[int],
         sizes: Mapping[str, int] | None = None) -> Plan:
    """Plan `pattern` over a tensor of `shape` with the given axis sizes (cached)."""
    if isinstance(pattern, str):
        pattern = parse(pattern)
    items: tuple = ()
    if sizes:
        check_sizes(pattern, sizes)
        items = tuple((name, int(value)) for name, value in sizes.items())
    return _plan(pattern, tuple(shape), items)


@lru_cache(maxsize=4096)
def _plan(pattern: Pattern, shape: tuple[int, ...], items: tuple) -> Plan:
    sizes = dict(items)
    fail = _Fail(pattern.text, pattern.positioned)
    facts = {"shape": shape, "notes": [f"tensor shape: {shape}"]}
    left = pattern.left
    for dim in left:
        unknown = [a.name for a in dim.axes if a.name not in sizes and a.name != ELLIPSIS]
        if len(unknown) > 1:
            fail("APK716", f"cannot infer the sizes of {_names(unknown)}: a dimension can split "
                           "into at most one axis of unknown size", dim.start, dim.end,
                 help=f"pass the size of all but one, e.g. {unknown[0]}=...", **facts)
    ellipsis_at = next((i for i, d in enumerate(left) if d.is_ellipsis), None)
    fixed = len(left) - (ellipsis_at is not None)
    if len(shape) < fixed or (ellipsis_at is None and len(shape) != fixed):
        start, end = _side_span(pattern)
        expected = f"at least {fixed}" if ellipsis_at is not None else str(fixed)
        fail("APK715", f"the input side has {expected} dimensions but the tensor has "
                       f"{len(shape)}", start, end,
             help="write one entry per dimension (a name, a (group), '1', '()') or use '...'",
             **facts)
    n_ellipsis = len(shape) - fixed
    ellipsis_names = tuple(f"...{k}" for k in range(n_ellipsis))

    names: list[str] = []
    input_axes: list[tuple[int, ...]] = []
    axis_size: dict[str, int] = {}
    position = 0
    for dim in left:
        if dim.is_ellipsis:
            for k, name in enumerate(ellipsis_names):
                names.append(name)
                axis_size[name] = shape[position + k]
                input_axes.append((shape[position + k],))
            position += n_ellipsis
            continue
        length = shape[position]
        known = prod(sizes[a.name] for a in dim.axes if a.name in sizes)
        unknown = [a.name for a in dim.axes if a.name not in sizes]
        if unknown:
            if length % known:
                fail("APK717", f"dimension {position} of size {length} does not split into "
                               f"{_dim_text(pattern, dim)}: {length} is not divisible by {known}",
                     dim.start, dim.end, help="give sizes whose product divides the dimension",
                     **facts)
            inferred = {unknown[0]: length // known}
        else:
            inferred = {}
            if known != length:
                fail("APK718", f"dimension {position} has size {length} but "
                               f"{_dim_text(pattern, dim)} has size {known}",
                     dim.start, dim.end, help=_mismatch_help(dim), **facts)
        sizes_here = tuple(inferred[a.name] if a.name in inferred else sizes[a.name]
                           for a in dim.axes)
        for axis, size in zip(dim.axes, sizes_here):
            names.append(axis.name)
            axis_size[axis.name] = size
        input_axes.append(sizes_here)
        position += 1

    index = {name: i for i, name in enumerate(names)}
    order: list[int] = []
    groups: list[tuple[int, ...]] = []
    output_shape: list[int] = []
    for dim in pattern.right:
        if dim.is_ellipsis:
            members = [(name,) for name in ellipsis_names]
        else:
            expanded = [n for a in dim.axes
                        for n in (ellipsis_names if a.name == ELLIPSIS else (a.name,))]
            members = [tuple(expanded)]
        for group in members:
            groups.append(tuple(range(len(order), len(order) + len(group))))
            order.extend(index[name] for name in group)
            output_shape.append(prod(axis_size[name] for name in group))
    return Plan(tuple(input_axes), tuple(names), tuple(order), tuple(groups), tuple(output_shape))


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names[:-1]) + f" and '{names[-1]}'"


def _dim_text(pattern: Pattern, dim: Dim) -> str:
    if pattern.positioned and dim.start is not None:
        return f"'{pattern.text[dim.start:dim.end]}'"
    if not dim.axes:
        return "'()'"
    inner = " ".join(a.name for a in dim.axes)
    return f"'({inner})'" if dim.grouped else f"'{inner}'"


def _mismatch_help(dim: Dim) -> str:
    if not dim.axes:
        return "'1' and '()' on the input side match only size-1 dimensions; name the axis"
    if len(dim.axes) == 1:
        return f"remove the size of '{dim.axes[0].name}' to take it from the tensor"
    return "give sizes for all but one axis of the group and let that one be inferred"


def _side_span(pattern: Pattern) -> tuple[int | None, int | None]:
    """The input side's characters, or the '->' when the input side is empty."""
    if pattern.left:
        return pattern.left[0].start, pattern.left[-1].end
    if pattern.arrow is None:
        return None, None
    return pattern.arrow, pattern.arrow + 2
