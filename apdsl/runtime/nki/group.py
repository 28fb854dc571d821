"""A simulated group of ranks (SPEC 16): n programs in one process, each rank its own thread
running the kernel on its own machine (its own HBM, SBUF and PSUM), meeting at each collective.

Exactly one rank runs at a time: a rank holds the turn until it waits at a meeting or ends, then
hands it to the next rank that can run (round robin from itself).  The simulation is therefore
deterministic and no state is touched by two threads at once.  Meetings match in program
order: a rank's k-th collective over a set of ranks meets the k-th of every other rank of the
set.  When every rank that can still run is waiting and none can go on, that is a deadlock: the
group stops with a located error naming the waiting ranks and the ones that never arrived.
The rank of the thread under way is a context variable (`here()`), so a kernel's collectives
find their group and rank.

The two programs of an LNC=2 launch (`kernel[2]`: two NeuronCores sharing HBM) run the same way
as a group of "cores" (`Group(2, cores=True)`, found by `core_here()`): `nisa.sendrecv` and
`nisa.core_barrier` meet there, between the cores of one logical NeuronCore, as their docstrings
say; a group of ranks is for `nki.collectives` between devices.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from contextvars import ContextVar, copy_context
from typing import Any

from ...errors import ApdslError, ApdslRuntimeError, Span
from ..core.lnc_race import Races


class Stopped(BaseException):
    """The group stopped (another rank failed, or a deadlock): a waiting rank unwinds.  A
    BaseException, so a kernel's own `except Exception` does not swallow it."""


class Arrival:
    """One rank at a meeting: what it calls (`signature`, compared across the ranks), what it
    brings (`payload`), where (`span`) and how the messages name the call (`what`)."""

    __slots__ = ("signature", "payload", "span", "what", "shown")

    def __init__(self, signature: tuple, payload: Any, span: Span | None, what: str,
                 shown: str) -> None:
        self.signature, self.payload, self.span, self.what = signature, payload, span, what
        self.shown = shown  # the signature in words, for a mismatch


class Meeting:
    __slots__ = ("members", "arrived", "results")

    def __init__(self, members: tuple[int, ...]) -> None:
        self.members = members
        self.arrived: dict[int, Arrival] = {}
        self.results: dict[int, Any] | None = None


