"""Executing `nc_matmul` (`apdsl.runtime.nki.matmul` checks it): the accumulation SPEC section 4
infers from the PSUM state (`apdsl.runtime.core.psum`), the engine's float32 reads of its inputs, the
product (added into PSUM by BLAS where it can: `apdsl.runtime.core.blas`), and transpose
mode's bit moves."""

from __future__ import annotations

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import targets
from ...tensor.dtypes import round_tfloat32, widen_float32
from ...tensor.machine import current
from ..core import blas, psum
from ..core import execute as ex
from ..core.access import oom
from ..core.written import copied_to_others, mark_written


def engine_read_into(acc: ex.Access, label: str, role: str, out: np.ndarray) -> np.ndarray:
    """`engine_read` into `out` (float32, C-contiguous, the operand's element count): the
    same init check, the same cast (NumPy's, as `astype`), the same logical row-major order."""
    ex.check_init(acc, label, role)
    if acc.storage.buffer == "psum":
        psum.note_read(acc)
    if type(acc) is ex.Strided:
        src = acc.array()  # leaf shape: its row-major order is the logical one
        widen_float32(src, out.reshape(src.shape))
    else:
        widen_float32(acc.read().reshape(out.shape), out)
    if acc.dtype.name == "tfloat32":
        out[...] = round_tfloat32(out)
    return out


def engine_read(acc: ex.Access, label: str, role: str) -> np.ndarray:
    """An input as the tensor engine reads it, in float32: tfloat32 keeps 10 mantissa bits."""
    values = ex.read_float32(acc, label, role)
    return round_tfloat32(values) if acc.dtype.name == "tfloat32" else values


