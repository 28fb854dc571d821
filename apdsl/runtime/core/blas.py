"""NumPy's own BLAS, reached directly where NumPy has no word for what an instruction needs:
the number of OpenBLAS threads (`threads`, `product`), and a float32 product added into its
destination in one pass (`add_product`).

A tile product is small: a multi-threaded BLAS spends more time waking (and, on a busy
machine, waiting for) its worker threads than computing, and its spinning workers slow the
interpreter in between, so `mmad` runs its product on one thread, scoped to the call.
(Measured for issue 16 on a 2-core machine: a (128, 64) @ (64, 256) float32 product takes
~20 us on OpenBLAS's default 2 threads and ~35 us on one when the machine is idle, but with
the other core busy each 2-thread product waits for a scheduler slice: a 2048^3 tile GEMM
then ran 2 to 20 times slower.  The benchmarks run both of their sides on one thread.)
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import lru_cache
from typing import Any

import numpy as np

_NAMES = ("scipy_openblas", "openblas")  # numpy's bundled OpenBLAS, a system OpenBLAS
_SUFFIXES = ("64_", "")  # an ILP64 build's symbols end in 64_ (its ints are 64-bit)


@lru_cache(maxsize=1)
def _libraries() -> tuple[Any, ...]:
    """The OpenBLAS libraries NumPy may be using: its wheel's own, then the process's."""
    libs: list[Any] = []
    folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    try:
        libs.append(ctypes.CDLL(None))
    except OSError:
        pass
    return tuple(libs)


@lru_cache(maxsize=1)
def threads() -> tuple[Any, Any] | None:
    """OpenBLAS's (get, set) number-of-threads functions, when NumPy uses OpenBLAS."""
    for lib in _libraries():
        for prefix in _NAMES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, get.argtypes = ctypes.c_int, []
                    put.restype, put.argtypes = None, [ctypes.c_int]
                    return get, put
    return None


_THREADS: list[Any] = []  # threads(), once looked up


def product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """`left @ right` on one BLAS thread."""
    if not _THREADS:
        _THREADS.append(threads())
    fns = _THREADS[0]
    saved = fns[0]() if fns is not None else 1
    if saved == 1:
        return left @ right
    fns[1](1)
    try:
        return left @ right
    finally:
        fns[1](saved)


_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enum values


@lru_cache(maxsize=1)
def _sgemm() -> Any:
    """OpenBLAS's `cblas_sgemm` with its argument types (its ints 64-bit in an ILP64 build),
    or None when NumPy's BLAS is not an OpenBLAS that shows it."""
    for lib in _libraries():
        for prefix in _NAMES:
            for suffix in _SUFFIXES:
                fn = getattr(lib, f"{prefix.replace('openblas', '')}cblas_sgemm{suffix}", None)
                if fn is None:
                    continue
                n = ctypes.c_int64 if suffix else ctypes.c_int
                f, p, e = ctypes.c_float, ctypes.c_void_p, ctypes.c_int
                fn.argtypes = [e, e, e, n, n, n, f, p, n, p, n, f, p, n]
                fn.restype = None
                return fn
    return None


def _address(x: np.ndarray) -> int:
    """The address of `x`'s first element: through the buffer protocol for a C-contiguous
    writable array (a third of the time of `x.ctypes.data`, which builds a Python object per
    call), else through `ctypes`."""
    try:
        return ctypes.addressof(_CHAR.from_buffer(x))
    except (TypeError, ValueError, BufferError):
        return x.ctypes.data


_CHAR = ctypes.c_char
MAX_K = 128  # the contractions `add_product` takes: one K block of every OpenBLAS kernel


def add_product(out: np.ndarray | None, a: np.ndarray, b: np.ndarray) -> bool:
    """`out += a.T @ b` in float32 by one BLAS call (`beta = 1`), bit for bit what
    `np.add(out, a.T @ b, out=out)` gives, without the product's array and the pass that adds
    it: OpenBLAS sums a contraction of at most `MAX_K` in registers, rounding to float32 as
    NumPy's product (the same `sgemm`) does, and adds it to `out` once.  `a` (K, M) and `b`
    (K, N) C-contiguous, `out` (M, N) with unit column stride, M and N at least 2 (NumPy
    multiplies a single row or column by `sdot`/`sgemv`, whose sums round differently).  False
    (nothing done): no such BLAS, operands it does not take, or no `out`; the caller computes
    it the NumPy way."""
    if out is None:
        return False
    k, m = a.shape
    n = b.shape[1]
    f32 = np.float32
    if k > MAX_K or m < 2 or n < 2 or out.shape != (m, n) or not (
            out.dtype == a.dtype == b.dtype == f32 and a.flags.c_contiguous and
            b.flags.c_contiguous and out.flags.writeable) or out.strides[1] != 4 or \
            out.strides[0] % 4 or out.strides[0] < 4 * n:
        return False
    pout = _address(out)
    if pout % 4:
        return False
    fn = _sgemm()
    if fn is None:
        return False
    fn(_ROW_MAJOR, _TRANS, _NO_TRANS, m, n, k, 1.0, _address(a), m, _address(b), n, 1.0, pout,
       out.strides[0] // 4)
    return True
