"""Rearrange and reshape over layouts: whether the result is a view, and the one error per cause.

The layout operations (`apdsl.tensor.layout`) say only whether a result is a layout; this module
knows what the user asked for and raises the error: APK214 when a dimension sliced across the
blocks of a nested dimension is what cannot be split or merged, APK209 when modes that no slice
touched do not divide where the pattern cuts (APK231, a view of more than 64 dimensions: `core`).
"""

from __future__ import annotations

from functools import lru_cache
from math import prod
from typing import Any

from ...errors import ViewError
from ...records import record
from ..dimops import contiguous, merge_dims, reshape_blocks, split_dim
from ..layout import Dim, Layout
from .core import TensorCore


@record
class Regrouping:
    """What a rearrange plan does to dims, whatever their layouts (cached per plan).

    `splits[k]` is how input dim k is cut (the fused axes' sizes, outer first); None when the
    dim passes through whole.  `groups[g]` is an input dim (passed through) or the fused axes,
    as (input dim, position in its cut), that merge into output dim g.
    """

    splits: tuple[tuple[int, ...] | None, ...]
    groups: tuple[Any, ...]


def rearranged(t: TensorCore, plan: Any) -> Layout:
    """The layout of a rearrange, built in one pass (linear in the pattern's length)."""
    dims = t.layout.dims
    how = regrouping(plan)
    base = t.layout.base
    cuts: list[tuple[Dim, ...]] = []
    for k, (d, sizes) in enumerate(zip(dims, how.splits)):
        if sizes is None:
            cuts.append((d,))
            continue
        if not sizes:
            base += d.first  # a size-1 dim (or all its axes size 1): index 0
            cuts.append(())
            continue
        cut = split_dim(d, sizes)
        if cut is None:
            axes = plan.input_axes[k]
            if not d.is_regular:
                raise sliced_across("rearrange", f"dim {k} into {axes}", t)
            raise ViewError(f"rearrange: dim {k} cannot be split into {axes} without a copy "
                            "(its modes do not divide there)", code="APK209",
                            notes=[f"shape = {t.shape}", f"layout = {t.layout}"],
                            help="split a nested dimension only at its blocks, or keep its "
                            "axes together and in order in one output group")
        cuts.append(cut[0])
        base += cut[1]
    out: list[Dim] = []
    for g, group in enumerate(how.groups):
        if isinstance(group, int):
            out.append(dims[group])
            continue
        merged = merge_dims(tuple(cuts[k][j] for k, j in group))
        if merged is None:
            raise sliced_across("rearrange", f"output dimension {g}", t)
        out.append(merged[0])
        base += merged[1]
    return Layout(tuple(out), base)


@lru_cache(maxsize=1024)
def regrouping(plan: Any) -> Regrouping:
    """Elementary axes of one input dim that stay adjacent and in order inside one output group
    are fused first, so a dim is cut only where the output really separates its axes: the
    result is a view whenever it is a layout, even if the elementary axes alone are not.
    Size-1 axes take no part.  A group that is exactly one input dim's axes, in order, is that
    dim unchanged (even a size-1 one, whose stride lowering still prints)."""
    sizes = plan.axis_sizes
    owner = [k for k, axes in enumerate(plan.input_axes) for _ in axes]
    following: dict[int, int] = {}  # a non-unit axis -> the next non-unit axis of its dim
    last: dict[int, int] = {}
    for e, k in enumerate(owner):
        if sizes[e] != 1:
            if k in last:
                following[last[k]] = e
            last[k] = e
    first_axis = [0]
    for axes in plan.input_axes:
        first_axis.append(first_axis[-1] + len(axes))
    whole: dict[int, int] = {}  # output group -> input dim
    for g, group in enumerate(plan.output_groups):
        if group:
            k = owner[plan.order[group[0]]]
            lo = first_axis[k]
            if len(group) == first_axis[k + 1] - lo and all(
                    plan.order[p] == lo + i for i, p in enumerate(group)):
                whole[g] = k
    runs: list[list[int]] = []  # fused axes, each a list of elementary axes
    group_runs: list[list[int]] = []
    for g, group in enumerate(plan.output_groups):
        mine: list[int] = []
        group_runs.append(mine)
        if g in whole:
            continue
        prev = None
        for pos in group:
            e = plan.order[pos]
            if sizes[e] == 1:
                continue
            if prev is not None and following.get(prev) == e:
                runs[mine[-1]].append(e)
            else:
                mine.append(len(runs))
                runs.append([e])
            prev = e
    per_dim: dict[int, list[int]] = {}
    for r in sorted(range(len(runs)), key=lambda r: runs[r][0]):
        per_dim.setdefault(owner[runs[r][0]], []).append(r)
    where: dict[int, tuple[int, int]] = {}  # run -> (input dim, position in its cut)
    for k, rs in per_dim.items():
        for j, r in enumerate(rs):
            where[r] = (k, j)
    kept = set(whole.values())
    splits = tuple(None if k in kept else
                   tuple(prod(sizes[e] for e in runs[r]) for r in per_dim.get(k, ()))
                   for k in range(len(plan.input_axes)))
    groups = tuple(whole[g] if g in whole else tuple(where[r] for r in mine)
                   for g, mine in enumerate(group_runs))
    return Regrouping(splits, groups)


def sliced_across(method: str, what: str, t: TensorCore) -> ViewError:
    """One root cause, one code: a dim sliced across its blocks that the op would have to cut
    or merge where its offsets are no layout."""
    return ViewError(f"{method}: {what}: a dimension sliced across the blocks of a nested "
                "dimension cannot be split or merged this way", code="APK214",
                notes=[f"shape = {t.shape}", f"layout = {t.layout}"],
                help="merge or split before slicing, or slice whole blocks")


def blames_a_slice(layout: Layout, shape: tuple[int, ...], onchip: bool) -> bool:
    """Whether a refused reshape fails in a block holding a dim sliced across its blocks."""
    dims = layout.dims[1:] if onchip else layout.dims
    blocks = reshape_blocks(dims, tuple(shape[1:] if onchip else shape))
    if blocks is None:
        return False
    for group, sizes in blocks:
        ok = contiguous(group) and (m := merge_dims(group)) is not None and \
            split_dim(m[0], sizes) is not None
        if not ok:
            return any(not d.is_regular for d in group)
    return False
