"""The random-number instructions of SPEC sections 11 and 16 (NKI isa): `dropout`, `rng`,
`rand2`, `set_rng_seed`, `rand_set_state` and `rand_get_state`.

They draw from the device's seeded NumPy generators, or, on an engine after `rand_set_state`,
from its lanes' XORWOW states (`apdsl.runtime.nki.rng.state` says how): the same program and
seed give the same numbers on every run, but not hardware's bits.  Rules from the
isa docstrings: `dropout`'s dst has data's dtype and, for integer data, a tile `prob` is
float32; `rng` writes integer dtypes, runs on the Vector Engine (GpSimd too from NeuronCore-v3)
and truncates 32 random bits to the destination's least significant ones; `rand2` is
NeuronCore-v4 (trn3) only and needs min < max; `set_rng_seed` reads a [1, 1] 32-bit tile.
`rand_set_state`/`rand_get_state` are NeuronCore-v3+ (GpSimd on trn2; GpSimd or Vector on
trn3), move a 2-D uint32 tile of 6 (GpSimd) or 24 (Vector) words a lane, the seeds from SBUF,
the stored state to SBUF (or PSUM on trn3's Vector Engine: GpSimd cannot access PSUM).
The docs say nothing of a drop probability outside [0, 1]: apdsl leaves it unchecked (below 0
drops nothing, above 1 everything).
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError, TargetError
from ....tensor import targets
from ....tensor.placement import partition_offset
from ....tensor.view import Tensor
from ...table import semantics_reduce as sem
from .. import reduce_run as rr
from ..reduce_run import same_partitions
from . import state as rng_state


def lanes_of(acc: Any) -> np.ndarray:
    """The compute lanes an operand's rows are processed in: the physical partition of each
    row (its first element's; a tile placed with address= starts at its partition offset)."""
    storage = acc.storage
    per_partition = max(prod(storage.shape[1:]) * storage.dtype.bits // acc.dtype.bits, 1)
    first = acc.offsets().reshape(acc.shape[0], -1)[:, 0]
    return (first // per_partition + partition_offset(storage)).astype(np.intp)


def _drawing_lanes(call: rr.Call, role: str, engine: str) -> np.ndarray:
    """The lanes a draw into `role` uses; an engine in XORWOW mode (`rand_set_state`) draws
    only from lanes it set (APK386 otherwise: the docs do not say what an unset lane holds)."""
    assert call.accs is not None
    acc = call.accs[role]
    if rng_state.xorwow(engine) is None:  # seeded mode: one generator, lanes only count rows
        return np.arange(acc.shape[0])
    lanes = lanes_of(acc)
    lane = rng_state.unset_lane(engine, lanes)
    if lane is not None:
        raise _unset(call, lane, engine, f"draws into {role} {call.tensors[role].name} from lane "
                     f"{lane}")
    return lanes


def _unset(call: rr.Call, lane: int, engine: str, what: str) -> ApdslRuntimeError:
    return rr.runtime_error(
        call, f"{what} of the {_ENGINE_NAMES[engine]}, whose XORWOW state no rand_set_state "
        "set (the docs do not say what an unset lane holds)", "APK386",
        f"set every lane it uses first: nisa.rand_set_state(src_seeds=seeds, "
        f"engine=nisa.engine.{engine}) with seeds covering partition {lane}",
        lane=lane, engine=engine)


def _per_partition(call: rr.Call, role: str, data_role: str) -> None:
    if role in call.tensors:
        same_partitions(call, data_role, role)
        rr.elements(call, role, 1, f"takes one {role} value a partition")


_ENGINE_NAMES = {"vector": "Vector Engine", "gpsimd": "GpSimd Engine"}


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
    u = rng_state.uniform("vector", _drawing_lanes(call, "dst", "vector"), rows.shape[1])
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
    engine = call.engine or "vector"
    lanes = _drawing_lanes(call, "dst", engine)
    bits = rng_state.bits32(engine, lanes, acc.size // max(len(lanes), 1))
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
    lanes = _drawing_lanes(call, "dst", "vector")
    u = rng_state.uniform("vector", lanes, acc.size // parts)
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


def _state_engine(op: str, label: str, t: Any, engine: Any) -> None:
    """The target and engine rules of rand_set_state / rand_get_state (APK380): NeuronCore-v3+,
    GpSimd on v3 (trn2), GpSimd or Vector from v4 (trn3)."""
    if not isinstance(t, Tensor) or targets.family(t.buffer) != "nki":
        return  # the operand checks say what is wrong with it
    tgt = targets.target_for(t.buffer).name
    if tgt == "trn1":
        raise _rule(label, f"{op} needs NeuronCore-v3 or newer (trn2, trn3); the target is "
                    "trn1", "seed trn1's Vector Engine with set_rng_seed, or set the target "
                    "to trn2 or trn3", code="APK380", target=tgt)
    if getattr(engine, "name", engine) == "vector" and tgt == "trn2":
        raise _rule(label, f"on NeuronCore-v3 (trn2) {op} runs on the GpSimd Engine only "
                    "(the Vector Engine from NeuronCore-v4, trn3)", "use "
                    "engine=nisa.engine.gpsimd (the default), or set the target to trn3",
                    code="APK380", target=tgt)


def _state_tile(call: rr.Call, role: str) -> int:
    """The state tile is 2-D with 6 (GpSimd) or 24 (Vector) uint32 words a lane (APK385);
    returns that count."""
    engine = call.engine or "gpsimd"
    words = rng_state.STATES[engine] * rng_state.WORDS
    s = call.shapes[role]
    if s is not None and len(s) != 2:
        raise rr.shape_error(call, f"{role} {call.tensors[role].name} has {len(s)} dimensions; "
                             f"{call.op} takes a 2-D tile (partitions = compute lanes, "
                             "free = the state words)", "APK385",
                             f"reshape {role} to ({s[0]}, {words})", role=role, shape=s)
    n = call.free(role)
    if n is not None and n != words:
        raise rr.shape_error(call, f"{role} {call.tensors[role].name} has {n} elements a "
                             f"partition; a XORWOW state of the {_ENGINE_NAMES[engine]} is "
                             f"{words} uint32 words a lane", "APK385",
                             f"give {role} shape ({call.parts(role)}, {words})", role=role,
                             elements=n, expected=words)
    return words


def _engine_arg(engine: Any) -> str:
    name = getattr(engine, "name", engine)
    return "gpsimd" if name in (None, "unknown") else name


def rand_set_state(src_seeds: Tensor, engine: Any = "gpsimd", name: str | None = None) -> None:
    """Load the XORWOW states of the engine's compute lanes (NeuronCore-v3+: GpSimd, the
    default; from NeuronCore-v4, trn3, the Vector Engine too) from the 2-D uint32 SBUF tile
    `src_seeds`: its partition p holds lane p's words, 6 a lane on GpSimd, 24 (four states) on
    the Vector Engine.  From then on the engine's draws (`rng`, and on the Vector Engine
    `dropout` and `rand2`) come from the lanes' XORWOW generators; the word order and the
    floats' derivation are apdsl's (`apdsl.runtime.nki.rng.state`), so setting a state saved
    by `rand_get_state` repeats the draws that followed it.

    >>> s = apdsl.ndarray((2, 6), "uint32", "sbuf")
    >>> apdsl.iota(s, [[1, 6]], 1, 6)
    >>> apdsl.rand_set_state(s)
    >>> g = apdsl.ndarray((2, 6), "uint32", "sbuf")
    >>> apdsl.rand_get_state(g)
    >>> g.numpy().tolist()
    [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]
    """
    label = rr.instruction_label("rand_set_state", name)
    _state_engine("rand_set_state", label, src_seeds, engine)
    if isinstance(src_seeds, Tensor) and src_seeds.buffer == "psum":
        raise TargetError(f"{label}: src_seeds {src_seeds.name} is in psum; rand_set_state "
                          "reads its seeds from SBUF only", code="APK309",
                          notes=[f"src_seeds: shape {tuple(src_seeds.shape)} @ psum"],
                          help="tensor_copy the seeds into an SBUF tile first",
                          buffer="psum", role="src_seeds")
    call = rr.begin("rand_set_state", name, {"src_seeds": src_seeds}, engine=engine)
    _state_tile(call, "src_seeds")
    eng = call.engine or "gpsimd"
    call.record(engine=engine if _engine_arg(engine) != "gpsimd" else None)
    if call.accs is None:
        return
    acc = call.accs["src_seeds"]
    words = call.read("src_seeds").reshape(acc.shape[0], -1).view(np.uint32)
    rng_state.set_state(eng, lanes_of(acc), words)


def rand_get_state(dst: Tensor, engine: Any = "gpsimd", name: str | None = None) -> None:
    """Store the XORWOW states of the engine's compute lanes into the 2-D uint32 tile `dst`
    (partition p: lane p's 6 words on GpSimd, 24 on the Vector Engine), as `rand_set_state`
    loaded them and the draws since advanced them.  NeuronCore-v3+; `dst` in SBUF (in PSUM
    too from NeuronCore-v4, on the Vector Engine only: GpSimd cannot access PSUM).  A lane no
    `rand_set_state` set holds what the docs do not say: refused (APK386).

    >>> s = apdsl.ndarray((1, 6), "uint32", "sbuf")
    >>> apdsl.iota(s, [[1, 6]], 1, 0)
    >>> apdsl.rand_set_state(s)
    >>> saved = apdsl.ndarray((1, 6), "uint32", "sbuf")
    >>> apdsl.rand_get_state(saved)
    >>> a, b = apdsl.ndarray((1, 4), "uint32", "sbuf"), apdsl.ndarray((1, 4), "uint32", "sbuf")
    >>> apdsl.rng(a, engine="gpsimd")
    >>> apdsl.rand_set_state(saved)
    >>> apdsl.rng(b, engine="gpsimd")
    >>> a.numpy().tolist() == b.numpy().tolist()
    True
    """
    label = rr.instruction_label("rand_get_state", name)
    _state_engine("rand_get_state", label, dst, engine)
    call = rr.begin("rand_get_state", name, {"dst": dst}, engine=engine)
    eng = call.engine or "gpsimd"
    if eng == "gpsimd" and dst.buffer == "psum":
        raise TargetError(f"{call.label}: dst {dst.name} is in psum; the GpSimd Engine cannot "
                          "access PSUM (and on NeuronCore-v3, trn2, rand_get_state writes SBUF "
                          "only)", code="APK348", help="write the state to an SBUF tile, or "
                          "(trn3) use engine=nisa.engine.vector")
    _state_tile(call, "dst")
    call.record(engine=engine if _engine_arg(engine) != "gpsimd" else None)
    if call.accs is None:
        return
    acc = call.accs["dst"]
    lanes = lanes_of(acc)
    x = rng_state.xorwow(eng)
    missing = lanes if x is None else lanes[~x.set[lanes]]
    if missing.size:
        raise _unset(call, int(missing[0]), eng, f"reads lane {int(missing[0])}")
    call.write({"dst": rng_state.get_state(eng, lanes).view(dst.dtype.np)})
