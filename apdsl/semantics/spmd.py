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

from typing import Any

from ..errors import ApdslError, ApdslTypeError, Span
from ..syntax import ast
from ..tensor import targets
from .launch import Launch, SharedHbm, different_results, same_results
from .values import Absorbing, Function

MOST_CORES = {"trn1": 1}  # logical NeuronCores a target launches on (others: 2)


def check_grid(grid: Any, name: str) -> tuple[int, ...]:
    """The launch shape of `kernel[grid]`: exactly one number of logical cores, 1 or 2 (trn1:
    1), as a 1-tuple (APK141)."""
    if isinstance(grid, tuple) and len(grid) == 1:
        grid = grid[0]
    tgt = targets.target_for("sbuf").name
    most = MOST_CORES.get(tgt, 2)
    if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= most:
        shown = grid if isinstance(grid, int) else type(grid).__name__
        raise ApdslTypeError(
            f"{name}[{shown!r}]: a kernel launches on 1 or 2 logical NeuronCores"
            + (" (trn1: 1)" if tgt != "trn1" else f"; {tgt} has 1"), code="APK141",
            notes=[f"target: {tgt}",
                   "NKI docs: the bracket holds one number, the logical cores to use"],
            help=f"launch with {name}[1](...)" + ("" if most == 1 else f" or {name}[2](...)"))
    return (grid,)


def run_programs(interp: Any, fn: Function, args: tuple, kwargs: dict, grid: tuple[int, ...],
                 bound: dict[str, Any] | None = None, span: Span | None = None) -> Any:
    """Call kernel `fn` once per program id of `grid` (once, without a grid), each program
    with the same arguments and sharing the launch's shared HBM tensors; the result checked
    against the kernel's declared type.  `span` is the launch in the user's code: errors from
    a program are labelled with it.  The caller's launch is restored afterwards."""
    from ..runtime.sync import checking
    saved = interp.launch, interp.shared_hbm
    if grid:
        interp.shared_hbm = SharedHbm()
    value: Any = None
    try:
        for pid in range(grid[0]) if grid else (None,):
            if pid is not None:
                interp.launch = Launch(grid, (pid,))
                interp.shared_hbm.next_program()
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
    return value


class Launched:
    """`kernel[n]` in `.apk` code: the kernel on a launch grid, run when called."""

    def __init__(self, fn: Function, grid: tuple[int, ...], interp: Any) -> None:
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


def launch(fn: Function, grid: Any, interp: Any) -> Launched:
    """`fn[grid]`: a kernel on `grid` logical cores (APK159 for a def that is no kernel)."""
    if not fn.is_kernel:
        raise ApdslTypeError(
            f"{fn.name}[...]: {fn.name} is a def, not a kernel; only a kernel launches on "
            "logical NeuronCores", code="APK159",
            notes=["a kernel is `kernel NAME(...)` or a def decorated with @nki.jit"],
            help=f"call it plainly, {fn.name}(...), or make it a kernel")
    return Launched(fn, check_grid(grid, fn.name), interp)


def check_result(fn: Function, value: Any, interp: Any) -> None:
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
