"""Transpose (pyasc's `transpose`): the 16 x 16 transpose of 16-bit data and, with a scratch
buffer and `asc.TransposeParamsExt`, NCHW -> NHWC.

- `transpose(dst, src)`: the 256 elements from src's start are a 16 x 16 matrix of uint16,
  int16 or half (the Atlas A2 dtypes); dst's 256 elements from its start get its transpose,
  `dst[i * 16 + j] = src[j * 16 + i]`.  src and dst may be the same tensor (the page allows
  the reuse); a partial overlap is APK553.
- `transpose(dst, src, shared_tmp_buffer, params)` with `params.transpose_type`
  TRANSPOSE_NCHW2NHWC: src's first n * c * h * w elements are [N, C, H, W]; dst gets them as
  [N, H, W, C], `dst[n, h, w, c] = src[n, c, h, w]`, for the Atlas A2 dtypes int8, uint8,
  int16, uint16, half, int32, uint32, float.  src and dst must not overlap (the page forbids
  the reuse for this type).  `shared_tmp_buffer` is a uint8 tensor of at least the page's
  size: (c + 2) * 32 * 32 * 1 B for 8-bit data, (c + 2) * 16 * 16 * 2 B for 16-bit and
  (c + 2) * 16 * 8 * 4 B for 32-bit, so (c + 2) KiB or (c + 2) * 512 B; the instruction uses
  it as scratch, so it is recorded as written (its bytes are the instruction's while it runs).
  The pages reachable give no rule for shapes whose planes or pixels are not whole 32-byte
  blocks, so apdsl asks h * w and c to be multiples of a block's elements (APK560 otherwise),
  rather than guess what the hardware does with a partial block.
- TRANSPOSE_ND2ND_B16 and TRANSPOSE_NHWC2NCHW are APK560: the pages reachable do not say what
  ND2ND_B16's shape fields mean, nor NHWC2NCHW's scratch size for 16- and 32-bit data.
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
from .params import TransposeParamsExt

SIDE = 16  # the plain form's matrix is 16 x 16
# bytes of scratch per channel (+ 2) for NCHW2NHWC, by element bits (the page's table)
SCRATCH = {8: 32 * 32 * 1, 16: 16 * 16 * 2, 32: 16 * 8 * 4}
SIXTEEN = frozenset({"uint16", "int16", "float16"})
MODELLED = "TRANSPOSE_NCHW2NHWC"


def _err(label: str, message: str, code: str = "APK550", **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _operand(op: str, label: str, role: str, t: Any) -> Any:
    t = tensor_arg(t, label, role)
    check_live(t, label, role)
    check_operand(TABLE[op], label, role, t)
    check_alignment(t, label, role)
    return t


def _range(label: str, role: str, t: Any, n: int) -> np.ndarray:
    """The storage elements of t's first n elements (APK552 when t holds fewer)."""
    rel = np.arange(n)
    rp.check_bounds(label, role, t, rel, rp.Form(n))
    return rel + rp.start_of(t, label, role)


def transpose(dst: Any, src: Any, shared_tmp_buffer: Any = None, params: Any = None,
              name: str | None = None) -> None:
    """Transpose (see the module docstring)."""
    op = "asc.transpose"
    label = instruction_label(op, name)
    d, s = _operand(op, label, "dst", dst), _operand(op, label, "src", src)
    if d.dtype.name != s.dtype.name:
        raise _err(label, f"dst is {d.dtype} and src {s.dtype}; Transpose keeps the dtype",
                   code="APK556")
    if shared_tmp_buffer is None and params is None:
        _plain(op, label, name, d, s)
        return
    if shared_tmp_buffer is None or params is None:
        raise _err(label, "the extended form takes both shared_tmp_buffer and params",
                   help="transpose(dst, src) or transpose(dst, src, tmp, "
                   "asc.TransposeParamsExt(...))")
    if not isinstance(params, TransposeParamsExt):
        raise _err(label, "params must be an asc.TransposeParamsExt, got "
                   f"{type(params).__name__}")
    tmp = _operand(op, label, "shared_tmp_buffer", shared_tmp_buffer)
    _nchw_to_nhwc(op, label, name, d, s, tmp, params)


