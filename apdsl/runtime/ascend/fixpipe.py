"""`asc.fixpipe`: L0C -> GM (or L1) on pipe FIX, with ReLU, quantisation and NZ -> ND on the
way (pyasc's `fixpipe(dst, src, params, config)` and `fixpipe(dst, src, cbuf_workspace,
params, config)`; AscendC's Fixpipe with `FixpipeParamsV220` on Atlas A2).

It moves the top-left `m_size` x `n_size` block of the L0C matrix `src` (NZ, float32 or
int32) to the same block of `dst`, converting as `quant_pre` says (`semantics_cube.quantise`:
F322F16, F322BF16, DEQF16/REQ8/QF322B8_PRE with one parameter `deq_scalar`, their V forms with
one parameter per column read from `cbuf_workspace`, an L1 tensor of int64 words).  The output
layout is the destination's: `config` row-major needs an ND destination (the NZ -> ND
conversion), `cfg_nz()` an NZ one.  The strides of `params` must be the views' own
(`src_stride`: the rows of the L0C matrix, the distance between its fractal columns;
`dst_stride`: the destination's row pitch in elements), so what apdsl computes is what the
instruction moves.  `unit_flag` 2 or 3 reads L0C under the unit flag (`unitflag`); under
`set_atomic_add` the block is added to what GM holds (`atomic`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.tla import fractal_view, region, valid_shape
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace
from ..core.operands import check_operand, instruction_label, resolve_operands, tensor_arg
from ..table import TABLE
from ..table import semantics_cube as sc
from . import atomic, unitflag
from .cube_params import FixpipeConfig, FixpipeParamsV220
from .dma import check_alignment, shape_text

OP = "asc.fixpipe"


def _err(code: str, label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


def _int(label: str, value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not lo <= int(value) <= hi:
        raise _err("APK511", label, f"{what} is {value!r}; it must be an integer in "
                   f"[{lo}, {hi}]", help=f"give {what} in the range FixpipeParamsV220 takes")
    return int(value)


def fixpipe(dst: Any, src: Any, params: Any = None, config: Any = None,
            cbuf_workspace: Any = None, name: str | None = None) -> None:
    """`dst` (GM or L1) <- the `m_size` x `n_size` block of L0C `src`, converted (see the
    module docstring).  pyasc's two overloads: `fixpipe(dst, src, params[, config])` and
    `fixpipe(dst, src, cbuf_workspace, params[, config])` (a tensor third is the workspace)."""
    label = instruction_label(OP, name)
    if isinstance(params, Tensor):  # the second overload, by position
        params, config, cbuf_workspace = config, cbuf_workspace, params
    d, s = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    entry = TABLE[OP]
    check_operand(entry, label, "dst", d)
    check_operand(entry, label, "src", s)
    if not isinstance(params, FixpipeParamsV220):
        raise _err("APK511", label, "params must be an asc.FixpipeParamsV220, got "
                   f"{type(params).__name__}", help="asc.FixpipeParamsV220(n_size, m_size, "
                   "src_stride, dst_stride, ...)")
    mode = str(params.quant_pre)
    if d.ndim == 1 and s.ndim == 1:  # pyasc's LocalTensor and GlobalTensor
        m, n, dv, sv = _flat(label, params, config, d, s)
        _check_dtypes(label, mode, d, s)
    else:
        layout = _layout(label, config, d)
        m, n = _sizes(label, params, d, s)
        _check_dtypes(label, mode, d, s)
        for role, t in (("dst", d), ("src", s)):
            check_alignment(t, label, role)
        _check_strides(label, params, d, s, m, n, layout)
        dv = sv = None
    relu = params.relu_en
    if relu is not True and relu is not False:
        raise _err("APK511", label, f"relu_en is {relu!r}; it must be True or False")
    uf = unitflag.flag_arg(label, params.unit_flag)
    work = _workspace(label, mode, cbuf_workspace, n)
    scale = np.float32(1)
    if mode in sc.SCALED and work is None:  # one parameter, a program value: checked now
        scale = _scale(label, mode, np.asarray(params.deq_scalar).astype(np.int64),
                       d.dtype.name, "APK514", "APK512")
    atomic.check_dtype(label, d)
    if m == 0 or n == 0:
        return
    if dv is None:
        dv = region(d, (m, n), op=label, role="dst")
        sv = region(s, (m, n), op=label, role="src")
    pairs = [("src", sv), ("dst", dv)] + ([("cbuf_workspace", work)] if work is not None else [])
    accs = resolve_operands(label, ex.TI_GROUP, *pairs)
    unitflag.before_read(label, sv, uf)
    trace.record(OP, name, {"dst": dv, "src": sv,
                            **({"cbuf_workspace": work} if work is not None else {})})
    unitflag.after_read(sv, uf)
    if accs is None:
        return
    values = ex.read(accs[0], label, "src").reshape(m, n)
    if work is not None:  # one parameter a column, read from L1: the data decide (APK528)
        scale = _scale(label, mode, ex.read(accs[2], label, "cbuf_workspace").reshape(n),
                       d.dtype.name, "APK528", "APK528")
    out = sc.quantise(values, mode, scale, relu, d.dtype.name)
    dacc = accs[1]
    out = atomic.combine(dacc, out, label, d)
    ex.prepare_write(dacc, label, "dst")
    ex.store(dacc, out)


def _flat(label: str, p: FixpipeParamsV220, config: Any, d: Tensor,
          s: Tensor) -> tuple[int, int, Tensor | None, Tensor | None]:
    """pyasc's operands (a start address and a length): the L0C matrix is NZ from `src`'s
    start, its fractal columns `src_stride` rows apart (16 elements a row); row-major
    (`cfg_row_major()`) puts row i of the block at `dst` element `i * dst_stride` (NZ -> ND);
    `cfg_nz()` keeps the fractals, column j's `dst_stride` 32-byte blocks apart (16-bit
    results, whose C0 is L0C's 16).  The views (None, None when m_size or n_size is 0)."""
    if config is None:
        config = FixpipeConfig()
    if not isinstance(config, FixpipeConfig):
        raise _err("APK511", label, "config must be an asc.FixpipeConfig, got "
                   f"{type(config).__name__}")
    layout = str(config.layout)
    n = _int(label, p.n_size, "n_size", 0, 4095)
    m = _int(label, p.m_size, "m_size", 0, 65535)
    rows = _int(label, p.src_stride, "src_stride", 0, 65535)
    pitch = _int(label, p.dst_stride, "dst_stride", 0, 2**32 - 1)
    if _int(label, p.nd_num, "nd_num", 0, 65535) != 1:
        raise _err("APK673", label, f"nd_num is {p.nd_num}: several NZ matrices in one Fixpipe "
                   "are not modelled for LocalTensors", help="one fixpipe per matrix (nd_num=1)")
    if p.is_channel_split is not False:
        raise _err("APK673", label, "is_channel_split (F32 channel split) is not modelled")
    for role, t in (("dst", d), ("src", s)):
        check_alignment(t, label, role)
    if m == 0 or n == 0:
        return m, n, None, None
    if rows % 16 or rows < -(-m // 16) * 16:
        raise _err("APK511", label, f"src_stride is {rows}; the L0C matrix's fractal columns "
                   f"are a whole number of 16-row fractals apart, at least m_size = {m} rounded "
                   "up to 16", help=f"src_stride={-(-m // 16) * 16} (m_size rounded up to 16)")
    sv = fractal_view(s, "NZ", (rows, n), label, "src")[0:m, :]
    if layout == "ROW_MAJOR":
        if pitch < n:
            raise _err("APK511", label, f"dst_stride is {pitch}, less than n_size = {n}: rows "
                       "of the ND result would overlap", help=f"dst_stride >= {n}")
        dv = d.ap([[pitch, m], [1, n]], offset=0)
    elif layout == "NZ" and d.dtype.bits == 16:
        if n % 16:
            raise _err("APK673", label, f"n_size {n} is not whole 16-column fractals; the NZ "
                       "output of a partial fractal is not modelled", help="n_size a multiple "
                       "of 16, or the row-major config")
        if pitch * 16 < m:
            raise _err("APK511", label, f"dst_stride is {pitch} 32-byte blocks: the NZ columns "
                       f"would overlap ({m} rows of 16 elements)", help=f"dst_stride >= {m}")
        dv = d.ap([[16, m], [pitch * 16, n // 16], [1, 16]], offset=0)
    else:
        raise _err("APK673", label, f"the {layout} config with {d.dtype} results is not modelled "
                   "for LocalTensors", help="cfg_row_major(), or 16-bit results with cfg_nz()")
    lo, hi = dv.layout.span()
    if hi >= int(d.layout.offset) + int(d.size):
        raise _err("APK511", label, f"dst {d.name} has {d.size} elements, but m_size, n_size "
                   f"and dst_stride reach its element {hi - int(d.layout.offset)}",
                   help="give a larger GlobalTensor, or lower the sizes")
    return m, n, dv, sv


def _layout(label: str, config: Any, d: Tensor) -> str:
    if config is None:
        config = FixpipeConfig()
    if not isinstance(config, FixpipeConfig):
        raise _err("APK511", label, "config must be an asc.FixpipeConfig, got "
                   f"{type(config).__name__}", help="asc.FixpipeConfig.cfg_row_major() or "
                   "asc.FixpipeConfig.cfg_nz()")
    layout = str(config.layout)
    want = "NZ" if layout == "NZ" else "ND"
    if layout not in ("NZ", "ROW_MAJOR") or d.format != want or d.ndim != 2:
        raise _err("APK511", label, f"the config writes {layout} data, but dst {d.name} is a "
                   f"{d.ndim}-d {d.format} tensor", notes=[
                       "cfg_row_major() writes an ND matrix (NZ -> ND on the way), cfg_nz() "
                       "the fractals as they are in L0C"],
                   help="declare dst as a matrix in the format the config writes, or pass "
                   "the other config", layout=layout, format=d.format)
    return layout


def _sizes(label: str, p: FixpipeParamsV220, d: Tensor, s: Tensor) -> tuple[int, int]:
    if s.ndim != 2 or s.format != "NZ":
        raise _err("APK511", label, f"src {s.name} is a {s.ndim}-d {s.format} tensor; Fixpipe "
                   "reads an L0C matrix as NZ")
    n = _int(label, p.n_size, "n_size", 0, 4095)
    m = _int(label, p.m_size, "m_size", 0, 65535)
    vs, vd = valid_shape(s), valid_shape(d)
    if m > min(vs[0], vd[0]) or n > min(vs[1], vd[1]):
        raise _err("APK511", label, f"m_size x n_size is {m} x {n}, more than src "
                   f"{shape_text(vs)} or dst {shape_text(vd)} holds",
                   notes=["valid extents (a TLA tile's origin_shape, else its shape)"],
                   help="give the block's rows and columns as m_size and n_size")
    return m, n


def _check_dtypes(label: str, mode: str, d: Tensor, s: Tensor) -> None:
    got = sc.QUANT_DTYPES.get(mode)
    pair = (s.dtype.name, d.dtype.name)
    if got is None:
        raise _err("APK512", label, f"quant_pre {mode!r} is not an Atlas A2 Fixpipe mode",
                   notes=[f"modes: {', '.join(sc.QUANT_DTYPES)}"])
    if mode == "NoQuant":
        ok = pair[0] == pair[1]
    else:
        ok = pair[0] == got[0] and pair[1] in got[1]
    if not ok:
        fits = [k for k, (a, bs) in sc.QUANT_DTYPES.items() if a == pair[0] and pair[1] in bs]
        if pair[0] == pair[1]:
            fits = ["NoQuant"]
        raise _err("APK512", label, f"quant_pre {mode} does not convert {pair[0]} to {pair[1]}",
                   notes=[f"{mode} converts " + ("a dtype to itself" if mode == "NoQuant"
                                                 else f"{got[0]} to {' or '.join(got[1])}")],
                   help=(f"use quant_pre {' or '.join(fits)}" if fits else
                         "Fixpipe has no mode for this pair"), src=pair[0], dst=pair[1])


def _check_strides(label: str, p: FixpipeParamsV220, d: Tensor, s: Tensor, m: int, n: int,
                   layout: str) -> None:
    """src_stride and dst_stride must be the views' own (checked where the views say)."""
    if n > 16 and s.layout.static and d.dynamic is None and s.dynamic is None:
        rows = int(s.layout.index(1, 16).offset - s.layout.offset) // 16
        got = _int(label, p.src_stride, "src_stride", 0, 65535)
        if got != rows:
            raise _err("APK511", label, f"src_stride is {got}, but src {s.name}'s fractal "
                       f"columns are {rows} rows apart in L0C", help=f"src_stride={rows}")
    if layout == "ROW_MAJOR" and m > 1 and d.layout.static and d.dynamic is None:
        pitch = int(d.layout.index(0, 1).offset - d.layout.offset)
        got = _int(label, p.dst_stride, "dst_stride", 0, 2**32 - 1)
        if got != pitch:
            raise _err("APK511", label, f"dst_stride is {got}, but dst {d.name}'s rows are "
                       f"{pitch} elements apart", help=f"dst_stride={pitch}")


def _workspace(label: str, mode: str, work: Any, n: int) -> Tensor | None:
    if mode not in sc.PER_CHANNEL:
        if work is not None:
            raise _err("APK512", label, f"quant_pre {mode} takes no per-channel parameters, "
                       "but a cbuf_workspace is given", help="drop cbuf_workspace, or use "
                       "a V mode (VDEQF16, VREQ8, VQF322B8_PRE)")
        return None
    if work is None:
        raise _err("APK512", label, f"quant_pre {mode} scales each column by its own "
                   "parameter: give cbuf_workspace, an L1 tensor of n_size int64 (the 64-bit parameters)",
                   help="fixpipe(dst, src, cbuf_workspace, params)")
    w = tensor_arg(work, label, "cbuf_workspace")
    check_operand(TABLE[OP], label, "cbuf_workspace", w)
    if w.ndim != 1 or w.shape[0] < n:
        raise _err("APK512", label, f"cbuf_workspace {w.name} has shape {shape_text(w.shape)}; "
                   f"it holds one uint64 a column, {n} of them")
    check_alignment(w, label, "cbuf_workspace")
    return w[0:n]


def _scale(label: str, mode: str, raw: np.ndarray, dst: str, unmodelled: str,
           sign: str) -> np.ndarray:
    """The M1 multipliers of quantisation parameters `raw`, after the rules on their other
    fields (`unmodelled`, `sign`: the codes, APK514/APK512 for deq_scalar, APK528 for
    parameters read from memory)."""
    f = sc.quant_fields(raw)
    where = "" if unmodelled == "APK514" else " (read from cbuf_workspace)"
    if mode in ("REQ8", "VREQ8", "DEQF16", "VDEQF16") and f["mcb"].any():
        raise _err(unmodelled, label, "the quantisation parameter sets the mode control bit "
                   f"(bit 36: shift the int32 right by N first){where}",
                   notes=["the AscendC page gives N's range as [1, 16] (b'0000 is 1) while its "
                          "sample shifts by the field's value: apdsl does not guess"],
                   help="leave bit 36 zero and scale by M1 alone")
    if mode not in ("DEQF16", "VDEQF16") and f["offset"].any():
        raise _err(unmodelled, label, "the quantisation parameter has a nonzero offset "
                   f"(bits 37-45){where}", notes=["the AscendC page does not say whether the 9-bit "
                                          "offset is signed: apdsl does not guess"],
                   help="leave the offset zero and add it with a vector instruction")
    if dst in ("int8", "uint8"):
        want = 1 if dst == "int8" else 0
        bad = f["sign"] != want
        if bad.any():
            raise _err(sign, label, f"the quantisation parameter's sign bit (bit 46) is "
                       f"{1 - want}{where}, but dst is {dst}", notes=["bit 46 set: an int8 result; "
                                                               "clear: uint8"],
                       help=f"{'set' if want else 'clear'} bit 46 (| 1 << 46), or declare dst "
                       f"as {'uint8' if want else 'int8'}")
    return f["m1"]
