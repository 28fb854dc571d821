"""The vector reductions (pyasc's names): per repeat (`whole_reduce_max/min/sum`), per 32-byte
block (`block_reduce_max/min/sum`), per pair (`pair_reduce_sum`) and over a whole operand
(`reduce_max/min/sum`, with the index where the docs give one).

Sums add as the AscendC pages draw it, a binary tree (pairs, then pairs of those, ...) whose
every addition rounds to the operand dtype (for half, each partial sum is a half), lanes the
mask leaves out adding nothing.  A maximum or minimum returns the smallest index among equal
values; an index is stored in the value's own element as the bits of an unsigned integer of
its width (read it with `.view("uint16")` / `.view("uint32")`), except `ORDER_ONLY_INDEX`,
which stores a uint32 (ReduceRepeat page).  whole_reduce's `dst_rep_stride` counts one
repeat's result (a value, a value-index pair, or a uint32 index), block_reduce's one repeat's
8 results, pair_reduce_sum's 128 bytes, and those destinations need only element alignment
(ReduceRepeat table 3), not 32 bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ...core import execute as ex
from . import repeat as rp
from . import run
from .params import ReduceOrder

KINDS = ("max", "min", "sum")


def _err(label: str, message: str, code: str = "APK550", **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _rounded(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 `values` rounded to `dtype` (and back to float32)."""
    return values.astype(np.float16).astype(np.float32) if dtype == "float16" else values


def tree_sum(values: np.ndarray, dtype: str) -> np.ndarray:
    """Sum the last axis by a binary tree, each addition rounded to `dtype` (its length a
    power of two)."""
    v = values
    while v.shape[-1] > 1:
        with np.errstate(all="ignore"):
            v = _rounded(v[..., 0::2] + v[..., 1::2], dtype)
    return v[..., 0]


