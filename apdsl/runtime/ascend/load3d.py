"""`asc.load_data(dst, src, asc.LoadData3DParamsV2(...))`: LoadData 3D v2, the img2col move
of a convolution's feature map from L1 to L0A on pipe MTE1 (AscendC "LoadData（卷积数据搬运）",
Atlas A2).

`src` is the feature map in L1: an `NC1HWC0` tensor (logical (1, C, H, W), C a multiple of
C0) or an ND tensor (C1, H, W, C0), with C0 = 32 bytes of the dtype.  The instruction unrolls
it (`semantics_cube.img2col`: row m = output position, column k = ((c1 * Kh + kh) * Kw + kw)
* C0 + c0, padding `pad_list` = [left, right, top, bottom] of `pad_value`) and writes the
window of `m_extension` rows from `m_start_pt` and `k_extension` columns from `k_start_pt` to
the top-left of `dst`, an L0A matrix (ZZ).  Rows of the window past the last output position
are not written (the page does not say what they hold).  Any of l1_h, l1_w, channel_size,
k_extension, m_extension or a filter size 0 makes it a no-op, as the page says.

Not modelled, refused (APK517): `en_transpose` (the b16/b32 transposed fractals), L0B as the
destination (Atlas A2 transposes on that path), `filter_size_w/h` (+256), `f_matrix_ctrl`
(SetFmatrix's right-matrix registers), and the channel sizes that are not whole C0 blocks
(4 and 8 for half, ...).  The L1 -> L0B and plain L1 -> L0A moves of a matmul are `dma_copy`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor import formats
from ...tensor.tla import fractal_view, region, valid_shape
from ..core import execute as ex
from ..core import trace
from ..core.operands import check_operand, instruction_label, resolve_operands, tensor_arg
from ..table import TABLE
from ..table import semantics_cube as sc
from ..table.entries.cube import LOAD3D
from .cube_params import LoadData2DParams, LoadData3DParamsV2
from .dma import check_alignment, shape_text

OP = "asc.load_data"


def _err(code: str, label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _int(label: str, value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not lo <= int(value) <= hi:
        raise _err("APK516", label, f"{what} is {value!r}; it must be an integer in "
                   f"[{lo}, {hi}]", help=f"give {what} in the range LoadData3DParamsV2 takes")
    return int(value)


def _unmodelled(label: str, p: LoadData3DParamsV2) -> None:
    for field, what in (("en_transpose", "the transposed load (enTranspose)"),
                        ("filter_size_w", "filterSizeW (a kernel 256 wider)"),
                        ("filter_size_h", "filterSizeH (a kernel 256 taller)"),
                        ("f_matrix_ctrl", "fMatrixCtrl (the right matrix's FeatureMap "
                         "registers)")):
        if getattr(p, field) is not False:
            raise _err("APK517", label, f"{field}={getattr(p, field)!r}: {what} is not "
                       "modelled", help=f"leave {field} False")


def load_data(dst: Any, src: Any, params: Any = None, name: str | None = None) -> None:
    """img2col of L1 feature map `src` into L0A matrix `dst` (see the module docstring)."""
    if isinstance(params, LoadData2DParams):
        from .flat import load2d  # whole fractals, L1/GM -> L0A/L0B (pyasc's cube path)
        load2d(dst, src, params, name)
        return
    _load3d(dst, src, params, name)


def _load3d(dst: Any, src: Any, params: Any, name: str | None) -> None:
    label = instruction_label(OP, name)
    d, s = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    if s.buffer != "l1":
        raise _err("APK517", label, f"LoadData 3D reads a feature map in L1, not "
                   f"{s.buffer.upper()}", help="copy the map GM -> L1 first")
    if d.buffer == "l0b":
        raise _err("APK517", label, "LoadData 3D into L0B is not modelled (on Atlas A2 that "
                   "path transposes)", help="load the feature map into L0A and the weights "
                   "into L0B with dma_copy")
    entry = TABLE[OP]
    check_operand(entry, label, "dst", d)
    check_operand(entry, label, "src", s)
    if not isinstance(params, LoadData3DParamsV2):
        raise _err("APK516", label, "params must be an asc.LoadData3DParamsV2, got "
                   f"{type(params).__name__}", help="asc.LoadData3DParamsV2(pad_list, l1_h, "
                   "l1_w, channel_size, k_extension, m_extension, ...); a plain L1 -> L0 move "
                   "is dma_copy")
    p = params
    _unmodelled(label, p)
    if d.dtype != s.dtype:
        raise _err("APK516", label, f"src is {s.dtype}, dst is {d.dtype}; LoadData does not "
                   "convert")
    if d.dtype.name not in LOAD3D:
        raise _err("APK516", label, f"LoadData 3D does not move {d.dtype} data",
                   notes=[f"its dtypes on Atlas A2: {', '.join(LOAD3D)}"])
    c0 = formats.c0_for(s.dtype)
    pads = tuple(_int(label, v, "pad_list entry", 0, 255) for v in _four(label, p.pad_list))
    l1_h = _int(label, p.l1_h, "l1_h", 0, 32767)
    l1_w = _int(label, p.l1_w, "l1_w", 0, 32767)
    channels = _int(label, p.channel_size, "channel_size", 0, 65535)
    k_ext = _int(label, p.k_extension, "k_extension", 0, 65535)
    m_ext = _int(label, p.m_extension, "m_extension", 0, 65535)
    k_start = _int(label, p.k_start_pt, "k_start_pt", 0, 65535)
    m_start = _int(label, p.m_start_pt, "m_start_pt", 0, 32767)
    stride = (_int(label, p.stride_h, "stride_h", 1, 63), _int(label, p.stride_w, "stride_w", 1, 63))
    kernel = (_int(label, p.filter_h, "filter_h", 0, 255), _int(label, p.filter_w, "filter_w", 0, 255))
    dil = (_int(label, p.dilation_filter_h, "dilation_filter_h", 1, 255),
           _int(label, p.dilation_filter_w, "dilation_filter_w", 1, 255))
    flat = d.ndim == 1  # pyasc's LocalTensors: the parameters say how the bytes are laid out
    if flat:
        s, d = _flat_operands(label, s, d, c0, l1_h, l1_w, channels, m_ext, k_ext)
    fm_view, c1 = _feature_map(label, s, c0, l1_h, l1_w, channels)
    check_alignment(d, label, "dst")
    check_alignment(s, label, "src")
    if 0 in (l1_h, l1_w, channels, k_ext, m_ext) or 0 in kernel:
        return  # a no-op (the page)
    ho = sc.conv_out(l1_h, pads[2] + pads[3], kernel[0], dil[0], stride[0])
    wo = sc.conv_out(l1_w, pads[0] + pads[1], kernel[1], dil[1], stride[1])
    k_total = c1 * kernel[0] * kernel[1] * c0
    if ho <= 0 or wo <= 0:
        raise _err("APK516", label, f"the kernel does not fit the padded {l1_h} x {l1_w} map: "
                   f"{ho} x {wo} output positions")
    if k_start % c0 or (k_ext % c0 and k_start + k_ext != k_total) \
            or k_start + k_ext > k_total:
        raise _err("APK516", label, f"the K window [{k_start}, {k_start + k_ext}) of the "
                   f"{k_total} unrolled columns does not start on a C0 ({c0}) boundary, or "
                   "ends inside a block short of the last, or passes the end",
                   help=f"k_start_pt and k_extension in multiples of {c0}")
    vd = valid_shape(d)
    if d.ndim != 2 or (d.format != "ZZ" and not flat) or m_ext > vd[0] or k_ext > vd[1]:
        raise _err("APK516", label, f"dst {d.name} is a {d.ndim}-d {d.format} tensor "
                   f"{shape_text(vd)}; LoadData writes an m_extension x k_extension = {m_ext} x "
                   f"{k_ext} block of a ZZ matrix in L0A")
    rows = max(0, min(m_ext, ho * wo - m_start))
    if rows == 0:
        return
    dv = region(d, (rows, k_ext), op=label, role="dst")
    accs = resolve_operands(label, ex.TI_GROUP, ("src", fm_view), ("dst", dv))
    trace.record(OP, name, {"dst": dv, "src": fm_view})
    if accs is None:
        return
    fm = _unroll_input(ex.read(accs[0], label, "src"), s, c1, c0, l1_h, l1_w)
    pad = ex.cast(np.asarray([p.pad_value]), s.dtype)[0]
    full = sc.img2col(fm, pads, pad, stride, kernel, dil)
    block = full[m_start:m_start + rows, k_start:k_start + k_ext]
    ex.prepare_write(accs[1], label, "dst")
    ex.store(accs[1], block)


def _flat_operands(label: str, s: Any, d: Any, c0: int, h: int, w: int, channels: int,
                   m_ext: int, k_ext: int) -> tuple[Any, Any]:
    """pyasc's flat operands as the views LoadData reads and writes: the L1 map as ND (C1, H,
    W, C0) from the source's start, the L0A window as a ZZ matrix from the destination's."""
    if s.ndim != 1:
        raise _err("APK516", label, f"dst {d.name} is a flat LocalTensor but src {s.name} is "
                   f"{s.ndim}-d; give both as LocalTensors, or both as views")
    if channels % c0 or 0 in (h, w, channels, m_ext, k_ext):
        return s, d  # the no-op and the channel rule are reported as for views
    need = channels * h * w
    if need > s.size:
        raise _err("APK516", label, f"src {s.name} holds {s.size} elements; a {channels}-channel "
                   f"{h} x {w} map needs {need}")
    fm = s[0:need].reshape((channels // c0, h, w, c0))
    return fm, fractal_view(d, "ZZ", (m_ext, k_ext), label, "dst")


def _four(label: str, pads: Any) -> tuple[Any, ...]:
    try:
        out = tuple(pads)
    except TypeError:
        out = ()
    if len(out) != 4:
        raise _err("APK516", label, f"pad_list is {pads!r}; it is [left, right, top, bottom]")
    return out


def _feature_map(label: str, s: Any, c0: int, h: int, w: int, channels: int) -> tuple[Any, int]:
    """The view of `s` holding the feature map, and its C1."""
    if s.format == "NC1HWC0" and s.ndim == 4:
        n, c, fh, fw = s.shape
        if n != 1 or c % c0:
            raise _err("APK517", label, f"src {s.name} is NC1HWC0 {shape_text(s.shape)}; "
                       f"apdsl takes one image (N = 1) of whole C0 blocks ({c0} channels)",
                       help="declare the L1 map with C a multiple of C0, or as ND (C1, H, W, C0)")
        c1 = c // c0
    elif s.format == "ND" and s.ndim == 4 and s.shape[3] == c0:
        c1, fh, fw = s.shape[0], s.shape[1], s.shape[2]
    else:
        raise _err("APK516", label, f"src {s.name} is a {s.ndim}-d {s.format} tensor "
                   f"{shape_text(s.shape)}; LoadData reads a feature map in L1 as NC1HWC0 "
                   f"(1, C, H, W) or ND (C1, H, W, {c0})")
    if (fh, fw) != (h, w) and 0 not in (h, w):
        raise _err("APK516", label, f"l1_h x l1_w is {h} x {w}, but src {s.name} is {fh} x "
                   f"{fw}", help=f"l1_h={fh}, l1_w={fw}")
    if channels % c0:
        raise _err("APK517", label, f"channel_size {channels} is not whole C0 blocks of {c0}; "
                   "the 4- and 8-channel forms are not modelled")
    if channels and channels != c1 * c0:
        raise _err("APK516", label, f"channel_size is {channels}, but src {s.name} holds "
                   f"{c1 * c0} channels", help=f"channel_size={c1 * c0}")
    return s, c1


def _unroll_input(values: np.ndarray, s: Any, c1: int, c0: int, h: int, w: int) -> np.ndarray:
    """The map as (C1, H, W, C0) from the view's logical values."""
    if s.format == "NC1HWC0":
        return values.reshape(c1, c0, h, w).transpose(0, 2, 3, 1)
    return values.reshape(c1, h, w, c0)
