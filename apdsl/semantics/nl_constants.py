"""`nl` functions the published kernels use beyond the high-level ones of `nl_functions`:
`nl.broadcast_to`, `nl.shared_constant`, `nl.shared_identity_matrix`, `nl.device_print` (NKI
language reference).  Each allocates where its docstring says and issues the instructions of
the program's table, so `apdsl lower` shows what moves:

- `broadcast_to(x, shape, dtype=None)`: a new SBUF tile, NumPy's broadcast of the SBUF/PSUM tile
  `x` (same rank; each dimension equal or from 1).  Free dimensions are broadcast by one
  `tensor_copy` from a stride-0 view; the partition dimension (from 1) by `nc_matmul` of a ones
  row with `x` (`ones[1, P].T @ x[1, F]`: each product is x times 1.0 and each sum has one
  term, so the values are exact), chunked by `gemm_moving_fmax`, and `tensor_copy` out of PSUM
  (a tile of more than one free dimension goes through a [1, F] row first).
  An integer tile goes across partitions bit for bit through float32 (8- and 16-bit values
  as they are, a 32-bit tile as its two uint16 halves: every 16-bit integer is exact in
  float32), as the docs' own example broadcasts an int32 tile.
- `shared_constant(constant, dtype=None)`: a `shared_hbm` tensor holding the NumPy array (or
  the `.npy` file) `constant`, cast to `dtype`; it is there when the kernel starts, as the
  docs' "loaded to HBM at model load time" says, so no instruction writes it.
- `shared_identity_matrix(n, dtype=uint8, dst=None)`: the n x n identity as a shared constant,
  brought into an SBUF tile (`dst`, or a new one) by `dma_copy` (the legacy API's is the shared
  constant itself: `apdsl.nki.legacy`).
- `device_print(prefix, tensor)`: prints `prefix` and the tensor's values when the simulation
  reaches it (nothing in check mode).
- `gather_flattened(data, indices, axis=0, dtype=None)`: in each partition, data's free
  dimensions flattened and taken at the uint32 `indices` (a new SBUF tile of indices' shape)
  by `nc_n_gather`, which the release notes name as its successor; `dtype` casts the result
  with a `tensor_copy`."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..errors import ApdslIOError, ApdslTypeError
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.machine import current
from ..tensor.view import Tensor
from .host import Host

NAMES = ("broadcast_to", "shared_constant", "shared_identity_matrix", "device_print",
         "gather_flattened")
MOVING_FMAX = 512  # nl.tile_size.gemm_moving_fmax: free elements of one nc_matmul moving tile


def _bad(message: str, help: str) -> ApdslTypeError:
    return ApdslTypeError(message, code="APK926", help=help)


def _tile_arg(x: Any, fn: str, buffers: tuple[str, ...]) -> Tensor:
    if type(x) is not Tensor:
        raise ApdslTypeError(f"nl.{fn}: x must be a tile, not {type(x).__name__}",
                             code="APK152", help="pass an SBUF or PSUM tile")
    if x.buffer not in buffers:
        raise ApdslTypeError(f"nl.{fn}: x {x.name} is in {x.buffer}; nl.{fn} takes a tile in "
                             f"{' or '.join(b.upper() for b in buffers)}", code="APK151",
                             help="nl.load an HBM tensor first")
    return x


def _constant_array(constant: Any) -> np.ndarray:
    if isinstance(constant, (str, os.PathLike)):
        try:
            return np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ApdslIOError(f"nl.shared_constant: cannot read {str(constant)!r}: {e}",
                               code="APK926", help="pass a NumPy array or a .npy file") from None
    if isinstance(constant, Tensor):
        raise _bad("nl.shared_constant: constant is a kernel tensor; it takes host data",
                   "pass a NumPy array (or a .npy file)")
    return np.asarray(constant)


def _alloc(interp: Host, shape: Any, dtype: Any, buffer: str) -> Tensor:
    return interp.allocate(tuple(shape), dtype, buffer, "ND", "", span=interp.call_span)


# The storages `shared_constant` made: their data is the host's, there when the kernel starts,
# so they are not outputs the kernel wrote (`is_constant`; no APK181 for leaving one unreturned).
_CONSTANTS: weakref.WeakSet[Any] = weakref.WeakSet()


def shared_constant(interp: Host, constant: Any, dtype: Any = None) -> Tensor:
    arr = _constant_array(constant)
    dt = to_dtype(arr.dtype if dtype is None else dtype)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    t = _alloc(interp, arr.shape, dt, "shared_hbm")
    current().device.write_view(t, arr.astype(np.float32) if arr.dtype.kind == "f" and
                                dt.kind == "f" else arr)
    _CONSTANTS.add(t.storage)
    return t


def is_constant(t: Tensor) -> bool:
    """Is `t` over the storage of an `nl.shared_constant` (host data, not a kernel output)?"""
    return t.storage in _CONSTANTS


def identity(n: Any, most: int | None = 128) -> np.ndarray:
    """The n x n identity of `nl.shared_identity_matrix`, n an int from 1 (to `most`, the rows
    of the SBUF tile it fills; an HBM one has no such bound)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or \
            (most is not None and n > most):
        upto = f" to {most} (the rows of an SBUF tile)" if most is not None else " or more"
        raise _bad(f"nl.shared_identity_matrix: n must be an int from 1{upto}, got {n!r}",
                   "pass n <= nl.tile_size.pmax" if most is not None else "pass an int n")
    return np.identity(int(n), np.float32)


