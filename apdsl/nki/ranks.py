"""Groups of ranks for Python kernels (SPEC 16): `simulate_ranks(kernel, n, *args, **kwargs)`
runs a `@nki.jit` kernel on n ranks, each its own program and device (its own HBM), meeting at
each collective (`apdsl.runtime.nki.group`), and returns the n results in rank order;
`per_rank=f` gives rank r the arguments `f(r)`, an `(args, kwargs)` pair.  `run_ranks` is the
same for the command line (`apdsl run|check|lower|profile FILE.py --ranks N`), keeping each
rank's trace and machine."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ..errors import ApdslError, ApdslTypeError
from ..runtime.nki.group import Group
from .kernel import Kernel, Launched, call, locate, on_platform
from .locate import caller_span

# a rank's thread runs a whole kernel (the interpreter's recursion included): give it the
# stack a main thread has
_STACK = 256 * 1024 * 1024


class RankRun:
    """What `run_ranks` returns: each rank's value, trace (None: not traced) and machine."""

    def __init__(self, values: list[Any], traces: list[Any], machines: list[Any]) -> None:
        self.values, self.traces, self.machines = values, traces, machines


def simulate_ranks(kernel: Any, n: int, *args: Any, per_rank: Callable[[int], Any] | None = None,
                   **kwargs: Any) -> list[Any]:
    """Run `kernel` on `n` ranks; their results (NumPy) in rank order."""
    fn, grid = _kernel(kernel)
    n = _count(n)
    if per_rank is not None and (args or kwargs):
        raise ApdslTypeError("simulate_ranks: give the arguments either directly (the same for "
                             "every rank) or as per_rank=f, not both", code="APK971",
                             span=caller_span(2))

    def arguments(r: int) -> tuple[tuple, dict]:
        return (args, kwargs) if per_rank is None else _split(per_rank(r), r)

    try:
        with on_platform(getattr(kernel, "platform", None), getattr(fn, "__name__", "kernel")):
            return run_ranks(fn, n, arguments, grid).values
    except ApdslError as e:
        raise locate(e, caller_span(2)) from None


def run_ranks(fn: Callable[..., Any], n: int, arguments: Callable[[int], tuple[tuple, dict]],
              grid: tuple[int, ...] = (), *, trace: bool = False, dry: bool = False,
              raw: bool = False) -> RankRun:
    """Run `fn` on n ranks (rank r's arguments: `arguments(r)`), each on its own child of the
    current machine, traced when `trace`."""
    from ..runtime.core.trace import tracing
    from ..tensor.machine import current
    traces: list[Any] = [None] * n
    machines: list[Any] = [None] * n

    def body(r: int) -> Any:
        a, kw = arguments(r)
        with current().child().active() as m, (tracing() if trace else nullcontext()) as tr:
            machines[r], traces[r] = m, tr
            return call(fn, a, kw, grid, dry=dry, raw=raw)

    import threading  # (only a run on ranks needs it: off the cold check path)
    old = threading.stack_size(_STACK)
    try:
        values = Group(n).run(body)
    finally:
        threading.stack_size(old)
    return RankRun(values, traces, machines)


def _kernel(kernel: Any) -> tuple[Callable[..., Any], tuple[int, ...]]:
    if isinstance(kernel, Launched):
        return kernel.fn, kernel.grid
    if isinstance(kernel, Kernel):
        return kernel.fn, ()
    if callable(kernel):
        return kernel, ()
    raise ApdslTypeError(f"simulate_ranks: {kernel!r} is not a kernel", code="APK971",
                         span=caller_span(3), help="pass an @nki.jit function")


def _count(n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ApdslTypeError(f"simulate_ranks: the number of ranks must be an int >= 1, got "
                             f"{n!r}", code="APK971", span=caller_span(3),
                             help="simulate_ranks(kernel, 2, ...)")
    return n


def _split(value: Any, r: int) -> tuple[tuple, dict]:
    ok = isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (tuple, list)) \
        and isinstance(value[1], dict)
    if not ok:
        raise ApdslTypeError(f"simulate_ranks: per_rank({r}) returned {type(value).__name__}; "
                             "it returns (args, kwargs), a tuple and a dict", code="APK971",
                             help="per_rank=lambda r: ((inputs[r],), {})")
    return tuple(value[0]), dict(value[1])