class Group:
    """n ranks; `run(body)` runs `body(rank)` on each and returns their values in rank order,
    or raises the error that stopped the group."""

    def __init__(self, n: int, cores: bool = False, races: Races | None = None) -> None:
        import threading  # (only a run on ranks needs it: off the cold check path)
        self.n = n
        self.races = races  # the race checker of the HBM an LNC=2 launch's programs share
        self.var = _CORE if cores else _HERE
        self.who = "program" if cores else "rank"  # what the messages call a member
        self.cv = threading.Condition()
        self.turn = 0
        self.state = ["ready"] * n  # ready, waiting, done
        self.waiting: dict[int, Arrival] = {}
        self.meetings: dict[tuple, Meeting] = {}
        self.seen: list[Counter] = [Counter() for _ in range(n)]
        self.mail: dict[tuple, list[Any]] = {}
        # messages posted and taken per (sender, receiver, channel): a sender waits until its
        # message is taken (sendrecv completes on both sides together)
        self.posted: Counter = Counter()
        self.taken: Counter = Counter()
        self.ready_when: dict[int, Callable[[], bool]] = {}
        self.failure: BaseException | None = None
        self.stopped = False

    # -- running ---------------------------------------------------------------------------
    def run(self, body: Callable[[int], Any]) -> list[Any]:
        import threading
        values: list[Any] = [None] * self.n
        threads = []
        for r in range(self.n):
            ctx = copy_context()  # the caller's options, targets and trace, per thread
            threads.append(threading.Thread(target=ctx.run, args=(self._rank, r, body, values),
                                            name=f"apdsl-rank-{r}", daemon=True))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.failure is not None:
            raise self.failure
        return values

    def _rank(self, r: int, body: Callable[[int], Any], values: list[Any]) -> None:
        token = self.var.set((self, r))
        try:
            with self.cv:
                self.cv.wait_for(lambda: self.turn == r or self.stopped)
                if self.stopped:
                    return
            values[r] = body(r)
        except Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - the rank's failure stops the group
            with self.cv:
                if self.failure is None:  # (an LNC program's error is located already)
                    self.failure = on_rank(e, r, self.n) if self.var is _HERE else e
                self._stop()
        finally:
            self.var.reset(token)
            with self.cv:
                self.state[r] = "done"
                if not self.stopped:
                    self._hand_on(r)

    def _stop(self) -> None:
        self.stopped = True
        self.cv.notify_all()

    def _hand_on(self, r: int) -> None:
        """Give the turn to the next rank that can run; none, while some wait: a deadlock."""
        for k in range(1, self.n + 1):
            c = (r + k) % self.n
            if self.state[c] == "ready":
                self.turn = c
                self.cv.notify_all()
                return
        if self.waiting:
            self.failure = self._deadlock()
            self._stop()
        else:
            self.cv.notify_all()

    def _deadlock(self) -> ApdslError:
        first = min(self.waiting)
        a = self.waiting[first]
        who = self.who
        lines = [f"{who} {w} waits at {self.waiting[w].what}"
                 + (f" ({self.waiting[w].span.file}:{self.waiting[w].span.line})"
                    if self.waiting[w].span else "") for w in sorted(self.waiting)]
        done = [r for r in range(self.n) if self.state[r] == "done"]
        if done:
            lines.append(f"{who}{'s' if len(done) > 1 else ''} {_ranks(done)} ended without "
                         "arriving")
        help_ = ("every rank of a replica group calls the same collectives in the same order "
                 "(a collective under a rank-dependent `if` is the usual cause)" if who == "rank"
                 else "both programs of an LNC=2 launch make the same sendrecv and core_barrier "
                 "calls in the same order (one under a program_id-dependent `if` is the usual "
                 "cause)")
        return ApdslRuntimeError(
            f"deadlock: {who}{'s' if len(self.waiting) > 1 else ''} "
            f"{_ranks(sorted(self.waiting))} wait{'s' if len(self.waiting) == 1 else ''} at "
            f"{a.what} for {who}s that never arrive", code="APK965", span=a.span, notes=lines,
            help=help_, waiting=tuple(sorted(self.waiting)), ended=tuple(done))

    def passed(self, r: int) -> None:
        """Rank r passed a meeting (a collective, `sendrecv`, `core_barrier`): what every
        member did before it is ordered before what each does after it."""
        if self.races is not None:
            self.races.passed(r)

    # -- meeting -----------------------------------------------------------------------------
    def meet(self, r: int, members: Sequence[int], arrival: Arrival,
             compute: Callable[[dict[int, Any]], dict[int, Any]]) -> Any:
        """Rank r arrives at its next meeting with `members` (r among them); when the last
        arrives, `compute(payloads by rank)` gives each member its result.  Returns r's."""
        members = tuple(members)
        with self.cv:
            seq = self.seen[r][members]
            self.seen[r][members] += 1
            meeting = self.meetings.setdefault((members, seq), Meeting(members))
            meeting.arrived[r] = arrival
            if len(meeting.arrived) == len(members):
                del self.meetings[members, seq]
                odd = mismatch(meeting)
                if odd is not None:
                    self.failure = odd
                    self._stop()
                    raise Stopped
                meeting.results = compute({m: meeting.arrived[m].payload for m in members})
                for m in members:
                    if m != r:
                        self.state[m] = "ready"
                        self.waiting.pop(m, None)
                return meeting.results[r]
            self._wait(r, arrival, lambda: meeting.results is not None)
            return meeting.results[r]  # type: ignore[index]

    def send(self, r: int, to: int, channel: Any, payload: Any) -> int:
        """Post a message from r to rank `to`; its ticket (for `delivered`)."""
        key = (r, to, channel)
        with self.cv:
            self.mail.setdefault(key, []).append(payload)
            ticket = self.posted[key]
            self.posted[key] += 1
            self._wake()
            return ticket

    def receive(self, r: int, source: int, channel: Any, arrival: Arrival) -> Any:
        """Take the next message from `source` to r on `channel`, waiting for it."""
        key = (source, r, channel)
        with self.cv:
            if not self.mail.get(key):
                self._wait(r, arrival, lambda: bool(self.mail.get(key)))
            self.taken[key] += 1
            self._wake()
            return self.mail[key].pop(0)

    def delivered(self, r: int, to: int, channel: Any, ticket: int, arrival: Arrival) -> None:
        """Wait until rank `to` has taken r's message `ticket` on `channel`."""
        key = (r, to, channel)
        with self.cv:
            if self.taken[key] <= ticket:
                self._wait(r, arrival, lambda: self.taken[key] > ticket)

    def _wake(self) -> None:
        """(Holding the lock) let every rank waiting for mail, or for its mail to be taken,
        whose condition now holds go on when its turn comes."""
        for w in [w for w, ready in self.ready_when.items() if ready()]:
            self.state[w] = "ready"
            self.waiting.pop(w, None)
            del self.ready_when[w]

    def _wait(self, r: int, arrival: Arrival, ready: Callable[[], bool]) -> None:
        """(Holding the lock) wait until `ready()`, handing the turn on meanwhile."""
        self.state[r] = "waiting"
        self.waiting[r] = arrival
        self.ready_when[r] = ready
        self._hand_on(r)
        self.cv.wait_for(lambda: self.stopped or (self.turn == r and ready()))
        if self.stopped:
            raise Stopped
        self.state[r] = "ready"
        self.waiting.pop(r, None)
        self.ready_when.pop(r, None)


