"""The transposes of SPEC section 11: `nc_transpose` (Tensor or Vector Engine) and
`dma_transpose` (DMA, trn2 and later).  Their declarations are in
`apdsl.runtime.table.entries.movement`, their NumPy meaning in `apdsl.runtime.table.semantics_movement`.

Rules (NKI API reference, `docs/facts/nki_isa.md` 3.8 and 3.9):
- nc_transpose: the Tensor Engine reads SBUF and writes PSUM, up to [128, 128]; the Vector
  Engine reads and writes SBUF or PSUM, up to [32, 32]; dst has data's dtype; several free axes
  are flattened first.  Without `engine=` the docs say the compiler picks by shape: apdsl picks
  the Vector Engine for a tile it can take and the Tensor Engine otherwise.  On trn1
  (NeuronCore-v2) the Tensor Engine transpose is a float32 matmul with an identity (NaN and Inf
  spread, as the docs warn); from trn2 on it moves bits exactly.
- dma_transpose: dst in SBUF, src in HBM or SBUF, equal dtypes, `axes` one of (1, 0),
  (2, 1, 0), (3, 1, 2, 0) for the source's rank, dst shaped as the transposed source; a static
  transpose takes dge_mode unknown, hwdge or none (the DGE guide's table), and only hwdge adds
  the docs' shape and 2-byte rules; an indirect source (`.ap(vector_offset=)`) is a
  gather-transpose with its own rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import psum, trace
from ..core.operands import (
    check_start_partitions,
    free_size,
    instruction_label,
    operand_shapes,
    resolve_operands,
    static_shape,
    tensor_arg,
)
from ..table import TABLE
from ..table import semantics_movement as sm
from ..table.spec import TRN3_DTYPES as TRN3_ONLY
from . import hints, oob


def check_operand(op: str, label: str, role: str, t: Tensor) -> None:
    """The memory and dtype the table entry of `op` allows `role` (APK309 off chip, APK390 an
    on-chip buffer it cannot use, APK462 an Ascend buffer, APK461 a dtype)."""
    entry = TABLE[op]
    spec = entry.operand(role)
    fam = targets.family(t.buffer)
    allowed = spec.memory.get(fam, ())
    if t.buffer not in allowed:
        where = " or ".join(b.upper() for b in allowed if b not in targets.NKI_HBM[1:])
        if not allowed:
            raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; {op} is an NKI "
                              "instruction", code="APK462",
                              help=f"{op} is an instruction of the other target family",
                              buffer=t.buffer, role=role)
        onchip_only = all(targets.is_onchip(b) for b in allowed)
        code = "APK309" if onchip_only and not t.onchip else "APK390"
        raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; {op} takes its {role} "
                          f"in {where} only", code=code,
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"],
                          help=_memory_help(op, role, t), buffer=t.buffer, role=role)
    dtypes = spec.dtypes
    name = t.dtype.name
    if dtypes is not None and (name not in dtypes or (
            name in TRN3_ONLY and targets.target_for(t.buffer).name != "trn3")):
        raise TargetError(f"{label}: {role} {t.name} is {name}; {op} takes "
                          f"{', '.join(d for d in dtypes if d not in TRN3_ONLY)}"
                          + (" (and float8_e4m3fn on trn3)" if "float8_e4m3fn" in dtypes
                             else ""), code="APK461",
                          help="view or copy the data as one of those dtypes first",
                          dtype=name, role=role)


def _memory_help(op: str, role: str, t: Tensor) -> str:
    if not t.onchip:
        return "dma_copy the data into SBUF first"
    if t.buffer == "psum":
        return "tensor_copy the PSUM tile into SBUF first" if role != "dst" else \
            "write into an SBUF tile, then tensor_copy it into PSUM"
    return "use a PSUM tile"


def same_dtype(label: str, dst: Tensor, src: Tensor, src_role: str, op: str) -> None:
    """APK393: a movement instruction copies elements as they are, without conversion."""
    if dst.dtype != src.dtype:
        raise TargetError(f"{label}: dst {dst.name} is {dst.dtype}, {src_role} {src.name} "
                          f"{src.dtype}; {op} moves elements without converting them",
                          code="APK393", help=f"give dst the dtype {src.dtype}, and convert "
                          "afterwards with tensor_copy if needed", dtype=str(dst.dtype),
                          src_dtype=str(src.dtype))


# -- nc_transpose -----------------------------------------------------------------------------

def transpose_engine(label: str, engine: Any, data: Tensor, dst: Tensor,
                     shape: tuple[int, int] | None) -> str:
    """The engine that runs this nc_transpose: the hint, checked against the memory and size
    rules, else the Vector Engine when it can take the tile, else the Tensor Engine."""
    limits = TABLE["nc_transpose"].limits
    name = hints.compute_engine(label, engine, ("tensor", "vector"), (("data", data),
                                                                      ("dst", dst)))
    tensor_mem = data.buffer == "sbuf" and dst.buffer == "psum"

    def fits(eng: str) -> bool:
        return shape is None or (shape[0] <= limits[eng][0] and shape[1] <= limits[eng][1])

    if name == "unknown":
        if fits("vector"):
            return "vector"
        if tensor_mem and fits("tensor"):
            return "tensor"
        lim = limits["tensor"] if tensor_mem else limits["vector"]
        raise _too_large(label, shape, "tensor" if tensor_mem else "vector", lim, data, dst)
    if name == "tensor" and not tensor_mem:
        bad = ("data", data) if data.buffer != "sbuf" else ("dst", dst)
        raise TargetError(f"{label}: the Tensor Engine transposes SBUF into PSUM; {bad[0]} "
                          f"{bad[1].name} is in {bad[1].buffer}", code="APK390",
                          notes=[f"data @ {data.buffer}, dst @ {dst.buffer}"],
                          help="read data from SBUF and write dst in PSUM, or use "
                          "engine=nisa.engine.vector (SBUF or PSUM, up to [32, 32])",
                          buffer=bad[1].buffer, role=bad[0])
    if not fits(name):
        raise _too_large(label, shape, name, limits[name], data, dst)
    return name


def _too_large(label: str, shape: Any, engine: str, lim: tuple[int, int], data: Tensor,
               dst: Tensor) -> TargetError:
    other = ("the Tensor Engine takes up to [128, 128] from SBUF into PSUM"
             if engine == "vector" else "split the tile into [128, 128] blocks")
    return TargetError(f"{label}: the {engine.capitalize()} Engine transposes tiles of at most "
                       f"[{lim[0]}, {lim[1]}]; data is [{shape[0]}, {shape[1]}] (partitions, "
                       "free elements)", code="APK391",
                       notes=[f"data {data.name} @ {data.buffer}, dst {dst.name} @ {dst.buffer}",
                              "limits (NKI docs): Tensor Engine [128, 128] SBUF -> PSUM; "
                              "Vector Engine [32, 32] SBUF/PSUM"],
                       help=other if engine == "tensor" or data.buffer != "sbuf"
                       or dst.buffer != "psum" else "read data from SBUF into a PSUM dst so "
                       "the Tensor Engine can take it, or " + other, engine=engine,
                       shape=tuple(shape), limit=lim)


def nc_transpose(dst: Tensor, data: Tensor, engine: Any = "unknown",
                 name: str | None = None) -> None:
    """Exchange the partitions and the (flattened) free elements of `data`:
    `dst = data.reshape(P, -1).T`, on the Tensor Engine (SBUF -> PSUM, up to [128, 128]) or
    the Vector Engine (SBUF/PSUM, up to [32, 32]); dst has data's dtype.

    >>> a = apdsl.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    >>> x = apdsl.ndarray((2, 3), "float32", "sbuf")
    >>> apdsl.dma_copy(x, a)
    >>> y = apdsl.ndarray((3, 2), "float32", "psum")
    >>> apdsl.nc_transpose(y, x)
    >>> y.numpy()
    array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float32)
    """
    op = "nc_transpose"
    label = instruction_label(op, name)
    dst, data = tensor_arg(dst, label, "dst"), tensor_arg(data, label, "data")
    for role, t in (("data", data), ("dst", dst)):
        check_operand(op, label, role, t)
    same_dtype(label, dst, data, "data", op)
    check_start_partitions(label, (("data", data), ("dst", dst)))
    accs = resolve_operands(label, ex.TI_GROUP, ("data", data), ("dst", dst))
    ss, ds = operand_shapes(accs, data, dst)
    tile = None if ss is None else (ss[0], free_size(ss))
    chosen = transpose_engine(label, engine, data, dst, tile)
    if ss is not None and ds is not None and (ds[0] != free_size(ss) or
                                              free_size(ds) != ss[0]):
        raise TargetError(f"{label}: data has {ss[0]} partitions of {free_size(ss)} elements, "
                          f"so dst needs {free_size(ss)} partitions of {ss[0]}; dst has "
                          f"{ds[0]} of {free_size(ds)}", code="APK392",
                          notes=[f"data shape {ss}, dst shape {ds}"],
                          help=f"declare dst as [{free_size(ss)}, {ss[0]}]", dst_shape=ds,
                          src_shape=ss)
    if chosen == "tensor" and targets.target_for(data.buffer).name == "trn1" and \
            data.dtype.kind in "iu" and data.dtype.bits > 16:
        raise TargetError(f"{label}: on trn1 the Tensor Engine transpose is a float32 matrix "
                          f"multiply, which cannot carry every {data.dtype} value exactly",
                          code="APK391", notes=["NKI docs: on NeuronCore-v2 the Tensor Engine "
                                                "transpose multiplies by an identity matrix"],
                          help="use engine=nisa.engine.vector on [32, 32] blocks, or target "
                          "trn2, whose Tensor Engine transpose is bit-accurate",
                          engine="tensor", dtype=str(data.dtype))
    trace.record(op, name, {"dst": dst, "data": data}, engine=chosen,
                 hints=hints.given(engine=engine))
    if accs is None:
        return
    s, d = accs
    values = ex.read(s, label, "data")
    if chosen == "tensor" and targets.target_for(data.buffer).name == "trn1":
        result = ex.cast(sm.matmul_transpose(values), d.dtype)
    else:
        result = sm.transpose2d(values)
    ex.prepare_write(d, label, "dst")
    ex.store(d, np.ascontiguousarray(result).reshape(d.shape))
    if chosen == "tensor":  # a transpose-kind matmul wrote PSUM (nc_matmul is_transpose=True)
        psum.note_matmul(d, True)


# -- dma_transpose ----------------------------------------------------------------------------

def _axes(label: str, axes: Any, rank: int, allowed: tuple[tuple[int, ...], ...]) -> tuple:
    """The permutation: given, or the docs' one for the source's rank (APK395)."""
    by_rank = {len(a): a for a in allowed}
    if axes is None:
        if rank not in by_rank:
            raise TargetError(f"{label}: src has {rank} dimensions; dma_transpose transposes "
                              "2-, 3- and 4-dimensional tiles", code="APK395",
                              help="reshape the source to 2, 3 or 4 dimensions", rank=rank)
        return by_rank[rank]
    if not isinstance(axes, (list, tuple)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axes):
        raise TargetError(f"{label}: axes must be a tuple of ints, got {axes!r}",
                          code="APK395", help="for example axes=(1, 0)")
    axes = tuple(int(a) for a in axes)
    if axes not in allowed or len(axes) != rank:
        supported = ", ".join(str(a) for a in allowed)
        want = f"; for a {rank}-dimensional src that is {by_rank[rank]}" if rank in by_rank \
            else ""
        raise TargetError(f"{label}: axes={axes} is not a permutation dma_transpose supports "
                          f"for a {rank}-dimensional src", code="APK395",
                          notes=[f"supported: {supported} (NKI docs)"],
                          help=f"use one of {supported}{want}", axes=axes, rank=rank)
    return axes


def _hwdge_rules(label: str, ss: tuple[int, ...], src: Tensor, lim: dict[str, Any]) -> None:
    """The docs' extra rules of a hardware-DGE transpose (APK396)."""
    problems = []
    if len(ss) == 2 and ss[0] != 16:
        problems.append(f"a 2-d src needs src.shape[0] == 16, not {ss[0]}")
    if len(ss) > 2:
        if ss[0] not in lim["hwdge_first"]:
            problems.append(f"a {len(ss)}-d src needs src.shape[0] in {{1, 2, 4, 8, 16}}, "
                            f"not {ss[0]}")
        elif ss[0] * ss[-2] % 16:
            problems.append(f"(src.shape[0] * src.shape[-2]) % 16 == 0 fails: {ss[0]} * "
                            f"{ss[-2]} = {ss[0] * ss[-2]}")
    if ss[-1] > lim["hwdge_last"]:
        problems.append(f"src.shape[-1] <= 128 fails: {ss[-1]}")
    if src.dtype.bits != 16:
        problems.append(f"the dtype must be 2 bytes, not {src.dtype} ({src.dtype.bits // 8 or 0.5}"
                        " bytes)")
    if problems:
        raise TargetError(f"{label}: a hardware-DGE transpose (dge_mode=hwdge) of src "
                          f"{src.name} {list(ss)} {src.dtype}: {problems[0]}", code="APK396",
                          notes=problems[1:] + [
                              "NKI isa docs (hwdge): 2-d src.shape[0] == 16; 3-d/4-d "
                              "src.shape[0] in {1, 2, 4, 8, 16} and (src.shape[0] * "
                              "src.shape[-2]) % 16 == 0; src.shape[-1] <= 128; a 2-byte dtype",
                              "the NKI DGE guide states src.shape[-1] % 128 == 0 instead; "
                              "apdsl checks the isa reference's rule"],
                          help="leave dge_mode unset (the compiler then picks the DMA mode, "
                          "without these rules), or reshape the tile to fit them",
                          shape=ss, dtype=str(src.dtype))


