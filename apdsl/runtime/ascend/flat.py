"""The cube path's moves on flat buffers, as pyasc writes them: `data_copy(dst, src,
asc.Nd2NzParams(...))` (GM -> L1 with the ND -> NZ conversion, pipe MTE2) and `load_data(dst,
src, asc.LoadData2DParams(...))` (L1 or GM -> L0A/L0B, whole 512-byte fractals, pipe MTE1 from
L1 and MTE2 from GM).  A pyasc LocalTensor is a start address and a length; these
instructions' parameters say where each element goes, so apdsl builds the access patterns
they describe over the operands' storage and moves the elements (AscendC's DataCopy
"GMToL1随路转换-ND2NZ" and "LoadData（2D矩阵搬运）" pages, Atlas A2).

Nd2Nz: for matrix i < nd_num, row r < n_value, column c < d_value, GM element
`i * src_nd_matrix_stride + r * src_d_value + c` goes to L1 element `i * dst_nz_matrix_stride +
(c // C0) * dst_nz_c0_stride * C0 + r * dst_nz_n_stride * C0 + c % C0` (C0 = 32 bytes of the
dtype); columns d_value .. the next multiple of C0 are written with zeros (the page: a row that
is not whole 32 bytes is padded with 0).  Writes that land on the same L1 element twice are
refused (APK405): the page says hardware does not order them.

LoadData 2D: fractal i < repeat_times of the source, `start_index + i * src_stride` fractals
from its start, goes to fractal `i * (1 + dst_gap)` of the destination, as stored (its written
state too: a fractal's unwritten rows arrive unwritten, as `dma_copy`'s LoadData moves them);
`if_transpose` transposes each 16 x 16 fractal (16-bit data, from L1 only).  `addr_mode` 1
(decreasing indices) is a GM -> L1 feature the page lists for that path only: refused here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ..core import execute as ex
from ..core import trace
from ..core.operands import resolve_operands
from .cube_params import LoadData2DParams, Nd2NzParams
from .vector import run

BLOCK_BYTES = 32
FRACTAL_BYTES = 512
COPY = "asc.data_copy"
LOAD = "asc.load_data"


def _err(code: str, label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _int(label: str, value: Any, what: str, lo: int, hi: int, record: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not lo <= int(value) <= hi:
        raise _err("APK672", label, f"{record}.{what} is {value!r}; it must be an integer in "
                   f"[{lo}, {hi}]", help=f"give {what} in the range AscendC documents")
    return int(value)


def _move(label: str, op: str, name: str | None, dv: Any, sv: Any, values: Any) -> None:
    """Record the move (its pipe from the entry's routes) and write dst: `values(src_access)`
    the elements, or None to move the source as stored, written state too."""
    accs = resolve_operands(label, ex.TI_GROUP, ("src", sv), ("dst", dv))
    trace.record(op, name, {"dst": dv, "src": sv})
    if accs is None:
        return
    sacc, dacc = accs
    ex.prepare_write(dacc, label, "dst")
    if values is None:
        if type(dacc) is ex.Strided and type(sacc) is ex.Strided:
            ex.strided_copy(dacc.array(), sacc.array(), False, dacc.dtype)
        else:
            dacc.write(sacc.read().reshape(dacc.shape))
        ex.copy_written(dacc, sacc)
        return
    ex.store(dacc, values(sacc))


def nd2nz(dst: Any, src: Any, params: Nd2NzParams, name: str | None) -> None:
    """`data_copy(dst, src, asc.Nd2NzParams(...))`: GM -> L1 with ND -> NZ (module docstring)."""
    label, tensors, _ = run.checked(COPY, {"dst": dst, "src": src}, name)
    d, s = tensors["dst"], tensors["src"]
    if (s.buffer, d.buffer) != ("gm", "l1"):
        raise _err("APK673", label, f"data_copy with Nd2NzParams goes GM -> L1, not "
                   f"{s.buffer.upper()} -> {d.buffer.upper()}", notes=[
                       "apdsl models DataCopy's ND -> NZ conversion on the GM -> L1 path (A1 "
                       "or B1 LocalTensors)"], help="copy into an A1 or B1 LocalTensor")
    if d.dtype != s.dtype:
        raise _err("APK673", label, f"src is {s.dtype}, dst is {d.dtype}; DataCopy does not "
                   "convert")
    rec = "Nd2NzParams"
    nd = _int(label, params.nd_num, "nd_num", 0, 4095, rec)
    n = _int(label, params.n_value, "n_value", 0, 16384, rec)
    dv = _int(label, params.d_value, "d_value", 0, 65535, rec)
    snd = _int(label, params.src_nd_matrix_stride, "src_nd_matrix_stride", 0, 65535, rec)
    sd = _int(label, params.src_d_value, "src_d_value", 1, 65535, rec)
    c0s = _int(label, params.dst_nz_c0_stride, "dst_nz_c0_stride", 1, 16384, rec)
    ns = _int(label, params.dst_nz_n_stride, "dst_nz_n_stride", 1, 16384, rec)
    dms = _int(label, params.dst_nz_matrix_stride, "dst_nz_matrix_stride", 0, 16384, rec)
    if d.dtype.bits < 8:
        raise _err("APK673", label, "Nd2Nz of 4-bit data is not modelled (the page sets its "
                   "parameters in bytes)")
    if 0 in (nd, n, dv):
        return  # a no-op (the page)
    c0 = BLOCK_BYTES * 8 // d.dtype.bits
    d1 = -(-dv // c0)
    sview = s.ap([[snd, nd], [sd, n], [1, dv]], offset=0)
    dview = d.ap([[dms, nd], [c0s * c0, d1], [ns * c0, n], [1, c0]], offset=0)
    for role, t, view in (("src", s, sview), ("dst", d, dview)):
        lo, hi = view.layout.span()
        if hi >= int(t.layout.offset) + int(t.size):
            raise _err("APK672", label, f"{role} {t.name} has {t.size} elements, but the "
                       f"Nd2NzParams reach its element {hi - int(t.layout.offset)}",
                       help="make the tensor large enough or lower the sizes and strides")

    def values(sacc: ex.Access) -> np.ndarray:
        rows = ex.read(sacc, label, "src").reshape(nd, n, dv)
        wide = np.zeros((nd, n, d1 * c0), rows.dtype)
        wide[:, :, :dv] = rows
        return wide.reshape(nd, n, d1, c0).transpose(0, 2, 1, 3)

    _move(label, COPY, name, dview, sview, values)


def load2d(dst: Any, src: Any, params: LoadData2DParams, name: str | None) -> None:
    """`load_data(dst, src, asc.LoadData2DParams(...))`: whole fractals (module docstring)."""
    label, tensors, _ = run.checked(LOAD, {"dst": dst, "src": src}, name)
    d, s = tensors["dst"], tensors["src"]
    rec = "LoadData2DParams"
    start = _int(label, params.start_index, "start_index", 0, 65535, rec)
    reps = _int(label, params.repeat_times, "repeat_times", 0, 255, rec)
    stride = _int(label, params.src_stride, "src_stride", 0, 65535, rec)
    _int(label, params.sid, "sid", 0, 65535, rec)
    gap = _int(label, params.dst_gap, "dst_gap", 0, 65535, rec)
    mode = _int(label, params.addr_mode, "addr_mode", 0, 1, rec)
    transpose = params.if_transpose
    if transpose not in (True, False):
        raise _err("APK672", label, f"LoadData2DParams.if_transpose is {transpose!r}; it is "
                   "True or False")
    if d.dtype != s.dtype:
        raise _err("APK673", label, f"src is {s.dtype}, dst is {d.dtype}; LoadData does not "
                   "convert")
    if mode:
        raise _err("APK673", label, "addr_mode=1 (decreasing fractal indices) is for GM -> L1 "
                   "on the LoadData page; L1/GM -> L0 keeps it 0", help="addr_mode=0")
    if transpose and (s.buffer != "l1" or d.dtype.bits != 16):
        raise _err("APK673", label, f"if_transpose on a {d.dtype} load from "
                   f"{s.buffer.upper()}: only L1 -> L0A/L0B of 16-bit data transposes",
                   notes=["the LoadData page: transposing needs the L1 path and b16 data"],
                   help="transpose 16-bit data from L1, or arrange other data before")
    if d.dtype.bits < 8:
        raise _err("APK673", label, "LoadData 2D of 4-bit data is not modelled")
    size = d.dtype.bits // 8
    if int(d.layout.offset) * size % FRACTAL_BYTES:
        raise _err("APK523", label, f"dst {d.name} starts at byte {int(d.layout.offset) * size} "
                   f"of {d.buffer.upper()}; LoadData writes L0A/L0B from a 512-byte boundary",
                   help="place the L0 LocalTensor at an address that is a multiple of 512")
    if reps == 0:
        return  # a no-op (the page)
    frac = FRACTAL_BYTES // size
    if transpose:
        sview = s.ap([[stride * frac, reps], [16, 16], [1, 16]], offset=start * frac)
        dview = d.ap([[(1 + gap) * frac, reps], [1, 16], [16, 16]], offset=0)
    else:
        sview = s.ap([[stride * frac, reps], [1, frac]], offset=start * frac)
        dview = d.ap([[(1 + gap) * frac, reps], [1, frac]], offset=0)
    for role, t, view in (("src", s, sview), ("dst", d, dview)):
        lo, hi = view.layout.span()
        if hi >= int(t.layout.offset) + int(t.size):
            raise _err("APK672", label, f"{role} {t.name} has {t.size} elements "
                       f"({int(t.size) // frac} fractals), but the LoadData2DParams reach its "
                       f"element {hi - int(t.layout.offset)}", help="make the tensor large "
                       "enough or lower start_index, repeat_times, src_stride or dst_gap")
    _move(label, LOAD, name, dview, sview, None)
