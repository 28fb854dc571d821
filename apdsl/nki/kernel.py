"""`@nki.jit` kernels: calling one with NumPy arrays runs it on apdsl (once per program id of
a `kernel[n]` launch) and returns NumPy results; `simulate` and `simulate_kernel` are the
NKI simulator's spellings of the same call."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ApdslError, ApdslTypeError, Span, TargetError
from ..semantics.launch import Launch, SharedHbm, different_results, same_results
from ..semantics.spmd import check_grid, empty_grid, grid_sizes
from ..tensor import tile_writes, torch_arrays
from . import arguments, results
from .arguments import parameter_names, to_numpy, to_tensor
from .host import Host, active, hosting
from .legacy_results import computed
from .locate import caller_span, imports_legacy, is_user_file, legacy_caller, traceback_span
from .observe import observer
from .usercode import missing_attribute

if TYPE_CHECKING:
    from ..runtime.core.lnc_race import Races

# `platform_target` values: the NEURON_PLATFORM_TARGET_OVERRIDE names of the nki.jit docstring
PLATFORMS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1", "trn2": "trn2", "gen3": "trn2",
             "trn3": "trn3", "gen4": "trn3"}


class Kernel:
    """A jitted kernel: `kernel(*arrays)` runs it without a grid, `kernel[n](*arrays)` on n
    logical cores.  `options` are the decorator's keywords (mode=..., platform_target=...);
    `platform` is the target `platform_target` names (None: the run's target)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any] | None = None) -> None:
        self.fn = fn
        self.options = dict(options or {})
        self.platform = platform_of(self.options, getattr(fn, "__name__", "kernel"))
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:  # called from a kernel under way: a plain call
            return inner_call(self.fn, args, kwargs)
        with on_platform(self.platform, self.fn.__name__):
            return call(self.fn, args, kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        code = getattr(self.fn, "__code__", None)
        legacy = (code is not None and imports_legacy(code.co_filename)) or legacy_caller()
        return Launched(self.fn, launch_grid(grid, self.fn.__name__, legacy), self.platform)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<nki kernel {self.fn.__name__}>"


class Launched:
    """`kernel[n]`: the kernel on a launch grid, called with its arguments."""

    def __init__(self, fn: Callable[..., Any], grid: tuple[int, ...],
                 platform: str | None = None) -> None:
        self.fn, self.grid, self.platform = fn, grid, platform

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with on_platform(self.platform, self.fn.__name__):
            return call(self.fn, args, kwargs, self.grid)


def platform_of(options: dict[str, Any], kernel: str) -> str | None:
    """The target a decorator's `platform_target=` names (the legacy API's `@nki.jit(...,
    platform_target='trn2')`; NKI before 0.3.0), or None without one; APK972 for a name the
    docs do not list, located at the decorator."""
    value = options.get("platform_target")
    if value is None:
        return None
    key = str(getattr(value, "value", value)).lower()
    if key not in PLATFORMS:
        raise ApdslTypeError(
            f"@nki.jit(platform_target={value!r}) on kernel {kernel}: not a platform NKI names",
            code="APK972", span=_user_span(),
            notes=["platform names: trn1 (or inf2, gen2), trn2 (gen3), trn3 (gen4)"],
            help="write platform_target='trn2' or 'trn3', or leave it out and pick the target "
            "with --target (apdsl.target(...) in Python)", platform=str(value))
    return PLATFORMS[key]


# neuronx-cc's `--target` names (NEURON_CC_FLAGS, which torch-neuronx passes to the compiler)
COMPILER_TARGETS = {"trn1": "trn1", "trn1n": "trn1", "inf2": "trn1", "trn2": "trn2",
                    "trn3": "trn3"}
_CC_TARGET = re.compile(r"(?:^|\s)--target(?:=|\s+)(\S+)")


def environment_platform(kernel: str) -> str | None:
    """The target the process environment names for an NKI run, as the Neuron tools read it:
    NEURON_PLATFORM_TARGET_OVERRIDE (the `nki.jit` docstring's way), else the `--target` of
    NEURON_CC_FLAGS (the compiler's own option; the MXFP deep dive picks trn3 so).  None when
    neither names one; APK972 for a name neither tool knows."""
    value = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip()
    if value:
        if value.lower() not in PLATFORMS:
            raise _unknown(kernel, f"NEURON_PLATFORM_TARGET_OVERRIDE={value}", value,
                           "trn1 (or inf2, gen2), trn2 (gen3), trn3 (gen4)")
        return PLATFORMS[value.lower()]
    found = _CC_TARGET.search(os.environ.get("NEURON_CC_FLAGS", ""))
    if found is None:
        return None
    value = found.group(1).strip("'\"")
    if value.lower() not in COMPILER_TARGETS:
        raise _unknown(kernel, f"NEURON_CC_FLAGS --target {value}", value,
                       ", ".join(COMPILER_TARGETS))
    return COMPILER_TARGETS[value.lower()]


def _unknown(kernel: str, said: str, value: str, names: str) -> ApdslTypeError:
    return ApdslTypeError(
        f"{said} (kernel {kernel}): not a platform the Neuron tools name", code="APK972",
        span=_user_span(), notes=[f"platform names: {names}"],
        help="set it to trn1, trn2 or trn3, or leave it unset and pick the target with "
        "--target (apdsl.target(...) in Python)", platform=value)


def _user_span() -> Any:
    from .locate import caller_span
    return caller_span(1)


class on_platform:  # noqa: N801 - a context manager used like a function
    """Run a kernel on the target its `platform_target` names (or, without one, the one its
    environment names: `environment_platform`), instead of the run's own NKI target when
    that is still the default (trn2), APK972 when the run chose another one than the kernel
    (a class, not a generator, so the error's span is the user's call, not contextlib's)."""

    def __init__(self, platform: str | None, kernel: str) -> None:
        self.platform, self.kernel = platform, kernel
        self.saved: dict[str, str] | None = None

    def __enter__(self) -> None:
        said = "its platform_target"
        if self.platform is None:
            # no platform_target: the one the environment names (NKI 0.3.0 reads only that)
            self.platform = environment_platform(self.kernel)
            said = "the target its environment names"
        if self.platform is None:
            return
        from ..tensor.machine import DEFAULT_TARGETS, current
        targets = current().targets
        now = targets["nki"]
        if now not in (self.platform, DEFAULT_TARGETS["nki"]):
            raise TargetError(
                f"kernel {self.kernel} is built for {self.platform} ({said}), but "
                f"the run targets {now}", code="APK972", span=_user_span(),
                notes=["a kernel's platform_target, or else NEURON_PLATFORM_TARGET_OVERRIDE "
                       "or NEURON_CC_FLAGS' --target, picks its target; the run (--target, "
                       "apdsl.target) chose another"],
                help=f"run with --target {self.platform}, or drop what names "
                f"{self.platform}", platform=self.platform, target=now)
        self.saved = dict(targets)
        targets["nki"] = self.platform

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            from ..tensor.machine import current
            current().targets.update(self.saved)
            self.saved = None


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


def trace(func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """`@nki.trace` of the legacy API (a kernel traced for a framework to call): as `jit`."""
    return _decorator(func, kwargs)


class Latency:
    """`benchmark_result.nc_latency`: apdsl's estimate of the kernel's time (`apdsl profile`'s
    cost model); the estimate is one number, so every percentile is it."""

    def __init__(self, microseconds: float) -> None:
        self.microseconds = microseconds

    def get_latency_percentile(self, percentile: float) -> float:
        """The estimated latency in microseconds (the same for every percentile)."""
        return self.microseconds


class BenchmarkResult:
    def __init__(self, microseconds: float) -> None:
        self.nc_latency = Latency(microseconds)


class Benchmarked:
    """A kernel under `@nki.benchmark(...)` (or `nki.profile(...)`): calling it runs it and
    estimates its time on the target with apdsl's cost model (no device, so no warmup or
    iterations, and no NEFF or NTFF files: `apdsl profile FILE.py` draws the timeline)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
        self.benchmark_result: BenchmarkResult | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from types import SimpleNamespace

        from ..profile import profile_run
        from ..runtime.core.trace import tracing
        from ..tensor.machine import current
        with tracing() as tr:
            value = call(self.kernel.fn, args, kwargs)
        estimate = profile_run(SimpleNamespace(trace=tr, machine=current(),
                                               kernel=self.kernel.name))
        self.benchmark_result = BenchmarkResult(estimate.total_ns / 1000.0)
        return value


def benchmark(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    """`@nki.benchmark(warmup=..., iters=...)` of the legacy API: the kernel runs, and
    `.benchmark_result.nc_latency` holds apdsl's estimate of its time (`Benchmarked`)."""
    if func is None:
        return Benchmarked
    return Benchmarked(func)


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


def launch_grid(grid: Any, name: str, legacy: bool = False) -> tuple[int, ...]:
    """The launch shape of `kernel[grid]`: one number of logical cores, 1 or 2 (trn1: 1); or
    the legacy API's SPMD grid of programs, `kernel[gx, gy]` (two or more sizes), whose
    programs run one after another, each with its `nl.program_id(axis)`.  In the legacy API
    (`legacy`: the kernel's or the launching file imports `neuronxcc`) one number is such a
    grid too, of that many programs (the legacy tutorials launch `kernel[batch]`)."""
    try:
        if legacy:
            grid = grid_sizes(grid)
            if isinstance(grid, int) and not isinstance(grid, bool):
                grid = (grid,)
        if isinstance(grid, tuple) and (len(grid) > 1 or legacy) and all(
                isinstance(n, int) and not isinstance(n, bool) for n in grid):
            if min(grid) < 1:
                raise empty_grid(f"{name}[{', '.join(map(str, grid))}]", name)
            return grid
        return check_grid(grid, name)
    except ApdslError as e:
        raise e.replace(span=_here()) from None


def _here() -> Any:
    from .locate import caller_span
    return caller_span(2)


def call(fn: Callable[..., Any], args: tuple, kwargs: dict, grid: tuple[int, ...] = (),
         dry: bool = False, out: Any = None, raw: bool = False) -> Any:
    """Run `fn` once per program id of `grid` (once without a grid) with its NumPy arguments
    as HBM tensors; its result as NumPy (`raw`, check mode: the tensors themselves).  An
    observer (`observe.observing`) hears of the call, its end and its failure."""
    watcher = observer()
    if watcher is None:
        return _call(fn, args, kwargs, grid, dry, out, raw)
    watcher.started(fn, args, kwargs, grid)
    try:
        result = _call(fn, args, kwargs, grid, dry, out, raw)
    except BaseException as e:
        watcher.failed(fn, e)
        raise
    watcher.finished(fn, result)
    return result


def inner_call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """A kernel called from a kernel under way: a plain call of its function, told to an
    observer that listens for such calls (`inner_started`, `inner_finished`, `inner_failed`:
    the corpus runner measuring a kernel that a tested kernel calls)."""
    watcher = observer()
    if watcher is None or not hasattr(watcher, "inner_started"):
        return fn(*args, **kwargs)
    watcher.inner_started(fn)
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:
        lacking = missing_attribute(e)  # (told as the diagnostic the outer call will give)
        watcher.inner_failed(fn, e if lacking is None else lacking)
        if lacking is None:
            raise
        raise lacking from None
    watcher.inner_finished(fn)
    return result


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict, grid: tuple[int, ...],
          dry: bool, out: Any, raw: bool) -> Any:
    names = parameter_names(fn, args, kwargs)
    from_torch = any(torch_arrays.is_torch(v) for v in (*args, *kwargs.values()))
    if from_torch:  # launched from PyTorch: the tensors' memory, results as tensors
        args = tuple(arguments.from_torch(a, n) for a, n in zip(args, names))
        kwargs = {k: arguments.from_torch(v, k) for k, v in kwargs.items()}
    shared = SharedHbm()  # shared_hbm allocations, the same tensors in every program
    outputs: list[Any] = []  # every program's shared_hbm allocations (`results.unreturned`)
    result: Any = None
    from ..tensor.machine import current as current_machine
    caller = current_machine()
    try:
        from itertools import product
        ids = list(product(*(range(n) for n in grid))) if grid else [()]
        converted: list[Any] | None = None
        kw: dict[str, Any] = {}
        hosts = [SpmdHost(shared, dry=dry, out=out, launch=Launch(grid, pid)) for pid in ids]
        converted = [to_tensor(a, n, hosts[0]) for a, n in zip(args, names)]
        kw = {k: to_tensor(v, k, hosts[0]) for k, v in kwargs.items()}

        def program(i: int) -> Any:
            host = hosts[i]
            # each program on its own machine (its own SBUF and PSUM accounting); what it
            # warns of goes to the caller's machine, where the command line collects it
            try:
                with host.machine.active(), hosting(host), tile_writes.lending(host.legacy):
                    value = fn(*converted, **kw)
                    host.legacy.flush()  # a legacy result still pending is computed now
                    return computed(value)
            finally:
                caller.warnings.extend(host.machine.warnings)

        values = None
        if grid == (2,) and not dry:
            from ..runtime.core.lnc_race import Races, attach_all
            machines = {id(h.machine): i for i, h in enumerate(hosts)}  # (hosts keep them)
            races = shared.races = Races(lambda: machines.get(id(current_machine())),
                                         caller_span)
            attach_all(races, (converted, kw))
            try:
                values = _lnc_programs(program, races)
            finally:
                races.detach()
        for i, pid in enumerate(ids):
            value = program(i) if values is None else values[i]
            if grid and i > 0 and not same_results(value, result):
                raise different_results(fn.__name__, pid)
            result = value
            outputs.extend(hosts[i].outputs)
        results.check_on_chip(result, fn)
        results.check_written(result, fn)  # (check mode keeps written state for it too)
        if not dry:
            caller.warnings.extend(results.unreturned(result, outputs, fn))
        if not dry and converted is not None:
            _write_back([*args, *kwargs.values()], [*converted, *kw.values()])
        if dry or raw:
            return result
        return arguments.to_torch(to_numpy(result)) if from_torch else to_numpy(result)
    except ApdslError as e:
        raise locate(e, caller_span(2)) from None
    except AttributeError as e:  # a tensor attribute apdsl lacks: named where it was read
        lacking = missing_attribute(e)
        if lacking is None:
            raise
        raise lacking from None


def _lnc_programs(program: Callable[[int], Any], races: Races) -> list[Any]:
    """The two programs of an LNC=2 launch as a group of cores taking turns (program 0 runs
    until it ends or waits at a `sendrecv` / `core_barrier`, then program 1): the order a
    launch without those instructions always had, and the meeting point they need.  `races`
    stops a kernel whose result depends on that order (`apdsl.runtime.core.lnc_race`)."""
    import threading

    from ..runtime.nki.group import Group
    old = threading.stack_size(256 * 1024 * 1024)  # a program's thread: a main thread's stack
    try:
        return Group(2, cores=True, races=races).run(program)
    finally:
        threading.stack_size(old)


def _write_back(arrays: list[Any], tensors: list[Any]) -> None:
    """A kernel's NumPy arguments are its HBM tensors: what it wrote into one is in the array
    afterwards (the legacy API's kernels return nothing and write their output arguments,
    `simulate_kernel(kernel, a, out)`).  Arrays NumPy will not let us write are left alone."""
    import numpy as np
    for a, t in zip(arrays, tensors):
        if not isinstance(a, np.ndarray) or not a.flags.writeable or t is a or \
                getattr(t, "dtype", None) is None or t.dtype.np != a.dtype:
            continue
        now = t.numpy()
        if now.shape == a.shape and not same_values(now, a):
            a[...] = now


def same_values(now: Any, before: Any) -> bool:
    """`np.array_equal(now, before, equal_nan=...)` for float arrays (NaN equal to NaN, 0.0
    to -0.0): the same bits answer it in one pass over unsigned integers (a twentieth of the
    time of the comparison of values, which tests each element for NaN: seconds for the
    hundreds of millions of weights nki-library's MoE tests pass), else the values do."""
    import numpy as np
    width = before.dtype.itemsize
    if width in (1, 2, 4, 8) and now.dtype == before.dtype and now.flags.c_contiguous and \
            before.flags.c_contiguous and \
            np.array_equal(now.view(f"u{width}"), before.view(f"u{width}")):
        return True
    return bool(np.array_equal(now, before, equal_nan=before.dtype.kind == "f"))


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

    def allocate(self, shape: Any, dtype: Any, buffer: Any, format: str = "ND", name: str = "",
                 span: Span | None = None) -> Any:
        t = super().allocate(shape, dtype, buffer, format, name, span)
        if t.buffer != "shared_hbm":
            return t
        if self.launch.grid:
            ids = self.launch.ids
            t = self.shared.take(t, ids[0] if len(ids) == 1 else ids)
        self.outputs.append(t)
        return t
