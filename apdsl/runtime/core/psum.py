"""PSUM accumulation state: what `nc_matmul(accumulate=None)` infers from (SPEC section 4).

Every PSUM byte is in one of five states.  An element is *accumulating* when an accumulating-
kind `nc_matmul` (`is_transpose=False`) last wrote it, and *fresh* otherwise: newly allocated, or
last accessed (read or written) by another instruction.  The fresh states also remember what is
needed to judge `accumulate=True`: whether any matmul wrote the byte since it was allocated, and
whether a non-matmul instruction wrote it after that (undefined on trn1/trn2).

The state lives beside the storage (weakly keyed, so it dies with it) as one value while the
whole storage is uniform -- the common case of whole-tile matmuls and evictions costs no
per-byte work -- and as a byte array only after a partial access.  Host reads (`host()`,
`t.numpy()`) leave it alone; host writes (`from_numpy`, initialisers, `-i`) count as non-matmul
writes.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...tensor.storage import Storage

NEW = 0  # allocated, never accessed
ACCUMULATING = 1  # last written by an accumulating-kind nc_matmul
OTHER_NO_MATMUL = 2  # last accessed by another instruction; no matmul ever wrote it
MATMUL_LAST_WROTE = 3  # last accessed by another instruction's read (or a transpose matmul)
OTHER_WROTE_AFTER_MATMUL = 4  # a matmul wrote it, then a non-matmul instruction did
STATES = 5

# Transitions of a non-matmul access, indexed by the current state.
_AFTER_READ = np.array([OTHER_NO_MATMUL, MATMUL_LAST_WROTE, OTHER_NO_MATMUL, MATMUL_LAST_WROTE,
                        OTHER_WROTE_AFTER_MATMUL], np.uint8)
_AFTER_WRITE = np.array([OTHER_NO_MATMUL, OTHER_WROTE_AFTER_MATMUL, OTHER_NO_MATMUL,
                         OTHER_WROTE_AFTER_MATMUL, OTHER_WROTE_AFTER_MATMUL], np.uint8)


class _State:
    __slots__ = ("uniform", "bytes")

    def __init__(self) -> None:
        self.uniform: int | None = NEW
        self.bytes: np.ndarray | None = None

    def array(self, nbytes: int) -> np.ndarray:
        if self.bytes is None:
            self.bytes = np.full(nbytes, self.uniform, np.uint8)
            self.uniform = None
        return self.bytes

    def set_all(self, value: int) -> None:
        self.uniform, self.bytes = value, None


_states: weakref.WeakKeyDictionary[Storage, _State] = weakref.WeakKeyDictionary()


def _state(storage: Storage) -> _State:
    st = _states.get(storage)
    if st is None:
        st = _states[storage] = _State()
    return st


def _covers_all(acc: Any, unique: bool) -> bool:
    """True when the access touches every byte of its storage.  A write was checked free of
    repeats, so its size decides; a read needs the strided proof of injectivity."""
    if acc.size * acc.dtype.bits < acc.storage.nbytes * 8:
        return False
    return unique or acc.injective()


def _views(acc: Any, arr: np.ndarray) -> list[np.ndarray]:
    """Writable views of `arr` (one byte per storage byte) over the bytes the access touches,
    or, for accesses that are not strided, one array of byte indices (`_indices`)."""
    from .access import Pieces, Strided
    parts = [acc] if type(acc) is Strided else (
        [p for _, p in acc.parts] if type(acc) is Pieces else None)
    if parts is None or acc.dtype.bits < 8:
        return []
    item = acc.dtype.bits // 8
    return [np.ndarray(p.lshape + (item,), np.uint8, buffer=arr, offset=p.offset * item,
                       strides=tuple(s * item for s in p.lstrides) + (1,)) for p in parts]


def _indices(acc: Any) -> np.ndarray:
    offs = np.reshape(acc.offsets(), -1).astype(np.int64)
    bits = acc.dtype.bits
    if bits < 8:
        return np.unique(offs * bits // 8)
    item = bits // 8
    return (offs[:, None] * item + np.arange(item)).reshape(-1)


def uniform_state(acc: Any) -> int | None:
    """The one state of every byte the access touches when its storage's state is uniform
    (the common case), else None (`counts` then says how many bytes are in each)."""
    st = _states.get(acc.storage)
    if st is None:
        return NEW
    return st.uniform if st.bytes is None else None


def counts(acc: Any) -> np.ndarray:
    """How many touched bytes are in each state (length STATES)."""
    st = _states.get(acc.storage)
    if st is None or st.bytes is None:
        out = np.zeros(STATES, np.int64)
        out[NEW if st is None else st.uniform] = max(acc.size * acc.dtype.bits // 8, 1)
        return out
    views = _views(acc, st.bytes)
    if not views:
        return np.bincount(st.bytes[_indices(acc)], minlength=STATES)
    return sum((np.bincount(v.reshape(-1), minlength=STATES) for v in views),
               np.zeros(STATES, np.int64))


def element_states(acc: Any) -> np.ndarray:
    """The state of the first byte of each logical element (for error messages only)."""
    st = _states.get(acc.storage)
    if st is None or st.bytes is None:
        return np.full(acc.shape, NEW if st is None else st.uniform, np.uint8)
    offs = np.asarray(acc.offsets()).astype(np.int64)
    return st.bytes[offs * acc.dtype.bits // 8]


def _update(acc: Any, unique: bool, table: np.ndarray | None, value: int) -> None:
    st = _state(acc.storage)
    if st.uniform is not None and (_covers_all(acc, unique) or
                                   (table is not None and table[st.uniform] == st.uniform)):
        st.set_all(value if table is None else int(table[st.uniform]))
        return
    arr = st.array(acc.storage.nbytes)
    views = _views(acc, arr)
    if not views:
        idx = _indices(acc)
        arr[idx] = value if table is None else table[arr[idx]]
        return
    for v in views:
        v[...] = value if table is None else table[v]


def note_read(acc: Any) -> None:
    """An instruction other than nc_matmul read these PSUM elements."""
    _update(acc, False, _AFTER_READ, 0)


def note_write(acc: Any) -> None:
    """An instruction other than nc_matmul (or the host) wrote these PSUM elements."""
    _update(acc, True, _AFTER_WRITE, 0)


def note_matmul(acc: Any, transpose: bool) -> None:
    """An nc_matmul wrote these elements: accumulating unless it was a transpose."""
    _update(acc, True, None, MATMUL_LAST_WROTE if transpose else ACCUMULATING)
