"""The two addressing forms of an AscendC vector instruction, as storage elements.

The count form (`asc.add(dst, src0, src1, count)`) computes the first `count` elements of
each operand.  The mask form (`asc.add(dst, src0, src1, mask, repeat_times, repeat_params)`)
runs `repeat_times` repeats (at most 255; 0 does nothing, as the Atlas A2 docs say) of one
256-byte vector operation: a repeat has `256 / size` lanes (the size of the operand's widest
dtype), lane k of operand X lies in X's block `k // B` at position `k % B` (`B` = the elements
of X in one 32-byte block), and its element is

    r * rep_stride * B + (k // B) * blk_stride * B + k % B

(strides in 32-byte blocks, from `asc.BinaryRepeatParams` / `asc.UnaryRepeatParams`).  The
mask says which lanes take part: an int is a count of leading lanes (at most the lanes of a
repeat), a list `[low, high]` is a bit mask (bit i of `low` is lane i, bit i of `high` lane
64 + i).  Bits past a repeat's lanes select nothing: a 32-bit operation has 64 lanes, and
`high` is ignored there.  The AscendC docs ask for `high` = 0 with 32-bit data, but the mask
register AscendC's ResetMask leaves for every dtype is all ones in both words
(asc-devkit's kernel_reg.h: `set_vector_mask(FULL_MASK, FULL_MASK)`), so hardware runs 32-bit
instructions with a high word set; pyasc's vadd_bits test passes [2**64 - 1, 2**64 - 1] for
float32 and int32 data and checks the sum.

An operand is an AscendC LocalTensor: a start address and a length.  In apdsl it is a view
whose elements are consecutive in its storage (any shape: its elements in row-major order), so
an instruction may touch its elements `[0, size)` and nothing past them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ....records import record
from ....tensor.layout import plain_leaves
from ....tensor.view import Tensor

REPEAT_BYTES = 256
BLOCK_BYTES = 32
BLOCKS = REPEAT_BYTES // BLOCK_BYTES
MAX_REPEATS = 255


def _err(code: str, label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code=code, **kw)


@record
class Form:
    """One instance's addressing: the count form (`count`), or the mask form (`lanes`: the
    lanes of a repeat that take part, `repeats`, `strides`: role -> (block, repeat) stride)."""

    count: int | None
    lanes: tuple[int, ...] | None = None
    repeats: int = 0
    strides: Mapping[str, tuple[int, int]] | None = None

    @property
    def masked(self) -> bool:
        return self.count is None


def _int(value: Any, label: str, what: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _err("APK550", label, f"{what} must be an integer, got {value!r}",
                   help=f"give {what} as an int")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise _err("APK550", label, f"{what} is {v}; it must be in {rng}",
                   help=f"keep {what} in {rng} (AscendC's documented range)", value=v)
    return v


def lanes_per_repeat(bits: int) -> int:
    """Lanes of one 256-byte repeat for elements of `bits` bits."""
    return REPEAT_BYTES * 8 // bits


def count_form(label: str, count: Any) -> Form:
    return Form(_int(count, label, "count", 0))


def mask_form(label: str, mask: Any, repeat_times: Any, strides: Mapping[str, tuple[Any, Any]],
              lanes: int, is_set_mask: Any = True) -> Form:
    """The mask form of an instance whose repeat has `lanes` lanes (APK550 for a value outside
    its documented range)."""
    if is_set_mask is not True:
        raise _err("APK550", label, "is_set_mask=False reads the mask set by SetVectorMask, "
                   "which apdsl does not model", help="pass the mask to the instruction "
                   "(is_set_mask=True, the default)")
    repeats = _int(repeat_times, label, "repeat_times", 0, MAX_REPEATS)
    if isinstance(mask, (list, tuple)):
        if not 1 <= len(mask) <= 2:
            raise _err("APK550", label, f"a bit mask is [low, high] (two 64-bit words), got "
                       f"{len(mask)} words", help="give mask=[low64, high64]")
        words = [_int(w, label, "a mask word", 0, 2**64 - 1) for w in mask] + [0]
        bits = words[0] | (words[1] << 64)
        active = tuple(i for i in range(min(lanes, 128)) if bits >> i & 1)  # (the lanes there are)
        if not active:
            raise _err("APK550", label, "the bit mask selects no lane; the AscendC docs "
                       "require at least one", help="set at least one bit of the mask",
                       notes=[f"this operation has {lanes} lanes a repeat: bit i of the low "
                              "word is lane i, of the high word lane 64 + i"])
    else:
        n = _int(mask, label, "mask", 0, lanes)
        active = tuple(range(n))
    checked = {}
    for role, (blk, rep) in strides.items():
        b = _int(blk, label, f"{role} block stride", 0, 65535)
        r = _int(rep, label, f"{role} repeat stride", 0, 65535)
        if role == "dst" and b == 0:
            raise _err("APK550", label, "the dst block stride is 0; the AscendC docs leave "
                       "that undefined", help="give dst a block stride of at least 1")
        checked[role] = (b, r)
    return Form(None, active, repeats, checked)


def relative(form: Form, role: str, bits: int) -> np.ndarray:
    """The elements (from the operand's start) that `role` touches, lane by lane, repeat by
    repeat: shape (repeats, active lanes), or (count,) in the count form."""
    if form.count is not None:
        return np.arange(form.count, dtype=np.int64)
    per_block = BLOCK_BYTES * 8 // bits
    blk, rep = form.strides[role]  # type: ignore[index]
    k = np.asarray(form.lanes, dtype=np.int64)
    within = (k // per_block) * blk * per_block + k % per_block
    return np.arange(form.repeats, dtype=np.int64)[:, None] * (rep * per_block) + within


def start_of(t: Tensor, label: str, role: str) -> int:
    """The storage element where operand `t` starts; APK551 unless its elements are
    consecutive in storage (an AscendC LocalTensor is a start address and a length)."""
    fast = plain_leaves(t.layout) if t.dynamic is None else None
    if fast is not None:
        counts, strides = fast
        expect = 1
        ok = True
        for c, s in zip(reversed(counts), reversed(strides)):
            if c != 1 and s != expect:
                ok = False
                break
            expect *= c
        if ok:
            return int(t.layout.offset)
    raise _err("APK551", label, f"{role} {t.name} (shape {tuple(t.shape)}) is not one "
               "contiguous run of its storage; an AscendC vector operand is a start address "
               "and a length", notes=[f"{role} pattern {t.get_pattern()}"],
               help="pass a contiguous view (a row, or the whole tensor) and address the "
               "elements with the mask form's block and repeat strides", role=role)


def check_bounds(label: str, role: str, t: Tensor, rel: np.ndarray, form: Form) -> None:
    """APK552: an element past the operand's end (or before its start)."""
    if rel.size == 0:
        return
    hi = int(rel.max())
    if hi < t.size:
        return
    where = ""
    if form.masked:
        r, k = (int(i) for i in np.argwhere(rel >= t.size)[0])
        where = f" (repeat {r}, lane {form.lanes[k]})"  # type: ignore[index]
    raise _err("APK552", label, f"{role} {t.name} has {t.size} elements, but the instruction "
               f"touches its element {hi}{where}",
               notes=["an instruction may touch an operand's elements [0, size) only"],
               help="declare the operand large enough, or lower the count, repeat_times or "
               "strides", role=role, size=int(t.size), element=hi)


def _bytes(t: Tensor, offs: np.ndarray) -> np.ndarray:
    """The storage bytes elements `offs` of view `t` cover (sorted, unique)."""
    bits = t.dtype.bits
    if bits < 8:
        return np.unique(offs.ravel() * bits // 8)
    size = bits // 8
    return np.unique((offs.ravel()[:, None] * size + np.arange(size)).ravel())


def check_overlap(label: str, roles: dict[str, tuple[Tensor, np.ndarray]], dst: str,
                  sources: tuple[str, ...]) -> None:
    """APK553: the AscendC overlap rule.  A source may share bytes with dst only when it is
    the same elements lane for lane (in place, same dtype), and dst touches no element
    twice."""
    d_t, d_abs = roles[dst]
    flat = d_abs.ravel()
    if np.unique(flat).size != flat.size:
        raise _err("APK553", label, f"{dst} {d_t.name} is written twice by one instruction "
                   "(a repeat stride of 0, or strides that overlap)",
                   help="give dst strides that touch each element once")
    d_bytes = None
    for role in sources:
        s_t, s_abs = roles[role]
        if s_t.storage is not d_t.storage:
            continue
        if s_t.dtype == d_t.dtype and np.array_equal(s_abs, d_abs):
            continue
        if d_bytes is None:
            d_bytes = _bytes(d_t, d_abs)
        if np.intersect1d(_bytes(s_t, s_abs), d_bytes, assume_unique=True).size:
            raise _err("APK553", label, f"{role} {s_t.name} and {dst} {d_t.name} overlap "
                       "without being the same elements lane for lane",
                       notes=["AscendC: within a repeat a source and the destination overlap "
                              "100% or not at all, and no repeat reads what an earlier one "
                              "wrote"],
                       help="use separate buffers, or the same view with the same strides "
                       "(in place)", roles=(role, dst))


def record_view(t: Tensor, rel: np.ndarray, form: Form, role: str, bits: int) -> Tensor:
    """A view of exactly the elements `rel` when one access pattern describes them, else of
    the run from the first to the last (what the race checker and `lower` see)."""
    if form.count is not None:
        return t.ap([[1, max(form.count, 1)]], offset=0) if form.count != t.size or \
            t.ndim != 1 else t
    lo, hi = int(rel.min()), int(rel.max())
    per_block = BLOCK_BYTES * 8 // bits
    blk, rep = form.strides[role]  # type: ignore[index]
    lanes = form.lanes  # type: ignore[assignment]
    n = len(lanes)
    if lanes == tuple(range(n)) and rep > 0 and blk > 0:
        full, part = divmod(n, per_block)
        if part == 0 or full == 0:
            width = per_block if part == 0 else part
            pattern = [[rep * per_block, form.repeats], [blk * per_block, max(full, 1)],
                       [1, width]]
            if np.unique(rel).size == rel.size:
                return t.ap(pattern, offset=0)
    return t.ap([[1, hi - lo + 1]], offset=lo)
