"""Declaration initialisers: `= 0.5`, `= zeros`, `= ones`, `= arange`, `= random(seed)`,
`= load("x.npy")`.  They write the tensor's logical contents (so it counts as written)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslTypeError
from ...tensor.dtypes import cast_array
from ...tensor.machine import current
from ...tensor.view import Tensor

# Random data is drawn in blocks of this many elements, so the float64 (or int64) draws never
# make a temporary of the tensor's size (a 12000 x 12000 float32 tensor would peak at three
# times its own size): the generator's stream is the same drawn in blocks or at once.
_BLOCK = 1 << 20


def seeded(shape: tuple[int, ...], dtype: Any, seed: int) -> np.ndarray:
    """Deterministic test data that suits the dtype: small integers for integer types (so
    indices and sums stay in range), uniform [-1, 1) for floats (as float32)."""
    draw = _drawer(dtype, seed)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, np.int32 if dtype.kind in "iu" else np.float32)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        out[start:stop] = draw(stop - start)
    return out.reshape(shape)


def _drawer(dtype: Any, seed: int) -> Any:
    """A function of a count drawing the next values of `seeded`'s stream."""
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -4
        # (int32 draws are the int64 ones: both take bounded values from the uint32 stream)
        return lambda k: rng.integers(lo, 8, size=k, dtype=np.int32)
    return lambda k: rng.uniform(-1.0, 1.0, size=k).astype(np.float32)


def _write_seeded(t: Tensor, seed: int) -> None:
    """`= random(seed)`: `seeded`'s values written block by block through views of `t`, so no
    temporary of the tensor's size is made (the tensor itself is in the memory budget)."""
    from .move import write_view
    shape = tuple(t.shape)
    draw = _drawer(t.dtype, seed)
    if int(np.prod(shape, dtype=np.int64)) <= _BLOCK or not shape:
        write_view(t, draw(int(np.prod(shape, dtype=np.int64))).reshape(shape))
        return
    for index in _blocks(shape, _BLOCK):
        part = t[index]
        write_view(part, draw(int(np.prod(part.shape, dtype=np.int64))).reshape(part.shape))


def _blocks(shape: tuple[int, ...], block: int) -> Any:
    """Indices (ints, then one slice) that cover `shape` in row-major order, each at most
    `block` elements."""
    inner, axis = 1, len(shape) - 1
    while axis > 0 and inner * shape[axis] <= block:
        inner *= shape[axis]
        axis -= 1
    step = max(1, block // inner)
    for lead in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], step):
            yield (*lead, slice(start, min(start + step, shape[axis])))


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
        note_written(t)  # check mode moves no data (it cannot fail past the seed)
        return
    if kind in ("value", "zeros", "ones"):
        value = {"zeros": 0.0, "ones": 1.0}.get(kind, args[0] if args else None)
        if not isinstance(value, (bool, int, float, np.integer, np.floating)):
            raise ApdslTypeError(f"a declaration initialiser must be a number, zeros, ones, "
                                 f"arange, random(seed) or load(\"file.npy\"), not "
                                 f"{type(value).__name__}", code="APK113")
        if not dry:
            _fill(t, value)
        else:
            note_written(t)
        return
    if kind == "arange":
        data: Any = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    elif kind == "random":
        if not dry:
            _write_seeded(t, int(args[0]) if args else 0)
        return
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
        note_written(t)
        return
    write_view(t, np.asarray(data))


def note_written(t: Tensor) -> None:
    """Check mode: `t`'s elements count as written, as the data `run` writes into it (a
    kernel's result may be an input)."""
    from .execute import resolve
    from .written import note_written_view, note_written_whole
    if t.dynamic is None and t.layout.static and t.storage.units_total <= 1 << 24:
        note_written_view(resolve(t, "write", "view"))  # (larger: whole, as dryrun does)
    else:
        note_written_whole(t.storage)


def _fill(t: Tensor, value: Any) -> None:
    """Write one number to every element, cast once and exactly (a Python int may exceed
    every NumPy integer), without making an array of the tensor's size."""
    from . import unwritten
    from .execute import fill, prepare_write, resolve
    acc = resolve(t, "write", "view")
    prepare_write(acc, "write", "view")
    unwritten.begin()  # an initialiser depends on no instruction's reads
    if acc.dtype.kind == "x" and value == 0 and not np.signbit(value):
        fill(acc, np.zeros((), acc.dtype.np))  # all bits zero: four zeros in any MX dtype
        return
    fill(acc, cast_array(value, acc.dtype).reshape(()))