def indirect_rules(label: str, src: Tensor, ss: tuple[int, ...]) -> None:
    """The docs' rules of an indirect (gather) transpose, `src.ap(vector_offset=indices)`
    (APK398): they hold whatever dge_mode, since only software DGE runs it."""
    index = src.dynamic.index
    problems = []
    if src.buffer not in targets.NKI_HBM:
        problems.append(f"src must be on HBM, not {src.buffer}")
    if len(ss) == 4 and ss[1] != 1 and ss[2] != 1:
        problems.append(f"a 4-d src needs shape[1] or shape[2] == 1, not {list(ss)}")
    if ss[-1] > 128:
        problems.append(f"src.shape[-1] <= 128 fails: {ss[-1]}")
    if src.dtype.bits != 16:
        problems.append(f"the dtype must be 2 bytes, not {src.dtype}")
    if ss[0] % 16:
        problems.append(f"src.shape[0] must be a multiple of 16, not {ss[0]}")
    if isinstance(index, Tensor):
        ish = tuple(index.shape)
        if index.buffer != "sbuf":
            problems.append(f"the indices must be in SBUF, not {index.buffer}")
        if index.dtype.name != "uint32":
            problems.append(f"the indices must be uint32, not {index.dtype}")
        if len(ish) != 2:
            problems.append(f"the indices must be 2-d, not {list(ish)}")
        elif all(isinstance(n, (int, np.integer)) for n in ish):
            if not (16 <= ish[0] <= 128 and ish[0] % 16 == 0):
                problems.append(f"indices.shape[0] must be 16..128 and a multiple of 16, not "
                                f"{ish[0]}")
            if ish[1] > 1 and ish[0] != 128:
                problems.append(f"indices.shape[0] must be 128 when indices.shape[1] > 1, "
                                f"not {ish[0]}")
            if ish[0] * ish[1] < ss[0]:
                problems.append(f"indices.shape[0] * indices.shape[1] = {ish[0] * ish[1]} "
                                f"must be >= src.shape[0] = {ss[0]}")
    if problems:
        raise TargetError(f"{label}: an indirect (gather) transpose of src {src.name} "
                          f"{list(ss)} {src.dtype}: {problems[0]}", code="APK398",
                          notes=problems[1:] + [
                              "NKI isa docs (indirect transpose): src on HBM, a 2-byte dtype, "
                              "src.shape[-1] <= 128, src.shape[0] % 16 == 0, 4-d src with "
                              "shape[1] or shape[2] == 1; indices 2-d uint32 in SBUF, "
                              "shape[0] in [16, 128] and % 16, shape[0] == 128 when shape[1] "
                              "> 1, shape[0] * shape[1] >= src.shape[0]"],
                          help="reshape the gather to fit these rules, or gather with "
                          "dma_copy and transpose on chip", shape=ss, dtype=str(src.dtype))


