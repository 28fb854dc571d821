"""`@asc.jit` kernels: `kernel[n_cores, stream](x, y, z, n)` runs the kernel on apdsl, its
`asc.GlobalAddress` parameters being the caller's NumPy arrays (or CPU torch tensors), which
get what the kernel wrote into global memory, as on the device.  The Ascend synchronisation
checker is always on (SPEC 18)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import ApdslError, ApdslTypeError
from ..nki.arguments import parameter_names
from ..nki.host import Host, active, hosting
from ..nki.kernel import locate
from ..nki.locate import caller_span
from . import errors
from .memory import GlobalAddress
from .placement import PLACEMENT, Placement


class JitKernel:
    """An `@asc.jit` function: launched as `kernel[n_cores, stream](...)` (or called)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any] | None = None) -> None:
        self.fn = fn
        self.options = dict(options or {})
        functools.update_wrapper(self, fn)

    def __getitem__(self, launch: Any) -> Callable[..., Any]:
        cores = launch[0] if isinstance(launch, tuple) else launch
        if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
            raise locate(ApdslTypeError(
                f"kernel[{cores!r}, stream]: the number of cores is an int >= 1",
                code="APK661"), caller_span(2))
        if cores != 1:
            raise locate(errors.cores(cores), caller_span(2))
        return functools.partial(_launched, self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:  # a jit function called from a kernel: a plain call
            return self.fn(*args, **kwargs)
        return call(self.fn, args, kwargs)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<asc kernel {self.fn.__name__}>"


def _launched(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return call(fn, args, kwargs)


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`@asc.jit` or `@asc.jit(...)` (pyasc's compile and launch options are accepted and
    have no meaning on apdsl)."""
    if fn is None:
        return lambda f: JitKernel(f, options)
    return JitKernel(fn, options)


def _as_array(value: Any) -> np.ndarray | None:
    """A NumPy array, or the NumPy view of a CPU torch tensor (shares its memory, so what
    the kernel writes reaches the tensor); None for other values."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch") and hasattr(value, "numpy"):
        try:
            return value.detach().numpy()
        except (RuntimeError, TypeError):
            raise ApdslTypeError("a torch tensor given to an @asc.jit kernel must be on the "
                                 "CPU", code="APK662") from None
    return None


def _global(param: str, value: Any, annotation: Any, host: Host) -> Any:
    array = _as_array(value)
    if array is None:
        if annotation is GlobalAddress or (isinstance(annotation, str) and
                                           annotation.rpartition(".")[2] == "GlobalAddress"):
            raise errors.bad_argument(param, value)
        return value
    from ..tensor.view import from_numpy, ndarray
    flat = array.reshape(-1)
    if host.dry:
        return GlobalAddress(ndarray(flat.shape, flat.dtype.name, "gm", name=param))
    return GlobalAddress(from_numpy(flat, "gm", name=param))


@contextmanager
def _running(host: Host) -> Iterator[None]:
    from ..runtime.sync import checking
    token = PLACEMENT.set(Placement(host))
    try:
        with host.machine.active(), hosting(host), checking():
            yield
    finally:
        PLACEMENT.reset(token)


def call(fn: Callable[..., Any], args: tuple, kwargs: dict, dry: bool = False,
         raw: bool = False) -> Any:
    """Run `fn` on one core with its arrays in global memory; write what it wrote back into
    the caller's arrays (run mode).  `raw`: the GM tensors of the array parameters."""
    from ..tensor.machine import current as current_machine
    names = parameter_names(fn, args, kwargs)
    try:
        annotations = inspect.get_annotations(fn, eval_str=False)
    except (TypeError, ValueError, NameError):
        annotations = {}
    caller = current_machine()
    try:
        host = Host(dry=dry)
        converted = [_global(n, a, annotations.get(n), host) for a, n in zip(args, names)]
        kw = {k: _global(k, v, annotations.get(k), host) for k, v in kwargs.items()}
        try:
            with _running(host):
                fn(*converted, **kw)
        finally:
            caller.warnings.extend(host.machine.warnings)
        pairs = [(a, c) for a, c in zip([*args, *kwargs.values()], [*converted, *kw.values()])
                 if isinstance(c, GlobalAddress)]
        if not dry:
            for a, c in pairs:
                array = _as_array(a)
                array[...] = c.tensor.numpy().reshape(array.shape)
        return tuple(c.tensor for _, c in pairs) if raw else None
    except ApdslError as e:
        raise locate(e, caller_span(2)) from None
