"""The simulated device: every piece of state that allocations, instructions and checks share.

A `Machine` holds the current target of each family, the options, the capacity accounting of
each buffer, the memory budget's live bytes, check (dry-run) mode, the instruction trace, the
statement location, the warnings and the engines' persistent state (the Scalar Engine's
`reduce_regs`, the random number generators).  Nothing else in apdsl is mutable state that a program can
change for its caller: code reads the *current* machine (`current()`), and a program run, a
check or a test enters its own with `machine.active()`.  `child()` makes a fresh machine that
starts from its parent's target and options; what the program inside sets stays in the child.

The default machine belongs to the Python session (the `apdsl` API acts on it); it is the
caller's, never a program's.  The module lives in the tensor layer because storage and the
budget read it; the runtime builds its trace and warnings on the same object.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import Any, Protocol

from ..errors import Span

Location = tuple[str, int]


class Device(Protocol):
    """What the tensor layer asks of the executing runtime (installed by `apdsl.runtime.device`
    when `apdsl` is imported): the tensor layer never imports the runtime."""

    def read_view(self, t: Any) -> Any:
        """The logical contents of view `t` as a new NumPy array (init-checked)."""

    def write_view(self, t: Any, values: Any) -> None:
        """Write `values` through view `t`, marking its elements written."""

    def forget(self, t: Any) -> None:
        """Mark every element of view `t` unwritten (a TLA tile bound to a reused buffer)."""


class Drawing(Protocol):
    """How a view shows itself in a notebook (installed by `apdsl.surfaces.notebook.pictures`
    when `apdsl` is imported): the tensor layer never imports the surfaces."""

    def svg(self, t: Any) -> str | None:
        """The access picture of view `t` as an SVG document (None: none can be drawn)."""

    def html(self, t: Any) -> str | None:
        """View `t`'s facts and access picture as HTML (None: none can be drawn)."""


