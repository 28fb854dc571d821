"""DataCopy and DataCopyPad between GM and UB (pyasc's `data_copy`, `data_copy_pad`).

`data_copy(dst, src, count)` moves `count` elements, and `data_copy(dst, src,
asc.DataCopyParams(block_count, block_len, src_stride, dst_stride))` `block_count` bursts of
`block_len` 32-byte blocks with `src_stride`/`dst_stride` blocks between bursts.  It moves
whole 32-byte blocks: hardware rounds a count whose bytes are not a multiple of 32 down and
silently drops the tail, a classic bug, so apdsl makes that an error (APK557) pointing at
`data_copy_pad` -- a deliberate difference from hardware.

`data_copy_pad(dst, src, asc.DataCopyExtParams(block_count, block_len, src_stride,
dst_stride), asc.DataCopyPadExtParams(dtype, is_pad, left_padding, right_padding,
padding_value))` moves bursts of `block_len` bytes.  GM -> UB: each burst lands 32-byte
aligned in UB as `left_padding` elements, the data, `right_padding` elements, then filler up
to the next 32 bytes; the GM stride is in bytes, the UB stride in blocks.  The pads hold
`padding_value` when `is_pad`; the filler is `padding_value` when `is_pad` and a pad is given,
the burst's first element when no pad is given (the AscendC page), and otherwise undefined
(left unwritten, so reading it is the init-check error).  UB -> GM: each burst is read from a
32-byte aligned UB run (UB stride in blocks) and written as `block_len` bytes to GM (GM stride
in bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ...core import execute as ex
from ...table.spec import ASCEND_COPY_PIPES
from ..cube_params import Nd2NzParams
from ..dma import ascend_copy_rules
from . import repeat as rp
from . import run
from .ops import same_dtype
from .params import DataCopyExtParams, DataCopyPadExtParams, DataCopyPadParams, DataCopyParams

BLOCK = rp.BLOCK_BYTES


def _err(label: str, message: str, code: str = "APK550", **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _num(label: str, value: Any, what: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _err(label, f"{what} must be an integer, got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        raise _err(label, f"{what} is {v}; it must be in [{lo}, {hi if hi is not None else ''}]"
                   .replace(", ]", ", ...)"), help=f"keep {what} in AscendC's range")
    return v


def _path(label: str, dst: Any, src: Any) -> str:
    ascend_copy_rules(dst, src, label)  # APK308 for a path the copy does not take
    return ASCEND_COPY_PIPES[(src.buffer, dst.buffer)]


def _bursts(count: int, length: int, stride: int) -> np.ndarray:
    """Element offsets of `count` bursts of `length` elements, `stride` elements apart."""
    return (np.arange(count, dtype=np.int64)[:, None] * stride
            + np.arange(length, dtype=np.int64)).ravel()


def _view(t: Any, count: int, length: int, stride: int) -> Any:
    return t.ap([[stride, count], [1, length]], offset=0) if count > 1 else \
        t.ap([[1, length]], offset=0)


def data_copy(dst: Any, src: Any, count: Any = None, repeat_params: Any = None,
              name: str | None = None) -> None:
    """Copy whole 32-byte blocks GM -> UB or L1 (MTE2), UB -> GM (MTE3) or UB -> UB (V):
    `count` elements, or the bursts of an `asc.DataCopyParams` (see the module docstring);
    with an `asc.Nd2NzParams`, GM -> L1 converting ND to NZ (`apdsl.runtime.ascend.flat`)."""
    if isinstance(count, DataCopyParams) and repeat_params is None:
        count, repeat_params = None, count
    if isinstance(count, Nd2NzParams) or isinstance(repeat_params, Nd2NzParams):
        from ..flat import nd2nz  # GM -> L1 with ND -> NZ (pyasc's cube path)
        nd2nz(dst, src, count if isinstance(count, Nd2NzParams) else repeat_params, name)
        return
    label, tensors, starts = run.checked("asc.data_copy", {"dst": dst, "src": src}, name)
    d, s = tensors["dst"], tensors["src"]
    pipe = _path(label, d, s)
    same_dtype(label, tensors, ("dst", "src"))
    size = d.dtype.bits // 8
    per_block = BLOCK // size
    if repeat_params is None:
        if count is None:
            raise _err(label, "give count, or an asc.DataCopyParams")
        n = _num(label, count, "count")
        if n * size % BLOCK:
            raise _err(label, f"{n} {d.dtype} elements are {n * size} bytes, not whole 32-byte "
                       f"blocks; data_copy moves whole blocks and hardware drops the last "
                       f"{n * size % BLOCK} bytes", code="APK557",
                       notes=[f"a block holds {per_block} {d.dtype} elements"],
                       help="copy a multiple of 32 bytes, or use asc.data_copy_pad for a "
                       "length in bytes", count=n)
        rels = {"dst": np.arange(n, dtype=np.int64), "src": np.arange(n, dtype=np.int64)}
        views = {"dst": _view(d, 1, max(n, 1), 0), "src": _view(s, 1, max(n, 1), 0)}
    else:
        if not isinstance(repeat_params, DataCopyParams):
            raise _err(label, f"repeat_params must be an asc.DataCopyParams, got "
                       f"{type(repeat_params).__name__}")
        p = repeat_params
        bc = _num(label, p.block_count, "block_count", 0, 4095)
        bl = _num(label, p.block_len, "block_len", 0, 65535)
        ss = _num(label, p.src_stride, "src_stride", 0, 65535)
        ds = _num(label, p.dst_stride, "dst_stride", 0, 65535)
        if bc == 0 or bl == 0:
            return  # a no-op on Atlas A2 (the DataCopy page)
        length = bl * per_block
        rels = {"dst": _bursts(bc, length, (bl + ds) * per_block),
                "src": _bursts(bc, length, (bl + ss) * per_block)}
        views = {"dst": _view(d, bc, length, (bl + ds) * per_block),
                 "src": _view(s, bc, length, (bl + ss) * per_block)}
    form = rp.Form(None)
    for role, t in tensors.items():
        rp.check_bounds(label, role, t, rels[role], form)
    inst = run.finish("asc.data_copy", name, label, tensors, starts, rels, views, form,
                      engine=pipe)
    if inst is not None:
        inst.write(inst.raw("src"))


def _ext(label: str, p: Any) -> tuple[int, int, int, int]:
    if not isinstance(p, (DataCopyExtParams, DataCopyParams)):
        raise _err(label, "data_copy_params must be an asc.DataCopyExtParams (or "
                   f"asc.DataCopyParams), got {type(p).__name__}")
    return (_num(label, p.block_count, "block_count", 0, 4095),
            _num(label, p.block_len, "block_len", 0, 2097151),
            _num(label, p.src_stride, "src_stride", 0, 2**32 - 1),
            _num(label, p.dst_stride, "dst_stride", 0, 2**32 - 1))


def data_copy_pad(dst: Any, src: Any, data_copy_params: Any = None, pad_params: Any = None,
                  name: str | None = None) -> None:
    """Copy bursts of any whole-element byte length between GM and UB, each UB burst padded
    to 32 bytes (see the module docstring)."""
    label, tensors, starts = run.checked("asc.data_copy_pad", {"dst": dst, "src": src}, name)
    d, s = tensors["dst"], tensors["src"]
    pipe = _path(label, d, s)
    same_dtype(label, tensors, ("dst", "src"))
    if (s.buffer, d.buffer) not in (("gm", "ub"), ("ub", "gm")):
        raise _err(label, f"data_copy_pad copies between GM and UB, not {s.buffer.upper()} -> "
                   f"{d.buffer.upper()}", code="APK308", help="use asc.data_copy")
    bc, bl, ss, ds = _ext(label, data_copy_params)
    size = d.dtype.bits // 8
    per_block = BLOCK // size
    if bl % size:
        raise _err(label, f"block_len is {bl} bytes, not a whole number of {d.dtype} "
                   f"elements ({size} bytes each)", help="give block_len in bytes, a "
                   "multiple of the element size")
    n = bl // size
    gm_in = s.buffer == "gm"
    gm_stride = ss if gm_in else ds
    if gm_stride % size:
        raise _err(label, f"the GM stride is {gm_stride} bytes, not a whole number of "
                   f"{d.dtype} elements", help="give the GM stride as a multiple of the "
                   "element size")
    left = right = 0
    pad = None
    if gm_in:
        if pad_params is None:
            pad_params = DataCopyPadExtParams()
        if not isinstance(pad_params, (DataCopyPadExtParams, DataCopyPadParams)):
            raise _err(label, "pad_params must be an asc.DataCopyPadExtParams, got "
                       f"{type(pad_params).__name__}")
        left = _num(label, pad_params.left_padding, "left_padding", 0, per_block)
        right = _num(label, pad_params.right_padding, "right_padding", 0, per_block)
        pad = pad_params
    elif pad_params is not None:
        raise _err(label, "pad_params applies to GM -> UB only", help="drop pad_params")
    if n == 0 or bc == 0:
        return  # nothing to move
    width = left + n + right  # elements of one UB burst before its filler
    blocks = -(-width // per_block)
    ub_stride = (blocks + (ds if gm_in else ss)) * per_block
    gm_step = n + gm_stride // size
    data_ub = _bursts(bc, n, ub_stride) + left
    data_gm = _bursts(bc, n, gm_step)
    if gm_in:
        fill_rel, fill_values, width_written = _padding(pad, bc, n, left, right, blocks,
                                                        per_block, ub_stride)
        rels = {"dst": np.concatenate([data_ub, fill_rel]), "src": data_gm}
        views = {"dst": _view(d, bc, width_written, ub_stride),
                 "src": _view(s, bc, max(n, 1), gm_step)}
    else:
        fill_rel = fill_values = None
        rels = {"dst": data_gm, "src": data_ub}
        views = {"dst": _view(d, bc, max(n, 1), gm_step),
                 "src": _view(s, bc, max(n, 1), ub_stride)}
    form = rp.Form(None)
    inst = run.finish("asc.data_copy_pad", name, label, tensors, starts, rels, views, form,
                      engine=pipe)
    if inst is None:
        return
    values = inst.raw("src")
    if fill_values is not None:
        first = values.reshape(bc, n)[:, :1]
        values = np.concatenate([values, ex.cast(fill_values(first), inst.tensors["dst"].dtype)])
    inst.write(values)


def _padding(pad: Any, bc: int, n: int, left: int, right: int, blocks: int, per_block: int,
             ub_stride: int) -> tuple[np.ndarray, Any, int]:
    """The UB elements DataCopyPad writes besides the data (relative offsets), a function of
    each burst's first element giving their values, and the elements a burst writes."""
    width = left + n + right
    tail = blocks * per_block - width
    starts = np.arange(bc, dtype=np.int64)[:, None] * ub_stride
    pads = list(range(left)) + list(range(left + n, width))
    value = pad.padding_value
    if left or right:
        if not pad.is_pad:
            return np.empty(0, np.int64), None, width  # pads and filler undefined
        where = pads + list(range(width, width + tail))
        rel = (starts + np.asarray(where, np.int64)).ravel()
        return rel, lambda first: np.full(rel.size, value), blocks * per_block
    if not tail:
        return np.empty(0, np.int64), None, width
    rel = (starts + np.arange(width, width + tail, dtype=np.int64)).ravel()
    return rel, lambda first: np.repeat(first.ravel(), tail), blocks * per_block