def shared_identity_matrix(interp: Host, table: dict[str, Any], n: Any, dtype: Any = "uint8",
                           dst: Any = None) -> Tensor:
    hbm = shared_constant(interp, identity(n), dtype)
    out = _alloc(interp, (int(n), int(n)), hbm.dtype, "sbuf") if dst is None else dst
    table["dma_copy"](dst=out, src=hbm)
    return out


def device_print(interp: Host, print_prefix: Any, tensor: Any) -> None:
    if type(tensor) is not Tensor:
        raise ApdslTypeError(f"nl.device_print: tensor must be a tensor, not "
                             f"{type(tensor).__name__}", code="APK152")
    if not interp.dry:
        interp.print(str(print_prefix), tensor.numpy())


def broadcast_to(interp: Host, table: dict[str, Any], x: Any, shape: Any,
                 dtype: Any = None) -> Tensor:
    x = _tile_arg(x, "broadcast_to", ("sbuf", "psum"))
    want = tuple(int(n) for n in shape)
    have = tuple(x.shape)
    if len(want) != len(have) or any(h not in (1, w) for h, w in zip(have, want)):
        raise _bad(f"nl.broadcast_to: cannot broadcast shape {have} to {want}: the ranks "
                   "must match and each dimension be equal or 1",
                   f"give a shape of rank {len(have)} whose dimensions equal {have}'s or "
                   "broadcast its 1s")
    dt = x.dtype if dtype is None else to_dtype(dtype)
    if want == have and dt == x.dtype:
        return x
    src = x
    if have[0] == 1 and want[0] > 1:
        src = _across_partitions(interp, table, x, want[0], dt)
    view = src
    for d in range(1, len(want)):
        if have[d] == 1 and want[d] > 1:
            view = view.broadcast(d, want[d])
    if view is src and src.dtype == dt and src is not x:
        return src
    out = _alloc(interp, want, dt, "sbuf")
    table["tensor_copy"](dst=out, src=view)
    return out


def _across_partitions(interp: Host, table: dict[str, Any], x: Tensor, parts: int,
                       dt: Any) -> Tensor:
    """x (one partition) on `parts` partitions: ones[1, parts].T @ x by nc_matmul, chunked.
    A float tile comes out as `dt` (the copy out of PSUM casts); an integer one exactly, as its
    own dtype (`_integers`), which the caller's copy casts to `dt`."""
    if not x.dtype.is_float:
        return _integers(interp, table, x, parts)
    free_shape = tuple(x.shape[1:])
    free = int(np.prod(free_shape))
    moving = x
    if len(x.shape) != 2 or x.buffer != "sbuf" or \
            x.dtype.name not in ("float32", "bfloat16", "float16"):
        # into one contiguous row the Tensor Engine takes (exact: a same-dtype copy, or
        # float32 holding every value of the other float dtypes)
        kept = x.dtype.name if x.dtype.name in ("float32", "bfloat16", "float16") else \
            "float32"
        moving = _alloc(interp, (1, free), kept, "sbuf")
        table["tensor_copy"](dst=moving, src=x)
    out = _alloc(interp, (parts, free), dt, "sbuf")
    _ones_matmul(interp, table, moving, out)
    return out if len(x.shape) == 2 else out.reshape((parts, *free_shape))