def _transposed_shape(label: str, ss: Any, ds: Any, perm: tuple[int, ...]) -> None:
    """APK392: dst has the transposed source's shape, rank included."""
    if ss is None or ds is None:
        return
    want = tuple(ss[a] for a in perm)
    if tuple(ds) != want:
        raise TargetError(f"{label}: dst has shape {list(ds)}; the transposed src "
                          f"{list(ss)} with axes={perm} has shape {list(want)}",
                          code="APK392", notes=["NKI 0.4.0 on: dst.shape must equal the "
                                                "transposed source's shape, rank included"],
                          help=f"declare dst as {list(want)}", dst_shape=ds, src_shape=ss)


def _gather_transpose(dst: Tensor, src: Tensor, perm: tuple[int, ...], name: str | None,
                      label: str, given: Any, skip: bool) -> None:
    """An indirect transpose: the rows `indices.T.flatten()[:src.shape[0]]` of src's base
    gathered, then transposed (`apdsl.runtime.nki.oob` does both, skipping out-of-range rows with
    oob_mode=skip)."""
    ss, ds = static_shape(src), static_shape(dst)
    if ss is not None:
        indirect_rules(label, src, ss)
    _transposed_shape(label, ss, ds, perm)
    if current().check:  # no index is read: the destination and the index view are checked
        resolve_operands(label, ex.TI_GROUP, ("dst", dst))
        index = src.dynamic.index
        if isinstance(index, Tensor) and index.dynamic is None and index.layout.static:
            ex.resolve(index, label, f"index {src.dynamic.index_name}")
        trace.record("dma_transpose", name, {"dst": dst, "src": src}, hints=given)
        return
    oob.copy_skipping(dst, src, name, label, given, op="dma_transpose", perm=perm, skip=skip,
                      index_order="F")


