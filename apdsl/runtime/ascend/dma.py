"""Ascend instructions on NumPy: the DMA rules and tile copies of `dma_copy`, and `mmad`.

Rules an AscendC author expects, each with its own code (explained in `apdsl explain`):

- APK523: an L0A/L0B/L0C operand in a fractal format starts on a fractal boundary (the cube
  unit and LoadData move whole 512-byte fractals; L0C fractals are 16 x 16 elements);
- APK524: any other L1, UB or L0 operand starts 32-byte aligned (the unit of MTE transfers and
  of AscendC buffer addresses; storage itself is allocated aligned, so only the view's offset
  can break the rule);
- APK525: a copy with a TLA tile on either side moves the valid extents, which must be equal;
- APK520-APK522, APK526: mmad's operand buffers and formats, dtypes, shapes, and strict K
  padding;
- APK540/APK541: only Fixpipe (L0C -> GM/L1) converts dtypes, and only float32 -> float16 /
  bfloat16 (round to nearest even) or a dtype to itself (float32, int32);
- APK542-APK545: Load2D (GM -> L0A/L0B) needs GM already in the destination's format and no
  int4; Load2D and LoadData (L1 -> L0A/L0B) need fractal operands starting on a fractal;
- APK546/APK547: memset is InitConstValue (L1, L0A, L0B) or Duplicate (UB), for 16- and 32-bit
  dtypes; there is no L0C memset.

A copy into NZ or ZZ from GM zero-fills each written row's tail up to the fractal width, as
Nd2Nz does, and into ZN from a column-major source each written column's K tail; lines past the
valid extent are not written, so padding is only what the kernel writes.  Load2D and LoadData
move every fractal the valid extent touches, whole, with its written state (they are not
init-checked reads: unwritten padding arrives unwritten); memset of a fractal view sets its
whole fractals, padding included.  `mmad` computes the valid extent (M, K, N); with the
`strict_padding` option it reads K in whole fractals as hardware does, so K padding that nothing
wrote is an uninitialised read (APK404).  A tile bound to a reused buffer by `make_tensor_like`
starts unwritten (`forget`): what the previous tile left there is not its data.

mmad gathers each operand from its fractal storage into a logical matrix in one strided
cast-and-copy and multiplies with NumPy's BLAS, on one thread (see `apdsl.runtime.core.blas`).
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from math import lcm
from typing import Any

from ...errors import FormatError, TargetError
from ...tensor import formats
from ...tensor.layout import is_static
from ...tensor.machine import current
from ...tensor.tla import reach, region, valid_shape, valid_view
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core.nd2nz import MATRIX_FRACTAL, column_major
from ..plans import ascend_plans as plans

L0 = ("l0a", "l0b", "l0c")
ALIGNED = ("l1", "ub", "bt") + L0
ALIGN_BYTES = 32
# Load2D (GM -> L0A/L0B) and LoadData (L1 -> L0A/L0B) move whole fractals; Fixpipe converts.
LOAD_PATHS = frozenset({("gm", "l0a"), ("gm", "l0b"), ("l1", "l0a"), ("l1", "l0b")})
FIXPIPE_PATHS = frozenset({("l0c", "gm"), ("l0c", "l1")})
FIXPIPE_DTYPES = (("float32", "float16"), ("float32", "bfloat16"), ("float32", "float32"),
                  ("int32", "int32"))
FRACTAL_ROWS = formats.FRACTAL_ROWS

ASCEND_PATHS = frozenset({("gm", "l1"), ("gm", "ub"), ("gm", "l0a"), ("gm", "l0b"),
                          ("l1", "l0a"), ("l1", "l0b"), ("l0c", "gm"), ("l0c", "l1"),
                          ("ub", "gm"), ("ub", "ub"), ("l1", "bt")})
# L1 -> BT (DataCopy to the bias table, Atlas A2): half, int32 or float32 in, int32 or float32
# out; the only MTE copy that converts (half -> float32 on the way)
BIAS_DTYPES = (("float16", "float32"), ("float32", "float32"), ("int32", "int32"))
BT_ALIGN_BYTES = 64


def _err(code: str, message: str, **kw: Any) -> FormatError:
    return FormatError(message, code=code, **kw)


def shape_text(shape: Any) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


# =============================================================================================
# Alignment
# =============================================================================================

def fractal_elements(t: Tensor) -> int:
    """Elements in one fractal of `t`'s format and buffer (16 x C0; 16 x 16 in L0C)."""
    return FRACTAL_ROWS * formats.c0_for(t.dtype, formats.buffer_c0(t.format, t.buffer))