def _extreme(values: np.ndarray, active: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(value, smallest index) of the max or min over the last axis, active lanes only."""
    fill = -np.inf if kind == "max" else np.inf
    v = np.where(active, values, fill)
    best = v.max(axis=-1) if kind == "max" else v.min(axis=-1)
    idx = np.argmax(v == best[..., None], axis=-1)
    return best, idx


def _src_form(label: str, tensors: dict[str, Any], mask: Any, repeat: Any, blk: Any,
              rep: Any) -> tuple[rp.Form, np.ndarray, int]:
    """The mask form over `src` (dst is addressed by the reduction): the form, the lane grid
    (repeats, lanes) of src elements, and the lanes a repeat has."""
    src = tensors["src"]
    if src.dtype.name not in ("float16", "float32"):
        raise _err(label, f"src is {src.dtype}; the reductions take half and float (Atlas A2)",
                   code="APK461")
    lanes = rp.lanes_per_repeat(src.dtype.bits)
    form = rp.mask_form(label, mask, repeat, {"src": (blk, rep)}, lanes)
    return form, rp.relative(form, "src", src.dtype.bits), lanes


def _grid(inst: run.Instance, form: rp.Form, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """src's values on the full (repeats, lanes) grid (0 where a lane is off) and the mask."""
    vals = inst.math("src")
    grid = np.zeros((form.repeats, lanes), np.float32)
    on = np.zeros((form.repeats, lanes), bool)
    cols = np.asarray(form.lanes)
    grid[:, cols] = vals
    on[:, cols] = True
    return grid, on


def _index_bits(index: np.ndarray, dtype: str) -> np.ndarray:
    """Indices as the bits of a value of `dtype` (an unsigned integer of its width)."""
    width = np.dtype(np.float16 if dtype == "float16" else np.float32)
    return index.astype(f"uint{width.itemsize * 8}").view(width)


def _prepare(op: str, dst: Any, src: Any, name: Any, form_args: tuple[Any, ...],
             dst_rel: Any, dst_align: int | None) -> tuple[run.Instance | None, Any, Any]:
    label, tensors, starts = run.checked(op, {"dst": dst, "src": src}, name,
                                         aligned=("src",))
    d = tensors["dst"]
    if d.dtype != tensors["src"].dtype:
        raise _err(label, f"dst is {d.dtype} and src {tensors['src'].dtype}; a reduction "
                   "writes its operand's dtype", code="APK556")
    if dst_align is not None and starts["dst"] * d.dtype.bits // 8 % dst_align:
        raise _err(label, f"dst {d.name} starts at byte {starts['dst'] * d.dtype.bits // 8}; "
                   f"this result needs {dst_align}-byte alignment (ReduceRepeat table 3)",
                   code="APK524")
    form, rel_s, lanes = _src_form(label, tensors, *form_args)
    rel_d = dst_rel(form, lanes)
    rels = {"dst": rel_d, "src": rel_s}
    views = {}
    if rel_s.size:
        views = {"dst": d.ap([[1, int(rel_d.max()) - int(rel_d.min()) + 1]],
                             offset=int(rel_d.min())),
                 "src": rp.record_view(tensors["src"], rel_s, form, "src",
                                       tensors["src"].dtype.bits)}
    inst = run.finish(op, name, label, tensors, starts, rels, views, form, sources=())
    return inst, form, lanes


def whole_reduce(kind: str, dst: Any, src: Any, mask: Any, repeat_time: Any,
                 dst_rep_stride: Any, src_blk_stride: Any, src_rep_stride: Any,
                 order: Any = ReduceOrder.ORDER_VALUE_INDEX, name: Any = None) -> None:
    """One result per repeat: the sum, or the max/min and its lane (as `order` says)."""
    op = f"asc.whole_reduce_{kind}"
    order = str(order)
    if order not in ReduceOrder.__members__:
        raise _err(op, f"order must be an asc.ReduceOrder, got {order!r}")
    bits = getattr(dst, "dtype", None)
    half = bits is not None and bits.name == "float16"
    # per repeat: the elements it writes, as elements of dst's dtype
    if kind == "sum" or order == "ORDER_ONLY_VALUE":
        width = 1
    elif order == "ORDER_ONLY_INDEX":
        width = 2 if half else 1  # a uint32
    else:
        width = 2
    step = rp._int(dst_rep_stride, op, "dst_rep_stride", 0, 65535)

    def dst_rel(form: rp.Form, lanes: int) -> np.ndarray:
        base = np.arange(form.repeats, dtype=np.int64)[:, None] * step * width
        return base + np.arange(width, dtype=np.int64)

    itemsize = 2 if half else 4
    inst, form, lanes = _prepare(op, dst, src, name,
                                 (mask, repeat_time, src_blk_stride, src_rep_stride), dst_rel,
                                 width * itemsize)
    if inst is None:
        return
    dtype = inst.dtype("src")
    grid, on = _grid(inst, form, lanes)
    if kind == "sum":
        out = tree_sum(grid, dtype)[:, None]
    else:
        best, idx = _extreme(grid, on, kind)
        value = best.astype(np.float16 if half else np.float32)
        if order == "ORDER_ONLY_VALUE":
            out = value[:, None]
        elif order == "ORDER_ONLY_INDEX":
            out = idx.astype(np.uint32).view(np.float16 if half else np.float32).reshape(
                form.repeats, width)
        else:
            index = _index_bits(idx, dtype)
            pair = (value, index) if order == "ORDER_VALUE_INDEX" else (index, value)
            out = np.stack(pair, axis=1)
    inst.write(np.asarray(out).astype(np.float16 if half else np.float32))


def block_reduce(kind: str, dst: Any, src: Any, repeat: Any, mask: Any, dst_rep_stride: Any,
                 src_blk_stride: Any, src_rep_stride: Any, name: Any = None) -> None:
    """Eight results per repeat, one per 32-byte block of src (blocks no lane of the mask
    touches write nothing)."""
    op = f"asc.block_reduce_{kind}"
    step = rp._int(dst_rep_stride, op, "dst_rep_stride", 0, 65535)
    half = getattr(getattr(dst, "dtype", None), "name", None) == "float16"
    item = 2 if half else 4

    def dst_rel(form: rp.Form, lanes: int) -> np.ndarray:
        per_block = lanes // 8
        blocks = sorted({k // per_block for k in form.lanes})  # type: ignore[union-attr]
        base = np.arange(form.repeats, dtype=np.int64)[:, None] * step * 8
        return base + np.asarray(blocks, dtype=np.int64)

    inst, form, lanes = _prepare(op, dst, src, name,
                                 (mask, repeat, src_blk_stride, src_rep_stride), dst_rel, item)
    if inst is None:
        return
    dtype = inst.dtype("src")
    grid, on = _grid(inst, form, lanes)
    per_block = lanes // 8
    g, o = grid.reshape(form.repeats, 8, per_block), on.reshape(form.repeats, 8, per_block)
    if kind == "sum":
        res = tree_sum(g, dtype)
    else:
        res, _ = _extreme(g, o, kind)
    used = o.any(axis=(0, 2))
    inst.write(res[:, used])


def pair_reduce_sum(dst: Any, src: Any, repeat_time: Any, mask: Any, dst_rep_stride: Any,
                    src_blk_stride: Any, src_rep_stride: Any, name: Any = None) -> None:
    """`[a0 + a1, a2 + a3, ...]` per repeat (pairs no lane of the mask touches write
    nothing); a repeat's results are 128 bytes, `dst_rep_stride` counts them."""
    op = "asc.pair_reduce_sum"
    step = rp._int(dst_rep_stride, op, "dst_rep_stride", 0, 65535)

    def dst_rel(form: rp.Form, lanes: int) -> np.ndarray:
        pairs = sorted({k // 2 for k in form.lanes})  # type: ignore[union-attr]
        base = np.arange(form.repeats, dtype=np.int64)[:, None] * step * (lanes // 2)
        return base + np.asarray(pairs, dtype=np.int64)

    half = getattr(getattr(dst, "dtype", None), "name", None) == "float16"
    inst, form, lanes = _prepare(op, dst, src, name,
                                 (mask, repeat_time, src_blk_stride, src_rep_stride), dst_rel,
                                 2 if half else 4)
    if inst is None:
        return
    grid, on = _grid(inst, form, lanes)
    with np.errstate(all="ignore"):
        sums = _rounded(grid[:, 0::2] + grid[:, 1::2], inst.dtype("src"))
    used = on.reshape(form.repeats, lanes // 2, 2).any(axis=(0, 2))
    inst.write(sums[:, used])


def reduce_all(kind: str, dst: Any, src: Any, shared_tmp_buffer: Any, count: Any = None,
               repeat_time: Any = None, src_rep_stride: Any = None, cal_index: Any = False,
               mask: Any = None, name: Any = None) -> None:
    """dst[0] = the max, min or sum over src's elements (the count form, or the mask form
    with `repeat_time` repeats `src_rep_stride` blocks apart); with `cal_index`, dst[1] =
    the (smallest) index of the max/min as the bits of an unsigned integer of the dtype's
    width.  `shared_tmp_buffer` is the scratch the instruction needs on Atlas A2: checked
    for size, and its contents are undefined afterwards."""
    op = f"asc.reduce_{kind}"
    if isinstance(repeat_time, bool) and src_rep_stride is None:  # (dst, src, tmp, n, True)
        repeat_time, cal_index = None, repeat_time
    label, tensors, starts = run.checked(op, {"dst": dst, "src": src,
                                              "shared_tmp_buffer": shared_tmp_buffer}, name)
    d, s, tmp = tensors["dst"], tensors["src"], tensors["shared_tmp_buffer"]
    for role in ("dst", "shared_tmp_buffer"):
        if tensors[role].dtype != s.dtype:
            raise _err(label, f"{role} is {tensors[role].dtype} and src {s.dtype}; the "
                       "reduction works in one dtype", code="APK556")
    if s.dtype.name not in ("float16", "float32"):
        raise _err(label, f"src is {s.dtype}; the reductions take half and float (Atlas A2)",
                   code="APK461")
    if cal_index not in (True, False) or (cal_index and kind == "sum"):
        raise _err(label, "cal_index is True or False, and reduce_sum has no index")
    lanes = rp.lanes_per_repeat(s.dtype.bits)
    if repeat_time is None and src_rep_stride is None:
        form = rp.count_form(label, count if mask is None else mask)
        rel_s = rp.relative(form, "src", s.dtype.bits).reshape(1, -1)
        n = form.count
        positions = np.arange(n, dtype=np.int64)[None, :]
        first = -(-n // lanes)
    else:
        m = mask if mask is not None else count
        repeats = rp._int(repeat_time, label, "repeat_time", 0, 2**31 - 1)
        form = rp.mask_form(label, m, min(repeats, rp.MAX_REPEATS), {"src": (1, src_rep_stride)},
                            lanes)
        form = rp.Form(None, form.lanes, repeats, form.strides)
        rel_s = rp.relative(form, "src", s.dtype.bits)
        positions = np.arange(repeats, dtype=np.int64)[:, None] * lanes + \
            np.asarray(form.lanes, dtype=np.int64)
        first = repeats
    per_block = 32 * 8 // s.dtype.bits
    need = -(-(first * 2) // per_block) * per_block
    if cal_index:
        second = -(-(first * 2) // lanes) * 2
        need += -(-second // per_block) * per_block
        if second > 2:
            third = -(-second // lanes) * 2
            need += -(-third // per_block) * per_block
    if tmp.size < need:
        raise _err(label, f"shared_tmp_buffer {tmp.name} has {tmp.size} elements; this "
                   f"reduction needs {need} (the ReduceMax/ReduceSum sizing rule)",
                   code="APK552", help=f"give shared_tmp_buffer at least {need} elements")
    width = 2 if cal_index else 1
    rels = {"dst": np.arange(width, dtype=np.int64), "src": rel_s,
            "shared_tmp_buffer": np.arange(need, dtype=np.int64)}
    if rel_s.size == 0:
        return
    views = {"dst": d.ap([[1, width]], offset=0),
             "src": s.ap([[1, int(rel_s.max()) - int(rel_s.min()) + 1]],
                         offset=int(rel_s.min())),
             "shared_tmp_buffer": tmp.ap([[1, need]], offset=0)}
    inst = run.finish(op, name, label, tensors, starts, rels, views, form,
                      sources=("src",))
    if inst is None:
        return
    vals = inst.math("src").reshape(-1)
    pos = positions.reshape(-1)
    dtype = s.dtype.name
    half = dtype == "float16"
    if kind == "sum":
        padded = np.zeros(-(-vals.size // lanes) * lanes, np.float32)
        padded[:vals.size] = vals
        partial = tree_sum(padded.reshape(-1, lanes), dtype)
        while partial.size > 1:
            more = np.zeros(-(-partial.size // lanes) * lanes, np.float32)
            more[:partial.size] = partial
            partial = tree_sum(more.reshape(-1, lanes), dtype)
        out = partial[:1].astype(np.float16 if half else np.float32)
    else:
        best = vals.max() if kind == "max" else vals.min()
        out = np.asarray([best], np.float16 if half else np.float32)
        if cal_index:
            idx = int(pos[np.flatnonzero(vals == best)[0]])
            if half and idx > 65535:
                raise _err(label, f"the index {idx} does not fit the uint16 a half result "
                           "holds (ReduceMax page: half indices up to 65535)", code="APK554")
            out = np.concatenate([out, _index_bits(np.asarray([idx]), dtype)])
    inst.write(out)
    # the scratch holds intermediate results nothing may rely on
    ex.forget_written(ex.Indexed(tmp.name, tmp.storage, tmp.dtype, (need,), None,
                                 inst.offs["shared_tmp_buffer"]))


def _whole(kind: str) -> Any:
    def fn(dst: Any, src: Any, mask: Any, repeat_time: Any, dst_rep_stride: Any,
           src_blk_stride: Any, src_rep_stride: Any,
           order: Any = ReduceOrder.ORDER_VALUE_INDEX, name: str | None = None) -> None:
        whole_reduce(kind, dst, src, mask, repeat_time, dst_rep_stride, src_blk_stride,
                     src_rep_stride, order, name)
    fn.__name__ = fn.__qualname__ = f"whole_reduce_{kind}"
    fn.__doc__ = f"whole_reduce_{kind}: one {kind} per repeat (ReduceRepeat)."
    return fn


def _block(kind: str) -> Any:
    def fn(dst: Any, src: Any, repeat: Any, mask: Any, dst_rep_stride: Any,
           src_blk_stride: Any, src_rep_stride: Any, name: str | None = None) -> None:
        block_reduce(kind, dst, src, repeat, mask, dst_rep_stride, src_blk_stride,
                     src_rep_stride, name)
    fn.__name__ = fn.__qualname__ = f"block_reduce_{kind}"
    fn.__doc__ = f"block_reduce_{kind}: one {kind} per 32-byte block (ReduceDataBlock)."
    return fn


def _all(kind: str) -> Any:
    def fn(dst: Any, src: Any, shared_tmp_buffer: Any, count: Any = None,
           repeat_time: Any = None, src_rep_stride: Any = None, cal_index: Any = False,
           mask: Any = None, name: str | None = None) -> None:
        reduce_all(kind, dst, src, shared_tmp_buffer, count, repeat_time, src_rep_stride,
                   cal_index, mask, name)
    fn.__name__ = fn.__qualname__ = f"reduce_{kind}"
    fn.__doc__ = f"reduce_{kind}: the {kind} over the operand (ReduceMax/Min/Sum)."
    return fn


whole_reduce_max, whole_reduce_min, whole_reduce_sum = (_whole(k) for k in KINDS)
block_reduce_max, block_reduce_min, block_reduce_sum = (_block(k) for k in KINDS)
reduce_max, reduce_min, reduce_sum = (_all(k) for k in KINDS)