def _transpose_dge_modes(src: Tensor, dst: Tensor, indirect: bool) -> tuple[str, ...]:
    """The dge_modes a DMA transpose takes, by its access pattern, as the NKI DGE guide's
    table says (the isa docstring names only unknown and hwdge for a direct one; the guide,
    newer, adds none, which nki-library's kernels pass): with vector_offset (a gather)
    unknown or swdge; with scalar_offset any mode; static, none, hwdge or unknown."""
    if indirect:
        return ("unknown", "swdge")
    if any(t.dynamic is not None and t.dynamic.kind == "scalar" for t in (src, dst)):
        return ("unknown", "swdge", "hwdge", "none")
    return ("unknown", "hwdge", "none")


def dma_transpose(dst: Tensor, src: Tensor, axes: Any = None, priority: int | None = None,
                  dge_mode: Any = "unknown", oob_mode: Any = "error",
                  name: str | None = None) -> None:
    """Transpose `src` into the SBUF tile `dst` by DMA (trn2 and later):
    `dst = np.transpose(src, axes)`, axes (1, 0), (2, 1, 0) or (3, 1, 2, 0) (the default for
    the source's rank); src in HBM or SBUF, of dst's dtype.

    >>> a = apdsl.from_numpy(np.arange(6, dtype=np.float16).reshape(2, 3))
    >>> t = apdsl.ndarray((3, 2), "float16", "sbuf")
    >>> apdsl.dma_transpose(t, a)
    >>> t.numpy()
    array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float16)
    """
    op = "dma_transpose"
    label = instruction_label(op, name)
    dst, src = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    for role, t in (("src", src), ("dst", dst)):
        check_operand(op, label, role, t)
    tgt = targets.target_for(dst.buffer)
    if tgt.name == "trn1":
        raise TargetError(f"{label}: DMA transpose needs NeuronCore-v3 (trn2) or newer; the "
                          "target is trn1", code="APK394",
                          notes=["Trainium2 architecture guide: DMA engines transpose while "
                                 "moving HBM -> SBUF or SBUF -> SBUF (new in NeuronCore-v3)"],
                          help="on trn1 transpose on chip with nc_transpose, or pick "
                          "--target trn2", target=tgt.name)
    same_dtype(label, dst, src, "src", op)
    indirect = src.dynamic is not None and src.dynamic.kind == "vector"
    dge, oob_name = hints.dma(label, dst, src, priority, oob_mode, dge_mode, "unknown")
    valid = _transpose_dge_modes(src, dst, indirect)
    if dge not in valid:
        kind = "an indirect (gather) transpose" if indirect else "a direct transpose"
        raise TargetError(f"{label}: dge_mode={dge} is not valid for {kind}; it takes "
                          f"dge_mode {', '.join(valid[:-1])} or {valid[-1]}", code="APK397",
                          notes=["NKI DGE guide (how .ap() affects DGE mode): a static "
                                 "transpose takes none, hwdge or the compiler's choice; one "
                                 "with scalar_offset any mode; one with vector_offset unknown "
                                 "or swdge"],
                          help=f"use dge_mode=nisa.dge_mode.{valid[1]}, or leave it unset",
                          dge_mode=dge)
    if oob_name == "skip" and not indirect:
        raise TargetError(f"{label}: oob_mode=skip is only valid when src uses indirect "
                          "indexing (.ap(vector_offset=...))", code="APK397",
                          help="drop oob_mode=, or index src with vector_offset",
                          oob_mode=oob_name)
    entry = TABLE[op]
    perm = _axes(label, axes, len(src.shape), entry.limits["axes"])
    given = hints.given(priority=priority, dge_mode=dge, oob_mode=oob_name)
    if indirect:
        _gather_transpose(dst, src, perm, name, label, given, oob_name == "skip")
        return
    accs = resolve_operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
    ss, ds = operand_shapes(accs, src, dst)
    if ss is not None and dge == "hwdge":
        _hwdge_rules(label, ss, src, entry.limits)
    _transposed_shape(label, ss, ds, perm)
    trace.record(op, name, {"dst": dst, "src": src}, hints=given)
    if accs is None:
        return
    s, d = accs
    result = sm.dma_transpose(ex.read(s, label, "src").reshape(s.shape), perm)
    ex.prepare_write(d, label, "dst")
    ex.store(d, np.ascontiguousarray(result).reshape(d.shape))

