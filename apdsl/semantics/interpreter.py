"""The interpreter: compiles the AST once into Python closures and runs them over the tensor model.

Every closure that can fail attaches its node's span to the `ApdslError` the model raises, so
errors are located at the finest node that knows them (the call, the argument, the characters
inside a rearrange pattern).  Python exceptions from user arithmetic (1/0, "a" + 1) are turned
into located `ApdslError`s too: no traceback ever reaches a user.

This module holds the interpreter's state and the services builtins use (allocation,
instructions, printing, files); compiling each kind of syntax is a mixin of its own module:
blocks (`blocks`), statements (`statements`, `assignments`, `targets`, `loops`, `imports`),
expressions (`expressions`, `displays`, `formatting`, `calls`), with the operators in `arith` and run-time frames in `frames`.

Two modes: run (instructions move data) and dry (check mode: instructions validate their
operands and lower them, host values are `UNKNOWN`, and a failing statement poisons the names it
defines instead of stopping, so `check` reports every independent error).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslError, ApdslIOError, ApdslTypeError, Span
from ..runtime.core import trace as _trace
from ..syntax import ast
from ..tensor.dtypes import DType
from ..tensor.layout import Layout
from ..tensor.registers import VirtualRegister
from ..tensor.storage import Storage
from ..tensor.view import Tensor, new_view
from . import limits
from .assignments import AssignmentCompiler
from .blocks import BlockCompiler
from .calls import CallCompiler
from .displays import DisplayCompiler
from .expressions import ExpressionCompiler
from .formatting import FormattingCompiler
from .frames import Frame, Reported, ReturnSignal
from .imports import ImportCompiler
from .iterations import Walking
from .launch import NO_GRID, Launch, SharedHbm
from .loops import LoopCompiler
from .origins import Origins
from .pyerrors import inside
from .spmd import KernelLauncher
from .statements import StatementCompiler
from .targets import TargetCompiler
from .values import UNKNOWN, Module, show

# The names other layers use from here (the frame a kernel's inputs are bound in, and check
# mode's signal of a reported failure).
__all__ = ["Interpreter", "Frame", "Reported"]


class Interpreter(BlockCompiler, StatementCompiler, AssignmentCompiler, TargetCompiler,
                  LoopCompiler, ImportCompiler, ExpressionCompiler, DisplayCompiler,
                  FormattingCompiler, CallCompiler, KernelLauncher):
    """Runs one program (a file and the modules it imports)."""

    def __init__(self, *, dry: bool = False, out: Any = None, base_dir: str | None = None,
                 stdlib_dir: str | None = None) -> None:
        from ..tensor.machine import current
        from .builtins import direct_instructions, make_builtins
        # The simulated device the program runs on: a child of the caller's, so what the
        # program sets (target, options) stays in it; check mode is its `check` flag.  The
        # caller enters it (`with interp.machine.active():`) around the run.
        self.machine = current().child(check=dry)
        # The `plans` option when the program is compiled: off, every statement compiles to
        # its general closure (no generated code, no integer fast paths, no direct calls).
        self.plans = self.machine.options.plans
        # The step budget (SPEC section 15), shared by every closure this interpreter compiles
        # and by the builtins; the REPL resets it for each input.
        # The time budget: the option, else check mode's default (it moves no data, so a
        # correct program checks in far less); the commands that move data have none.
        options = self.machine.options
        seconds = options.max_time if options.max_time is not None else (
            limits.DEFAULT_CHECK_SECONDS if dry else None)
        self.budget = limits.Budget(options.max_steps, seconds)
        self.depth = 0  # helper and kernel calls under way
        self.out = out if out is not None else sys.stdout
        # the folder that relative file names and imports start from (a str or a Path)
        self.base_dir: Any = base_dir or "."
        self.stdlib_dir = stdlib_dir
        self.builtins = make_builtins(self)
        # run mode: builtin instruction wrapper -> the implementation it calls, so a call site
        # calls the implementation straight (calls.py); check mode goes through `instruction`
        self.direct_instructions: dict[Any, Callable[..., Any]] = {} if dry or not self.plans \
            else direct_instructions(self.builtins)
        self.modules: dict[str, Module] = {}
        self.errors: list[ApdslError] = []  # dry mode: collected, deduplicated
        self._seen: set[tuple[str, Any]] = set()
        # tensor -> span where the view was made (weak: dead views must not lend their span)
        self.origins = Origins()
        self.importing: list[str] = []
        self.sources: dict[str, str] = {}
        self.call_span: Span | None = None  # the call being evaluated (instructions record it)
        # the launch a kernel runs under (`kernel[n]`, `--grid N`) and its shared HBM outputs
        self.launch: Launch = NO_GRID
        self.shared_hbm: SharedHbm | None = None
        self.calls: list[tuple[str, Span]] = []  # check mode: the calls of helpers under way
        self.failures = 0  # check mode: statements that failed (reported or deduplicated)
        # check mode: storage holding `-i` input values that no instruction has written since,
        # so host() can read them (a data-dependent kernel checks with its inputs' values)
        self.known_values: weakref.WeakSet[Storage] = weakref.WeakSet()
        # check mode: registers register_load set (by id; kept alive so ids stay theirs), whose
        # value check mode cannot know
        self.loaded_registers: dict[int, VirtualRegister] = {}
        # check mode: tests whose value was unknown, so the block was skipped (a `while` loop
        # whose iteration met one stops: its course depends on unknown values)
        self.unknown_tests = 0
        # check mode: the loops under way, whose variables a reported error names
        self.walking = Walking()
        # validated ndarray arguments -> (dtype, buffer, layout) (`allocate`; bounded)
        self._allocations: dict[tuple, tuple[DType, str, Layout]] = {}
        self._loops = 0  # compile-time nesting, so break/continue/return outside are errors
        self._functions = 0

    @property
    def dry(self) -> bool:
        """Check mode (`apdsl check`): the machine's flag, the one place it is kept."""
        return self.machine.check

    # -- errors -------------------------------------------------------------------------------
    def report(self, err: ApdslError) -> None:
        # One report per code and line: the static checker and the dry run often find the
        # same mistake, one at the argument and one at the call.  Unknown names are keyed by
        # the name too, so `foo + bar` reports both.
        s = err.span
        name = err.facts.get("name")
        key = (err.code, None if s is None else (s.file, s.line),
               name if isinstance(name, str) else None)
        # A kept error keeps no frames: their tensors would stay allocated and count against
        # the capacity of what check mode runs next (the next kernel).
        err.__traceback__ = err.__context__ = err.__cause__ = None
        if key not in self._seen:
            # appended before it is labelled: nothing after `_seen` may fail and lose it
            self.errors.append(err)
            self._seen.add(key)
            if self.walking.loops:  # inside loops: the iteration it happened in
                self.errors[-1] = err = self.walking.annotate(err)
            # inside a helper (check mode reports there), show where the program called it
            if self.calls and s is not None and not err.labels:
                helper, call = self.calls[0]
                if not inside(s, call):
                    self.errors[-1] = err.with_label(call, f"in this call of {helper}")

    # -- services used by builtins ------------------------------------------------------------
    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Span | None = None) -> Tensor:
        # A tile allocated again and again (in a loop) was validated the first time: its
        # dtype, buffer and row-major layout are kept per argument values, exactly typed (a
        # bool is not an int), and the storage (capacity, budget) is made anew each time.
        key = None
        if type(shape) is tuple and type(buffer) is str and (format == "ND" or not format) \
                and (type(dtype) is str or type(dtype) is DType) and _int_tuple(shape):
            key = (shape, dtype, buffer)
            plan = self._allocations.get(key)
            if plan is not None:
                dt, buf, layout = plan
                t = new_view(Storage(shape, dt, buf, name=name, span=span), dt, layout)
                shared = self.shared_hbm
                if shared is None or buf != shared.buffer:
                    return t
                return shared.take(t, self._program())
        from ..tensor.view import ndarray
        t = ndarray(shape, dtype, buffer, format or "ND", name=name, span=span)
        if key is not None and len(self._allocations) < 64 and t.layout == \
                Layout.row_major(shape):
            self._allocations[key] = (t.dtype, t.buffer, t.layout)
        shared = self.shared_hbm
        if shared is None or t.buffer != shared.buffer:
            return t
        return shared.take(t, self._program())  # a launch's programs share their outputs

    def _program(self) -> Any:
        """Who allocates: the Ascend core under way (its name), else the program id."""
        from ..tensor.machine import current
        core = current().core
        return core.short if core is not None else self.launch.ids[0]

    def instruction(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        span = self.call_span
        if span is not None:
            _trace.set_location(span.file, span.line, span)
        if not self.dry:
            return _trace.calling(fn, args, kwargs)
        from .dryrun import run_dry
        return run_dry(self, name, fn, args, kwargs)

    def print(self, *values: Any, sep: str = " ") -> None:
        if self.dry:
            return
        print(sep.join(show(v) for v in values), file=self.out)

    def _safe_path(self, path: Any) -> Any:
        if not isinstance(path, str):
            raise ApdslTypeError("file names are strings", code="APK110")
        from ..runtime.core.files import confined
        return confined(self.base_dir, path)

    def load_npy(self, path: str) -> Any:
        full = self._safe_path(path)
        from ..runtime.core.files import read_npy
        if self.dry:  # the header is checked; the data waits for the run
            read_npy(full, shown=path, regular_only=True, header_only=True)
            return UNKNOWN
        return read_npy(full, shown=path, regular_only=True)

    def save_npy(self, value: Any, path: str) -> None:
        if isinstance(path, str) and not path.endswith(".npy"):
            raise ApdslIOError(f"save writes .npy files, not '{path}'", code="APK613",
                               help="give the file name a .npy suffix: save(x, \"out.npy\")")
        full = self._safe_path(path)
        from .builtins import host_value
        data = host_value(value, self)
        if self.dry:
            # nothing is written, but a folder that is not there is known without data
            if not full.parent.is_dir():
                raise ApdslIOError(f"cannot write '{path}': folder {full.parent} does not "
                                   "exist", code="APK606", path=path)
            return
        from ..runtime.core.files import widen_for_npy, write_npy
        write_npy(full, widen_for_npy(np.asarray(data)), shown=path, regular_only=True)

    # -- running ------------------------------------------------------------------------------
    def exec_module(self, module: ast.Module, namespace: dict[str, Any]) -> None:
        self.sources[module.file] = module.source
        with limits.deep_stack():
            block = self.compile_block(module.body, top=True)
            frame = Frame(namespace, namespace)
            try:
                block(frame)
            except ReturnSignal:
                pass


def _int_tuple(shape: tuple) -> bool:
    """Every size a plain int (what `ndarray` takes as given, without converting)."""
    for n in shape:
        if type(n) is not int:
            return False
    return True