def physical_memory() -> int:
    """The machine's physical memory in bytes (8 GiB when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 8 << 30


DEFAULT_MAX_MEMORY = physical_memory() // 2
DEFAULT_MAX_STEPS = 100_000_000
DEFAULT_TARGETS = {"nki": "trn2", "ascend": "ascend-a2"}


def plans_default(environ: Any = os.environ) -> bool:
    """The default of the `plans` option: on, unless the environment says `APDSL_PLANS=0`
    (also `off`, `false`, `no`), which the test suite uses to run everything on the general
    path, the oracle of every fast path."""
    return environ.get("APDSL_PLANS", "").strip().lower() not in ("0", "off", "false", "no")


DEFAULT_PLANS = plans_default()


@dataclass
class Options:
    """The options of SPEC section 9 (`apdsl.options(...)`)."""

    # Reading memory that nothing wrote is an error (as on hardware it reads garbage).
    # True: unwritten data propagates and is an error where it reaches an observable point
    # (SPEC 4); "strict" (--strict-init): the first read of it is the error; False: reads 0.
    init_check: bool | str = True
    # mmad reads K in whole fractals, as hardware does, so unwritten K padding is reported.
    strict_padding: bool = False
    # Bytes of live storage plus its written-state bookkeeping, every buffer included
    # (apdsl.tensor.budget); an allocation past it is APK430.
    max_memory: int = DEFAULT_MAX_MEMORY
    # The step budget of one program run or check (apdsl.semantics.limits); APK801 past it.
    max_steps: int = DEFAULT_MAX_STEPS
    # The time budget of one program run or check, in seconds of processor time; None: check
    # mode's default (apdsl.semantics.limits), none for a run.  APK804 past it.
    max_time: float | None = None
    # Ascend synchronisation checking (SPEC section 13): None checks inside kernels, True
    # everywhere (the Python API and top level too), False nowhere (`--sync off`).
    sync: bool | None = None
    # Fast paths (apdsl.runtime.plans and the interpreter's specialised code): False runs
    # every instruction, view and statement on the general path, which gives the same results,
    # traces and diagnostics (the oracle the tests compare the fast paths with).
    plans: bool = DEFAULT_PLANS
    # quantize_mx's block scale (neuronx-cc `--enable-mx-alternative-emax`, the default since
    # Neuron SDK 2.31): True, twice the OCP scale (the docstring's rule); False, the OCP rule
    # with saturation (the default up to SDK 2.30).
    mx_alternative_emax: bool = True


class Accounting:
    """Live bytes per buffer; on-chip: bytes per partition, with addresses so PSUM bank
    placement can be checked.  Tensors an overdraft waits on (`apdsl.tensor.liveness`) are out
    of `live`, in `shelf`, until accessed again or freed."""

    __slots__ = ("live", "owners", "shelf", "watch")

    def __init__(self) -> None:
        self.live: dict[str, list[tuple[int, int, int]]] = {}  # buffer -> [(id, start, size)]
        # id -> a weak reference to the storage holding the block, so a refusal can name what
        # fills the buffer (weak: a storage's lifetime is its own, `release` is told when it ends)
        self.owners: dict[int, Callable[[], Any]] = {}
        # the waiting tensors: id -> (buffer, start, size), and the overdrafts waiting on each
        self.shelf: dict[int, tuple[str, int, int]] = {}
        self.watch: dict[int, list[Any]] = {}

    def holders(self, buffer: str) -> list[tuple[Any, int]]:
        """The live storages of `buffer` with their sizes, largest first (None where the owner
        is not known)."""
        blocks = sorted(self.live.get(buffer, ()), key=lambda b: -b[2])
        return [(self.owner(sid), size) for sid, _, size in blocks]

    def used(self, buffer: str) -> int:
        return sum(size for _, _, size in self.live.get(buffer, ()))

    def place(self, sid: int, buffer: str, size: int, capacity: int | None,
              bank: int | None, owner: Callable[[], Any] | None = None) -> int:
        """The first address where `size` bytes fit (a small PSUM tile inside one bank), or -1
        past `capacity`.  A buffer's blocks are kept in address order (sorted in place, which
        costs nothing when they already are), the new one inserted where it fits."""
        blocks = self.live.get(buffer)
        if blocks is None:
            blocks = self.live[buffer] = []
        if not blocks:  # the buffer's first tile (the one live tile of a loop's body, freed)
            if capacity is not None and size > capacity:
                return -1
            blocks.append((sid, 0, size))
            if owner is not None:
                self.owners[sid] = owner
            return 0
        if len(blocks) > 1:
            blocks.sort(key=_START)
        small = bool(bank) and size <= bank  # (a PSUM tile of at most a bank stays in one)
        addr = 0
        at = len(blocks)
        for i, (_, start, length) in enumerate(blocks):
            if small and addr // bank != (addr + size - 1) // bank:  # type: ignore[operator]
                addr = -(-addr // bank) * bank  # type: ignore[operator]
            if addr + size <= start:
                at = i
                break
            if start + length > addr:
                addr = start + length
        if small and addr // bank != (addr + size - 1) // bank:  # type: ignore[operator]
            addr = -(-addr // bank) * bank  # type: ignore[operator]
        if capacity is not None and addr + size > capacity:
            return -1
        blocks.insert(at, (sid, addr, size))
        if owner is not None:
            self.owners[sid] = owner
        return addr

    def claim(self, sid: int, buffer: str, start: int, size: int,
              owner: Callable[[], Any]) -> None:
        """Record `size` bytes at `start` as the block of storage `sid`, placed by its owner
        (`address=`): where it goes is the program's choice, not `place`'s."""
        self.live.setdefault(buffer, []).append((sid, start, size))
        self.owners[sid] = owner

    def move(self, sid: int, buffer: str, start: int) -> None:
        """Block `sid` now starts at `start` (apdsl moved its own choice: `apdsl.tensor.room`)."""
        blocks = self.live.get(buffer, [])
        for i, block in enumerate(blocks):
            if block[0] == sid:
                blocks[i] = (sid, start, block[2])
                return

    def owner(self, sid: int) -> Any:
        """The live storage holding block `sid` (None: not known, or no longer alive)."""
        ref = self.owners.get(sid)
        return None if ref is None else ref()

    def release(self, sid: int, buffer: str) -> None:
        """Storage `sid` ended: its block is free (and no overdraft waits on it any more)."""
        if self.shelf and sid in self.shelf:  # it was dead at each overdraft waiting on it
            del self.shelf[sid]
            for o in self.watch.pop(sid, ()):
                o.waiting.pop(sid, None)
            self.owners.pop(sid, None)
            return
        self.release_block(sid, buffer)
        self.owners.pop(sid, None)  # (a tile not used yet has no block, only its owner)

    def release_block(self, sid: int, buffer: str) -> bool:
        """Take block `sid` out of `buffer`'s live blocks (True when it was there)."""
        blocks = self.live.get(buffer)
        if blocks:
            for i, block in enumerate(blocks):
                if block[0] == sid:
                    del blocks[i]
                    return True
        return False


