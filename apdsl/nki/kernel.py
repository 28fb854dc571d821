"""`@nki.jit` kernels: calling one with NumPy arrays runs it on apdsl (once per program id of
a `kernel[n]` launch) and returns NumPy results; `simulate` and `simulate_kernel` are the
NKI simulator's spellings of the same call."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import ApdslError
from ..semantics.launch import Launch, SharedHbm, different_results, same_results
from ..semantics.spmd import check_grid
from . import results
from .arguments import parameter_names, to_numpy, to_tensor
from .host import Host, active, hosting
from .locate import caller_span, is_user_file, traceback_span


class Kernel:
    """A jitted kernel: `kernel(*arrays)` runs it without a grid, `kernel[n](*arrays)` on n
    logical cores.  `options` are the decorator's keywords (mode=..., platform_target=...)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any] | None = None) -> None:
        self.fn = fn
        self.options = dict(options or {})
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:  # called from a kernel under way: a plain call
            return self.fn(*args, **kwargs)
        return call(self.fn, args, kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return Launched(self.fn, launch_grid(grid, self.fn.__name__))

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<nki kernel {self.fn.__name__}>"


class Launched:
    """`kernel[n]`: the kernel on a launch grid, called with its arguments."""

    def __init__(self, fn: Callable[..., Any], grid: tuple[int, ...]) -> None:
        self.fn, self.grid = fn, grid

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call(self.fn, args, kwargs, self.grid)


def _decorator(func: Callable[..., Any] | None, options: dict[str, Any]) -> Any:
    if func is None:
        return lambda f: Kernel(f.fn if isinstance(f, Kernel) else f, options)
    return Kernel(func.fn if isinstance(func, Kernel) else func, options)


def jit(func: Callable[..., Any] | None = None, mode: str = "auto", **kwargs: Any) -> Any:
    """`@nki.jit`, `@nki.jit()` or `@nki.jit(mode=...)`: the kernel runs on apdsl."""
    return _decorator(func, {"mode": mode, **kwargs})


def baremetal(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """`@nki.baremetal(...)`: as `jit` (apdsl has no device, so no artifacts to save)."""
    return _decorator(func, kwargs)


def simulate(kernel: Any) -> Callable[..., Any]:
    """`nki.simulate(kernel)(*arrays)`: NumPy arrays in, NumPy results out."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, Launched):
        return kernel
    return Kernel(kernel)


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """The older spelling: `nki.simulate_kernel(kernel, *arrays)`."""
    return simulate(kernel)(*args, **kwargs)


def launch_grid(grid: Any, name: str) -> tuple[int, ...]:
    """The launch shape of `kernel[grid]`: one number of logical cores, 1 or 2 (trn1: 1)."""
    try:
        return check_grid(grid, name)
    except ApdslError as e:
        raise e.replace(span=_here()) from None


def _here() -> Any:
    from .locate import caller_span
    return caller_span(2)


def call(fn: Callable[..., Any], args: tuple, kwargs: dict, grid: tuple[int, ...] = (),
         dry: bool = False, out: Any = None, raw: bool = False) -> Any:
    """Run `fn` once per program id of `grid` (once without a grid) with its NumPy arguments
    as HBM tensors; its result as NumPy (`raw`, check mode: the tensors themselves)."""
    names = parameter_names(fn, args, kwargs)
    shared = SharedHbm()  # shared_hbm allocations, the same tensors in every program
    outputs: list[Any] = []  # every program's shared_hbm allocations (`results.unreturned`)
    result: Any = None
    from ..tensor.machine import current as current_machine
    caller = current_machine()
    try:
        ids = range(grid[0]) if grid else (0,)
        converted: list[Any] | None = None
        for pid in ids:
            host = SpmdHost(shared, dry=dry, out=out,
                            launch=Launch(grid, (pid,) if grid else ()))
            if converted is None:
                converted = [to_tensor(a, n, host) for a, n in zip(args, names)]
                kw = {k: to_tensor(v, k, host) for k, v in kwargs.items()}
            # each program on its own machine (its own SBUF and PSUM accounting); what it
            # warns of goes to the caller's machine, where the command line collects it
            try:
                with host.machine.active(), hosting(host):
                    value = fn(*converted, **kw)
            finally:
                caller.warnings.extend(host.machine.warnings)
            if grid and pid > 0 and not same_results(value, result):
                raise different_results(fn.__name__, pid)
            result = value
            outputs.extend(host.outputs)
        results.check_on_chip(result, fn)
        if not dry:  # (a dry run writes nothing: there is nothing to check)
            results.check_written(result, fn)
            caller.warnings.extend(results.unreturned(result, outputs, fn))
        return result if dry or raw else to_numpy(result)
    except ApdslError as e:
        raise locate(e, caller_span(2)) from None


def locate(e: ApdslError, caller: Any = None) -> ApdslError:
    """Point `e` at the user's code: the innermost user frame of where it was raised (else
    the user's call of the kernel, `caller`), unless it already points into a user file."""
    if e.span is None or not is_user_file(e.span.file):
        span = traceback_span(e.__traceback__) or caller
        if span is not None:
            return e.replace(span=span).with_traceback(e.__traceback__)
    return e


class SpmdHost(Host):
    """A host of one program of a launch: its `nl.shared_hbm` allocations are those of program
    0 (SPMD programs share the kernel's shared HBM outputs), in allocation order."""

    def __init__(self, shared: SharedHbm, **kw: Any) -> None:
        super().__init__(**kw)
        self.shared = shared
        self.outputs: list[Any] = []  # its shared_hbm tensors (kept: the kernel's outputs)
        shared.next_program()

    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Any = None) -> Any:
        t = super().allocate(shape, dtype, buffer, format, name, span)
        if t.buffer != "shared_hbm":
            return t
        if self.launch.grid:
            t = self.shared.take(t, self.launch.ids[0])
        self.outputs.append(t)
        return t