def accumulation(d: ex.Access, accumulate: bool | None, tgt: targets.Target,
                  label: str) -> bool:
    """Whether this matmul adds into dst (SPEC section 4's rule over the PSUM state)."""
    if accumulate is False:
        return False
    state = psum.uniform_state(d)
    if state is not None:  # every touched byte in one state: the answer without counting
        if accumulate is None:
            return state == psum.ACCUMULATING
        if state in (psum.ACCUMULATING, psum.MATMUL_LAST_WROTE) or (
                state == psum.OTHER_WROTE_AFTER_MATMUL and tgt.name not in ("trn1", "trn2")):
            return True
        # the refusals below, with their counts
    counts = psum.counts(d)
    item = max(d.dtype.bits // 8, 1)
    total = int(counts.sum()) // item
    adding = int(counts[psum.ACCUMULATING]) // item
    where = f"dst {d.name} (shape {d.shape}, storage {d.storage.describe()})"

    def first(*states: int) -> str:
        # the first logical element in one of `states` (only on the error path)
        found = np.isin(psum.element_states(d), states)
        coord = np.unravel_index(int(np.argmax(found)), d.shape)
        return f"{d.name}[{', '.join(str(int(c)) for c in coord)}]"

    if accumulate is None:
        if adding and adding != total:
            fresh = (psum.NEW, psum.OTHER_NO_MATMUL, psum.MATMUL_LAST_WROTE,
                     psum.OTHER_WROTE_AFTER_MATMUL)
            raise ApdslRuntimeError(
                f"{label}: accumulate=None cannot decide: part of {where} holds an "
                "accumulation an earlier nc_matmul started, part is fresh", code="APK330",
                notes=[f"{adding} of {total} elements are accumulating (last written by "
                       f"nc_matmul; first {first(psum.ACCUMULATING)}), {total - adding} are "
                       f"fresh (new, or last touched by another instruction; first "
                       f"{first(*fresh)})"],
                help="pass accumulate=False to start a new accumulation or accumulate=True "
                "to add to it, or cover exactly the earlier matmuls' dst")
        return adding > 0
    unmatmuled = int(counts[psum.NEW] + counts[psum.OTHER_NO_MATMUL]) // item
    if unmatmuled:
        raise ApdslRuntimeError(
            f"{label}: accumulate=True onto {where}, which no nc_matmul has written",
            code="APK331", notes=[f"{unmatmuled} of {total} elements were never written by a "
                                  f"matmul (first {first(psum.NEW, psum.OTHER_NO_MATMUL)}); "
                                  "accumulating there is undefined on hardware"],
            help="start the accumulation with accumulate=False (or leave accumulate=None)")
    other = int(counts[psum.OTHER_WROTE_AFTER_MATMUL]) // item
    if other and tgt.name in ("trn1", "trn2"):
        raise ApdslRuntimeError(
            f"{label}: accumulate=True onto {where}, which another instruction wrote after "
            f"the last nc_matmul; on {tgt.name} that is undefined", code="APK332",
            notes=[f"{other} of {total} elements were last written by a non-matmul "
                   f"instruction such as memset or tensor_copy (first "
                   f"{first(psum.OTHER_WROTE_AFTER_MATMUL)})"],
            help="start with accumulate=False, or add the value in SBUF after the matmuls")
    return True


def transpose_bits(a: np.ndarray, b: np.ndarray, label: str) -> np.ndarray:
    """Transpose mode: dst[m, n] = stationary[k, m] where moving[k, n] is 1 (bit for bit), 0
    where a column of moving is all zero.  Another moving has no documented meaning."""
    ones = b.astype(np.float32)
    col_ones = (ones == 1).sum(axis=0)
    if not (((ones == 0) | (ones == 1)).all() and (col_ones <= 1).all()):
        raise TargetError(f"{label}: transpose mode needs moving to be a 0/1 selection "
                          "matrix (an identity, at most one 1 per column)", code="APK336",
                          help="pass an identity matrix as moving, or is_transpose=False to "
                          "multiply")
    src = np.argmax(ones == 1, axis=0)
    out = a.T[:, src]  # (M, N), the input dtype's exact values
    zero = col_ones == 0
    if zero.any():
        out = out.copy()
        out[:, zero] = 0
    return out



def _matrix(arr: np.ndarray, rows: int, cols: int) -> np.ndarray | None:
    """`arr` seen as a (rows, cols) matrix without a copy (a whole PSUM tile is one run of
    elements), or None when its strides do not allow it."""
    try:
        return np.reshape(arr, (rows, cols), copy=False)
    except ValueError:
        return None


def _in_place(d: ex.Access) -> bool:
    """Whether a matmul may add its product into dst in place (plans on): a float32 strided
    view, every element written and distinct, its storage not copied to tensors placed over
    the same bytes."""
    return type(d) is ex.Strided and d.dtype.name == "float32" and d.storage.all_written and \
        current().options.plans and d.injective() and not copied_to_others(d.storage)


def execute(accs: list[ex.Access], label: str, tgt: targets.Target, k: int, mm: int, n: int,
            *, transpose: bool, double: bool, is_transpose: bool,
            accumulate: bool | None) -> None:
    """`dst (+)= stationary.T @ moving` on resolved, checked operands (stationary, moving,
    dst), shaped (K, M), (K, N), (M, N): the accumulation decided from the PSUM state, the
    product in float32, written by the one cast rule, the PSUM state noted."""
    s, m, d = accs
    # a transpose (even trn1's labelled one) is not an accumulating-kind matmul: it overwrites
    adding = False if is_transpose else accumulation(d, accumulate, tgt, label)
    if transpose:  # bits move as they are, tfloat32 included
        result = transpose_bits(ex.read(s, label, "stationary").reshape(k, mm),
                                 ex.read(m, label, "moving").reshape(k, n), label)
    elif double:  # K = partitions x 2: contract over both
        a32 = engine_read(s, label, "stationary").reshape(k // 2, 2, mm)
        b32 = engine_read(m, label, "moving").reshape(k // 2, 2, n)
        result = np.einsum("pkm,pkn->mn", a32, b32, dtype=np.float32)
    else:  # float32 inputs, the product made from them below
        a = engine_read_into(s, label, "stationary", np.empty((k, mm), np.float32))
        b = engine_read_into(m, label, "moving", np.empty((k, n), np.float32))
        result = None
    if adding and _in_place(d):
        # add in place through dst's strided view: every element is written (nothing to
        # init-check) and distinct (nothing to duplicate-check), and the PSUM state the read
        # would note is overwritten by note_matmul below.  dst + product, as the general path
        # (which also gives the sum to tensors placed over the same bytes); the product
        # added by one BLAS call where dst is a matrix it can add into
        out = d.array()
        if result is None and not blas.add_product(_matrix(out, mm, n), a, b):
            result = np.matmul(a.T, b)
        if result is not None:
            np.add(out, result.reshape(d.lshape), out=out)
        psum.note_matmul(d, False)
        return
    out = None
    if result is None and not adding and type(d) is ex.Strided and d.dtype.name == "float32":
        out = _matrix(d.array(), mm, n)
    if out is not None and out.flags.c_contiguous:
        # the product made in dst itself by the sgemm NumPy's matmul calls for it anyway (a
        # C-contiguous output, as its own would be: the same values), not in a temporary
        # copied into PSUM
        ex.prepare_write(d, label, "dst")
        try:
            np.matmul(a.T, b, out=out)
        except MemoryError as e:
            raise oom("write", "dst", d.storage, e) from None
        mark_written(d)
        psum.note_matmul(d, is_transpose)
        return
    if result is None:
        result = np.matmul(a.T, b)
    if adding:
        result += ex.read_float32(d, label, "dst").reshape(mm, n)
    ex.prepare_write(d, label, "dst")
    ex.store(d, result.reshape(d.shape))
    psum.note_matmul(d, is_transpose)
