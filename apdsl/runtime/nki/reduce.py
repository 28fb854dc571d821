"""The reduction and statistics instructions of SPEC section 11 (NKI isa): `tensor_reduce`,
`tensor_partition_reduce`, `bn_stats`, `bn_aggr`, `max8`, `nc_find_index8`,
`nc_match_replace8`.

Each checks its operands through `reduce_run.begin` (buffers, dtypes, trn1 start partitions,
resolution), then its own shape rules from the docstrings, records itself for `apdsl lower`,
and computes on float32 (`semantics_reduce`), cast to each destination.  The docstrings name
no engine for `max8` and `nc_find_index8`: apdsl places them on the Vector Engine, as the
other instructions of the family (the trace and the profile read it; no rule depends on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.view import Tensor
from ..core.operands import arg_error
from ..table import semantics_reduce as sem
from ..table.operators import operator_arg
from . import reduce_run as rr
from .reduce_run import same_partitions

BN_STATS_FMAX = 512  # nl.tile_size.bn_stats_fmax (every target)
TOP8_MIN, TOP8_MAX = 8, 16384  # elements a partition max8 and the *8 instructions read


def _rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[0], -1)


def bn_stats(dst: Tensor, data: Tensor, name: str | None = None) -> None:
    """Mean and variance statistics of each partition on the Vector Engine: `dst` gets 6
    elements a partition, `[count, mean, variance * count]` of the even-indexed elements of
    `data` (index in the flattened free dimensions), then of the odd-indexed ones, in float32
    cast to dst; `data` has at most 512 elements a partition (`tile_size.bn_stats_fmax`).

    >>> x = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4), "sbuf")
    >>> s = apdsl.ndarray((2, 6), "float32", "sbuf")
    >>> apdsl.bn_stats(s, x)
    >>> s.numpy()[0].tolist()
    [2.0, 1.0, 2.0, 2.0, 2.0, 2.0]
    """
    call = rr.begin("bn_stats", name, {"dst": dst, "data": data})
    same_partitions(call, "dst", "data")
    rr.element_range(call, "data", 1, BN_STATS_FMAX, "tile_size.bn_stats_fmax: split wider "
                     "data into 512-element tiles and aggregate them with one bn_aggr")
    rr.elements(call, "dst", 6, "writes 6 statistics a partition")
    call.record()
    if call.accs is None:
        return
    call.write({"dst": sem.bn_stats(_rows(call.read_f32("data")))})


def bn_aggr(dst: Tensor, data: Tensor, name: str | None = None) -> None:
    """Aggregate `bn_stats` outputs on the Vector Engine: `data` holds `(count, mean,
    variance * count)` triples (elements a partition a multiple of 3, e.g. several bn_stats
    outputs side by side); `dst` gets 2 elements a partition, the mean and the (population)
    variance, in float32 cast to dst.

    >>> x = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4), "sbuf")
    >>> s = apdsl.ndarray((2, 6), "float32", "sbuf")
    >>> apdsl.bn_stats(s, x)
    >>> mv = apdsl.ndarray((2, 2), "float32", "sbuf")
    >>> apdsl.bn_aggr(mv, s)
    >>> mv.numpy().tolist()
    [[1.5, 1.25], [5.5, 1.25]]
    """
    call = rr.begin("bn_aggr", name, {"dst": dst, "data": data})
    same_partitions(call, "dst", "data")
    n = call.free("data")
    if n is not None and n % 3:
        raise rr.shape_error(call, f"data {data.name} has {n} elements a partition, not a "
                             "multiple of 3; bn_aggr reads (count, mean, variance * count) "
                             "triples", "APK372", "pass the bn_stats outputs whole (6 "
                             "elements each)", elements=n)
    rr.elements(call, "dst", 2, "writes a mean and a variance a partition")
    call.record()
    if call.accs is None:
        return
    call.write({"dst": sem.bn_aggr(_rows(call.read_f32("data")))})


def _top8_source(call: rr.Call, role: str) -> None:
    rr.max_dims(call, role, 3)
    rr.element_range(call, role, TOP8_MIN, TOP8_MAX, "the docs' range for this instruction")


def _eight(call: rr.Call, role: str, what: str) -> None:
    s = call.shapes[role]
    if s is not None and len(s) != 2:
        raise rr.shape_error(call, f"{role} {call.tensors[role].name} has shape {s}; {call.op} "
                             f"writes a 2-D [partitions, 8] tile", "APK371",
                             f"give {role} the shape ({s[0]}, 8)", role=role)
    rr.elements(call, role, 8, what)


def max8(dst: Tensor, src: Tensor, name: str | None = None) -> None:
    """The 8 largest values of each partition of `src` (up to 3-D, 8 to 16384 elements a
    partition), in descending order, computed in float32 and cast to `dst` ([partitions, 8]).

    >>> x = apdsl.from_numpy(np.arange(12, dtype=np.float32).reshape(1, 12), "sbuf")
    >>> m = apdsl.ndarray((1, 8), "float32", "sbuf")
    >>> apdsl.max8(m, x)
    >>> m.numpy().tolist()
    [[11.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0]]
    """
    call = rr.begin("max8", name, {"dst": dst, "src": src})
    same_partitions(call, "dst", "src")
    _top8_source(call, "src")
    _eight(call, "dst", "writes the 8 largest values a partition")
    call.record()
    if call.accs is None:
        return
    call.write({"dst": sem.max8(_rows(call.read_f32("src")))})


def nc_find_index8(dst: Tensor, data: Tensor, vals: Tensor, name: str | None = None) -> None:
    """For each of the 8 `vals` of a partition, the index (from 0, in the flattened free
    dimensions) of its first occurrence in the partition's `data` (up to 3-D, 8 to 16384
    elements a partition), compared in float32; equal vals take successive occurrences in
    ascending order; a val not found gets the all-ones sentinel.  `dst` is [partitions, 8] of
    uint32 (sentinel 0xFFFFFFFF) or uint16 (0xFFFF).

    >>> x = apdsl.from_numpy(np.array([[5, 3, 9, 3, 1, 0, 7, 2]], np.float32), "sbuf")
    >>> v = apdsl.from_numpy(np.array([[3, 3, 9, 4, 0, 1, 2, 7]], np.float32), "sbuf")
    >>> i = apdsl.ndarray((1, 8), "uint32", "sbuf")
    >>> apdsl.nc_find_index8(i, x, v)
    >>> [hex(k) if k > 99 else k for k in i.numpy()[0].tolist()]
    [1, 3, 2, '0xffffffff', 5, 4, 7, 6]
    """
    call = rr.begin("nc_find_index8", name, {"dst": dst, "data": data, "vals": vals})
    same_partitions(call, "dst", "data", "vals")
    _top8_source(call, "data")
    rr.max_dims(call, "vals", 3)
    rr.elements(call, "vals", 8, "looks up exactly 8 values a partition")
    _eight(call, "dst", "writes 8 indices a partition")
    call.record()
    if call.accs is None:
        return
    missing = 0xFFFF if dst.dtype.name == "uint16" else 0xFFFFFFFF
    call.write({"dst": sem.find_index8(_rows(call.read_f32("data")),
                                       _rows(call.read_f32("vals")), missing)})


def nc_match_replace8(dst: Tensor, data: Tensor, vals: Tensor, imm: Any,
                      dst_idx: Tensor | None = None, name: str | None = None) -> None:
    """`dst` = `data` with the first occurrence of each of the 8 `vals` of a partition replaced
    by `imm` (compared in float32, on the Vector Engine); equal vals are visited from the last
    slot down, so the highest of them takes the first occurrence.  `dst_idx` ([partitions, 8]),
    when given, gets the matched positions; a val that matches nothing leaves its slot
    undefined in the docs, so apdsl refuses it then (APK377).  Without `dst_idx` an unmatched
    val replaces nothing.

    >>> x = apdsl.from_numpy(np.array([[1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]], np.float32), "sbuf")
    >>> v = apdsl.from_numpy(np.array([[3, 8, 8, 8, 8, 8, 8, 8]], np.float32), "sbuf")
    >>> out = apdsl.ndarray((1, 11), "float32", "sbuf")
    >>> idx = apdsl.ndarray((1, 8), "uint32", "sbuf")
    >>> apdsl.nc_match_replace8(out, x, v, -1.0, dst_idx=idx)
    >>> idx.numpy().tolist(), out.numpy().tolist()
    ([[2, 10, 9, 8, 7, 6, 5, 4]], [[1.0, 2.0, -1.0, 4.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0]])
    """
    call = rr.begin("nc_match_replace8", name,
                    {"dst": dst, "data": data, "vals": vals, "dst_idx": dst_idx})
    value = rr.scalar_arg(imm, call.label, "imm")
    same_partitions(call, "dst", "data", "vals", "dst_idx")
    _top8_source(call, "data")
    rr.max_dims(call, "vals", 3)
    rr.elements(call, "vals", 8, "matches exactly 8 values a partition")
    nd, nx = call.free("dst"), call.free("data")
    if nd is not None and nx is not None and nd != nx:
        raise rr.shape_error(call, f"dst has {nd} elements a partition, data {nx}; "
                             "nc_match_replace8 writes data back with its matches replaced",
                             "APK371", "give dst the shape of data", elements=nd, expected=nx)
    if dst_idx is not None:
        _eight(call, "dst_idx", "writes 8 matched positions a partition")
    call.record()
    if call.accs is None:
        return
    vals_f, data_f = _rows(call.read_f32("vals")), _rows(call.read_f32("data"))
    out, idx, matched = sem.match_replace8(data_f, vals_f, value)
    outputs = {"dst": out}
    if dst_idx is not None:
        if not matched.all():
            p, i = (int(c) for c in np.argwhere(~matched)[0])
            why = ("its occurrences are taken by the equal vals of higher slots"
                   if (data_f[p] == vals_f[p, i]).any() else "it occurs nowhere there")
            raise rr.runtime_error(
                call, f"vals[{p}, {i}] = {float(vals_f[p, i])!r} matches no element of data "
                f"partition {p} ({why}), and the NKI docs do not say what dst_idx then holds",
                "APK377", "pass only values the data holds (e.g. max8's output), or leave "
                "dst_idx out", partition=p, slot=i)
        outputs["dst_idx"] = idx
    call.write(outputs)


# -- tensor_reduce, tensor_partition_reduce ---------------------------------------------------

def _axes(axis: Any, ndim: int, label: str) -> tuple[int, ...]:
    """`axis` (an int or a list/tuple of ints; negative ones count from the end, as in NumPy)
    checked against the docs: free axes only, the trailing contiguous ones (APK373)."""
    items = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not items or any(isinstance(a, bool) or not isinstance(a, (int, np.integer))
                        for a in items):
        raise TargetError(f"{label}: axis must be an int or a list of ints, got {axis!r}",
                          code="APK373", help=f"for example axis=({ndim - 1},)")
    norm = sorted(int(a) + ndim if int(a) < 0 else int(a) for a in items)
    want = list(range(ndim - len(norm), ndim))
    if any(a < 0 or a >= ndim for a in norm) or len(set(norm)) != len(norm) or 0 in norm \
            or norm != want:
        trailing = ", ".join(f"({', '.join(str(k) for k in range(i, ndim))})"
                             for i in range(ndim - 1, 0, -1))
        raise TargetError(f"{label}: axis {axis!r} of a {ndim}-D tile is not its trailing free "
                          "dimensions; tensor_reduce reduces the last contiguous free "
                          "dimension(s), ending at the last, and never axis 0 (partitions)",
                          code="APK373", help=f"pass one of {trailing}; to reduce across "
                          "partitions use tensor_partition_reduce, or transpose first",
                          axis=tuple(norm), ndim=ndim)
    return tuple(norm)


def _bitvec_rules(call: rr.Call, fn: Any, negate: bool, dst: Tensor, data: Tensor) -> None:
    if not fn.bitvec:
        return
    for role, t in (("data", data), ("dst", dst)):
        if t.dtype.kind not in "iu":
            raise TargetError(f"{call.label}: {fn!r} is a bit-vector operator and {role} "
                              f"{t.name} is {t.dtype.name}; bit-vector operators work on "
                              "integer dtypes", code="APK375", help="use integer tiles, or an "
                              "arithmetic operator", role=role)
    if negate:
        raise TargetError(f"{call.label}: negate applies to arithmetic operators only, not "
                          f"the bit-vector {fn!r}", code="APK375", help="drop negate=True")
    if dst.dtype.bits != data.dtype.bits:
        raise TargetError(f"{call.label}: {fn!r} reduces bit patterns without converting them; "
                          f"data is {data.dtype.name}, dst {dst.dtype.name}, of other widths, "
                          "and the docs give no conversion", code="APK375",
                          help=f"give dst the width of data ({data.dtype.bits}-bit)")


def tensor_reduce(dst: Tensor, op: Any, data: Tensor, axis: Any, negate: bool = False,
                  keepdims: bool = False, name: str | None = None) -> None:
    """Reduce the trailing free dimensions `axis` of `data` with `op` on the Vector Engine.
    Arithmetic operators (`nl.add`, `nl.multiply`, `nl.maximum`, `nl.minimum`, the logical
    ones) compute in float32 and cast to dst, times -1 with `negate=True`; bit-vector ones
    (`nl.bitwise_and/or/xor`) reduce integer bits as they are.  `dst` has the elements a
    partition the kept dimensions make (in any free shape: `keepdims` changes no value).
    `nl.subtract`, a legal reduction op of the docs' table, is refused: the docs do not say in
    which order it folds.

    >>> from apdsl.runtime.table.operators import OPERATORS as nl
    >>> x = apdsl.from_numpy(np.arange(12, dtype=np.float32).reshape(2, 2, 3), "sbuf")
    >>> s = apdsl.ndarray((2, 2), "float32", "sbuf")
    >>> apdsl.tensor_reduce(s, nl["add"], x, axis=(2,), negate=True)
    >>> s.numpy().tolist()
    [[-3.0, -12.0], [-21.0, -30.0]]
    """
    label = rr.instruction_label("tensor_reduce", name)
    target = targets.target_for(data.buffer).name if isinstance(data, Tensor) and \
        targets.family(data.buffer) == "nki" else None
    fn = operator_arg(op, label, "op", names=sem.REDUCTIONS, target=target,
                      accepted="the legal reduction operators " + ", ".join(
                          f"nl.{n}" for n in sem.REDUCTIONS) + " (nl.subtract is refused: "
                      "the docs do not say how its reduction folds)")
    if not isinstance(negate, (bool, np.bool_)) or not isinstance(keepdims, (bool, np.bool_)):
        raise arg_error(label, f"negate and keepdims are True or False, got {negate!r}, "
                           f"{keepdims!r}")
    call = rr.begin("tensor_reduce", name, {"dst": dst, "data": data},
                    indirect=("dst", "data"))
    same_partitions(call, "dst", "data")
    _bitvec_rules(call, fn, bool(negate), dst, data)
    shape = call.shapes["data"]
    axes = _axes(axis, len(shape) if shape is not None else len(data.shape), call.label)
    if shape is not None:
        kept = int(np.prod([n for k, n in enumerate(shape[1:], 1) if k not in axes]))
        rr.elements(call, "dst", kept, f"leaves {kept} element{'s' * (kept != 1)} a "
                    f"partition after reducing axis {axes} of {shape}")
    call.record()
    if call.accs is None:
        return
    x = call.read("data") if fn.bitvec else call.read_f32("data")
    r = sem.reduce_free(x, fn.name, axes, bool(negate))
    if fn.bitvec and dst.dtype != data.dtype:
        r = np.ascontiguousarray(r).view(dst.dtype.np)  # the same bits, as dst's dtype
    call.write({"dst": r})


PARTITION_OPS = ("add", "average", "maximum", "bitwise_or", "bitwise_and")


def tensor_partition_reduce(dst: Tensor, op: Any, data: Tensor, name: str | None = None) -> None:
    """Reduce `data` across its partitions with `op` (`nl.add`, `nl.average`, `nl.maximum`,
    `nl.bitwise_or`, `nl.bitwise_and`) on the GpSimd Engine (SBUF only): `dst` has 1 partition
    of data's elements a partition.  Arithmetic in float32, cast to dst; the bit-vector
    operators on integer bits.

    >>> from apdsl.runtime.table.operators import OPERATORS as nl
    >>> x = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(4, 2), "sbuf")
    >>> s = apdsl.ndarray((1, 2), "float32", "sbuf")
    >>> apdsl.tensor_partition_reduce(s, nl["average"], x)
    >>> s.numpy().tolist()
    [[3.0, 4.0]]
    """
    label = rr.instruction_label("tensor_partition_reduce", name)
    fn = operator_arg(op, label, "op", names=PARTITION_OPS)
    call = rr.begin("tensor_partition_reduce", name, {"dst": dst, "data": data})
    _bitvec_rules(call, fn, False, dst, data)
    pd = call.parts("dst")
    if pd is not None and pd != 1:
        raise rr.shape_error(call, f"dst {dst.name} has {pd} partitions; "
                             "tensor_partition_reduce writes one", "APK371",
                             "give dst 1 partition, e.g. dst[0:1]", partitions=pd)
    nd, nx = call.free("dst"), call.free("data")
    if nd is not None and nx is not None and nd != nx:
        raise rr.shape_error(call, f"dst has {nd} elements a partition, data {nx}", "APK371",
                             "give dst data's elements a partition", elements=nd, expected=nx)
    call.record()
    if call.accs is None:
        return
    x = call.read("data") if fn.bitvec else call.read_f32("data")
    r = sem.reduce_partitions(x.reshape(x.shape[0], -1), fn.name)
    if fn.bitvec and dst.dtype != data.dtype:
        r = np.ascontiguousarray(r).view(dst.dtype.np)
    call.write({"dst": r})
