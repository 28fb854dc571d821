"""Inputs for checking a Python kernel that takes parameters, found in the file itself (the
language server has no `-i`): where `apdsl check FILE.py KERNEL -i NAME=FILE.npy` takes each
parameter's shape and dtype from a `.npy` header, the editor takes them

1. from the kernel's signature: every parameter without a default annotated with its shape
   and dtype (`a: nki.typing.tensor[128, 512, nl.float32]`), or
2. from the file's own driver: its `if __name__ == "__main__":` block runs until it first
   calls the kernel (`kernel(a, b)`, `kernel[2](a, b)`, `nki.simulate(kernel)(a, b)`,
   pyasc's `kernel[n, stream](...)`); that call's arrays give the shapes and dtypes (and its
   numbers their values, its launch the grid), and the block is stopped there, before the
   kernel runs.

Otherwise `Missing` says precisely why neither gave them.
"""

from __future__ import annotations

import ast
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...records import record

DRIVER_SECONDS = 5.0  # how long a driver may run before it calls the kernel


@record
class Found:
    """Inputs for `program.check(kernel=..., inputs=..., grid=...)` and where they came from."""

    inputs: dict[str, Any]
    grid: tuple[int, ...]
    origin: str


@record
class Missing:
    why: str


class _Reached(BaseException):
    """The driver called the kernel: stop it there (not an Exception, so a driver's own
    `except Exception` does not swallow it)."""


class _OutOfTime(BaseException):
    """The driver ran past DRIVER_SECONDS without calling the kernel."""


def inputs_for(program: Any, kernel: str) -> Found | Missing:
    """The inputs of `kernel` of a loaded Python kernel file (`PyProgram`), or why there are
    none."""
    fn = program.kernel_function(kernel)
    by_signature = _from_signature(fn)
    if isinstance(by_signature, Found):
        return by_signature
    by_driver = _from_driver(program, fn)
    if isinstance(by_driver, Found):
        return by_driver
    return Missing(f"{by_signature.why}, and {by_driver.why}")


# -- 1. the signature ------------------------------------------------------------------------
def _from_signature(fn: Callable[..., Any]) -> Found | Missing:
    try:
        sig = inspect.signature(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - an annotation that does not evaluate gives nothing
        sig = inspect.signature(fn)
    inputs: dict[str, Any] = {}
    lacking: list[str] = []
    for p in sig.parameters.values():
        if p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL,
                                                                   p.VAR_KEYWORD):
            continue
        shape = getattr(p.annotation, "shape", None)
        dtype = getattr(p.annotation, "dtype", None)
        if p.annotation is inspect.Parameter.empty:
            lacking.append(f"{p.name} has no annotation")
        elif not isinstance(shape, tuple) or dtype is None:
            lacking.append(f"{p.name}'s annotation gives no shape and dtype")
        else:
            inputs[p.name] = (shape, _numpy_dtype(dtype))
    if lacking:
        return Missing("its signature does not declare every parameter's shape and dtype "
                       f"as nki.typing.tensor[shape, dtype] ({'; '.join(lacking)})")
    return Found(inputs, (), "its signature")


def _numpy_dtype(dtype: Any) -> Any:
    from ...tensor.dtypes import dtype as apdsl_dtype
    try:
        return np.dtype(getattr(dtype, "numpy", dtype))
    except TypeError:
        return apdsl_dtype(str(dtype)).numpy


# -- 2. the driver ---------------------------------------------------------------------------
class _Catch:
    """An observer of kernel calls (`apdsl.nki.observe`) that takes the first call of `fn`."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.call: tuple[tuple, dict, tuple[int, ...]] | None = None

    def started(self, fn: Callable[..., Any], args: tuple, kwargs: dict,
                launch: tuple[int, ...]) -> None:
        if fn is self.fn:
            self.call = (args, kwargs, launch)
            raise _Reached

    def finished(self, fn: Callable[..., Any], result: Any) -> None:
        pass

    def failed(self, fn: Callable[..., Any], error: BaseException) -> None:
        pass


def _from_driver(program: Any, fn: Callable[..., Any]) -> Found | Missing:
    from ...nki.observe import observing
    blocks = _main_blocks(program.source)
    if not blocks:
        return Missing("the file has no `if __name__ == \"__main__\":` block to call it")
    code = compile(ast.Module(body=[s for b in blocks for s in b], type_ignores=[]),
                   program.file, "exec")
    catch = _Catch(fn)
    stopped: BaseException | None = None
    with observing(catch), _as_a_script(program.file), _time_limit(DRIVER_SECONDS):
        try:
            exec(code, vars(program.module))
        except _Reached:
            pass
        except _OutOfTime:
            return Missing(f"its `__main__` block did not call it within {DRIVER_SECONDS:g} s")
        except BaseException as e:  # noqa: BLE001 - the driver's own error, said in the why
            stopped = e
    if catch.call is None:
        if stopped is not None:
            return Missing(f"its `__main__` block stopped before calling it: "
                           f"{type(stopped).__name__}: {_said(stopped)}")
        return Missing("its `__main__` block ended without calling it")
    args, kwargs, launch = catch.call
    line = blocks[0][0].lineno
    return Found(_named(fn, args, kwargs), launch,
                 f"the call in its `__main__` block (line {line})")


@contextmanager
def _as_a_script(file: str) -> Iterator[None]:
    """The driver runs as `python FILE` would run it: no arguments, in the file's folder."""
    argv, cwd = sys.argv, os.getcwd()
    sys.argv = [file]
    try:
        os.chdir(os.path.dirname(os.path.abspath(file)))
        yield
    finally:
        sys.argv = argv
        os.chdir(cwd)


def _main_blocks(source: str) -> list[list[ast.stmt]]:
    """The bodies of the module's top-level `if __name__ == "__main__":` statements."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.If) and _is_main_test(node.test):
            found.append(node.body)
    return found


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def _named(fn: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by parameter name, arrays as (shape, dtype) as `check` reads
    them from `.npy` headers, other values as they are; a parameter the call left to its
    default gets the default (so the check passes what the call passed)."""
    sig = inspect.signature(fn)
    bound = sig.bind_partial(*args, **kwargs)
    named: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.name in bound.arguments:
            named[p.name] = _header(bound.arguments[p.name])
        elif p.default is not inspect.Parameter.empty:
            named[p.name] = p.default
    return named


def _header(value: Any) -> Any:
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return (value.shape, value.dtype)
    return value


def _said(e: BaseException) -> str:
    try:
        return str(e)[:200]
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        return "(its message could not be read)"


class _time_limit:  # noqa: N801 - a context manager used as a statement
    """Raise _OutOfTime in the main thread after `seconds` (no limit off the main thread)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def expired(signum: int, frame: Any) -> None:
            raise _OutOfTime

        self.previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self.armed = True

    def __exit__(self, *exc: Any) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