_START = itemgetter(1)  # a block's start (C-level: the sort calls it per block, per allocation)


class Memory:
    """Bytes the memory budget has reserved for live storage.  Shared by a machine and its
    children: tensors a Python caller keeps alive use the same memory as the program it runs."""

    __slots__ = ("bytes", "holders")

    def __init__(self) -> None:
        self.bytes = 0
        # what else holds bytes here and can return those of values no longer alive
        # (`sweep()`: the Python values a program built, apdsl.semantics.hostmemory), asked
        # before an allocation is refused
        self.holders: weakref.WeakSet[Any] = weakref.WeakSet()


class Machine:
    """All the state of one simulated device (see the module docstring)."""

    # How views are read and written: the runtime, the same for every machine (set once by
    # `apdsl.runtime.device.install`; not state a program can change).
    device: Device | None = None
    # How a view shows itself in a notebook: the surfaces' access picture (set once by
    # `apdsl.surfaces.notebook.pictures.install`, like `device`).
    drawing: Drawing | None = None

    __slots__ = ("targets", "options", "accounting", "memory", "check", "trace", "location",
                 "span", "warnings", "warned", "sync", "engine_state", "core", "space",
                 "taint")

    def __init__(self, *, targets: dict[str, str] | None = None, options: Options | None = None,
                 memory: Memory | None = None, check: bool = False, trace: Any = None) -> None:
        self.targets = dict(DEFAULT_TARGETS if targets is None else targets)
        self.options = Options() if options is None else options
        self.accounting = Accounting()
        self.memory = Memory() if memory is None else memory
        # Check mode (`apdsl check`): instructions validate and lower their operands but read
        # no runtime values and move no data.
        self.check = check
        self.trace = trace  # the active `apdsl.runtime.core.trace.Trace`, or None
        self.location: Location | None = None  # the statement under way (file, line)
        self.span: Span | None = None  # ... and its span, given to the warnings it raises
        self.warnings: list[Any] = []
        self.warned: set[tuple[Any, ...]] = set()
        self.sync: Any = None  # the active `apdsl.runtime.sync.Sync` checker, or None
        # State an engine keeps across instructions, by the runtime module that owns it (the
        # Scalar Engine's reduce_regs: `apdsl.runtime.nki.reduce_regs`; the PRNGs:
        # `apdsl.runtime.nki.rng.state`).  A child starts with none: a device of its own.
        self.engine_state: dict[str, Any] = {}
        # The unwritten reads of the instruction under way (`apdsl.runtime.core.unwritten`).
        self.taint: Any = None
        # The Ascend core this machine simulates inside a launch on several cores (the
        # `apdsl.runtime.ascend.cores` state of that core; None outside one), and the address space
        # of its on-chip buffers: each core of a launch has its own L1, L0 and UB, GM is
        # shared.  A child starts outside any launch.
        self.core: Any = None
        self.space = 0

    def child(self, *, check: bool | None = None) -> Machine:
        """A fresh machine for one program run or check: the parent's targets and options
        (copies), trace and memory budget; its own accounting, warnings, location and engine
        state."""
        m = Machine(targets=self.targets, options=replace(self.options), memory=self.memory,
                    check=self.check if check is None else check, trace=self.trace)
        m.location, m.span = self.location, self.span
        return m

    @contextmanager
    def active(self) -> Iterator[Machine]:
        """Make this the current machine inside the block."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def __repr__(self) -> str:
        mode = ", check" if self.check else ""
        return f"Machine({self.targets['nki']}, {self.targets['ascend']}{mode})"


# The Python session's machine: current wherever no other machine is active.
SESSION = Machine()
_current: ContextVar[Machine] = ContextVar("apdsl_machine", default=SESSION)
current = _current.get
