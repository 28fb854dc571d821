"""Index grids of the legacy NKI API (`neuronxcc.nki`): `nl.arange`, `nl.mgrid`, the affine
index expressions built from them (`a[i_p, k * 512 + i_f]`) and the predicates masks are made of.

An index expression is affine in its iterators: `const + sum(coef * iterator)`.  An iterator
takes the values `start + k * step` for the positions `k` in `[0, count)` and sits on one axis of
the expression's broadcast shape (NumPy's rules: `nl.arange(128)[:, None]` is axis 0 of a 2-d
grid).  Indexing a tensor with such expressions selects, for each output position, the element
at `sum_d stride_d * expr_d`: an access pattern whose output axis `a` steps by
`sum_d stride_d * coef_d(it) * step(it)` over the iterators `it` on that axis.  That is what the
hardware runs, so a view is all it takes (`grid_view`).

A mask is a conjunction of bounds, each on a single iterator (`(i_p < 64) & (i_f < 256)`); it
narrows the positions of its iterators, so every operand indexed by them narrows with it.  A
bound relating two iterators is not a box and is refused (NKI's `affine_select` does triangles).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ApdslTypeError, ViewError

# positions [lo, hi) each iterator keeps under a mask
Limits = dict["Iterator", tuple[int, int]]


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _not_affine(what: str) -> ApdslTypeError:
    return ApdslTypeError(
        f"{what} of an index expression is not affine: an index built with nl.arange or "
        "nl.mgrid must stay of the form const + sum(int * index)", code="APK940",
        help="add, subtract and multiply indices by ints only; reshape or rearrange the "
             "tensor instead of dividing an index")


class Iterator:
    """One index of a grid: the values `start + k * step`, k in [0, count).  Compared by
    identity: two aranges of the same range are two indices."""

    __slots__ = ("start", "step", "count")

    def __init__(self, start: int, step: int, count: int) -> None:
        self.start, self.step, self.count = start, step, count

    def __repr__(self) -> str:
        return f"<index {self.start}:{self.start + self.step * self.count}:{self.step}>"


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ViewError(f"index shapes {a} and {b} do not broadcast", code="APK941",
                            help="index dimensions combine as NumPy broadcasts them: each "
                                 "pair of sizes must be equal or 1")
        out.append(max(x, y))
    return tuple(out)


class IndexExpr:
    """`const + sum(coef * iterator)` over a broadcast `shape`; `axes` gives each iterator's
    axis in it.  Arithmetic with ints and other expressions, comparisons making predicates."""

    __slots__ = ("const", "terms", "axes", "shape")

    def __init__(self, const: int, terms: tuple[tuple[Iterator, int], ...],
                 axes: tuple[tuple[Iterator, int], ...], shape: tuple[int, ...]) -> None:
        self.const, self.terms, self.axes, self.shape = const, terms, axes, shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def coef(self, it: Iterator) -> int:
        return next((c for i, c in self.terms if i is it), 0)

    def iterators(self) -> tuple[Iterator, ...]:
        return tuple(i for i, _ in self.axes)

    def axis(self, it: Iterator) -> int:
        return next(a for i, a in self.axes if i is it)

    # -- arithmetic ---------------------------------------------------------------------------
    def _combine(self, other: IndexExpr, sign: int) -> IndexExpr:
        shape = broadcast(self.shape, other.shape)
        n = len(shape)
        axes: dict[Iterator, int] = {}
        for e in (self, other):
            for it, a in e.axes:
                a += n - e.ndim
                if axes.setdefault(it, a) != a:
                    raise ViewError("an index appears on two different axes of one "
                                    "expression", code="APK941")
        coefs: dict[Iterator, int] = {}
        for it, c in self.terms:
            coefs[it] = coefs.get(it, 0) + c
        for it, c in other.terms:
            coefs[it] = coefs.get(it, 0) + sign * c
        terms = tuple((it, c) for it, c in coefs.items() if c)
        return IndexExpr(self.const + sign * other.const, terms,
                         tuple(axes.items()), shape)

    def _scaled(self, k: int) -> IndexExpr:
        return IndexExpr(self.const * k, tuple((i, c * k) for i, c in self.terms if c * k),
                         self.axes, self.shape)

    def _shifted(self, k: int) -> IndexExpr:
        return IndexExpr(self.const + k, self.terms, self.axes, self.shape)

    def __add__(self, other: Any) -> IndexExpr:
        if isinstance(other, IndexExpr):
            return self._combine(other, 1)
        if is_int(other):
            return self._shifted(int(other))
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: Any) -> IndexExpr:
        if isinstance(other, IndexExpr):
            return self._combine(other, -1)
        if is_int(other):
            return self._shifted(-int(other))
        return NotImplemented

    def __rsub__(self, other: Any) -> IndexExpr:
        if is_int(other):
            return self._scaled(-1)._shifted(int(other))
        return NotImplemented

    def __neg__(self) -> IndexExpr:
        return self._scaled(-1)

    def __pos__(self) -> IndexExpr:
        return self

    def __mul__(self, other: Any) -> IndexExpr:
        if is_int(other):
            return self._scaled(int(other))
        if isinstance(other, IndexExpr):
            raise _not_affine("a product")
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> IndexExpr:
        raise _not_affine("floor division")

    def __rfloordiv__(self, other: Any) -> IndexExpr:
        raise _not_affine("floor division")

    def __truediv__(self, other: Any) -> IndexExpr:
        raise _not_affine("division")

    def __mod__(self, other: Any) -> IndexExpr:
        raise _not_affine("a remainder")

    # -- shape --------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> IndexExpr:
        """`[:, None]` / `[None, :]`: the same index on other axes of a larger grid."""
        items = key if isinstance(key, tuple) else (key,)
        if sum(1 for k in items if k is not None) != self.ndim or any(
                k is not None and k != slice(None) for k in items):
            raise ApdslTypeError(f"an index expression takes only ':' and None (new axes) as "
                                 f"its own index, here {self.ndim} ':'", code="APK940",
                                 help="write nl.arange(n)[:, None] for a partition index and "
                                      "nl.arange(n)[None, :] for a free index")
        where, shape, old = {}, [], 0
        for pos, k in enumerate(items):
            if k is None:
                shape.append(1)
            else:
                where[old] = pos
                shape.append(self.shape[old])
                old += 1
        return IndexExpr(self.const, self.terms,
                         tuple((it, where[a]) for it, a in self.axes), tuple(shape))

    # -- predicates -----------------------------------------------------------------------------
    def _compare(self, other: Any, op: str) -> Predicate:
        if is_int(other):
            diff = self._shifted(-int(other))
        elif isinstance(other, IndexExpr):
            diff = self._combine(other, -1)
        else:
            return NotImplemented
        return Predicate.bound(diff, op)

    def __lt__(self, other: Any) -> Predicate:
        return self._compare(other, "<")

    def __le__(self, other: Any) -> Predicate:
        return self._compare(other, "<=")

    def __gt__(self, other: Any) -> Predicate:
        return self._compare(other, ">")

    def __ge__(self, other: Any) -> Predicate:
        return self._compare(other, ">=")

    def __bool__(self) -> bool:
        raise ApdslTypeError("an index expression has no truth value: it stands for a whole "
                             "grid of indices", code="APK942",
                             help="compare it to make a mask: mask=(i_p < n)")

    def __index__(self) -> int:
        raise ApdslTypeError("an index expression is not an int: it stands for a whole grid "
                             "of indices", code="APK942",
                             help="use it to index a tensor (t[i_p, i_f]) or in a mask")

    def __repr__(self) -> str:
        parts = [f"{c}*{it!r}" for it, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return f"IndexExpr({' + '.join(parts)}, shape={self.shape})"


def arange(*args: Any) -> IndexExpr:
    """`nl.arange(stop)` / `nl.arange(start, stop)`: a 1-d index over `[start, stop)`."""
    if not 1 <= len(args) <= 3 or not all(is_int(a) for a in args):
        raise ApdslTypeError("nl.arange takes (stop) or (start, stop) as ints", code="APK940")
    start, stop, step = (0, int(args[0]), 1) if len(args) == 1 else (
        int(args[0]), int(args[1]), int(args[2]) if len(args) == 3 else 1)
    return _index(start, stop, step, 0, 1)


def _index(start: int, stop: int, step: int, axis: int, ndim: int,
           shape: tuple[int, ...] | None = None) -> IndexExpr:
    if step < 1 or stop <= start:
        raise ViewError(f"an index range needs start < stop and a positive step, got "
                        f"{start}:{stop}:{step}", code="APK941")
    count = -(-(stop - start) // step)
    it = Iterator(start, step, count)
    if shape is None:
        shape = tuple(count if a == axis else 1 for a in range(ndim))
    return IndexExpr(0, ((it, 1),), ((it, axis),), shape)


class Grid(tuple):
    """`nl.mgrid[0:128, 0:512]`: one dense index per axis (each of the whole grid's shape);
    unpack it (`i_p, i_f = nl.mgrid[...]`) or read `.p` (axis 0) and `.x`, `.y`, `.z`."""

    __slots__ = ()

    def _axis(self, k: int, name: str) -> IndexExpr:
        if k >= len(self):
            raise ApdslTypeError(f"this grid has {len(self)} axes; .{name} is axis {k}",
                                 code="APK941")
        return self[k]

    @property
    def p(self) -> IndexExpr:
        return self._axis(0, "p")

    @property
    def x(self) -> IndexExpr:
        return self._axis(1, "x")

    @property
    def y(self) -> IndexExpr:
        return self._axis(2, "y")

    @property
    def z(self) -> IndexExpr:
        return self._axis(3, "z")


class MGrid:
    """`nl.mgrid`: index it with slices to make a grid."""

    def __getitem__(self, key: Any) -> Grid:
        items = key if isinstance(key, tuple) else (key,)
        ranges = []
        for k in items:
            if not isinstance(k, slice) or not is_int(k.stop) or not all(
                    v is None or is_int(v) for v in (k.start, k.step)):
                raise ApdslTypeError("nl.mgrid takes int slices: nl.mgrid[0:128, 0:512]",
                                     code="APK940")
            ranges.append((int(k.start or 0), int(k.stop), int(k.step or 1)))
        counts = tuple(max(0, -(-(b - a) // s)) for a, b, s in ranges)
        return Grid(_index(a, b, s, axis, len(ranges), counts)
                    for axis, (a, b, s) in enumerate(ranges))

    def __repr__(self) -> str:
        return "nl.mgrid"


MGRID = MGrid()


class Predicate:
    """A mask, or the condition of a legacy `affine_select`: a conjunction of `diff OP 0`
    over index expressions (`conds`), with the grid its indices came from (`axes`, `shape`,
    so it can narrow plain tiles by axis too)."""

    __slots__ = ("conds", "axes", "shape")

    def __init__(self, conds: tuple[tuple[IndexExpr, str], ...],
                 axes: tuple[tuple[Iterator, int], ...], shape: tuple[int, ...]) -> None:
        self.conds, self.axes, self.shape = conds, axes, shape

    @staticmethod
    def bound(diff: IndexExpr, op: str) -> Predicate:
        return Predicate(((diff, op),), diff.axes, diff.shape)

    def __and__(self, other: Any) -> Predicate:
        if other is True:
            return self
        if not isinstance(other, Predicate):
            return NotImplemented
        shape = broadcast(self.shape, other.shape)
        axes: dict[Iterator, int] = {}
        n = len(shape)
        for e in (self, other):
            for it, ax in e.axes:
                axes.setdefault(it, ax + n - len(e.shape))
        return Predicate(self.conds + other.conds, tuple(axes.items()), shape)

    __rand__ = __and__

    def __or__(self, other: Any) -> Predicate:
        raise ViewError("a mask made with | is not a box: apdsl takes masks that bound each "
                        "index on its own, combined with &", code="APK943")

    __ror__ = __or__

    def __invert__(self) -> Predicate:
        raise ViewError("a negated mask is not a box: bound each index on its own instead",
                        code="APK943")

    def __bool__(self) -> bool:
        raise ApdslTypeError("a mask has no truth value: Python's `and`/`or`/`not` would "
                             "keep only one of its sides", code="APK942",
                             notes=["NKI known issues: \"Masks conjunction: Use & to combine "
                                    "masks. We do not support using and for masks.\""],
                             help="combine masks with &: mask=((i_p < n) & (i_f < m))")

    def limits(self) -> Limits:
        """The positions `[lo, hi)` each iterator keeps: the mask as a box (APK943 when a
        bound relates two indices).  An iterator narrowed to nothing has lo == hi."""
        out: Limits = {}
        for diff, op in self.conds:
            if len(diff.terms) > 1:
                raise ViewError(
                    f"a mask bound relates {len(diff.terms)} indices: apdsl takes masks that "
                    "bound each index on its own (boxes), combined with &", code="APK943",
                    help="for a triangular or banded selection use nisa.affine_select")
            if not diff.terms:  # a constant comparison: all or nothing
                if not _holds(diff.const, op):
                    out[_NOTHING] = (0, 0)
                continue
            (it, coef), = diff.terms
            lo, hi = out.get(it, (0, it.count))
            a, b = coef * it.step, coef * it.start + diff.const  # a * k + b OP 0
            if op in ("<", "<="):  # a * k <= rhs
                rhs = -b - 1 if op == "<" else -b
                if a > 0:
                    hi = min(hi, rhs // a + 1)
                else:
                    lo = max(lo, -(-rhs // a))
            else:  # a * k >= rhs
                rhs = -b + 1 if op == ">" else -b
                if a > 0:
                    lo = max(lo, -(-rhs // a))
                else:
                    hi = min(hi, rhs // a + 1)
            out[it] = (lo, max(lo, hi))
        return out

    def __repr__(self) -> str:
        return "Predicate(" + " & ".join(f"{d!r} {op} 0" for d, op in self.conds) + ")"


def _holds(c: int, op: str) -> bool:
    return {"<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


_NOTHING = Iterator(0, 1, 1)  # the key of a constant-false bound: no position is kept

# The mask a comparison of loop indices alone gives where it is false: the legacy masking
# reference lets a mask compare `nl.affine_range` indices, "an execution predicate known at
# compile-time, which informs the compiler to skip generating the instruction", and here those
# indices are ints, so the comparison is a bool.  It keeps no position.
KEEPS_NOTHING = Predicate(((IndexExpr(1, (), (), ()), "<"),), (), ())


def is_empty(limits: Limits) -> bool:
    return any(hi <= lo for lo, hi in limits.values())


def affine_terms(e: IndexExpr) -> tuple[int, int, list[list[int]]]:
    """`e` as iota/affine_select take it: (offset, channel_multiplier, pattern), with axis 0
    the partition axis (p counted from 0) and one [step, count] pair per free axis."""
    steps = [0] * e.ndim
    offset = e.const
    for it, c in e.terms:
        steps[e.axis(it)] += c * it.step
        offset += c * it.start
    if e.ndim == 0:
        return offset, 0, [[0, 1]]
    return offset, steps[0], [[s, n] for s, n in zip(steps[1:], e.shape[1:])] or [[0, 1]]
