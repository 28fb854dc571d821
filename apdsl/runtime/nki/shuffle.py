"""Cross-partition movement on chip (SPEC section 11): `nc_stream_shuffle` (Vector Engine,
within 32-partition quadrants) and `local_gather` (GpSimd Engine, within each core's 16
partitions).  Declarations: `apdsl.runtime.table.entries.movement`; NumPy meaning:
`apdsl.runtime.table.semantics_movement`.

Rules (NKI API reference; `docs/facts/nki_isa.md` 3.22 and 3.23):
- nc_stream_shuffle: src and dst in SBUF or PSUM, one dtype, the same elements per partition;
  `shuffle_mask` is 32 ints, each a source partition of the quadrant or 255 (keep); the start
  partitions follow the number of active partitions `ceil(max(src_P, dst_P) / 32) * 32`
  (96 or 128: start 0; 64: 0 or 64; 32: 0, 32, 64 or 96), on every target (the docstring
  states it for the instruction itself).  In place is allowed.
- local_gather: src_buffer, index and dst in SBUF (GpSimd cannot access PSUM), dst of the
  source's dtype, index uint16; src_buffer and index have the same partitions, a multiple of
  16, on the same cores (the docs: each core gathers with indices from its own 16 partitions);
  `num_elem_per_idx` in {1, 2, 4, 8, 16, 32}; at most 4096 indices a core, `num_valid_indices`
  at most the indices a core's index slice holds.  Out-of-range indices are undefined on
  hardware: apdsl refuses them, and indices that are not a multiple of `num_elem_per_idx`
  (the only form the official NumPy model shows).
"""

from __future__ import annotations

from math import ceil
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace, unwritten
from ..core.operands import (
    arg_error,
    free_size,
    instruction_label,
    operand_shapes,
    resolve_operands,
    start_partition,
    tensor_arg,
)
from ..table import TABLE
from ..table import semantics_movement as sm
from .movement import check_operand, same_dtype

# -- nc_stream_shuffle ------------------------------------------------------------------------


def _mask(label: str, shuffle_mask: Any) -> list[int]:
    """The 32 mask entries, each a quadrant partition 0-31 or 255 (APK399)."""
    q, keep = sm.QUADRANT, sm.KEEP
    entries = list(shuffle_mask) if isinstance(shuffle_mask, (list, tuple, range)) else None
    if entries is None or len(entries) != q or not all(
            isinstance(m, (int, np.integer)) and not isinstance(m, bool) for m in entries):
        raise TargetError(f"{label}: shuffle_mask must be a list of {q} ints, got "
                          f"{shuffle_mask!r}", code="APK399",
                          help="for example [(i + 1) % 32 for i in range(32)] rotates each "
                          "quadrant by one partition")
    bad = [(i, int(m)) for i, m in enumerate(entries) if not (0 <= m < q or m == keep)]
    if bad:
        i, m = bad[0]
        raise TargetError(f"{label}: shuffle_mask[{i}] = {m}; an entry names a source "
                          f"partition 0-{q - 1} of the quadrant, or {keep} to leave the "
                          "destination partition as it is", code="APK399",
                          help=f"keep every entry in 0..{q - 1} or {keep}", entry=i, value=m)
    return [int(m) for m in entries]


def _shuffle_starts(label: str, pairs: list[tuple[str, Tensor, int]]) -> None:
    """The docstring's start-partition rule by the number of active partitions (APK485)."""
    active = ceil(max(p for _, _, p in pairs) / sm.QUADRANT) * sm.QUADRANT
    allowed = (0,) if active > 64 else (0, 64) if active > 32 else (0, 32, 64, 96)
    for role, t, _ in pairs:
        start = start_partition(t)
        if start is not None and start not in allowed:
            raise TargetError(f"{label}: {role} {t.name} starts at partition {start}; with "
                              f"{active} active partitions nc_stream_shuffle needs a start of "
                              f"{', '.join(str(a) for a in allowed)}", code="APK485",
                              notes=["NKI docs: active partitions = ceil(max(src, dst "
                                     "partitions) / 32) * 32; 96/128 start at 0, 64 at 0 or "
                                     "64, 32 at 0, 32, 64 or 96"],
                              help="slice the tiles on an allowed start partition",
                              start=start, active=active)


