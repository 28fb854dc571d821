"""What the synchronisation checker (`apdsl.runtime.sync`) shares across the cores of a launch
(`World`), its error type, and the messages of a race between cores and of an instruction on
a pipe a core does not have."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.machine import current
from .pipes import EVENT_IDS, HARD_EVENTS, PIPES
from .sync_facts import Record, Touch

_N = len(PIPES)
_EVENTS = frozenset(HARD_EVENTS)


class SyncError(ApdslRuntimeError):
    """A synchronisation error: a race, a deadlock, an invalid event (APK570-APK579; between
    cores APK583-APK590)."""

    default_code = "APK570"


def reuse(acc: Touch, e: Touch, t: Any) -> tuple[str, list[str]]:
    """When the earlier access `e` was to another tensor whose freed bytes `t` (accessed by
    `acc`) now reuses: the words naming it in the message, and a note on the reuse."""
    if e.owner is None or acc.owner is None or e.owner[0] == acc.owner[0]:
        return "", []
    _, old, old_line = e.owner
    _, _, new_line = acc.owner
    doing = "write" if e.write else "read"
    made = f" (declared at line {new_line})" if new_line else ""
    was = f" (declared at line {old_line})" if old_line else ""
    if _aliases(t, e.owner[0]):  # both live, placed over the same bytes
        return (f" through {old}", [
            f"{t.name}{made} and {old}{was} are placed over some of the same bytes: an "
            f"access through either is an access of those bytes, and {op_at(e)} may still "
            f"{doing} them"])
    if old == t.name:  # the same declaration, allocated again by a later iteration
        return (f" as the earlier {old}", [
            f"{t.name} of this iteration reuses the bytes {old} had in an earlier iteration "
            f"(freed when that iteration ended), while {op_at(e)} may still {doing} them as "
            f"the earlier {old}: the two tensors' uses of the same bytes race"])
    return (f" as {old}", [
        f"{t.name}{made} reuses the bytes of {old}{was}, which was freed when its block ended, "
        f"while {op_at(e)} may still {doing} {old} there: the two tensors' uses of the same "
        "bytes race"])


def _aliases(t: Any, sid: int) -> bool:
    """Whether storage `sid` is live and placed over some of the bytes of `t`'s storage
    (`apdsl.tensor.placement.PlacedStorage.overlaps`)."""
    return any(o is not None and o.id == sid and not o.freed
               for o in (r() for r in getattr(t.storage, "overlaps", ())))


def op_at(a: Touch) -> str:
    if a.location is None:
        return a.op
    return f"{a.op} (line {a.location[1]})"


class World:
    """What the cores of one launch share (SPEC 17): every pipe's instruction count, indexed
    `core * 7 + pipe`, the accesses per storage region (GM is shared; each core's on-chip
    buffers are regions of their own), the access counter, the pipes that have run, and
    whether a race was reported.  A kernel on one core has a world of its own.  `names` say
    how messages name each core (`apdsl.runtime.ascend.cores` sets them for a launch)."""

    def __init__(self, cores: int = 1) -> None:
        self.cores = cores
        self.count = [0] * (_N * cores)
        self.regions: dict[Any, tuple[list[Record], list[Record]]] = {}
        self.accesses = 0
        # the pipes that have run an instruction: a clock's entry for any other pipe is 0, so
        # a wait's join leaves it alone
        self.used: tuple[int, ...] = ()
        self.failed = False
        self.syncs: list[Any] = []
        self.names: list[str] = ["the core"]
        # (flag, mode) advice for ordering two cores (`cross_fix`), given by the launch
        self.advice: Any = None

    def grow(self, cores: int) -> None:
        """Room for more cores (a launch that turned out to split each AI core into one AIC
        and two AIVs): every clock, snapshot and count gets the new pipes' entries, at 0."""
        extra = _N * (cores - self.cores)
        if extra <= 0:
            return
        self.cores = cores
        self.count.extend([0] * extra)
        for s in self.syncs:
            for row in s.clock:
                row.extend([0] * extra)
            for snap, _, _ in s.flags.values():
                snap.extend([0] * extra)

    def name(self, pipe: int) -> str:
        """How a message names the core of global pipe index `pipe`."""
        return self.names[pipe // _N] if pipe // _N < len(self.names) else f"core {pipe // _N}"



def cross_race(sync: Any, kind: str, acc: Touch, e: Touch, t: Any,
                both: np.ndarray) -> SyncError:
    """A race between two cores of a launch (APK583): both lines, both cores, and the
    cross-core flag that would order them."""
    w = sync.world
    p, q = PIPES[acc.pipe % _N], PIPES[e.pipe % _N]
    me, other = w.name(acc.pipe), w.name(e.pipe)
    verb = {True: "writes", False: "reads"}
    lo, hi = int(both[0]) - acc.base, int(both[-1]) - acc.base
    nbytes = int(both.size)
    where = f"bytes {lo}-{hi}" if nbytes == hi - lo + 1 else \
        f"{nbytes} bytes in {lo}-{hi}"
    message = (f"data race between cores ({kind}): {acc.op} on {me} (pipe {p}) "
               f"{verb[acc.write]} {t.name} @ {t.buffer} {where} while {op_at(e)} on "
               f"{other} (pipe {q}) may still {'write' if e.write else 'read'} them")
    notes = [f"{other} and {me} run concurrently: no cross-core flag or sync_all orders "
             f"{op_at(e)} before {op_at(acc)}"]
    fix = (w.advice(e.pipe // _N, acc.pipe // _N, q, op_at(e), op_at(acc))
           if w.advice is not None else "order them with sync_all() between the two")
    if acc.write and e.write and acc.span is not None and acc.span == e.span:
        # one instruction writing the same bytes on two cores: the two cores were given the
        # same work (a launch on more cores than the work is split into), whatever the values.
        # A race all the same: which core's write lands last is not defined, and the check
        # cannot know that the two write equal values for every input
        notes.append(f"{me} runs the same {acc.op} as {other} on the same bytes: the launch "
                     "gives both the same part of the output (more cores than the work is "
                     "split into, as an index taken modulo the used cores does)")
        fix = (f"give every core its own part of {t.name}, or stop the extra cores (for "
               "example `if get_block_idx() >= used_cores: return`); " + fix)
    err = SyncError(message, code="APK583", notes=notes, help=fix, pipes=(q, p),
                    cores=(other, me), tensor=t.name, bytes=(lo, hi))
    return err.with_label(e.span, f"{'written' if e.write else 'read'} here on {other}, "
                          f"pipe {q}")


def no_pipe(sync: Any, op: str, p: int) -> SyncError:
    """An instruction on a pipe this core does not have (an AIC's vector work, an AIV's
    cube work): APK585."""
    name = sync.world.name(sync.base)
    have = ", ".join(PIPES[q] for q in sorted(sync.pipes or ()) if PIPES[q] != "S")
    aic = name.startswith("AIC")
    return SyncError(
        f"{op} runs on pipe {PIPES[p]}, which {name} does not have (its pipes: {have})",
        code="APK585", notes=["on Atlas A2 an AI core is one cube core (AIC: MTE1, MTE2, "
                              "M, FIX; L1 and L0) and two vector cores (AIV: MTE2, MTE3, "
                              "V; a UB each)"],
        help=("put the vector work under `if ascend_is_aiv():`" if aic else
              "put the cube work under `if ascend_is_aic():`"), pipe=PIPES[p])


def check_event(event: Any, i: Any, what: str) -> tuple[str, int]:
    """Validate an event name and id of set_flag/wait_flag: APK572, APK573."""
    if type(event) is str and type(i) is int and i >= 0 and event in _EVENTS:
        ids = EVENT_IDS.get(current().targets.get("ascend", "ascend-a2"), 8)
        if i < ids:  # the common case, decided without the messages' work
            return event, i
    if not isinstance(event, str) or event not in HARD_EVENTS:
        text = event if isinstance(event, str) else repr(event)
        from difflib import get_close_matches
        close = get_close_matches(text.upper(), HARD_EVENTS, n=3) if isinstance(event, str) \
            else []
        raise SyncError(f"{what}: unknown event {text!r}", code="APK572",
                        notes=["events are AscendC's HardEvent names, SRC_DST: the source pipe "
                               "sets the flag and the destination pipe waits for it"],
                        help=(f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                              else "for example \"MTE2_MTE1\", \"MTE1_M\", \"M_FIX\", "
                              "\"FIX_M\", \"M_MTE1\", \"MTE1_MTE2\", \"MTE2_V\", \"V_MTE3\""),
                        event=text)
    ids = EVENT_IDS.get(current().targets.get("ascend", "ascend-a2"), 8)
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < ids:
        raise SyncError(f"{what}(\"{event}\", {i!r}): event id must be an int 0-{ids - 1} on "
                        f"{current().targets.get('ascend', 'ascend-a2')}", code="APK573",
                        help="ping-pong buffers use ids 0 and 1 (CATLASS: 0/1 for A, 2/3 for B)",
                        event=event, id=i)
    return event, int(i)