def mismatch(meeting: Meeting) -> ApdslError | None:
    """A located error on the rank whose call differs from the others' (the most common
    signature is the expected one; on a tie, the lowest rank's)."""
    arrived = meeting.arrived
    counts = Counter(a.signature for a in arrived.values())
    if len(counts) == 1:
        return None
    order = {a.signature: i for i, a in sorted(arrived.items(), reverse=True)}
    expected = max(counts, key=lambda s: (counts[s], -order[s]))
    odd = min(r for r, a in arrived.items() if a.signature != expected)
    like = next(r for r, a in sorted(arrived.items()) if a.signature == expected)
    a = arrived[odd]
    return ApdslRuntimeError(
        f"rank {odd}'s {a.what} does not match rank {like}'s: {a.shown}, where rank {like} has "
        f"{arrived[like].shown}", code="APK966", span=a.span,
        notes=[f"the ranks of one collective give tensors of the same shapes and dtypes and the "
               f"same arguments; ranks {_ranks(sorted(arrived))} meet here"],
        help="make every rank pass the same shapes, dtypes and arguments (the data may differ)",
        rank=odd)


def on_rank(e: BaseException, r: int, n: int) -> BaseException:
    """A rank's own failure, saying which rank (every rank runs the same source)."""
    if isinstance(e, ApdslError) and n > 1 and not any("on rank" in x for x in e.notes):
        return e.replace(notes=[*e.notes, f"on rank {r} of {n}"]).with_traceback(e.__traceback__)
    return e


def _ranks(rs: Sequence[int]) -> str:
    return ", ".join(map(str, rs))


_HERE: ContextVar[tuple[Group, int] | None] = ContextVar("apdsl_rank", default=None)
_CORE: ContextVar[tuple[Group, int] | None] = ContextVar("apdsl_lnc_core", default=None)


def here() -> tuple[Group, int] | None:
    """(group, rank) of the rank under way; None outside a group of ranks."""
    return _HERE.get()


def core_here() -> tuple[Group, int] | None:
    """(group, program id) of the LNC program under way in a `kernel[2]` launch; None
    outside one."""
    return _CORE.get()