def _integers(interp: Host, table: dict[str, Any], x: Tensor, parts: int) -> Tensor:
    """An integer tile across partitions, bit for bit: the Tensor Engine multiplies floats,
    and float32 holds every 16-bit integer exactly (as each product x * 1.0 and each one-term
    sum), so an 8- or 16-bit tile goes through float32 as it is and a 32-bit one as its two
    uint16 halves, broadcast and seen again as the 32-bit dtype."""
    free_shape = tuple(x.shape[1:])
    free = int(np.prod(free_shape))
    row = x
    if len(x.shape) != 2 or x.buffer != "sbuf":  # one contiguous row (a same-dtype copy)
        row = _alloc(interp, (1, free), x.dtype, "sbuf")
        table["tensor_copy"](dst=row, src=x)
    halves = row.view("uint16") if x.dtype.bits == 32 else row
    moving = _alloc(interp, tuple(halves.shape), "float32", "sbuf")
    table["tensor_copy"](dst=moving, src=halves)
    out = _alloc(interp, (parts, halves.shape[1]), halves.dtype, "sbuf")
    _ones_matmul(interp, table, moving, out)
    whole = out.view(x.dtype) if x.dtype.bits == 32 else out
    return whole if len(x.shape) == 2 else whole.reshape((parts, *free_shape))


def _ones_matmul(interp: Host, table: dict[str, Any], moving: Tensor, out: Tensor) -> None:
    """out[p, :] = moving[0, :] for every partition p of out: ones[1, P].T @ moving, a PSUM
    bank's worth of columns at a time, copied out of PSUM into out's dtype."""
    parts, free = out.shape[0], moving.shape[1]
    ones = _alloc(interp, (1, parts), moving.dtype, "sbuf")
    table["memset"](dst=ones, value=1.0)
    for start in range(0, free, MOVING_FMAX):
        stop = min(free, start + MOVING_FMAX)
        acc = _alloc(interp, (parts, stop - start), "float32", "psum")
        table["nc_matmul"](dst=acc, stationary=ones, moving=moving[:, start:stop])
        table["tensor_copy"](dst=out[:, start:stop], src=acc)


def gather_flattened(interp: Host, table: dict[str, Any], data: Any, indices: Any,
                     axis: Any = 0, dtype: Any = None) -> Tensor:
    data = _tile_arg(data, "gather_flattened", ("sbuf",))
    indices = _tile_arg(indices, "gather_flattened", ("sbuf",))
    free_axes = (1, -1) if len(data.shape) == 2 else ()
    if axis not in (0, None, *free_axes):
        raise ApdslTypeError(
            f"nl.gather_flattened: axis={axis!r}: the reference gathers over the flattened free "
            "dimensions of each partition and defines no other axis", code="APK931",
            help="leave axis at its default")
    out = _alloc(interp, tuple(indices.shape), data.dtype, "sbuf")
    table["nc_n_gather"](dst=out, data=data, indices=indices)
    dt = data.dtype if dtype is None else to_dtype(dtype)
    if dt == data.dtype:
        return out
    cast = _alloc(interp, tuple(indices.shape), dt, "sbuf")
    table["tensor_copy"](dst=cast, src=out)
    return cast


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The functions bound to one program (`interp` allocates, `table` issues)."""
    return {"broadcast_to": partial(broadcast_to, interp, table),
            "shared_constant": partial(shared_constant, interp),
            "shared_identity_matrix": partial(shared_identity_matrix, interp, table),
            "device_print": partial(device_print, interp),
            "gather_flattened": partial(gather_flattened, interp, table)}
