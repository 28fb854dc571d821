"""Ascend cores (SPEC 17): a kernel launched on n AI cores runs once per core.

Each core has its own L1, L0A/B/C and UB (a machine of its own: its own capacity accounting and
address space), its own pipes and flags (a `Sync` of its own); GM is shared, and the race
checker sees the cores as concurrent: the pipes of all the cores of a launch are one
happens-before order (`sync.World`), in which nothing orders two cores but the cross-core flags
and `sync_all`.

On Atlas A2 an AI core is one cube core (AIC: MTE1, MTE2, M, FIX; L1 and L0) and two vector
cores (AIV: MTE2, MTE3, V; a UB each).  A kernel that asks which part it runs on
(`ascend_is_aic()`, `ascend_is_aiv()`, `get_sub_block_idx()`, a cross-core flag of mode 1 or 2,
`sync_all(is_aiv_only=False)`) runs on each AI core three times: once as its AIC, once as each
AIV (AscendC's KERNEL_TYPE_MIX_AIC_1_2).  One that never asks runs once per AI core, on a core
with every pipe (an AIC-only or AIV-only kernel, as today's examples).  The first core (block 0)
decides, when it first asks, blocks or ends.  `get_block_idx()` is the block on an AIC, and
`2 * block + sub_block` on an AIV; `get_block_num()` is n on both (the GetBlockIdx/GetBlockNum
docs).

Cross-core flags (CrossCoreSetFlag/WaitFlag docs, Atlas A2: modes 0, 1, 2; flag ids 0-15; each
id a counter 0-15 per core): mode 0 syncs every core of a kind (every AIC, or every AIV) --
when all have set the flag, each one's counter goes up; mode 1 the two AIVs of an AI core;
mode 2 the AIC and the AIVs of an AI core (the AIC's set counts once on each AIV; both AIVs'
sets count once on the AIC).  A wait blocks the core until its counter is non-zero and takes one
(on Atlas A2 it blocks every pipe of the core).  A set carries what its pipe has done: the
waiting core's instructions after the wait follow the setters' instructions on that pipe before
the set.  `sync_all()` is a barrier of every core of the launch (`is_aiv_only=True` in a split
kernel: of every AIV).

The cores run one at a time, each in a thread of its own (the first on the caller's), and a
core that waits for a flag its counter does not have hands over to the lowest-numbered core
that can run; when none can, the launch is a deadlock (APK588) naming every waiting core.
Values are those of that one schedule; the race checker is what says whether a kernel's
result depends on the schedule.  `profile` schedules every core's pipes in parallel.

Frontends drive the model through `CoreLaunch(blocks, body, ...)` and the functions below,
which act on the core of the current machine (`apdsl.tensor.machine.current().core`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import ApdslError, Span, Warning_
from ...tensor.machine import current
from ..sync import Sync
from ..sync.pipes import PIPE_INDEX, PIPES
from ..sync.warn import warn
from ..sync.world import SyncError, World

MAX_BLOCKS = 65535  # numBlocks of a launch (AscendC's <<<>>> range)
CROSS_FLAGS = 16    # flag ids 0-15 per core (modes 0, 1, 2)
COUNTER_MAX = 15    # a flag's counter counts 0-15 (the docs: past it, an exception)
MODES = (0, 1, 2)   # Atlas A2 (mode 4 is Ascend 950's)
CROSS_PIPES = ("V", "M", "MTE1", "MTE2", "MTE3", "FIX")  # not S, not ALL
AIC_PIPES = frozenset(PIPE_INDEX[p] for p in ("S", "MTE1", "MTE2", "M", "FIX"))
AIV_PIPES = frozenset(PIPE_INDEX[p] for p in ("S", "MTE2", "MTE3", "V"))
_N = len(PIPES)
_LAUNCHER = "launcher"  # whose turn it is when no core's is
_STACK = 64 << 20  # bytes of stack per core thread (the interpreter recurses deeply)

if TYPE_CHECKING:  # (threading loads when a launch first runs: checking a file needs none)
    import threading

    from ...tensor.machine import Machine


class Hooks(Protocol):
    """What a frontend keeps per thread of execution besides the machine (the `.apk`
    interpreter's call depth and span): saved when a core hands over, restored when it
    resumes."""

    def save(self) -> Any:
        """The frontend's state of the core that is about to hand over."""

    def restore(self, state: Any) -> None:
        """Make `state` (from `save`) the frontend's state again."""


class _NoHooks:
    def save(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


class Aborted(BaseException):  # noqa: N818 - a signal, not an error
    """Unwinds a core when its launch ends without it (another core failed, a deadlock)."""


class CoreState:
    """One core of a launch: which it is, its machine, and where it is in the schedule."""

    def __init__(self, launch: CoreLaunch, index: int, kind: str, block: int, sub: int) -> None:
        self.launch = launch
        self.index = index  # its place in the launch: its pipes' and address space's number
        self.kind = kind    # "core" (every pipe), "aic", "aiv"; "?" until the launch decides
        self.block = block
        self.sub = sub
        self.machine: Machine | None = None
        self.sync: Sync | None = None
        self.started = False
        self.done = False
        self.result: Any = None
        self.thread: threading.Thread | None = None
        # a wait under way: (counter key, what it waits for, span, location)
        self.waiting: tuple[Any, str, Span | None, Any] | None = None
        self.counters: dict[Any, deque[Any]] = {}  # flag id (or "sync_all") -> snapshots
        self.rounds: dict[Any, int] = {}  # (mode, group, flag) -> this core's sets so far
        self.asked = False  # it asked which part of the AI core it runs on

    @property
    def block_idx(self) -> int:
        """`get_block_idx()`: the block on an AIC (or a whole core); 2 * block + sub-block on an
        AIV of a split kernel (GetBlockIdx docs, AIC:AIV 1:2)."""
        return 2 * self.block + self.sub if self.kind == "aiv" else self.block

    @property
    def name(self) -> str:
        if self.kind == "aic":
            return f"AIC {self.block}"
        if self.kind == "aiv":
            return f"AIV {self.block_idx} (AI core {self.block}, sub-block {self.sub})"
        return f"core {self.block}"

    @property
    def short(self) -> str:
        return {"aic": f"AIC {self.block}", "aiv": f"AIV {self.block_idx}"}.get(
            self.kind, f"core {self.block}")


class CoreLaunch:
    """A kernel on `blocks` AI cores: `body(core)` runs once per core (see the module
    docstring).  `mix`: the kernel's AIC/AIV split when the frontend knows it (None: the first
    core decides).  `run()` returns every core's result, in core order."""

    def __init__(self, blocks: int, body: Callable[[CoreState], Any], *, mix: bool | None = None,
                 hooks: Hooks | None = None) -> None:
        self.blocks = blocks
        self.body = body
        self.hooks = hooks or _NoHooks()
        parent = current()
        self.parent = parent
        self.target = parent.targets.get("ascend", "ascend-a2")
        self.checked = parent.options.sync is not False
        self.world = World(blocks)
        self.world.advice = self.advice
        self.cores: list[CoreState] = []
        self.mix: bool | None = None
        import threading
        self._cond = threading.Condition()
        self._turn: Any = _LAUNCHER
        self.error: BaseException | None = None
        self.aborting = False
        # (mode, group, flag) -> round number -> {core index: snapshot}
        self._rounds: dict[Any, dict[int, dict[int, Any]]] = {}
        self.flag_ids: set[int] = set()  # cross-core flag ids the kernel uses (advice)
        first = self._add(0, "?", 0, 0)
        if mix is not None:
            self.decide(mix, first)

    # -- the cores ------------------------------------------------------------------------
    def _add(self, index: int, kind: str, block: int, sub: int) -> CoreState:
        st = CoreState(self, index, kind, block, sub)
        m = self.parent.child()
        m.warnings, m.warned = self.parent.warnings, self.parent.warned  # one list of them
        m.core, m.space = st, index + 1
        if self.checked:
            st.sync = m.sync = Sync(self.target, self.world, index)
        st.machine = m
        self.cores.append(st)
        self.cores.sort(key=lambda c: c.index)
        return st

    def decide(self, mix: bool, asking: CoreState) -> None:
        """Fix the launch's shape: n whole cores, or n AI cores of one AIC and two AIVs."""
        if self.mix is not None:
            if mix and not self.mix:
                raise SyncError(
                    f"{asking.short} asks which part of the AI core it runs on, but core 0 "
                    "already ran as a whole AI core (it neither asked nor used a mode 1 or 2 "
                    "cross-core flag before it first waited or ended)", code="APK584",
                    help="ask ascend_is_aic() / ascend_is_aiv() before the kernel's first "
                    "cross-core wait or sync_all, on every core")
            return
        self.mix = mix
        first = self.cores[0]
        n = self.blocks
        if not mix:
            first.kind = "core"
            for b in range(1, n):
                self._add(b, "core", b, 0)
        else:
            self.world.grow(3 * n)
            first.kind = "aic"
            s0 = first.sync
            if s0 is not None:
                used = {q for q in range(_N) if self.world.count[q]}
                bad = sorted(used - AIC_PIPES)
                if bad:
                    raise SyncError(
                        f"core 0 ran instructions on pipe {PIPES[bad[0]]} before it asked which "
                        "part of the AI core it runs on; it is the AIC, which has no such pipe",
                        code="APK585", help="put the vector work under `if ascend_is_aiv():`")
                s0.pipes = AIC_PIPES
            for b in range(n):
                if b:
                    self._add(b, "aic", b, 0)
                for sub in (0, 1):
                    self._add(n + 2 * b + sub, "aiv", b, sub)
            for st in self.cores:
                if st.sync is not None:
                    st.sync.pipes = AIC_PIPES if st.kind == "aic" else AIV_PIPES
        self.world.names = [c.short for c in self.cores]

    def ask(self, st: CoreState) -> None:
        """The kernel asks which part of the AI core this core is: the launch splits."""
        st.asked = True
        self.decide(True, st)

    # -- running ----------------------------------------------------------------------------
    def run(self) -> list[Any]:
        """Run every core; return their results in core order (the first error, or the
        deadlock, raised when every core has stopped)."""
        first = self.cores[0]
        mine = self.hooks.save()
        try:
            self._run(first)
            with self._cond:
                while True:
                    nxt = self._pick()
                    if nxt is None:
                        break
                    self._give(nxt)
                    while self._turn is not _LAUNCHER:
                        self._cond.wait()
        finally:
            self.hooks.restore(mine)
            for st in self.cores:
                if st.thread is not None:
                    st.thread.join()
        if self.error is not None:
            raise self.error
        self._finish()
        return [st.result for st in self.cores]

    def _run(self, st: CoreState) -> None:
        """Run core `st`'s body to its end on this thread (its errors kept for `run`)."""
        st.started = True
        try:
            with st.machine.active():
                try:
                    st.result = self.body(st)
                finally:
                    if st.sync is not None and self.error is None and not self.aborting:
                        for w in st.sync.finish():
                            warn(w)
        except Aborted:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the launcher, raised there
            if self.error is None:
                self.error = self._located(e, st)
            self.aborting = True
        finally:
            st.done = True
            if self.mix is None:
                self.decide(False, st)

    def _thread(self, st: CoreState) -> None:
        with self._cond:
            while self._turn is not st:
                self._cond.wait()
        self._run(st)
        with self._cond:
            self._handoff()

    def _give(self, st: CoreState) -> None:
        """Make it `st`'s turn (starting its thread the first time); the lock is held."""
        self._turn = st
        if not st.started and st.thread is None:
            import contextvars
            import threading
            ctx = contextvars.copy_context()
            t = threading.Thread(target=ctx.run, args=(self._thread, st), daemon=True,
                                 name=f"apdsl {st.short}")
            st.thread = t
            before = threading.stack_size()
            threading.stack_size(_STACK)
            try:
                t.start()
            finally:
                threading.stack_size(before)
        self._cond.notify_all()

    def _handoff(self) -> None:
        """The running core stops (it waits or ended): the next core's turn, or the
        launcher's.  The lock is held."""
        nxt = self._pick()
        if nxt is None:
            self._turn = _LAUNCHER
            self._cond.notify_all()
        else:
            self._give(nxt)

    def _pick(self) -> CoreState | None:
        """The lowest-numbered core that can run: not started, or its wait satisfied (when the
        launch is being abandoned: the next core to unwind).  None: every core has ended, or
        the launch is a deadlock (then `error` says so and the waiting cores unwind)."""
        for st in self.cores:
            if st.done:
                continue
            if self.aborting:
                if st.started:
                    return st
                continue
            if not st.started or (st.waiting is not None and st.counters.get(st.waiting[0])):
                return st
        if not self.aborting and any(not st.done for st in self.cores):
            self.error = self._deadlock()
            self.aborting = True
            return self._pick()
        return None

    def block(self, st: CoreState, key: Any, what: str) -> None:
        """Core `st` waits until its counter `key` is non-zero (other cores run meanwhile)."""
        m = st.machine
        while not st.counters.get(key):
            st.waiting = (key, what, m.span, m.location)
            if self.mix is None:
                self.decide(False, st)
            state = self.hooks.save()
            with self._cond:
                self._handoff()
                while self._turn is not st:
                    self._cond.wait()
            self.hooks.restore(state)
            st.waiting = None
            if self.aborting:
                raise Aborted

    # -- the end ------------------------------------------------------------------------------
    def _finish(self) -> None:
        """Every core ended: cross-core sets nothing consumed warn (the docs: a set needs its
        wait, or behaviour is undefined)."""
        for st in self.cores:
            for key, q in st.counters.items():
                if q and key != "sync_all":
                    warn(Warning_(f"{st.short}: cross-core flag {key} was set {len(q)} "
                                  f"time{'s' if len(q) != 1 else ''} more than it waited for "
                                  "it", code="APK589",
                                  help=f"cross_core_wait_flag({key}) on {st.short} for every "
                                  "set that counts on it (the docs: set and wait in pairs)"))
        for key, rounds in self._rounds.items():
            for got in rounds.values():
                if got:
                    who = ", ".join(self.cores[i].short for i in sorted(got)
                                    if i < len(self.cores))
                    warn(Warning_(f"cross-core flag {key[2]} (mode {key[0]}): only {who} set "
                                  "it; the other cores of its group never did, so nothing was "
                                  "released", code="APK589",
                                  help="every core of the group sets the flag (mode 0: every "
                                  "core of the kind; mode 1: both AIVs; mode 2: both AIVs)"))
        self.world.regions.clear()

    def _deadlock(self) -> SyncError:
        waiting = [st for st in self.cores if st.waiting is not None and not st.done]
        lines = []
        short = []
        for st in waiting:
            _, what, _, loc = st.waiting  # type: ignore[misc]
            where = f" (line {loc[1]})" if loc else ""
            lines.append(f"{st.name} waits at {what}{where}")
            short.append(f"{st.short} at {what}{where}")
        first = waiting[0] if waiting else None
        err = SyncError(
            "deadlock: " + (", ".join(short) if short else "every core") + " wait"
            + ("s" if len(short) == 1 else "") + ", and no core still running will set "
            "what they wait for", code="APK588",
            notes=["a cross-core wait blocks its core until the flag's counter is non-zero; "
                   "every other core has ended or waits too"] + lines,
            help="set the flag on the cores it counts on (mode 0: every core of the kind; "
                 "mode 1: both AIVs; mode 2: the AIC for the AIVs, both AIVs for the AIC), "
                 "before the wait, on a path every core takes",
            cores=[st.short for st in waiting])
        if first is not None and first.waiting[2] is not None:  # type: ignore[index]
            err = err.with_span(first.waiting[2])  # type: ignore[index]
        return err

    def _located(self, e: BaseException, st: CoreState) -> BaseException:
        """An error of one core, saying which core when the launch has several."""
        if isinstance(e, ApdslError) and len(self.cores) > 1:
            return e.replace(notes=(*e.notes, f"on {st.name} of {self.blocks} "
                                    f"AI core{'s' if self.blocks != 1 else ''}"))
        return e

    # -- cross-core synchronisation --------------------------------------------------------
    def group(self, st: CoreState, mode: int) -> tuple[list[CoreState], list[CoreState]]:
        """(the cores whose sets release a round, the cores it releases) for a set by `st`."""
        if mode == 0:
            same = [c for c in self.cores if c.kind == st.kind]
            return same, same
        aivs = [c for c in self.cores if c.kind == "aiv" and c.block == st.block]
        if mode == 1:
            return aivs, aivs
        aic = [c for c in self.cores if c.kind == "aic" and c.block == st.block]
        return ([st], aivs) if st.kind == "aic" else (aivs, aic)

    def arrive(self, st: CoreState, key: Any, members: list[CoreState],
               targets: list[CoreState], snap: Any, flag: Any) -> None:
        """Core `st`'s set in a round of `members`: the round complete, each target's counter
        `flag` gains one, carrying what every member's set carried."""
        rounds = self._rounds.setdefault(key, {})
        r = st.rounds.get(key, 0)
        st.rounds[key] = r + 1
        got = rounds.setdefault(r, {})
        got[st.index] = snap
        if len(got) < len(members):
            return
        del rounds[r]
        snaps = [s for s in got.values() if s is not None]
        joined = [max(col) for col in zip(*snaps)] if snaps else None
        for t in targets:
            q = t.counters.setdefault(flag, deque())
            if flag != "sync_all" and len(q) >= COUNTER_MAX:
                raise SyncError(
                    f"cross-core flag {flag}: {t.short}'s counter would pass {COUNTER_MAX}",
                    code="APK587", notes=["each flag id is a counter 0-15 per core; past "
                                          "it, hardware raises an exception"],
                    help=f"cross_core_wait_flag({flag}) on {t.short} before the flag is set "
                    "again", flag=flag)
            q.append(joined)

    def advice(self, a: int, b: int, pipe_a: str, where_a: str, where_b: str) -> str:
        """How to order core `a`'s access (on `pipe_a`, at `where_a`) before core `b`'s."""
        ca, cb = self.cores[a], self.cores[b]
        pending = sorted(f for f, q in cb.counters.items() if q and f != "sync_all")
        if pending:  # a flag was set for core b and it never waited for it
            f = pending[0]
            mode = 2 if {ca.kind, cb.kind} == {"aic", "aiv"} else 1 if ca.kind == cb.kind == \
                "aiv" and ca.block == cb.block else 0
            return (f"cross_core_wait_flag({f}, {mode}) on {cb.short} before {where_b}: flag "
                    f"{f} was set for {cb.short}, but it does not wait for it there")
        free = next((i for i in range(CROSS_FLAGS) if i not in self.flag_ids), 0)
        if ca.kind == "aiv" and cb.kind == "aiv" and ca.block == cb.block:
            mode = 1
        elif {ca.kind, cb.kind} == {"aic", "aiv"} and ca.block == cb.block:
            mode = 2
        elif ca.kind == cb.kind:
            mode = 0
        else:
            return (f"order them with sync_all(is_aiv_only=False) between {where_a} on "
                    f"{ca.short} and {where_b} on {cb.short}")
        who = {0: f"every {'AIV' if ca.kind == 'aiv' else 'AIC' if ca.kind == 'aic' else 'core'}"
                  " sets it and waits for it",
               1: "both AIVs set it", 2: "mode 2: " + ("the AIC sets it for both AIVs"
                                                       if ca.kind == "aic" else
                                                       "both AIVs set it for the AIC")}[mode]
        return (f"cross_core_set_flag({free}, {mode}, \"{pipe_a}\") on {ca.short} after "
                f"{where_a}, and cross_core_wait_flag({free}, {mode}) on {cb.short} before "
                f"{where_b} ({who}); or sync_all() between them")