def _plain(op: str, label: str, name: str | None, d: Any, s: Any) -> None:
    if d.dtype.name not in SIXTEEN:
        raise _err(label, f"{d.dtype}: the 16 x 16 transpose takes uint16, int16 or half on "
                   "Atlas A2", code="APK462", help="the extended form (TransposeParamsExt) "
                   "takes other dtypes")
    n = SIDE * SIDE
    offs = {"dst": _range(label, "dst", d, n), "src": _range(label, "src", s, n)}
    if d.storage is s.storage and offs["dst"][0] != offs["src"][0] and \
            abs(int(offs["dst"][0]) - int(offs["src"][0])) < n:
        raise _err(label, "dst and src overlap in part; the page allows only the same tensor "
                   "for both", code="APK553", help="give dst the same start as src, or "
                   "separate elements")
    if _record(op, name, {"dst": (d, offs["dst"]), "src": (s, offs["src"])}):
        return
    m = ex.read(_acc(s, offs["src"]), label, "src").reshape(SIDE, SIDE)
    ex.store(_acc(d, offs["dst"]), m.T.ravel())


def _nchw_to_nhwc(op: str, label: str, name: str | None, d: Any, s: Any, tmp: Any,
                  params: TransposeParamsExt) -> None:
    kind = str(getattr(params.transpose_type, "name", params.transpose_type))
    kind = kind.rpartition(".")[2]
    if kind != MODELLED:
        raise _err(label, f"transpose_type {kind}: apdsl models TRANSPOSE_NCHW2NHWC only (the "
                   "pages reachable leave ND2ND_B16's shape fields and NHWC2NCHW's scratch "
                   "size for 16- and 32-bit data open)", code="APK560",
                   help="transpose 16 x 16 blocks with transpose(dst, src), or use "
                   "TRANSPOSE_NCHW2NHWC")
    sizes = {f: rp._int(getattr(params, f), label, f, 0, 65535)
             for f in ("n_size", "c_size", "h_size", "w_size")}
    n, c, h, w = sizes.values()
    if tmp.dtype.name != "uint8":
        raise _err(label, f"shared_tmp_buffer is {tmp.dtype}; it is a uint8 tensor",
                   code="APK462", help="alloc the scratch as asc.uint8")
    per_block = rp.BLOCK_BYTES * 8 // d.dtype.bits
    for what, v in (("h_size * w_size", h * w), ("c_size", c)):
        if v % per_block:
            raise _err(label, f"{what} is {v}, not a whole number of 32-byte blocks of "
                       f"{d.dtype} ({per_block} elements); the pages reachable do not say "
                       "what the hardware does with a partial block", code="APK560",
                       help=f"pad {what} to a multiple of {per_block}")
    total = n * c * h * w
    offs = {"dst": _range(label, "dst", d, total), "src": _range(label, "src", s, total),
            "shared_tmp_buffer": _range(label, "shared_tmp_buffer", tmp,
                                        (c + 2) * SCRATCH[d.dtype.bits])}
    if total and d.storage is s.storage and np.intersect1d(offs["dst"], offs["src"]).size:
        raise _err(label, "dst and src overlap; TRANSPOSE_NCHW2NHWC does not allow the reuse",
                   code="APK553", help="give dst its own buffer")
    if not total:
        return
    if _record(op, name, {"dst": (d, offs["dst"]), "src": (s, offs["src"]),
                          "shared_tmp_buffer": (tmp, offs["shared_tmp_buffer"])}):
        return
    x = ex.read(_acc(s, offs["src"]), label, "src").reshape(n, c, h, w)
    ex.store(_acc(d, offs["dst"]), x.transpose(0, 2, 3, 1).ravel())


def _record(op: str, name: str | None, parts: dict[str, tuple[Any, np.ndarray]]) -> bool:
    """Record the instruction on pipe V, each operand the elements it touches; True in check
    mode (nothing moves)."""
    views = {}
    for role, (t, offs) in parts.items():
        lo = int(offs.min()) - int(t.layout.offset)
        views[role] = t.ap([[1, int(offs.max()) - int(offs.min()) + 1]], offset=lo)
    trace.record(op, name, views, engine="V")
    return bool(current().check)


def _acc(t: Any, offs: np.ndarray) -> Any:
    return ex.Indexed(t.name, t.storage, t.dtype, offs.shape, None, offs)
