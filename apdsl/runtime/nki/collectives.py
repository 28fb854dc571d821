"""Collective communication between ranks (`nki.collectives`, NKI API reference) and the
point-to-point `sendrecv` / `core_barrier` of `nki.isa`, on a simulated group of ranks
(`apdsl.runtime.nki.group`): each rank reads its sources on its own machine, the ranks meet,
the last to arrive computes every rank's result in NumPy, and each rank writes its own
destinations.  Outside a group the kernel is rank 0 of 1.

Results: `all_reduce` dst = op over the ranks of the replica group of their src (add, minimum,
maximum; summed in float64, then cast once to dst's dtype); `all_gather` dst = the ranks' src
concatenated along `collective_dim` in group order; `reduce_scatter` the reduction split into
one chunk per rank along `collective_dim`, rank i of the group getting chunk i; `all_to_all`
each src split into one chunk per rank, rank i getting chunk i of every rank in group order;
`collective_permute` rank t's dst = rank s's src for each (s, t) pair; the implicit permutes pass
along the ring of the replica group (each rank sends to its successor and receives from its
predecessor), the reducing one sending op(src0, src1).
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import registers, targets
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core import execute as ex
from ..core import trace, unwritten
from ..core.operands import instruction_label, tensor_arg
from ..core.written import leave_unwritten
from .group import Arrival, Group, core_here, here

HBM = ("hbm", "private_hbm", "shared_hbm")
REDUCE_OPS = {"add": np.add, "minimum": np.minimum, "maximum": np.maximum}


class ReplicaGroup:
    """The ranks of a collective, as lists of ranks that do not overlap; each rank meets the
    others of its own list."""

    def __init__(self, replica_groups: Any = None) -> None:
        groups = [] if replica_groups is None else replica_groups
        try:
            self.groups = tuple(tuple(int(r) for r in g) for g in groups)
        except TypeError:
            raise TargetError(f"ReplicaGroup takes lists of ranks, got {replica_groups!r}",
                              code="APK967", help="write ReplicaGroup([[0, 1, 2, 3]])") from None
        flat = [r for g in self.groups for r in g]
        if len(set(flat)) != len(flat) or any(r < 0 for r in flat):
            raise TargetError(f"ReplicaGroup {[list(g) for g in self.groups]}: the lists of ranks "
                              "overlap (or name a negative rank)", code="APK967",
                              help="give each rank to one list only")

    def members(self, rank: int, n: int, label: str) -> tuple[int, ...]:
        for g in self.groups:
            if rank in g:
                if max(g) >= n:
                    raise _no_group(label, f"its replica group {list(g)} names rank {max(g)}",
                                    max(g) + 1, n)
                return g
        raise _no_group(label, f"rank {rank} is in none of the replica groups "
                        f"{[list(g) for g in self.groups]}", None, n)

    def __repr__(self) -> str:
        return f"ReplicaGroup({[list(g) for g in self.groups]})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplicaGroup) and other.groups == self.groups

    def __hash__(self) -> int:
        return hash(self.groups)


def _no_group(label: str, why: str, need: int | None, n: int) -> ApdslRuntimeError:
    run = f"--ranks {need}" if need else "--ranks N"
    lnc = label.split(" ")[0].split(":")[0] in ("sendrecv", "core_barrier")
    return ApdslRuntimeError(
        f"{label}: {why}, but the run has {n} rank{'s' if n != 1 else ''}", code="APK967",
        help="launch the kernel on the two NeuronCores of an LNC=2 logical core: kernel[2](...) "
        "(`apdsl run FILE.py --grid 2`)" if lnc else f"run the kernel on a group of ranks: "
        f"`apdsl run FILE.py {run}` or apdsl.nki.simulate_ranks(kernel, n, ...)")


def _where() -> tuple[Group | None, int, int]:
    h = here()
    return (None, 0, 1) if h is None else (h[0], h[1], h[0].n)


def _cores() -> tuple[Group | None, int, int]:
    """Where `sendrecv` and `core_barrier` meet: the two programs of an LNC=2 launch (their
    docstrings: the NeuronCores of one logical NeuronCore), else a group of ranks standing for
    them (`--ranks 2`), else this kernel alone."""
    h = core_here()
    return _where() if h is None else (h[0], h[1], h[0].n)


# -- the helpers every collective shares -----------------------------------------------------

def _tensors(label: str, role: str, xs: Any, one: bool = False) -> list[Tensor]:
    if isinstance(xs, Tensor):
        xs = [xs]
    if not isinstance(xs, (list, tuple)) or not xs:
        raise TargetError(f"{label}: {role} is a list of tensors, got {xs!r}", code="APK968",
                          help=f"pass {role}=[tensor]")
    out = [tensor_arg(x, label, role) for x in xs]
    if one and len(out) != 1:
        raise TargetError(f"{label}: {role} holds {len(out)} tensors; coalesced communication "
                          "(more than one) is not supported here", code="APK968",
                          help=f"one tensor in {role}; call it once per tensor")
    return out


def _memory(label: str, ts: list[Tensor], sbuf: bool) -> str:
    kinds = {"hbm" if t.buffer in HBM else t.buffer for t in ts}
    for t in ts:
        if targets.family(t.buffer) != "nki" or t.buffer == "psum":
            raise TargetError(f"{label}: {t.name} is in {t.buffer}; collectives move HBM"
                              + (" or SBUF" if sbuf else "") + " tensors", code="APK968",
                              help="copy the tile to SBUF or HBM first", buffer=t.buffer)
    if not sbuf and kinds != {"hbm"}:
        raise TargetError(f"{label}: its tensors must be in HBM (SBUF is not supported for it)",
                          code="APK968", help="dma_copy the tile to an HBM tensor first")
    if len(kinds) > 1:
        raise TargetError(f"{label}: its tensors mix HBM and SBUF; all must be in one",
                          code="APK968", help="copy them all to HBM, or all to SBUF")
    return kinds.pop()


def _record(op: str, name: str | None, pairs: list[tuple[Tensor, ...]],
            roles: tuple[str, ...] = ("dsts", "srcs")) -> None:
    """One trace record per tensor of the lists (roles: the parameters' names, as the
    instruction's table entry declares them)."""
    for ts in pairs:
        trace.record(f"ncc.{op}", name, dict(zip(roles, ts)), engine="dma")


def _read(label: str, ts: list[Tensor]) -> list[np.ndarray]:
    return [ex.read(ex.resolve(t, label, "src"), label, "src") for t in ts]


def _write(label: str, ts: list[Tensor], values: list[np.ndarray]) -> None:
    accs = [ex.resolve(t, label, "dst") for t in ts]
    for acc in accs:
        ex.prepare_write(acc, label, "dst")
    for acc, v in zip(accs, values):
        ex.store(acc, np.asarray(v).reshape(acc.shape))


def _signature(kind: str, srcs: list[Tensor], dsts: list[Tensor], *extra: Any) -> tuple:
    return (kind, tuple((tuple(t.shape), t.dtype.name) for t in srcs),
            tuple((tuple(t.shape), t.dtype.name) for t in dsts), *extra)


def _shown(srcs: list[Tensor], dsts: list[Tensor], *extra: Any) -> str:
    def one(ts: list[Tensor]) -> str:
        return ", ".join(f"{t.dtype}{list(t.shape)}" for t in ts)
    more = "".join(f", {e}" for e in extra)
    return f"srcs {one(srcs)}, dsts {one(dsts)}{more}"


def _op_name(label: str, op: Any) -> str:
    name = getattr(op, "name", getattr(op, "__name__", op))
    if name not in REDUCE_OPS:
        raise TargetError(f"{label}: op {name!r} is not a collective reduction; it takes "
                          "nl.add, nl.minimum or nl.maximum", code="APK968",
                          help="pass op=nl.add (or nl.minimum, nl.maximum)")
    return str(name)


def _meet(label: str, kind: str, members: tuple[int, ...], signature: tuple, shown: str,
          payload: Any, compute: Any, cores: bool = False) -> Any:
    group, rank, _ = _cores() if cores else _where()
    if group is None:
        return compute({rank: payload})[rank]
    return group.meet(rank, members, Arrival(signature, payload, current().span, kind, shown),
                      compute)


def _members(label: str, replica_group: Any) -> tuple[int, ...]:
    if not isinstance(replica_group, ReplicaGroup):
        raise TargetError(f"{label}: replica_group is a ReplicaGroup, got {replica_group!r}",
                          code="APK968", help="pass ReplicaGroup([[0, 1, ...]])")
    _, rank, n = _where()
    return replica_group.members(rank, n, label)


def _reduce(op: str, values: list[np.ndarray]) -> np.ndarray:
    out = values[0].astype(np.float64) if values[0].dtype.kind == "f" or \
        values[0].dtype.kind == "V" else values[0].astype(np.int64)
    for v in values[1:]:
        out = REDUCE_OPS[op](out, v.astype(out.dtype))
    return out


def _begin(op: str, name: str | None, srcs: Any, dsts: Any, *, sbuf: bool,
           one: bool = False) -> tuple[str, list[Tensor], list[Tensor]]:
    label = instruction_label(op, name)
    s = _tensors(label, "srcs", srcs, one)
    d = _tensors(label, "dsts", dsts, one)
    if len(s) != len(d):
        raise TargetError(f"{label}: {len(s)} srcs but {len(d)} dsts", code="APK968",
                          help="give one dst per src")
    kind = _memory(label, s + d, sbuf)
    if kind == "sbuf" and len(s) > 1:
        raise TargetError(f"{label}: coalesced communication (several tensors) needs HBM "
                          "tensors", code="APK968", help="one SBUF tensor per call")
    return label, s, d


def _dims(label: str, dim: Any, kind: str, allowed_sbuf: tuple[int, ...]) -> int:
    ok = (0,) if kind == "hbm" else allowed_sbuf
    if not isinstance(dim, (int, np.integer)) or int(dim) not in ok:
        raise TargetError(f"{label}: collective_dim {dim!r} is not supported for "
                          f"{kind.upper()} tensors (supported: {', '.join(map(str, ok))})",
                          code="APK968", help=f"use collective_dim={ok[0]}")
    return int(dim)


def _shape_rule(label: str, s: Tensor, d: Tensor, want: tuple[int, ...], says: str) -> None:
    if tuple(d.shape) != want or s.dtype != d.dtype:
        raise TargetError(f"{label}: dst {d.name} is {d.dtype}{list(d.shape)}, src {s.name} "
                          f"{s.dtype}{list(s.shape)}; {says}: {s.dtype}{list(want)}",
                          code="APK969", help=f"allocate dst as {s.dtype}{list(want)}")


def _scaled(shape: tuple[int, ...], dim: int, factor: Any) -> tuple[int, ...]:
    out = list(shape)
    out[dim] = out[dim] * factor if isinstance(factor, int) else factor(out[dim])
    return tuple(out)


# -- the collectives ---------------------------------------------------------------------------

def all_reduce(srcs: Any, dsts: Any, replica_group: Any, op: Any, priority: Any = None,
               name: str | None = None) -> None:
    label, s, d = _begin("all_reduce", name, srcs, dsts, sbuf=True)
    opname = _op_name(label, op)
    for a, b in zip(s, d):
        _shape_rule(label, a, b, tuple(a.shape), "all_reduce writes what it reads")
    members = _members(label, replica_group)
    _record("all_reduce", name, list(zip(d, s)))
    if current().check:
        return
    mine = _read(label, s)

    def compute(got: dict[int, list[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        sums = [_reduce(opname, [got[m][i] for m in members]) for i in range(len(s))]
        return {m: sums for m in members}

    out = _meet(label, "all_reduce", members, _signature("all_reduce", s, d, opname),
                _shown(s, d, f"op {opname}"), mine, compute)
    _write(label, d, out)


def all_gather(srcs: Any, dsts: Any, replica_group: Any, collective_dim: Any,
               priority: Any = None, name: str | None = None) -> None:
    label, s, d = _begin("all_gather", name, srcs, dsts, sbuf=True)
    kind = "sbuf" if s[0].buffer == "sbuf" else "hbm"
    dim = _dims(label, collective_dim, kind, (0, 1))
    members = _members(label, replica_group)
    for a, b in zip(s, d):
        _shape_rule(label, a, b, _scaled(tuple(a.shape), dim, len(members)),
                    f"all_gather over {len(members)} ranks along dim {dim} writes")
    _record("all_gather", name, list(zip(d, s)))
    if current().check:
        return
    mine = _read(label, s)

    def compute(got: dict[int, list[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        whole = [np.concatenate([got[m][i] for m in members], axis=dim) for i in range(len(s))]
        return {m: whole for m in members}

    out = _meet(label, "all_gather", members, _signature("all_gather", s, d, dim),
                _shown(s, d, f"collective_dim {dim}"), mine, compute)
    _write(label, d, out)


def reduce_scatter(srcs: Any, dsts: Any, replica_group: Any, collective_dim: Any, op: Any,
                   priority: Any = None, name: str | None = None) -> None:
    label, s, d = _begin("reduce_scatter", name, srcs, dsts, sbuf=True)
    kind = "sbuf" if s[0].buffer == "sbuf" else "hbm"
    dim = _dims(label, collective_dim, kind, (0,))
    opname = _op_name(label, op)
    members = _members(label, replica_group)
    k = len(members)
    for a, b in zip(s, d):
        if a.shape[dim] % k:
            raise TargetError(f"{label}: src {a.name} has {a.shape[dim]} along dim {dim}, not a "
                              f"multiple of the {k} ranks", code="APK969",
                              help=f"make dim {dim} a multiple of {k}")
        _shape_rule(label, a, b, _scaled(tuple(a.shape), dim, lambda v: v // k),
                    f"reduce_scatter over {k} ranks along dim {dim} writes")
    _record("reduce_scatter", name, list(zip(d, s)))
    if current().check:
        return
    mine = _read(label, s)

    def compute(got: dict[int, list[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        sums = [_reduce(opname, [got[m][i] for m in members]) for i in range(len(s))]
        parts = [np.split(x, k, axis=dim) for x in sums]
        return {m: [p[j] for p in parts] for j, m in enumerate(members)}

    out = _meet(label, "reduce_scatter", members,
                _signature("reduce_scatter", s, d, dim, opname),
                _shown(s, d, f"collective_dim {dim}", f"op {opname}"), mine, compute)
    _write(label, d, out)


def all_to_all(srcs: Any, dsts: Any, replica_group: Any, collective_dim: Any,
               priority: Any = None, name: str | None = None) -> None:
    label, s, d = _begin("all_to_all", name, srcs, dsts, sbuf=False)
    dim = _dims(label, collective_dim, "hbm", (0,))
    members = _members(label, replica_group)
    k = len(members)
    for a, b in zip(s, d):
        if a.shape[dim] % k:
            raise TargetError(f"{label}: src {a.name} has {a.shape[dim]} along dim {dim}, not a "
                              f"multiple of the {k} ranks", code="APK969",
                              help=f"make dim {dim} a multiple of {k}")
        _shape_rule(label, a, b, tuple(a.shape), "all_to_all writes the shape it reads")
    _record("all_to_all", name, list(zip(d, s)))
    if current().check:
        return
    mine = _read(label, s)

    def compute(got: dict[int, list[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        out: dict[int, list[np.ndarray]] = {}
        for j, m in enumerate(members):
            out[m] = [np.concatenate([np.split(got[o][i], k, axis=dim)[j] for o in members],
                                     axis=dim) for i in range(len(s))]
        return out

    out = _meet(label, "all_to_all", members, _signature("all_to_all", s, d, dim),
                _shown(s, d, f"collective_dim {dim}"), mine, compute)
    _write(label, d, out)


def collective_permute(srcs: Any, dsts: Any, source_target_pairs: Any, priority: Any = None,
                       name: str | None = None) -> None:
    label, s, d = _begin("collective_permute", name, srcs, dsts, sbuf=False, one=True)
    _shape_rule(label, s[0], d[0], tuple(s[0].shape), "collective_permute writes what it reads")
    try:
        pairs = tuple((int(a), int(b)) for a, b in source_target_pairs)
    except (TypeError, ValueError):
        raise TargetError(f"{label}: source_target_pairs is a list of (source, target) ranks, "
                          f"got {source_target_pairs!r}", code="APK968",
                          help="write source_target_pairs=[(0, 1), (1, 0)]") from None
    _, rank, n = _where()
    members = tuple(range(n))
    for a, b in pairs:
        if not (0 <= a < n and 0 <= b < n):
            raise _no_group(label, f"the pair ({a}, {b}) names a rank past the run's",
                            max(a, b) + 1, n)
    if len({b for _, b in pairs}) != len(pairs):
        raise TargetError(f"{label}: two pairs of {list(pairs)} send to one target",
                          code="APK968", help="each rank receives from at most one source")
    _record("collective_permute", name, [(d[0], s[0])])
    if current().check:
        return
    mine = _read(label, s)[0]

    def compute(got: dict[int, np.ndarray]) -> dict[int, np.ndarray | None]:
        out: dict[int, np.ndarray | None] = {m: None for m in members}
        for a, b in pairs:
            out[b] = got[a]
        return out

    out = _meet(label, "collective_permute", members,
                _signature("collective_permute", s, d, pairs),
                _shown(s, d, f"pairs {list(pairs)}"), mine, compute)
    if out is not None:
        _write(label, d, [out])


def _channels(label: str, by_channel: Any, role: str) -> list[Tensor]:
    if not isinstance(by_channel, (list, tuple)) or not by_channel:
        raise TargetError(f"{label}: {role} is a list (one per channel) of one-tensor lists",
                          code="APK968", help=f"write {role}=[[t]]")
    return [_tensors(label, role, c, one=True)[0] for c in by_channel]


def _ring(label: str, replica_group: Any) -> tuple[tuple[int, ...], int, int]:
    members = _members(label, replica_group)
    _, rank, _ = _where()
    i = members.index(rank)
    return members, members[(i + 1) % len(members)], members[(i - 1) % len(members)]


def collective_permute_implicit(srcs_by_channel: Any, dsts_by_channel: Any, replica_group: Any,
                                channel_ids: Any = (0,), priority: Any = None,
                                name: str | None = None) -> None:
    label = instruction_label("collective_permute_implicit", name)
    s, d = _channels(label, srcs_by_channel, "srcs_by_channel"), _channels(
        label, dsts_by_channel, "dsts_by_channel")
    _implicit(label, "collective_permute_implicit", name, s, None, d, replica_group, None,
              channel_ids)


def collective_permute_implicit_reduce(srcs0_by_channel: Any, srcs1_by_channel: Any,
                                       dsts_by_channel: Any, replica_group: Any, op: Any,
                                       channel_ids: Any = (0,), priority: Any = None,
                                       name: str | None = None) -> None:
    label = instruction_label("collective_permute_implicit_reduce", name)
    s0 = _channels(label, srcs0_by_channel, "srcs0_by_channel")
    s1 = _channels(label, srcs1_by_channel, "srcs1_by_channel")
    d = _channels(label, dsts_by_channel, "dsts_by_channel")
    _implicit(label, "collective_permute_implicit_reduce", name, s0, s1, d, replica_group,
              _op_name(label, op), channel_ids)


def _implicit(label: str, kind: str, name: str | None, s0: list[Tensor],
              s1: list[Tensor] | None, d: list[Tensor], replica_group: Any, op: str | None,
              channel_ids: Any) -> None:
    ids = list(channel_ids) if isinstance(channel_ids, (list, tuple)) else None
    if ids is None or ids != list(range(len(ids))) or len(ids) != len(d) or len(s0) != len(d) \
            or (s1 is not None and len(s1) != len(d)):
        raise TargetError(f"{label}: channel_ids {channel_ids!r} must be 0, 1, ... one per "
                          "channel of the tensor lists", code="APK968",
                          help="one channel: channel_ids=[0] with [[src]] and [[dst]]")
    _memory(label, s0 + (s1 or []) + d, sbuf=True)
    for i, (a, b) in enumerate(zip(s0, d)):
        _shape_rule(label, a, b, tuple(a.shape), f"channel {i} receives what its predecessor sends")
        if s1 is not None and (tuple(s1[i].shape) != tuple(a.shape)):
            raise TargetError(f"{label}: channel {i}'s srcs0 and srcs1 differ in shape",
                              code="APK969", help="reduce tensors of one shape")
    members, succ, pred = _ring(label, replica_group)
    if s1 is None:
        _record(kind, name, list(zip(d, s0)), ("dsts_by_channel", "srcs_by_channel"))
    else:
        _record(kind, name, list(zip(d, s0, s1)),
                ("dsts_by_channel", "srcs0_by_channel", "srcs1_by_channel"))
    if current().check:
        return
    mine = _read(label, s0)
    if s1 is not None and op is not None:
        other = _read(label, s1)
        mine = [REDUCE_OPS[op](a.astype(np.float64) if a.dtype.kind == "f" else a, b)
                for a, b in zip(mine, other)]
    ring = {m: members[(j - 1) % len(members)] for j, m in enumerate(members)}

    def compute(got: dict[int, list[np.ndarray]]) -> dict[int, list[np.ndarray]]:
        return {m: got[ring[m]] for m in members}

    out = _meet(label, kind, members, _signature(kind, s0, d, op, len(d)),
                _shown(s0, d, f"{len(d)} channels"), mine, compute)
    del succ, pred
    _write(label, d, out)


def collective_permute_implicit_current_processing_rank_id(iteration_id: Any, replica_group: Any,
                                                           channel_id: Any = 0,
                                                           name: str | None = None) -> Any:
    """The rank whose data a ring step processes: the rank itself at iteration 0, then the
    ranks before it along the ring, one per iteration (a register)."""
    label = instruction_label("collective_permute_implicit_current_processing_rank_id", name)
    k = registers.resolve(iteration_id, "iteration_id", label) if isinstance(
        iteration_id, (registers.VirtualRegister, registers.RegisterSum)) else iteration_id
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise TargetError(f"{label}: iteration_id must be a non-negative int, got "
                          f"{iteration_id!r}", code="APK968", help="pass the loop counter")
    members = _members(label, replica_group)
    _, rank, _ = _where()
    i = members.index(rank)
    from .register_ops import register_alloc
    return register_alloc(members[(i - int(k)) % len(members)], name=name)


def rank_id(name: str | None = None) -> Any:
    """The rank of the program under way (0 outside a group of ranks), in a register."""
    from .register_ops import register_alloc
    _, rank, _ = _where()
    return register_alloc(rank, name=name)


def _v_refused(op: str) -> None:
    raise TargetError(f"{op}: the variable-length collectives (counts in a metadata tensor) "
                      "are not simulated by apdsl yet", code="APK970",
                      help="use all_gather / all_to_all with fixed shapes")


def all_gather_v(srcs: Any, dsts: Any, replica_group: Any, metadata_tensor: Any,
                 recv_counts_known: bool = False, has_rdispls: bool = False,
                 priority: Any = None, name: str | None = None) -> None:
    _v_refused("all_gather_v")


def all_to_all_v(srcs: Any, dsts: Any, replica_group: Any, metadata_tensor: Any,
                 recv_counts_known: bool = False, has_rdispls: bool = False,
                 priority: Any = None, name: str | None = None) -> None:
    _v_refused("all_to_all_v")


# -- nisa.sendrecv and nisa.core_barrier ---------------------------------------------------------

def sendrecv(src: Tensor, dst: Tensor, send_to_rank: Any, recv_from_rank: Any, pipe_id: Any,
             dma_engine: Any = "dma", name: str | None = None) -> None:
    """Send `src` to rank `send_to_rank`'s `dst` and receive rank `recv_from_rank`'s into
    this rank's `dst` (NeuronCore-v3 and later; SBUF tiles of one dtype and shape).  On a
    group of ranks (`apdsl.nki.simulate_ranks`, `--ranks 2`) the two ranks exchange; alone, a
    kernel is rank 0 of 1 and can only send to itself.

    >>> a = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.memset(a, 3.0)
    >>> b = apdsl.ndarray((2, 4), "float32", "sbuf")
    >>> apdsl.sendrecv(a, b, send_to_rank=0, recv_from_rank=0, pipe_id=0)
    >>> b.numpy()[0]
    array([3., 3., 3., 3.], dtype=float32)
    """
    label = instruction_label("sendrecv", name)
    src, dst = tensor_arg(src, label, "src"), tensor_arg(dst, label, "dst")
    for role, t in (("src", src), ("dst", dst)):
        if t.buffer != "sbuf":
            raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; sendrecv moves SBUF "
                              "tiles", code="APK968", help="copy the data into SBUF first")
    if src.dtype != dst.dtype or tuple(src.shape) != tuple(dst.shape):
        raise TargetError(f"{label}: src is {src.dtype}{list(src.shape)}, dst "
                          f"{dst.dtype}{list(dst.shape)}; sendrecv needs one dtype and shape",
                          code="APK969", help="give src and dst the same dtype and shape")
    if targets.target_for(dst.buffer).name == "trn1":
        raise TargetError(f"{label}: sendrecv needs NeuronCore-v3 or newer; the target is trn1",
                          code="APK968", help="run with --target trn2")
    group, rank, n = _cores()
    peers = []
    for role, v in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if isinstance(v, (registers.VirtualRegister, registers.RegisterSum)):
            v = registers.resolve(v, role, label)
        if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < max(n, 2):
            raise TargetError(f"{label}: {role} is {v!r}; it names a rank 0 or 1 (LNC=2)",
                              code="APK968", help=f"pass {role}=0 or 1")
        if int(v) >= n:
            raise _no_group(label, f"{role} names rank {int(v)}", int(v) + 1, n)
        peers.append(int(v))
    trace.record("sendrecv", name, {"dst": dst, "src": src}, engine="dma")
    if current().check:
        return
    data = _read(label, [src])[0]
    if group is None:
        _write(label, [dst], [data])  # rank 0 of 1 sends to itself (element for element)
        return
    pipe = ("sendrecv", int(pipe_id) if isinstance(pipe_id, (int, np.integer)) else pipe_id)
    # both sides complete together (the docstring: a pipe_id's operations all complete before
    # any proceeds): send, take the peer's message, then wait until ours is taken, so a peer
    # that never receives is a deadlock naming this rank, not data dropped with exit 0
    ticket = group.send(rank, peers[0], pipe, _Message(data, unwritten.read_of("src")))
    got = group.receive(rank, peers[1], pipe,
                        Arrival(("sendrecv",), None, current().span,
                                f"sendrecv (receiving from rank {peers[1]})", ""))
    group.delivered(rank, peers[0], pipe, ticket,
                    Arrival(("sendrecv",), None, current().span,
                            f"sendrecv (its src sent to rank {peers[0]}, which has not "
                            "received it)", ""))
    group.passed(rank)  # both sides complete together: a meeting of the two
    if tuple(np.shape(got.data)) != tuple(dst.shape) or got.data.dtype != dst.dtype.np:
        raise TargetError(f"{label}: rank {peers[1]} sent {got.data.dtype}"
                          f"{list(np.shape(got.data))}, dst is {dst.dtype}{list(dst.shape)}",
                          code="APK966", help="send and receive tiles of one dtype and shape")
    # dst holds the peer's data: what was unwritten there is unwritten here, element for
    # element, and nothing of this program's own src (its reads no longer count)
    unwritten.begin()
    _write(label, [dst], [got.data])
    if got.unwritten is not None:
        bad, origin = got.unwritten
        leave_unwritten(ex.resolve(dst, label, "dst"), bad, origin)


class _Message:
    """What `sendrecv` sends: the src tile's values and, where the sender read unwritten
    elements of it, (which, their origin): the receiver's dst leaves those unwritten."""

    __slots__ = ("data", "unwritten")

    def __init__(self, data: np.ndarray, unwritten: tuple[np.ndarray, Any] | None) -> None:
        self.data, self.unwritten = data, unwritten


def core_barrier(data: Tensor, cores: Any, engine: Any = "gpsimd", name: str | None = None) -> None:
    """Every core of `cores` waits here until all have arrived (NeuronCore-v3 and later); on
    a group of ranks cores 0 and 1 are ranks 0 and 1.  Alone, a kernel is rank 0 of 1, so the
    barrier has no partner:

    >>> t = apdsl.ndarray((2, 2), "float32", "shared_hbm")
    >>> try:
    ...     apdsl.core_barrier(t, cores=(0, 1))
    ... except apdsl.ApdslError as e:
    ...     print(e.code)
    APK967
    """
    label = instruction_label("core_barrier", name)
    data = tensor_arg(data, label, "data")
    try:
        members = tuple(sorted(int(c) for c in cores))
    except TypeError:
        raise TargetError(f"{label}: cores is a tuple of core indices, got {cores!r}",
                          code="APK968", help="pass cores=(0, 1)") from None
    if members != (0, 1):
        raise TargetError(f"{label}: cores={tuple(cores)!r}; only (0, 1) is supported (LNC=2)",
                          code="APK968", help="pass cores=(0, 1)")
    # The docstring says data "must be data in shared HBM", yet nki-library's moe_cte
    # (bwmm_shard_on_I.py, the dynamic-block loop) calls core_barrier(block_idx, (0, 1)) on an
    # SBUF tile, in AWS's published, hardware-tested kernel. The barrier only orders the two
    # cores (semaphores); it neither reads nor writes its data, so where the data lives does not
    # change what it does: SBUF is accepted with the same meaning. PSUM and other memories are
    # not named anywhere, and stay refused.
    if data.buffer not in HBM and data.buffer != "sbuf":
        raise TargetError(f"{label}: data {data.name} is in {data.buffer}; the barrier's data "
                          "is in shared HBM (or an SBUF tile, as nki-library's kernels pass)",
                          code="APK968", help="pass the shared HBM tensor the cores wrote",
                          buffer=data.buffer)
    group, rank, n = _cores()
    if n < 2:
        raise _no_group(label, "the barrier joins cores 0 and 1", 2, n)
    trace.record("core_barrier", name, {"data": data}, engine="gpsimd")
    if current().check:
        return
    if rank not in members:
        return
    _meet(label, "core_barrier", members, ("core_barrier", members), f"cores {list(members)}",
          None, lambda got: {m: None for m in members}, cores=True)
    if group is not None:
        group.passed(rank)


__all__ = ["ReplicaGroup", "all_gather", "all_gather_v", "all_reduce", "all_to_all",
           "all_to_all_v", "collective_permute", "collective_permute_implicit",
           "collective_permute_implicit_current_processing_rank_id",
           "collective_permute_implicit_reduce", "core_barrier", "rank_id", "reduce_scatter",
           "sendrecv"]
_ = prod, Group