@lru_cache(maxsize=64)
def _is_fractal(fmt: str) -> bool:
    return formats.lookup(fmt).fractal


# Views that passed the alignment rules (a rule of the view alone; loops reuse their tiles).
_aligned: weakref.WeakKeyDictionary[Tensor, bool] = weakref.WeakKeyDictionary()


def check_alignment(t: Tensor, label: str, role: str) -> None:
    """APK523 / APK524 for an operand of an Ascend instruction (GM has no rule)."""
    planned = current().options.plans  # (off: checked every time)
    if (planned and t in _aligned) or t.buffer not in ALIGNED or t.dynamic is not None \
            or not is_static(t.layout.base):
        return
    _check_alignment(t, label, role)
    if planned:
        _aligned[t] = True


def _check_alignment(t: Tensor, label: str, role: str) -> None:
    off = int(t.layout.offset)
    if t.buffer in L0 and _is_fractal(t.format):
        frac = fractal_elements(t)
        if off % frac:
            raise _err("APK523", f"{label}: {role} {t.name} starts at element {off} of its "
                       f"{t.buffer.upper()} storage, inside a fractal; {t.format} operands "
                       f"in {t.buffer.upper()} start on a fractal boundary",
                       notes=[f"a fractal holds {frac} {t.dtype} elements; the nearest "
                              f"boundaries are {off - off % frac} and {off - off % frac + frac}",
                              f"view shape {shape_text(t.shape)}"],
                       help="tile L0 buffers in whole fractals: rows in multiples of 16 and "
                       "columns in multiples of the fractal width",
                       offset=off, fractal=frac)
        return
    bits = off * t.dtype.bits
    if t.buffer == "bt" and bits % (BT_ALIGN_BYTES * 8):
        raise _err("APK519", f"{label}: {role} {t.name} starts at byte {bits // 8} of the bias "
                   "table; BT operands start 64-byte aligned",
                   notes=[f"view shape {shape_text(t.shape)}"],
                   help="start the view on a multiple of 64 bytes (16 float32)",
                   offset=off, bytes=bits // 8)
    if bits % (ALIGN_BYTES * 8):
        raise _err("APK524", f"{label}: {role} {t.name} starts at byte {bits // 8} of its "
                   f"{t.buffer.upper()} storage; {t.buffer.upper()} operands start 32-byte "
                   "aligned", notes=[f"element {off} of {t.dtype} ({t.dtype.bits // 8 or 0.5} "
                                     "bytes each)", f"view shape {shape_text(t.shape)}"],
                   help="start the view on a multiple of 32 bytes (for a fractal format: a "
                   "column that is a multiple of C0), or move the data through GM",
                   offset=off, bytes=bits // 8)


# =============================================================================================
# dma_copy
# =============================================================================================

def dma_copy(dst: Tensor, src: Tensor, name: str | None, label: str) -> None:
    """The Ascend DMA after its path rule (instructions.py): dtypes, alignment, TLA valid
    extents, then the whole-fractal move of Load2D/LoadData or the row-major copy (with the
    GM -> fractal row-tail zero-fill of Nd2Nz).  The rules of a pair of views are checked once
    (`apdsl.runtime.plans.ascend_plans`)."""
    plan = plans.lookup(COPY_PLANS, dst, (src,))
    if plan is not None:
        plans.run_copy(plan, dst, src, name, label)
        return
    if not plans.cacheable(dst, src):
        plans.run_copy(copy_plan(dst, src, label), dst, src, name, label)
        return
    # a GM tile of a loop: the plan of another tile of the same layout but its base, if any
    plan = plans.by_value(COPY_PLANS, dst, src)
    made = plan is None
    if made:
        plan = copy_plan(dst, src, label)
    plans.keep(COPY_PLANS, dst, (src,), None, plan)
    plans.run_copy(plan, dst, src, name, label)
    if made:
        plans.keep_value(COPY_PLANS, dst, src, plan)


COPY_PLANS: plans.Table = plans.Table()


def copy_plan(dst: Tensor, src: Tensor, label: str) -> plans.CopyPlan:
    """Check every rule of an Ascend copy of these views (raising the first that fails) and
    say what it moves."""
    path = (src.buffer, dst.buffer)
    check_dtypes(dst, src, label, path)
    load = path in LOAD_PATHS
    check_alignment(dst, label, "dst")
    check_alignment(src, label, "src")
    if load:
        check_load(dst, src, label, path)
    if dst.origin_shape is not None or src.origin_shape is not None:
        vd, vs = valid_shape(dst), valid_shape(src)
        if vd != vs:
            raise _err("APK525", f"{label}: the valid extents differ: dst {dst.name} "
                       f"{shape_text(vd)}, src {src.name} {shape_text(vs)}",
                       notes=[f"dst shape {shape_text(dst.shape)}"
                              + (f", origin_shape {shape_text(vd)}" if dst.origin_shape
                                 is not None else " (not a tile: all of it is valid)"),
                              f"src shape {shape_text(src.shape)}"
                              + (f", origin_shape {shape_text(vs)}" if src.origin_shape
                                 is not None else " (not a tile: all of it is valid)")],
                       help="a tile copy moves the valid extent coordinate by coordinate; make "
                       "the destination with make_tensor_like(buffer, src, format) so it "
                       "inherits the source's valid extent", dst_shape=vd, src_shape=vs)
        if 0 in vd:
            return plans.CopyPlan(empty=True)  # a tile wholly past the edge of its parent
    if load:
        sizes = fractal_extent(dst, src)
        return plans.CopyPlan(load=True, dv=_other(region_cached(dst, sizes), dst),
                              sv=_other(region_cached(src, sizes), src))
    dv, sv = valid_view(dst), valid_view(src)
    tails = src.buffer == "gm" and dst.format in MATRIX_FRACTAL \
        and not _is_fractal(src.format)
    return plans.CopyPlan(dv=_other(dv, dst), sv=_other(sv, src), tails=tails,
                          column_major=tails and column_major(sv))


def _other(view: Tensor, t: Tensor) -> Tensor | None:
    """`view`, or None when it is `t` itself (a plan never holds its own key)."""
    return None if view is t else view


# -- dtypes -----------------------------------------------------------------------------------

def check_dtypes(dst: Tensor, src: Tensor, label: str, path: tuple[str, str]) -> None:
    """APK540 / APK541: only Fixpipe (L0C -> GM, L0C -> L1) converts, and only the pairs that
    need no quantisation parameters."""
    pair = (src.dtype.name, dst.dtype.name)
    if path == ("l1", "bt"):
        if pair not in BIAS_DTYPES:
            raise _err("APK519", f"{label}: the L1 -> BT copy does not convert {pair[0]} to "
                       f"{pair[1]}", notes=["DataCopy L1 -> BiasTable on Atlas A2: float16 -> "
                                            "float32, float32 -> float32, int32 -> int32"],
                       help="declare the bias table tensor float32 (int32 for int8 inputs)",
                       src=pair[0], dst=pair[1])
        return
    if path in FIXPIPE_PATHS:
        if pair not in FIXPIPE_DTYPES:
            allowed = ", ".join(f"{a} -> {b}" for a, b in FIXPIPE_DTYPES)
            raise _err("APK541", f"{label}: Fixpipe cannot convert {pair[0]} to {pair[1]}",
                       notes=[f"Fixpipe ({path[0].upper()} -> {path[1].upper()}) converts "
                              f"{allowed}; other pairs need quantisation parameters, which "
                              "apdsl does not model"],
                       help=f"declare dst {dst.name} as "
                       + (" or ".join(b for a, b in FIXPIPE_DTYPES if a == pair[0])
                          or "the accumulator dtype"), src=pair[0], dst=pair[1])
        return
    if pair[0] != pair[1]:
        raise _err("APK540", f"{label}: src {src.name} is {pair[0]}, dst {dst.name} is "
                   f"{pair[1]}; a {path[0].upper()} -> {path[1].upper()} copy does not convert",
                   notes=["on Ascend only Fixpipe (L0C -> GM, L0C -> L1) converts dtypes; "
                          "MTE copies move bytes"],
                   help=f"declare dst as {pair[0]}, or convert in UB with a vector "
                   "instruction (or on the host) first", src=pair[0], dst=pair[1])


# -- Load2D (GM -> L0A/L0B) and LoadData (L1 -> L0A/L0B): whole fractals -----------------------

def check_load(dst: Tensor, src: Tensor, label: str, path: tuple[str, str]) -> None:
    """APK542-APK545: what Load2D and LoadData need of their operands."""
    what = "Load2D" if path[0] == "gm" else "LoadData"
    if path[0] == "gm":
        if src.dtype.bits == 4:
            raise _err("APK543", f"{label}: Load2D (GM -> {path[1].upper()}) of int4 data",
                       notes=["Load2D from GM moves 8-bit and wider data; int4 goes through L1"],
                       help=f"copy GM -> L1 first, then L1 -> {path[1].upper()} (LoadData)")
        if src.format != dst.format:
            raise _err("APK542", f"{label}: Load2D moves 512-byte fractals as they are; src "
                       f"{src.name} is {src.format} in GM, dst {dst.name} is {dst.format}",
                       notes=["GM -> L0A/L0B does no ND -> fractal conversion: the GM data "
                              "must already be in the destination's fractal format"],
                       help=f"declare the GM tensor `as {dst.format}` (formats.convert "
                       "arranges host data), or copy GM -> L1 (Nd2Nz) and then L1 -> "
                       f"{path[1].upper()}", src_format=src.format, dst_format=dst.format)
    for role, t in (("src", src), ("dst", dst)):
        if not _is_fractal(t.format):
            raise _err("APK544", f"{label}: {what} moves whole fractals; {role} {t.name} is "
                       f"{t.format} in {t.buffer.upper()}",
                       notes=[f"{what} copies 512-byte fractals: both operands are in a "
                              "fractal format (NZ, ZZ, ZN, FRACTAL_Z, ...)"],
                       help=f"declare {role} in a fractal format, e.g. `as NZ` in L1 and `as "
                       f"{'ZZ' if path[1] == 'l0a' else 'ZN'}` in {path[1].upper()}",
                       role=role, format=t.format)
    if t_static(src):
        off = int(src.layout.offset)
        frac = fractal_elements(src)
        if off % frac:
            raise _err("APK545", f"{label}: src {src.name} starts at element {off} of its "
                       f"{src.buffer.upper()} storage, inside a fractal; {what} moves whole "
                       "fractals from a fractal boundary",
                       notes=[f"a fractal holds {frac} {src.dtype} elements",
                              f"view shape {shape_text(src.shape)}"],
                       help="start the source view on a fractal: rows in multiples of 16 and "
                       "columns in multiples of the fractal width", offset=off, fractal=frac)


def t_static(t: Tensor) -> bool:
    return t.dynamic is None and is_static(t.layout.base)


def fractal_extent(*ts: Tensor, extent: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """`extent` (default: the valid extent of the first view) rounded up, per dimension, to
    whole fractals of every view (the least common multiple of their fractal sides), within
    what each view reaches."""
    valid = valid_shape(ts[0]) if extent is None else extent
    if any(t.ndim != len(t.storage.shape) for t in ts):
        return valid  # a raw view of the storage (.ap): its own shape says what it covers
    out = []
    for d, v in enumerate(valid):
        side = 1
        for t in ts:
            side = lcm(side, _blocks(t)[d])
        want = -(-v // side) * side
        out.append(min([want] + [reach(t)[d] for t in ts]))
    return tuple(out)


@lru_cache(maxsize=256)
def _blocks_of(fmt: str, rank: int, dtype: Any, buffer: str) -> tuple[int, ...]:
    return formats.block_shape(fmt, rank, dtype, formats.buffer_c0(fmt, buffer))


def _blocks(t: Tensor) -> tuple[int, ...]:
    if not _is_fractal(t.format):
        return (1,) * t.ndim
    return _blocks_of(t.format, t.ndim, t.storage.dtype, t.buffer)


# Per view: its regions by extent (tail tiles of a loop come back with the same extents, and a
# cached view keeps the runtime's cached access plan).
_regions: weakref.WeakKeyDictionary[Tensor, dict[tuple[int, ...], Tensor]] = \
    weakref.WeakKeyDictionary()


def region_cached(t: Tensor, sizes: tuple[int, ...]) -> Tensor:
    if sizes == tuple(t.shape):
        return t  # as `region` does (the runtime ignores coord and origin_shape); never cached,
        # or the value would keep its weak key alive
    if not current().options.plans:
        return region(t, sizes)
    per = _regions.get(t)
    if per is None:
        per = _regions[t] = {}
    view = per.get(sizes)
    if view is None:
        view = per[sizes] = region(t, sizes)
    return view


# =============================================================================================
# memset
# =============================================================================================

# AscendC's InitConstValue (L1, L0A, L0B) and Duplicate (UB): the dtypes their docs list.
MEMSET_DTYPES = ("float16", "bfloat16", "int16", "uint16", "float32", "int32", "uint32")
MEMSET_OPS = {"ub": "Duplicate", "l1": "InitConstValue", "l0a": "InitConstValue",
              "l0b": "InitConstValue"}


def memset_target(dst: Tensor, label: str) -> Tensor:
    """APK546 / APK547 for an Ascend memset, then the view it writes: a fractal-format view
    grows to the whole fractals it touches (InitConstValue writes fractals, padding too)."""
    op = MEMSET_OPS.get(dst.buffer)
    if dst.buffer == "l0c":
        raise _err("APK546", f"{label}: dst {dst.name} is in L0C; there is no memset of L0C on "
                   "Ascend", notes=["AscendC sets L1, L0A and L0B with InitConstValue and UB "
                                    "with Duplicate; L0C is written only by Mmad (and Fixpipe "
                                    "reads it)"],
                   help="start the accumulation with mmad(..., accumulate=False), which "
                   "overwrites L0C instead of adding to it", buffer=dst.buffer)
    if op is None:
        return dst  # not an on-chip Ascend buffer: instructions.memset refuses it (APK312)
    if dst.dtype.name not in MEMSET_DTYPES:
        raise _err("APK547", f"{label}: {op} ({dst.buffer.upper()}) does not set "
                   f"{dst.dtype} data", notes=[f"{op} takes {', '.join(MEMSET_DTYPES)}"],
                   help="memset a view of the same bytes in a supported dtype "
                   "(t.view(\"int16\") for 8-bit data, two elements at a time), or copy a set "
                   "tile in", dtype=str(dst.dtype), buffer=dst.buffer)
    check_alignment(dst, label, "dst")
    if not _is_fractal(dst.format) or dst.dynamic is not None or not dst.layout.static:
        return dst
    return region_cached(dst, fractal_extent(dst, extent=tuple(dst.shape)))


# =============================================================================================
# Binding a tile to existing storage
# =============================================================================================

# Per bound tile: whether it is its whole buffer (decided once; loops bind the same tiles).
_whole: weakref.WeakKeyDictionary[Tensor, bool] = weakref.WeakKeyDictionary()


def forget(t: Tensor) -> None:
    """Mark every element of view `t` unwritten: a tile bound to a reused buffer holds whatever
    the previous tile left there, which is not data of this tile.  (Binding keeps the tile's
    dtype, so its elements are the storage's native elements.)"""
    storage = t.storage
    if not (storage.all_written or ex.has_written(storage)):
        return  # nothing of the storage was ever written
    dtype = t.dtype
    if dtype is not storage.dtype and dtype != storage.dtype:
        return  # not a bound tile
    total = storage.elements_total
    planned = current().options.plans
    acc = getattr(t, "memo", None) if planned else None
    if type(acc) is ex.Strided:
        # resolved before: bounds-checked, so as many distinct elements as the storage has
        # are all of them
        whole = acc.size == total and acc.injective()
    else:
        whole = _whole.get(t) if planned else None
    if whole is None:
        # the tile is the whole buffer (a format layout touches each element once; were an
        # odd make_layout one to repeat elements, forgetting all of them errs on the safe side)
        whole = t.size == total and t.layout.span() == (0, total - 1)
        if planned:
            _whole[t] = whole
    if whole:
        ex.forget_all(storage)
        return
    ex.forget_written(ex.resolve(t, "make_tensor_like", "target"))


def ascend_copy_rules(dst: Tensor, src: Tensor, label: str = "dma_copy") -> None:
    """The Ascend DMA path rule (APK308); the alignment and TLA rules are `dma_copy`'s."""
    path = (src.buffer, dst.buffer)
    if path not in ASCEND_PATHS:
        allowed = sorted(b for a, b in ASCEND_PATHS if a == src.buffer)
        raise TargetError(
            f"{label}: no DMA path from {src.buffer.upper()} to {dst.buffer.upper()} on Ascend",
            code="APK308",
            notes=["paths: GM->L1, GM->UB, GM->L0A, GM->L0B (Load2D), L1->L0A, L1->L0B "
                   "(LoadData), L1->BT (the bias table), L0C->GM, L0C->L1 (Fixpipe), UB->GM, "
                   "UB->UB"],
            help=(f"from {src.buffer.upper()} a copy can go to "
                  f"{', '.join(b.upper() for b in allowed)}" if allowed
                  else f"nothing is copied out of {src.buffer.upper()} by DMA"),
            src=src.buffer, dst=dst.buffer)
