"""Declaration initialisers: `= 0.5`, `= zeros`, `= ones`, `= arange`, `= random(seed)`,
`= load("x.npy")`.  They write the tensor's logical contents (so it counts as written)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslTypeError
from ...tensor.dtypes import cast_array
from ...tensor.machine import current
from ...tensor.view import Tensor


def seeded(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    """Deterministic test data that suits the dtype: small integers for integer types (so
    indices and sums stay in range), uniform [-1, 1) for floats."""
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -4
        return rng.integers(lo, 8, size=shape).astype(np.int64)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def initialise(t: Tensor, kind: str, *args: Any, known: bool = False) -> None:
    """Write the initialiser's values into `t`.  On a machine in check mode it only validates,
    unless `known`: values check mode is given (`-i` inputs) are written, so `host()` can read
    them."""
    from .execute import write_view
    dry = current().check and not known
    shape = tuple(t.shape)
    if kind == "random" and args and not isinstance(args[0], (int, np.integer)):
        raise ApdslTypeError("random(seed) takes an int seed", code="APK113")
    if dry and kind in ("zeros", "ones", "arange", "random"):
        return  # check mode moves no data; past the seed, these initialisers cannot fail
    if kind in ("value", "zeros", "ones"):
        value = {"zeros": 0.0, "ones": 1.0}.get(kind, args[0] if args else None)
        if not isinstance(value, (bool, int, float, np.integer, np.floating)):
            raise ApdslTypeError(f"a declaration initialiser must be a number, zeros, ones, "
                                 f"arange, random(seed) or load(\"file.npy\"), not "
                                 f"{type(value).__name__}", code="APK113")
        if not dry:
            _fill(t, value)
        return
    if kind == "arange":
        data: Any = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    elif kind == "random":
        seed = args[0] if args else 0
        data = seeded(shape, t.dtype, int(seed))
    elif kind == "array":
        (data,) = args
        data = np.asarray(data)
        if data.shape != shape:
            raise ApdslTypeError(f"loaded array has shape {data.shape}, the declaration "
                                 f"{shape}", code="APK114", help="declare the tensor with the "
                                 "file's shape")
        if data.dtype.kind not in "biuf" and data.dtype.name not in ("bfloat16",):
            raise ApdslTypeError(f"loaded array has dtype {data.dtype}, which apdsl cannot "
                                 "convert", code="APK114")
    else:
        raise ApdslTypeError(f"unknown initialiser {kind}", code="APK113")
    if dry:
        return
    write_view(t, np.asarray(data))


def _fill(t: Tensor, value: Any) -> None:
    """Write one number to every element, cast once and exactly (a Python int may exceed
    every NumPy integer), without making an array of the tensor's size."""
    from .execute import fill, prepare_write, resolve
    acc = resolve(t, "write", "view")
    prepare_write(acc, "write", "view")
    fill(acc, cast_array(value, acc.dtype).reshape(()))
