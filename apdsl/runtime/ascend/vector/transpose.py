"""TransDataTo5HD (pyasc's `trans_data_to_5hd`): 16 x 16 transposes of 32-byte blocks, the
building block of NCHW -> NC1HWC0.

`trans_data_to_5hd(dst_list, src_list, asc.TransDataTo5HDParams(dst_high_half,
src_high_half, repeat_times, dst_rep_stride, src_rep_stride))`: `src_list` and `dst_list` are
16 UB views each (each one's first 32-byte block is used).  For 16-bit dtypes a repeat reads
block i of src_list[i] as row i of a 16 x 16 matrix and writes its column j to dst_list[j]'s
block: `dst_j[i] = src_i[j]`.  Repeat r uses the blocks `r * rep_stride` blocks further, except
that with `repeat_times` 1 the one repeat is already one stride further (the page's note:
set the strides to 0 to start at the lists).  The 8- and 32-bit forms (half blocks, pairs of
blocks) are described only by the page's figures, so apdsl refuses them (APK560).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ....tensor.machine import current
from ...core import execute as ex
from ...core import trace
from ...core.operands import check_operand, instruction_label, tensor_arg
from ...core.resolve import check_live
from ...table import TABLE
from ..dma import check_alignment
from . import repeat as rp
from .params import TransDataTo5HDParams

LIST = 16


def _err(label: str, message: str, code: str = "APK550", **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def trans_data_to_5hd(dst_list: Any, src_list: Any, params: Any,
                      name: str | None = None) -> None:
    """Transpose 16 x 16 blocks of 16-bit data (see the module docstring)."""
    op = "asc.trans_data_to_5hd"
    label = instruction_label(op, name)
    entry = TABLE[op]
    if not isinstance(params, TransDataTo5HDParams):
        raise _err(label, "params must be an asc.TransDataTo5HDParams, got "
                   f"{type(params).__name__}")
    lists = {}
    for role, seq in (("dst", dst_list), ("src", src_list)):
        if not isinstance(seq, (list, tuple)) or len(seq) != LIST:
            raise _err(label, f"{role}_list must be a list of 16 UB tensors, got "
                       f"{type(seq).__name__}" + (f" of {len(seq)}" if isinstance(
                           seq, (list, tuple)) else ""), help="one view a block: "
                       "[t[i * 16:(i + 1) * 16] for i in range(16)] for half data")
        views = [tensor_arg(t, label, f"{role}_list[{i}]") for i, t in enumerate(seq)]
        for t in views:
            check_live(t, label, f"{role}_list")
            check_operand(entry, label, f"{role}_list", t)
            check_alignment(t, label, role)
        lists[role] = views
    dtypes = {t.dtype.name for v in lists.values() for t in v}
    if len(dtypes) > 1:
        raise _err(label, f"the tensors' dtypes differ ({', '.join(sorted(dtypes))})",
                   code="APK556")
    bits = lists["dst"][0].dtype.bits
    if bits != 16:
        raise _err(label, f"{lists['dst'][0].dtype} is {bits}-bit; apdsl models the 16-bit "
                   "form only (the page gives the 8- and 32-bit layouts as figures alone)",
                   code="APK560", help="transpose 16-bit data, or view 32-bit data as pairs "
                   "of 16-bit values where that is what you mean")
    repeats = rp._int(params.repeat_times, label, "repeat_times", 0, rp.MAX_REPEATS)
    strides = {"dst": rp._int(params.dst_rep_stride, label, "dst_rep_stride", 0, 65535),
               "src": rp._int(params.src_rep_stride, label, "src_rep_stride", 0, 65535)}
    if repeats == 0:
        return
    per_block = rp.BLOCK_BYTES * 8 // bits
    steps = np.arange(1, 2) if repeats == 1 else np.arange(repeats)  # the page's note
    offs: dict[str, list[np.ndarray]] = {}
    for role, views in lists.items():
        offs[role] = []
        for i, t in enumerate(views):
            start = rp.start_of(t, label, f"{role}_list[{i}]")
            rel = steps[:, None] * strides[role] * per_block + np.arange(per_block)
            rp.check_bounds(label, f"{role}_list[{i}]", t, rel, rp.Form(None))
            offs[role].append(rel + start)
    same = {id(t.storage) for t in lists["dst"]} & {id(t.storage) for t in lists["src"]}
    d_all = np.concatenate([o.ravel() for o in offs["dst"]])
    if np.unique(d_all).size != d_all.size or (same and np.intersect1d(
            d_all, np.concatenate([o.ravel() for o in offs["src"]])).size):
        raise _err(label, "the destination blocks overlap each other or the source blocks",
                   code="APK553", help="give the 16 destinations separate blocks")
    record = {}
    for role, views in lists.items():
        for i, t in enumerate(views):
            lo = int(offs[role][i].min()) - int(t.layout.offset)
            hi = int(offs[role][i].max()) - int(t.layout.offset)
            record[f"{role}{i}" if role == "src" else f"dst{i}"] = t.ap(
                [[1, hi - lo + 1]], offset=lo)
    # the destinations first (the trace's first operand decides the family)
    trace.record(op, name, record, engine="V")
    if current().check:
        return
    src = np.stack([ex.read(_acc(t, o), label, "src") for t, o in
                    zip(lists["src"], offs["src"])])        # (16 rows, repeats, 16)
    for j, (t, o) in enumerate(zip(lists["dst"], offs["dst"])):
        ex.store(_acc(t, o), src[:, :, j].T)               # dst_j[r, i] = src_i[r, j]


def _acc(t: Any, offs: np.ndarray) -> Any:
    return ex.Indexed(t.name, t.storage, t.dtype, offs.shape, None, offs)
