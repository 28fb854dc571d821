"""The random-number instructions of SPEC section 11 (NKI isa): `dropout`, `rng`, `rand2` and
`set_rng_seed`.

They draw from the device's seeded NumPy generators (`apdsl.runtime.nki.rng_state`): the same
program and seed give the same numbers on every run, but not hardware's bits.  Rules from the
isa docstrings: `dropout`'s dst has data's dtype and, for integer data, a tile `prob` is
float32; `rng` writes integer dtypes, runs on the Vector Engine (GpSimd too from NeuronCore-v3)
and truncates 32 random bits to the destination's least significant ones; `rand2` is
NeuronCore-v4 (trn3) only and needs min < max; `set_rng_seed` reads a [1, 1] 32-bit tile.
The docs say nothing of a drop probability outside [0, 1]: apdsl leaves it unchecked (below 0
drops nothing, above 1 everything).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor import targets
from ...tensor.view import Tensor
from ..table import semantics_reduce as sem
from . import reduce_run as rr
from . import rng_state
from .reduce_run import same_partitions


def _per_partition(call: rr.Call, role: str, data_role: str) -> None:
    if role in call.tensors:
        same_partitions(call, data_role, role)
        rr.elements(call, role, 1, f"takes one {role} value a partition")


def _rule(call_label: str, message: str, help: str, code: str = "APK379",
          **facts: Any) -> TargetError:
    return TargetError(f"{call_label}: {message}", code=code, help=help, **facts)


def dropout(dst: Tensor, data: Tensor, prob: Any, name: str | None = None) -> None:
    """Each element of `data` replaced by 0 with probability `prob` (a float, or a
    [partitions, 1] tile: one probability a partition), on the Vector Engine; survivors keep
    their value (no rescaling: the docs describe none).  `dst` has data's shape and dtype.
    The draws come from the Vector Engine's seeded generator (`set_rng_seed`), so a run is
    deterministic.

    >>> x = apdsl.from_numpy(np.ones((2, 4), np.float32), "sbuf")
    >>> y = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.dropout(y, x, 1.0)
    >>> y.numpy().tolist()
    [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    """
    label = rr.instruction_label("dropout", name)
    p = rr.tile_or_float(prob, label, "prob")
    tile = p if isinstance(p, Tensor) else None
    call = rr.begin("dropout", name, {"dst": dst, "data": data, "prob": tile})
    if dst.dtype != data.dtype:
        raise _rule(call.label, f"dst {dst.name} is {dst.dtype.name}, data {data.name} "
                    f"{data.dtype.name}; dropout's dst has data's dtype",
                    "give dst the dtype of data (convert afterwards with tensor_copy)")
    if tile is not None:
        if data.dtype.kind in "iu" and tile.dtype.name != "float32":
            raise _rule(call.label, f"prob {tile.name} is {tile.dtype.name}; with integer data "
                        f"({data.dtype.name}) a prob tile is float32", "make prob a float32 "
                        "tile")
        if tile.dtype.kind in "iu":
            raise _rule(call.label, f"prob {tile.name} is {tile.dtype.name}; a drop "
                        "probability is a float", "make prob a float tile (float32)")
    same_partitions(call, "dst", "data")
    nd, nx = call.free("dst"), call.free("data")
    if nd is not None and nx is not None and nd != nx:
        raise rr.shape_error(call, f"dst has {nd} elements a partition, data {nx}", "APK371",
                             "give dst the shape of data", elements=nd, expected=nx)
    _per_partition(call, "prob", "data")
    call.record()
    if call.accs is None:
        return
    x = call.read("data")
    rows = x.reshape(x.shape[0], -1)
    probs = call.read_f32("prob").reshape(-1, 1) if tile is not None else p
    u = rng_state.uniform("vector", rows.size).reshape(rows.shape)
    call.write({"dst": sem.dropout(rows, probs, u)})


def rng(dst: Tensor, engine: Any = "vector", name: str | None = None) -> None:
    """32 random bits a `dst` element (integer dtypes: int8, int16, int32, uint8, uint16,
    uint32), truncated to the dtype's least significant bits, on the Vector Engine (default)
    or, from NeuronCore-v3 (trn2), GpSimd (SBUF only).  Each engine has its own seeded
    generator; `set_rng_seed` seeds the Vector Engine's.

    >>> r = apdsl.ndarray((2, 4), "uint8", "sbuf")
    >>> apdsl.rng(r)
    >>> r.numpy().dtype.name, r.numpy().shape
    ('uint8', (2, 4))
    """
    label = rr.instruction_label("rng", name)
    if isinstance(dst, Tensor) and targets.target_for(dst.buffer).name == "trn1" and \
            getattr(engine, "name", engine) == "gpsimd":
        raise _rule(label, "on trn1 (NeuronCore-v2) rng runs on the Vector Engine only",
                    "use engine=nisa.engine.vector (the default)", code="APK380")
    call = rr.begin("rng", name, {"dst": dst}, engine=engine)
    call.record(engine=engine if getattr(engine, "name", engine) != "vector" else None)
    if call.accs is None:
        return
    acc = call.accs["dst"]
    bits = rng_state.bits32(call.engine or "vector", int(np.prod(acc.shape)))
    width = dst.dtype.bits
    unsigned = np.dtype(f"uint{width}")
    words = (bits & np.uint32((1 << width) - 1)).astype(unsigned)
    call.write({"dst": words.view(dst.dtype.np).reshape(acc.shape)})


def rand2(dst: Tensor, min: Any, max: Any, name: str | None = None) -> None:  # noqa: A002
    """Uniform random values in [min, max] (float32, cast to `dst`), on the Vector Engine,
    NeuronCore-v4 (trn3) only; `min` and `max` are floats or [partitions, 1] float32 tiles,
    with min < max.  Drawn from the Vector Engine's seeded generator.

    >>> with apdsl.target("trn3"):
    ...     r = apdsl.ndarray((2, 4), "float32", "sbuf")
    ...     apdsl.rand2(r, -1.0, 1.0)
    ...     bool(((r.numpy() >= -1) & (r.numpy() <= 1)).all())
    True
    """
    label = rr.instruction_label("rand2", name)
    lo = rr.tile_or_float(min, label, "min")
    hi = rr.tile_or_float(max, label, "max")
    if isinstance(dst, Tensor) and targets.family(dst.buffer) == "nki":
        tgt = targets.target_for(dst.buffer).name
        if tgt != "trn3":
            raise _rule(label, f"needs NeuronCore-v4 (trn3); the target is {tgt}",
                        "use rng and scale its bits, or set the target to trn3",
                        code="APK380", target=tgt)
    tiles = {r: v for r, v in (("min", lo), ("max", hi)) if isinstance(v, Tensor)}
    call = rr.begin("rand2", name, {"dst": dst, **tiles})
    for role in tiles:
        _per_partition(call, role, "dst")
    if not tiles and not lo < hi:
        raise _rule(call.label, f"min {lo!r} is not below max {hi!r}; rand2 needs min < max",
                    "swap them, or pass a range of positive width", code="APK380")
    call.record()
    if call.accs is None:
        return
    acc = call.accs["dst"]
    parts = acc.shape[0]
    low = call.read_f32("min").reshape(parts, 1) if "min" in tiles else np.float32(lo)
    high = call.read_f32("max").reshape(parts, 1) if "max" in tiles else np.float32(hi)
    bad = ~(np.broadcast_to(low, (parts, 1)) < np.broadcast_to(high, (parts, 1)))
    if bad.any():
        p = int(np.argwhere(bad)[0][0])
        lo_p = float(np.broadcast_to(low, (parts, 1))[p, 0])
        hi_p = float(np.broadcast_to(high, (parts, 1))[p, 0])
        raise rr.runtime_error(call, f"partition {p}: min {lo_p!r} is not below max {hi_p!r} "
                               "in the tiles' values; rand2 needs min < max", "APK380",
                               "pass ranges of positive width", partition=p)
    u = rng_state.uniform("vector", int(np.prod(acc.shape))).reshape(parts, -1)
    call.write({"dst": low + (high - low) * u})


def set_rng_seed(src_seeds: Tensor, name: str | None = None) -> None:
    """Seed the Vector Engine's random number generator with the 32-bit value of the [1, 1]
    tile `src_seeds` (SBUF or PSUM; int32, uint32, or float32 taken by its bits): the same
    seed gives the same draws after it (`rng`, `dropout`, `rand2`).

    >>> s = apdsl.ndarray((1, 1), "int32", "sbuf")
    >>> apdsl.memset(s, 42)
    >>> a, b = apdsl.ndarray((2, 4), "int32", "sbuf"), apdsl.ndarray((2, 4), "int32", "sbuf")
    >>> apdsl.set_rng_seed(s); apdsl.rng(a)
    >>> apdsl.set_rng_seed(s); apdsl.rng(b)
    >>> bool((a.numpy() == b.numpy()).all())
    True
    """
    call = rr.begin("set_rng_seed", name, {"src_seeds": src_seeds})
    s = call.shapes["src_seeds"]
    if s is not None and s not in ((1, 1), (1,)):
        raise rr.shape_error(call, f"src_seeds {src_seeds.name} has shape {s}; the seed is a "
                             "[1, 1] tile", "APK381", "slice one element: seeds[0:1, 0:1]",
                             shape=s)
    call.record()
    if call.accs is None:
        return
    word = call.read("src_seeds").reshape(-1)[:1].view(np.uint32)
    rng_state.seed("vector", int(word[0]))
