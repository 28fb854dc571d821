"""What the shared builtins table (`apdsl.semantics.builtins`) asks of the program running it,
for Python kernels: allocation, instruction calls (run or check mode, with the call's span in
the user's file) and the launch under way.  The `.apk` interpreter offers the same services.

The host of the kernel call under way is a context variable, so `nl`/`nisa` names resolve to
that call's builtins (a dry run's, a launch's) and nothing a kernel does changes them for
its caller."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import ApdslError, ApdslTypeError, Span, TargetError
from ..runtime.core import trace as _trace
from ..semantics import limits
from ..semantics.launch import NO_GRID, Launch
from ..semantics.nki_instruction import NkiInstruction
from ..tensor.view import Tensor
from .locate import assigned_name, caller_span, imports_legacy, is_user_file

if TYPE_CHECKING:
    from ..tensor.registers import VirtualRegister
    from ..tensor.storage import Storage


class Host:
    """One kernel call's services: `launch` (grid and program id) and its `machine`, a child
    of the caller's (in check mode for a dry run), which the caller enters around the call."""

    def __init__(self, *, dry: bool = False, launch: Launch = NO_GRID, out: Any = None) -> None:
        from ..semantics.builtins import make_builtins
        from ..tensor.machine import current as current_machine
        self.machine = current_machine().child(check=dry)
        self.launch = launch
        self.out = out
        self.budget = limits.Budget(self.machine.options.max_steps)
        self.known_values: weakref.WeakSet[Storage] = weakref.WeakSet()
        self.loaded_registers: dict[int, VirtualRegister] = {}
        from .legacy import Legacy
        self.legacy = Legacy(self)
        self.builtins = self.legacy.wrap_builtins(make_builtins(self))

    @property
    def dry(self) -> bool:
        """Check mode: the machine's flag."""
        return self.machine.check

    @property
    def call_span(self) -> Span | None:
        """The user's call under way (builtins attach it to what they allocate)."""
        return caller_span(2)

    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Span | None = None) -> Tensor:
        from ..tensor.view import ndarray
        # unnamed, a tensor is called after the variable the user assigns it to
        name = name or assigned_name()
        widen = self.legacy.widen  # a masked nl function's result: the whole tile, narrowed
        if widen is not None:
            return widen(shape, dtype, buffer, format or "ND", name, span)
        return ndarray(shape, dtype, buffer, format or "ND", name=name, span=span)

    def instruction(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """An instruction call of the kernel (either NKI API: `apdsl.nki.legacy`); one that
        returns nothing returns its handle, `nisa.NkiInstruction`."""
        out = self.legacy.instruction(name, fn, args, kwargs)
        if out is None:
            return NkiInstruction(name)
        return out

    def issue(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
              span: Span | None) -> Any:
        """Run (or, in check mode, dry-run) one instruction the user's code at `span` issued;
        in a legacy file, an operand needing more free access-pattern entries than the
        hardware has makes it the pieces the legacy compiler issued (`legacy_split`)."""
        try:
            return self._issue(name, fn, args, kwargs, span)
        except TargetError as e:  # (raised before any data moves)
            if e.code != "APK304" or span is None or not imports_legacy(span.file):
                raise
            from .legacy_split import pieces
            split = pieces(name, fn, args, kwargs)
            if isinstance(split, str):
                raise e.replace(notes=(*e.notes, "a legacy kernel: apdsl splits an "
                                       "instruction as the legacy compiler did, but not this "
                                       f"one: {split}")) from None
        for kw in split:
            self._issue(name, fn, (), kw, span)
        return None

    def _issue(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
               span: Span | None) -> Any:
        if span is not None:  # `lower` records the user's line; warnings get the span
            _trace.set_location(span.file, span.line, span)
        try:
            if not self.dry:
                return _trace.calling(fn, args, kwargs)
            from ..semantics.dryrun import run_dry
            return run_dry(self, name, fn, args, kwargs)
        except ApdslError as e:
            # a legacy result computed later than its call (at the kernel's end, say) has no
            # user frame in its traceback: its call is where the error is
            if span is None or (e.span is not None and is_user_file(e.span.file)):
                raise
            raise e.replace(span=span).with_traceback(e.__traceback__) from None
        except TypeError:
            unbound = _unbound(name, fn, args, kwargs, span)
            if unbound is None:
                raise
            raise unbound from None

    def print(self, *values: Any, sep: str = " ") -> None:
        if not self.dry:
            print(*values, sep=sep, file=self.out or sys.stdout)


def _unbound(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
             span: Span | None) -> ApdslTypeError | None:
    """APK102 when the arguments do not fit instruction `name`'s parameters, as `.apk` says it
    (None: they fit, so the TypeError came from inside and is not about the call)."""
    import inspect
    try:
        sig = inspect.signature(fn)
        sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        return ApdslTypeError(f"{name}(): {e}", code="APK102", span=span,
                              help=f"signature: {name}{sig}")
    return None


_CURRENT: ContextVar[Host | None] = ContextVar("apdsl_nki_host", default=None)
_EAGER: list[Host] = []  # the host of calls made outside any kernel (created on first use)


def current() -> Host:
    """The host of the kernel call under way; outside one, an eager (run mode) host."""
    host = _CURRENT.get()
    if host is not None:
        return host
    if not _EAGER:
        _EAGER.append(Host())
    return _EAGER[0]


def active() -> Host | None:
    """The host of the kernel call under way, None outside one."""
    return _CURRENT.get()


@contextmanager
def hosting(host: Host) -> Any:
    """Make `host` the one `nl`/`nisa` names resolve to inside the block."""
    token = _CURRENT.set(host)
    try:
        yield host
    finally:
        _CURRENT.reset(token)