def nc_stream_shuffle(dst: Tensor, src: Tensor, shuffle_mask: Any,
                      name: str | None = None) -> None:
    """Move partitions within each 32-partition quadrant on the Vector Engine:
    `dst[q*32 + i] = src[q*32 + shuffle_mask[i]]`, and a mask entry of 255 leaves
    `dst[q*32 + i]` as it is.  src and dst in SBUF or PSUM, one dtype, the same elements per
    partition; in place is allowed.

    >>> a = apdsl.from_numpy(np.arange(64, dtype=np.float32).reshape(32, 2))
    >>> t = apdsl.ndarray((32, 2), "float32", "sbuf")
    >>> apdsl.dma_copy(t, a)
    >>> apdsl.nc_stream_shuffle(t, t, [(i - 1) % 32 for i in range(32)])  # rotate by one
    >>> t.numpy()[:3, 0]
    array([62.,  0.,  2.], dtype=float32)
    """
    op = "nc_stream_shuffle"
    label = instruction_label(op, name)
    dst, src = tensor_arg(dst, label, "dst"), tensor_arg(src, label, "src")
    for role, t in (("src", src), ("dst", dst)):
        check_operand(op, label, role, t)
    same_dtype(label, dst, src, "src", op)
    mask = _mask(label, shuffle_mask)
    accs = resolve_operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
    ss, ds = operand_shapes(accs, src, dst)
    if ss is not None and ds is not None:
        if free_size(ss) != free_size(ds):
            raise TargetError(f"{label}: src has {free_size(ss)} elements per partition, dst "
                              f"{free_size(ds)}", code="APK486",
                              notes=[f"src shape {ss}, dst shape {ds}"],
                              help="give src and dst the same elements per partition",
                              src_shape=ss, dst_shape=ds)
        _shuffle_starts(label, [("src", src, ss[0]), ("dst", dst, ds[0])])
        for p in range(ds[0]):
            q, i = divmod(p, sm.QUADRANT)
            if mask[i] != sm.KEEP and q * sm.QUADRANT + mask[i] >= ss[0]:
                raise TargetError(f"{label}: dst partition {p} takes src partition "
                                  f"{q * sm.QUADRANT + mask[i]} (shuffle_mask[{i}] = "
                                  f"{mask[i]} in quadrant {q}), but src has {ss[0]} "
                                  "partitions", code="APK399",
                                  help="give src the partitions the mask reads, or set the "
                                  f"entry to {sm.KEEP} to leave dst partition {p} alone",
                                  partition=p, src_partitions=ss[0])
    trace.record(op, name, {"dst": dst, "src": src})
    if accs is None:
        return
    s, d = accs
    rows = [p for p in range(d.shape[0]) if mask[p % sm.QUADRANT] != sm.KEEP]
    if not rows:
        return
    taken = np.array([(p // sm.QUADRANT) * sm.QUADRANT + mask[p % sm.QUADRANT] for p in rows])
    # only the source partitions the mask names are read (the others may hold anything, or
    # nothing), and only the destination partitions it names are written (255 keeps the
    # others): written row k comes from source row taken[k], element for element
    read = np.zeros((s.shape[0], 1), bool)
    read[taken] = True
    parts = s.shape[0]
    values = ex.read(s, label, "src", np.broadcast_to(read, (parts, s.size // parts)))
    unwritten.take_rows("src", taken)
    offs = d.offsets().reshape(d.shape[0], -1)[rows]
    part = ex.Indexed(d.name, d.storage, d.dtype, offs.shape, None, offs)
    ex.prepare_write(part, label, "dst")
    ex.store(part, values.reshape(parts, -1)[taken])


# -- local_gather -----------------------------------------------------------------------------

def gather_args(label: str, num_elem_per_idx: Any, num_valid_indices: Any,
                 per_core: int | None) -> tuple[int, int | None]:
    """num_elem_per_idx and num_valid_indices checked (APK489); per_core: the indices one
    core's 16-partition index slice holds (None when a register decides it)."""
    lim = TABLE["local_gather"].limits
    allowed = lim["num_elem_per_idx"]
    if isinstance(num_elem_per_idx, bool) or not isinstance(num_elem_per_idx,
                                                            (int, np.integer)) \
            or int(num_elem_per_idx) not in allowed:
        raise TargetError(f"{label}: num_elem_per_idx must be one of "
                          f"{', '.join(map(str, allowed))}, got {num_elem_per_idx!r}",
                          code="APK489", help="gather 1, 2, 4, 8, 16 or 32 contiguous elements "
                          "per index", value=num_elem_per_idx)
    n = int(num_elem_per_idx)
    if num_valid_indices is None:
        valid = per_core
    elif isinstance(num_valid_indices, bool) or not isinstance(num_valid_indices,
                                                               (int, np.integer)):
        raise arg_error(label, f"num_valid_indices must be an int, got {num_valid_indices!r}")
    else:
        valid = int(num_valid_indices)
        if valid < 1 or (per_core is not None and valid > per_core):
            raise TargetError(f"{label}: num_valid_indices = {valid}; a core's 16-partition "
                              f"index slice holds {per_core} indices", code="APK489",
                              notes=["NKI docs: num_valid_indices <= index.size / "
                                     "(index.shape[0] / 16)"],
                              help=f"use 1..{per_core} valid indices per core", value=valid)
    if valid is not None and valid > lim["indices_per_core"]:
        raise TargetError(f"{label}: {valid} indices per GpSimd core; a core gathers at most "
                          f"{lim['indices_per_core']}", code="APK489",
                          help="split the gather into several local_gathers", value=valid)
    return n, valid


def _gather_partitions(label: str, pairs: list[tuple[str, Tensor, int]]) -> None:
    """src_buffer and index cover the same partitions, a multiple of 16 starting on a core
    boundary, and dst covers them too (APK487)."""
    (_, src, sp), (_, index, ip), (_, dst, dp) = pairs
    cp = sm.CORE_PARTITIONS
    if sp != ip or sp % cp or dp != sp:
        raise TargetError(f"{label}: src_buffer has {sp} partitions, index {ip}, dst {dp}; "
                          f"local_gather needs them equal and a multiple of {cp}",
                          code="APK487", notes=[f"each GpSimd core gathers within its own {cp} "
                                                "partitions, with indices from those partitions"],
                          help=f"give the three tiles the same multiple of {cp} partitions",
                          partitions=(sp, ip, dp))
    starts = {role: start_partition(t) for role, t, _ in pairs}
    if any(s is not None and s % cp for s in starts.values()) or \
            len({s for s in starts.values() if s is not None}) > 1:
        raise TargetError(f"{label}: the tiles start at partitions "
                          f"{', '.join(f'{r} {s}' for r, s in starts.items())}; local_gather "
                          f"needs one start on a GpSimd core boundary (a multiple of {cp})",
                          code="APK487", notes=["core k is connected to partitions 16k..16k+15; "
                                                "its indices come from those partitions"],
                          help="place src_buffer, index and dst on the same partitions, "
                          f"starting at a multiple of {cp}", starts=tuple(starts.values()))


def local_gather(dst: Tensor, src_buffer: Tensor, index: Tensor, num_elem_per_idx: int = 1,
                 num_valid_indices: int | None = None, name: str | None = None) -> None:
    """Gather within each GpSimd core's 16 partitions: core k flattens its slice of `index`
    partition-first, and each of its partitions takes, for each of the first
    `num_valid_indices` indices, the `num_elem_per_idx` elements of its own source partition
    that start at that element offset (a uint16, a multiple of `num_elem_per_idx`).  All in
    SBUF; dst has (num_valid_indices * num_elem_per_idx) elements per partition.

    >>> a = apdsl.from_numpy(np.arange(16 * 8, dtype=np.float32).reshape(16, 8))
    >>> src = apdsl.ndarray((16, 8), "float32", "sbuf")
    >>> apdsl.dma_copy(src, a)
    >>> i = apdsl.from_numpy(np.full((16, 1), 6, np.uint16))
    >>> idx = apdsl.ndarray((16, 1), "uint16", "sbuf")
    >>> apdsl.dma_copy(idx, i)
    >>> out = apdsl.ndarray((16, 32), "float32", "sbuf")
    >>> apdsl.local_gather(out, src, idx, num_elem_per_idx=2)   # 16 indices x 2 elements
    >>> out.numpy()[1, :4]
    array([14., 15., 14., 15.], dtype=float32)
    """
    op = "local_gather"
    label = instruction_label(op, name)
    dst = tensor_arg(dst, label, "dst")
    src = tensor_arg(src_buffer, label, "src_buffer")
    index = tensor_arg(index, label, "index")
    pairs = (("src_buffer", src), ("index", index), ("dst", dst))
    for role, t in pairs:
        check_operand(op, label, role, t)
    same_dtype(label, dst, src, "src_buffer", op)
    accs = resolve_operands(label, ex.TI_GROUP, *pairs)
    shapes = operand_shapes(accs, src, index, dst)
    known = all(s is not None for s in shapes)
    ss, ish, ds = shapes
    if known:
        _gather_partitions(label, [(r, t, s[0]) for (r, t), s in zip(pairs, shapes)])
    per_core = sm.CORE_PARTITIONS * free_size(ish) if ish is not None else None
    n, valid = gather_args(label, num_elem_per_idx, num_valid_indices, per_core)
    if known and free_size(ds) != valid * n:
        raise TargetError(f"{label}: dst has {free_size(ds)} elements per partition; "
                          f"{valid} indices x {n} elements need {valid * n}", code="APK490",
                          notes=[f"dst shape {ds}"],
                          help=f"give dst {valid * n} elements per partition, e.g. "
                          f"[{ds[0]}, {valid}, {n}]", dst_shape=ds, elements=valid * n)
    trace.record(op, name, {"dst": dst, "src_buffer": src, "index": index})
    if accs is None:
        return
    s, i, d = accs
    values = ex.read(s, label, "src_buffer").reshape(s.shape[0], -1)
    idx = ex.read(i, label, "index").reshape(i.shape[0], -1)
    _check_indices(label, index, idx, n, valid, values.shape[1])
    result = sm.local_gather(values, idx, n, valid)
    # an output element is unwritten exactly when the source element it takes is (each
    # partition gathers from its own partition only: unwritten lanes elsewhere stay there)
    unwritten.moved_as("src_buffer", lambda bad: sm.local_gather(
        bad.reshape(bad.shape[0], -1), idx, n, valid))
    ex.prepare_write(d, label, "dst")
    ex.store(d, result.reshape(d.shape))


def _check_indices(label: str, index: Tensor, idx: np.ndarray, n: int, valid: int,
                   elements: int) -> None:
    """The indices used must start a whole chunk inside each partition (APK491: hardware
    leaves out-of-range gathers undefined)."""
    cp = sm.CORE_PARTITIONS
    for start in range(0, idx.shape[0], cp):
        used = idx[start:start + cp].flatten(order="F")[:valid].astype(np.int64)
        bad = np.flatnonzero((used % n != 0) | (used + n > elements))
        if bad.size:
            k = int(bad[0])
            p, c = start + k % cp, k // cp  # partition-first flattening
            v = int(used[k])
            why = (f"not a multiple of num_elem_per_idx = {n}" if v % n else
                   f"elements {v}..{v + n - 1} pass the {elements} of a partition")
            raise ApdslRuntimeError(
                f"{label}: index {index.name}[{p}, {c}] = {v} is {why}", code="APK491",
                notes=[f"GpSimd core {start // cp}, index {k} of its {valid}",
                       "NKI leaves an out-of-range local_gather undefined; the official NumPy "
                       "model uses element offsets chunk * num_elem_per_idx"],
                help=f"give element offsets that are multiples of {n} and below "
                f"{elements - n + 1}", index=v, position=(p, c))
