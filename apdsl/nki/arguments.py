"""A Python kernel's arguments and results: NumPy arrays in become HBM tensors, returned
tensors (and tuples of them) come back as NumPy.  A kernel launched from PyTorch takes CPU
torch tensors (read and written in place through NumPy views, `tensor.torch_arrays`) and
returns torch tensors, as a launch on an XLA device does."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslTypeError
from ..semantics.host import Host
from ..tensor import torch_arrays
from ..tensor.dtypes import no_nki_form
from ..tensor.view import Tensor


def parameter_names(fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[str]:
    """The parameter each positional argument binds to (`arg0`... where the signature does
    not say)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    out = []
    for i in range(len(args)):
        p = params[i] if i < len(params) else None
        if p is None or p.kind is inspect.Parameter.VAR_POSITIONAL:
            out.append(f"{p.name}[{i - len(params) + 1}]" if p is not None else f"arg{i}")
        else:
            out.append(p.name)
    return out


def to_tensor(value: Any, param: str, host: Host) -> Any:
    """One argument as the kernel sees it: a NumPy array becomes an HBM tensor holding it
    (check mode: of its shape and dtype, unwritten: no input value is read); anything else
    (tensors, numbers, configs) passes as it is."""
    if not isinstance(value, np.ndarray):
        return value
    refused = no_nki_form(param, value.shape, value.dtype)
    if refused is not None:
        raise refused
    from ..tensor.view import from_numpy, ndarray
    named = getattr(value, "apdsl_dtype", "") or (value.dtype.metadata or {}).get("apdsl_dtype")
    if named:  # the bits of a dtype NumPy has no type for (packed MX), naming it
        from ..tensor.dtypes import dtype as to_dtype
        dt = to_dtype(named)
        return ndarray(value.shape, dt, "hbm", name=param) if host.dry else \
            from_numpy(np.asarray(value), "hbm", dt, name=param)
    if host.dry:
        from ..tensor.dtypes import dtype as to_dtype
        try:
            dt = to_dtype(value.dtype)
        except ApdslTypeError:
            dt = None
        if dt is not None:
            return ndarray(value.shape, dt, "hbm", name=param)
    return from_numpy(value, "hbm", name=param)


def from_torch(value: Any, param: str) -> Any:
    """A torch tensor argument as the NumPy view of its memory (other values as they are)."""
    if not torch_arrays.is_torch(value):
        return value
    try:
        return torch_arrays.as_numpy(value)
    except ValueError as e:
        raise ApdslTypeError(f"parameter {param} is a torch tensor apdsl cannot read: {e}",
                             code="APK171", input=param,
                             help="give a CPU tensor (apdsl's XLA device is the CPU: "
                             "torch_xla.device()) of a dtype NKI has") from None


def to_torch(value: Any) -> Any:
    """`to_numpy`'s result as torch tensors, for a launch from PyTorch."""
    if isinstance(value, np.ndarray):
        return torch_arrays.to_torch(value)
    if isinstance(value, tuple):
        return tuple(to_torch(v) for v in value)
    return value


def to_numpy(value: Any) -> Any:
    """A kernel's result as NumPy: each returned tensor copied out; tuples and lists element
    by element; other values as they are."""
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, (tuple, list)):
        return tuple(to_numpy(v) for v in value)
    return value
