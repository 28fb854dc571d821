"""Running a kernel on a launch grid (SPEC section 11): `kernel[n](a, b)` written in `.apk` code
and `apdsl run FILE.apk --grid N` both run the kernel once per program id in id order, every
program given the same arguments and sharing the kernel's `shared_hbm` allocations
(`launch.SharedHbm`); the programs must return the same tensors (APK146).

The NKI docs (nki/get-started/about/lnc.rst): "The bracket syntax must contain only one number,
the number of cores to use", 1 or 2; "If the number is too large for the current architecture,
then you will receive an error"; LNC applies only to Trn2 and Trn3, so trn1 launches on 1.  What
the launch returns is what the kernel returns (the LNC example's `return output`, a shared HBM
tensor every program wrote its part of).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ApdslError, ApdslTypeError, Span
from ..syntax import ast
from ..tensor import targets
from .host import Launcher
from .launch import Launch, SharedHbm, different_results, same_results
from .values import Absorbing, Function

if TYPE_CHECKING:
    from ..runtime.core.lnc_race import Races

MOST_CORES = {"trn1": 1}  # logical NeuronCores a target launches on (others: 2)


def check_grid(grid: Any, name: str) -> tuple[int, ...]:
    """The launch shape of `kernel[grid]`: exactly one number of logical cores, 1 or 2 (trn1:
    1), as a 1-tuple (APK141)."""
    if isinstance(grid, tuple) and len(grid) == 1:
        grid = grid[0]
    tgt = targets.target_for("sbuf").name
    most = MOST_CORES.get(tgt, 2)
    if isinstance(grid, int) and not isinstance(grid, bool) and grid < 1:
        raise empty_grid(f"{name}[{grid}]", name, tgt)
    if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= most:
        shown = grid if isinstance(grid, int) else type(grid).__name__
        raise ApdslTypeError(
            f"{name}[{shown!r}]: a kernel launches on 1 or 2 logical NeuronCores"
            + (" (trn1: 1)" if tgt != "trn1" else f"; {tgt} has 1"), code="APK141",
            notes=[f"target: {tgt}",
                   "NKI docs: the bracket holds one number, the logical cores to use"],
            help=f"launch with {name}[1](...)" + ("" if most == 1 else f" or {name}[2](...)"))
    return (grid,)


class GridDim:
    """A dimension of the legacy API's SPMD launch grid built with `nl.nc(n)` (n logical
    NeuronCores) and `nl.spmd_dim(...)` (sizes multiplied, `nl.nc(2) * 2` its sugar): `size`
    programs along the axis, each with its `nl.program_id` from 0 to size - 1.  The legacy
    reference says the annotation only chooses which physical core runs which program; apdsl
    runs the programs one after another, so their results do not depend on it."""

    __slots__ = ("size", "cores")

    def __init__(self, size: int, cores: int) -> None:
        self.size, self.cores = size, cores

    def __mul__(self, other: Any) -> GridDim:
        return spmd_dim(self, other)

    def __rmul__(self, other: Any) -> GridDim:
        return spmd_dim(other, self)

    def __repr__(self) -> str:
        return f"spmd_dim(size={self.size}, nc={self.cores})"


def _grid_size(v: Any, what: str) -> int:
    if isinstance(v, GridDim):
        return v.size
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ApdslTypeError(f"{what}: a grid size must be a positive int (or nl.nc(n)), not "
                             f"{v!r}", code="APK141")
    return v


def nc(n: Any) -> GridDim:
    """`nl.nc(n)` (legacy API): a launch-grid dimension of n logical NeuronCores, 1 or 2 (trn1:
    1), as a launch on logical cores allows."""
    tgt = targets.target_for("sbuf").name
    most = MOST_CORES.get(tgt, 2)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
        raise ApdslTypeError(f"nl.nc({n!r}): a kernel's programs are spread over 1 or 2 "
                             "logical NeuronCores" + (" (trn1: 1)" if tgt != "trn1" else
                                                      f"; {tgt} has 1"), code="APK141",
                             notes=[f"target: {tgt}"], help="nl.nc(2) on trn2 and trn3")
    return GridDim(n, n)


def spmd_dim(*parts: Any) -> GridDim:
    """`nl.spmd_dim(a, b, ...)` (legacy API): one launch-grid dimension of a * b * ...
    programs, the `nl.nc` parts saying how they are spread over cores."""
    if not parts:
        raise ApdslTypeError("nl.spmd_dim(): give the sizes it multiplies", code="APK141")
    size = cores = 1
    for p in parts:
        size *= _grid_size(p, "nl.spmd_dim")
        cores *= p.cores if isinstance(p, GridDim) else 1
    return GridDim(size, cores)


def grid_sizes(grid: Any) -> Any:
    """A launch grid with its `nl.nc`/`nl.spmd_dim` dimensions as their sizes (anything else
    as it is, for the launch's own checks)."""
    if isinstance(grid, GridDim):
        return grid.size
    if isinstance(grid, tuple):
        return tuple(g.size if isinstance(g, GridDim) else g for g in grid)
    return grid


def empty_grid(launch: str, name: str, tgt: str | None = None) -> ApdslTypeError:
    """APK141 for a launch with no program (`kernel[0]`, the legacy `kernel[2, 0]`): it would
    run nothing, and no NKI reference defines what such a launch returns."""
    tgt = tgt or targets.target_for("sbuf").name
    cores = "1 or 2 logical NeuronCores" + (" (trn1: 1)" if tgt != "trn1" else "; trn1 has 1")
    return ApdslTypeError(
        f"{launch}: a launch grid with no program: the kernel would never run, and NKI "
        f"defines no result for such a launch (a kernel launches on {cores}, or the legacy "
        "API's SPMD grid of programs, each size at least 1)", code="APK141",
        notes=[f"target: {tgt}",
               "NKI docs: the bracket holds the number of logical cores to use (current API) "
               "or the sizes of an SPMD grid, one program per position (legacy neuronxcc.nki)"],
        help=f"launch one program with {name}[1](...), or call {name}(...) without a grid")


def run_programs(interp: Launcher, fn: Function, args: tuple, kwargs: dict, grid: tuple[int, ...],
                 bound: dict[str, Any] | None = None, span: Span | None = None) -> Any:
    """Call kernel `fn` once per program id of `grid` (once, without a grid), each program
    with the same arguments and sharing the launch's shared HBM tensors; the result checked
    against the kernel's declared type.  `span` is the launch in the user's code: errors from
    a program are labelled with it.  The caller's launch is restored afterwards.  An Ascend
    kernel runs on its AI cores instead (`run_cores`)."""
    if is_ascend(fn, args):
        return run_cores(interp, fn, args, kwargs, check_ascend_grid(grid, fn.name) if grid
                         else (), bound, span)
    from ..runtime.sync import checking
    grid = check_grid(grid, fn.name) if grid else ()
    saved = interp.launch, interp.shared_hbm
    if grid:
        interp.shared_hbm = SharedHbm()
    races = _races(interp, args, kwargs) if grid == (2,) and not interp.dry else None
    value: Any = None
    try:
        for pid in range(grid[0]) if grid else (None,):
            if pid is not None:
                interp.launch = Launch(grid, (pid,))
            try:
                with checking():  # Ascend pipes and events are checked inside a kernel
                    result = interp.call_function(fn, args, kwargs, bound)
                check_result(fn, result, interp)
                if pid and not same_results(result, value):
                    raise different_results(fn.name, pid).with_span(span or fn.span)
            except ApdslError as e:
                if span is not None and pid is not None and not e.labels:
                    e = e.with_label(span, f"in program {pid} of this launch of {fn.name}")
                raise e from None
            value = result
    finally:
        interp.launch, interp.shared_hbm = saved
        if races is not None:
            races.detach()
    return value


def _races(interp: Launcher, args: tuple, kwargs: dict) -> Races:
    """The race checker of an LNC=2 launch (SPEC 11): its programs run one after the other
    here, at the same time on hardware, so what one writes of the HBM they share and the other
    touches is a race (APK973; a `.apk` kernel has no barrier to order them)."""
    from ..runtime.core.lnc_race import Races, attach_all
    from ..tensor.machine import current

    def program() -> int | None:
        launch = interp.launch
        return launch.ids[0] if launch.grid else None

    races = Races(program, lambda: current().span, barriers=False)
    interp.shared_hbm.races = races  # type: ignore[union-attr]
    attach_all(races, (args, kwargs))
    return races


ASCEND_BUFFERS = frozenset({"gm", "l1", "l0a", "l0b", "l0c", "ub", "bt"})


def is_ascend(fn: Function, args: tuple) -> bool:
    """An Ascend kernel: one of its tensor arguments, or its declared result, is in an Ascend
    buffer (GM)."""
    from ..tensor.view import Tensor
    if any(isinstance(a, Tensor) and a.buffer in ASCEND_BUFFERS for a in args):
        return True
    spec = fn.returns
    return isinstance(spec, ast.TypeSpec) and spec.buffer in ASCEND_BUFFERS


def check_ascend_grid(grid: Any, name: str) -> tuple[int, ...]:
    """The launch shape of an Ascend `kernel[n]`: n AI cores (numBlocks), 1-65535 (APK590)."""
    from ..runtime.ascend.cores import MAX_BLOCKS
    if isinstance(grid, tuple) and len(grid) == 1:
        grid = grid[0]
    if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= MAX_BLOCKS:
        shown = grid if isinstance(grid, int) else type(grid).__name__
        raise ApdslTypeError(
            f"{name}[{shown!r}]: an Ascend kernel launches on 1 to {MAX_BLOCKS} AI cores",
            code="APK590", notes=["AscendC: numBlocks of kernel<<<numBlocks, ...>>>; pyasc: "
                                  "kernel[numBlocks, stream](...)"],
            help=f"launch with {name}[n](...), n the number of AI cores (ascend-a2 has 20; "
                 "more run in rounds)")
    return (grid,)


class _Hooks:
    """What the interpreter keeps per core besides the machine: saved when a core hands over
    to another (at a cross-core wait), restored when it resumes."""

    def __init__(self, interp: Launcher) -> None:
        self.interp = interp

    def save(self) -> Any:
        i = self.interp
        return i.call_span, i.depth, i.launch, list(i.calls)

    def restore(self, state: Any) -> None:
        i = self.interp
        i.call_span, i.depth, i.launch, calls = state
        i.calls[:] = calls


def run_cores(interp: Launcher, fn: Function, args: tuple, kwargs: dict, grid: tuple[int, ...],
              bound: dict[str, Any] | None = None, span: Span | None = None) -> Any:
    """Run Ascend kernel `fn` on `grid[0]` AI cores (one without a grid), each core with its
    own on-chip buffers, pipes and flags, sharing GM (`apdsl.runtime.ascend.cores`); the cores
    share their `gm` allocations (the i-th of each core is the first core's i-th) and must
    return the same (APK146)."""
    from ..runtime.ascend.cores import CoreLaunch, CoreState
    n = grid[0] if grid else 1
    saved = interp.launch, interp.shared_hbm
    interp.shared_hbm = SharedHbm("gm")

    def body(st: CoreState) -> Any:
        interp.launch = Launch(grid, (st.block,)) if grid else saved[0]
        result = interp.call_function(fn, args, kwargs, bound)
        check_result(fn, result, interp)
        return result

    launch = CoreLaunch(n, body, hooks=_Hooks(interp))
    try:
        results = launch.run()
    except ApdslError as e:
        if span is not None and grid and not e.labels:
            e = e.with_label(span, f"in this launch of {fn.name} on {n} AI "
                             f"core{'s' if n != 1 else ''}")
        raise e from None
    finally:
        interp.launch, interp.shared_hbm = saved
    first = results[0]
    for st, r in zip(launch.cores[1:], results[1:]):
        if not same_results(r, first):
            raise ApdslTypeError(
                f"kernel {fn.name}: {st.short} returns other values than "
                f"{launch.cores[0].short}", code="APK146", span=span or fn.span,
                help="allocate outputs in GM before any branch on the core: every core of a "
                "launch allocates the same GM tensors, and every core returns them")
    return first


class Launched:
    """`kernel[n]` in `.apk` code: the kernel on a launch grid, run when called."""

    def __init__(self, fn: Function, grid: tuple[int, ...], interp: Launcher) -> None:
        self.fn, self.grid, self.interp = fn, grid, interp

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        interp = self.interp
        if interp.launch.grid:
            raise ApdslTypeError(
                f"{self.fn.name}[{self.grid[0]}](...) launched inside program "
                f"{interp.launch.ids[0]} of a launch", code="APK160",
                notes=[f"the launch under way: grid {list(interp.launch.grid)}"],
                help="launch kernels from the top level; inside a kernel call the other "
                     "kernel plainly (the NKI docs: sub-kernels are called without nki.jit)")
        return run_programs(interp, self.fn, args, kwargs, self.grid, span=interp.call_span)

    def __repr__(self) -> str:
        return f"<kernel {self.fn.name}[{self.grid[0]}]>"


class KernelLauncher:
    """`kernel[n]` for the interpreter (a mixin of `Interpreter`; `Function.__getitem__` asks
    it, so the value module needs no import of this one)."""

    def launch_kernel(self, fn: Function, grid: Any) -> Launched:
        return launch(fn, grid, self)


def launch(fn: Function, grid: Any, interp: Launcher) -> Launched:
    """`fn[grid]`: a kernel on `grid` logical cores (APK159 for a def that is no kernel)."""
    if not fn.is_kernel:
        raise ApdslTypeError(
            f"{fn.name}[...]: {fn.name} is a def, not a kernel; only a kernel launches on "
            "logical NeuronCores", code="APK159",
            notes=["a kernel is `kernel NAME(...)` or a def decorated with @nki.jit"],
            help=f"call it plainly, {fn.name}(...), or make it a kernel")
    if is_ascend(fn, ()) or any(isinstance(getattr(p, "type", None), ast.TypeSpec) and p.type.buffer in
                                 ASCEND_BUFFERS for p in fn.params):
        return Launched(fn, check_ascend_grid(grid, fn.name), interp)
    return Launched(fn, _grid(grid, fn.name), interp)


def _grid(grid: Any, name: str) -> tuple[int, ...]:
    """`kernel[grid]`'s shape, checked when the kernel is called (an NKI kernel launches on 1
    or 2 logical cores, an Ascend one on up to 65535 AI cores: its arguments say which)."""
    if isinstance(grid, tuple) and len(grid) == 1:
        grid = grid[0]
    if isinstance(grid, int) and not isinstance(grid, bool) and grid >= 1:
        return (grid,)
    return check_grid(grid, name)  # (the error)


def check_result(fn: Function, value: Any, interp: Launcher) -> None:
    """A kernel's result against its declared result type (APK133)."""
    spec = fn.returns
    # (a return annotation that is no tensor type, `-> nl.ndarray`, declares nothing to check)
    if not isinstance(spec, ast.TypeSpec) or isinstance(value, Absorbing):
        return
    from ..tensor.dtypes import dtype as to_dtype
    from ..tensor.view import Tensor
    span: Span | None = spec.span
    if not isinstance(value, Tensor):
        raise ApdslTypeError(f"kernel {fn.name} must return a tensor, returned "
                             f"{type(value).__name__}", code="APK133", span=span)
    problems = []
    try:
        declared = to_dtype(spec.dtype)
    except ApdslError as e:  # an unknown dtype in the result type: point at it
        raise e.with_span(getattr(spec, "dtype_span", None) or span) from None
    if value.dtype != declared:
        problems.append(f"dtype {value.dtype} (declared {spec.dtype})")
    if value.buffer != spec.buffer:
        problems.append(f"buffer {value.buffer} (declared {spec.buffer})")
    if len(value.shape) != len(spec.dims):
        problems.append(f"shape {tuple(value.shape)} (declared {len(spec.dims)} dims)")
    if problems:
        raise ApdslTypeError(f"kernel {fn.name} returned a tensor with " + ", ".join(problems),
                             code="APK133", span=span)
