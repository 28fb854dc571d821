"""Written state: memory starts unwritten, as on hardware.

`Storage.mask` records written units (a unit is a native element until a narrower view writes,
then that view's element: per byte, per nibble; see `Storage.refine`) until a write covers the
whole storage (`note_written_all`), after which checks cost nothing.  A view element is written
when all of its units are.  Reads check the mask when the machine's `init_check` option is on;
writes mark it always, so the option can change at any time.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.machine import current
from ...tensor.storage import Storage
from ..table import TABLE
from . import psum, unwritten
from .access import Access, fmt_coord, units_of

# Units newly marked written per partly written storage (see `mark_written`).
_written_count: weakref.WeakKeyDictionary[Storage, int] = weakref.WeakKeyDictionary()


def _err(code: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code=code, **kw)


# =============================================================================================
# Checks shared by reads and writes
# =============================================================================================

def check_init(acc: Access, op: str, role: str, observed: bool = False) -> None:
    """Instruction `op` reads operand `role` through `acc`.  Unwritten elements are noted for
    the instruction's outputs (`unwritten.note_read`: they propagate, SPEC 4), or are the
    error here when the read is an observable point: `observed` (a host read, an index or a
    register), an input the table marks observed (a predicate, a scan's carry chain), an
    instruction outside the table, or every read under `init_check="strict"`."""
    storage = acc.storage
    if storage.all_written:
        return
    mode = current().options.init_check
    if not mode:
        return
    ok = acc.written()
    if ok is True:
        return
    if mode == "strict" or observed or _observes(op, role):
        raise unwritten_error(acc, op, role, ok)
    bad = ~np.asarray(ok, bool)
    unwritten.note_read(acc, op, role, bad, _origin(acc, op, bad))


def _observes(op: str, role: str) -> bool:
    entry = TABLE.get(op.partition(" ")[0])
    return entry is None or role in entry.depends.observed


def _first_unwritten(acc: Access, ok: np.ndarray) -> tuple[int, tuple[int, ...], int]:
    """(flat index, logical coordinate, storage offset) of the first unwritten element."""
    flat = int(np.argmin(np.reshape(ok, -1)))
    coord = tuple(int(c) for c in np.unravel_index(flat, acc.shape))
    return flat, coord, int(np.reshape(acc.offsets(), -1)[flat])


def _origin_of(acc: Access, offset: int) -> unwritten.Origin | None:
    """The origin of the unwritten data at storage `offset` (None: nothing wrote it)."""
    taint = acc.storage.taint
    if taint is None:
        return None
    units = np.reshape(units_of(acc.dtype, acc.storage, np.array([offset])), -1)
    for u in units:
        o = taint.origin_at(int(u))
        if o is not None:
            return o
    return None


def _origin(acc: Access, op: str, bad: np.ndarray) -> unwritten.Origin:
    """Where the unwritten data `acc` reads (elements `bad`) came from: the origin the first
    such element carries, or this read, when nothing ever wrote it."""
    _, coord, offset = _first_unwritten(acc, ~bad)
    found = _origin_of(acc, offset)
    if found is not None:
        return found
    m = current()
    return unwritten.Origin(acc.storage.name, coord, offset, acc.storage.span, op, m.location,
                            m.span)


def unwritten_error(acc: Access, op: str, role: str, ok: np.ndarray,
                    reaching: Access | None = None) -> ApdslRuntimeError:
    """The error for instruction `op` reading the unwritten elements (not `ok`) of `role`
    where that is an observable point: APK404 when nothing wrote the first of them, APK412
    when it holds data computed from unwritten data (naming where that came from).
    `reaching`: the destination the data was being stored into (an HBM/GM store)."""
    storage = acc.storage
    _, coord, offset = _first_unwritten(acc, ok)
    missing = int(ok.size - np.count_nonzero(ok))
    notes = [f"{missing} of the {acc.size} elements read are unwritten",
             f"view {acc.name}: shape {acc.shape}, storage {storage.describe()}"]
    if reaching is not None:
        notes.append(f"{op} stores it into {reaching.storage.describe()}: what the kernel "
                     "produces")
    origin = _origin_of(acc, offset)
    if origin is not None:
        where = "" if origin.where is None else f" at line {origin.where[1]}"
        err = _err(
            "APK412", f"{op}: {role} reads {storage.name}{fmt_coord(coord)}, which holds "
            f"data computed from unwritten memory: {origin.tensor}{fmt_coord(origin.coord)} "
            f"was never written when {origin.reader}{where} read it",
            notes=[*notes, "unwritten data propagates through instructions (as on hardware, "
                   "they compute on whatever the bytes hold) and is an error where it reaches "
                   "a store to HBM/GM, a kernel's result, a host read, an index or a predicate"],
            help=f"write {origin.tensor} first, or keep what is computed from its unwritten "
            "elements out of what the kernel stores (store only the rows it loaded); "
            "--strict-init reports the first read of unwritten memory instead",
            tensor=storage.name, coord=coord, offset=offset, origin=origin.tensor)
        err = err.with_label(origin.reader_span, f"{origin.reader} read unwritten "
                             f"{origin.tensor}{fmt_coord(origin.coord)} here")
        return err.with_label(origin.allocated, f"{origin.tensor} allocated here")
    what = "before anything wrote it"
    partly = _written_part(acc, offset)
    if partly is not None:
        what = f"when only {partly} {'was' if partly.startswith('1 ') else 'were'} written"
        notes.insert(1, "an element counts as written only when all its bytes are: a write "
                     "through a narrower view (a uint8 or bfloat16 view of float32, an int4 "
                     "nibble) wrote part of it")
    err = _err("APK404", f"{op}: {role} reads {storage.name}{fmt_coord(coord)} (storage element "
               f"{offset}) {what}",
               notes=notes,
               help="write the data first (dma_copy, memset, iota, ...), or turn the check off "
               "with --no-init-check / apdsl.options(init_check=False) to read it as 0",
               tensor=storage.name, coord=coord, offset=offset)
    return err.with_label(storage.span, "allocated here")


def check_unique(acc: Access, op: str, role: str) -> None:
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits and not storage.all_written \
            and acc.size * acc.dtype.bits < storage.nbytes * 8:
        # the write covers parts of units: refine first, so that running out of budget for
        # the finer record (APK430) happens before anything is written
        _refine(storage, acc.dtype.bits)
    if acc.size <= 1 or acc.injective():
        return
    offs = np.reshape(acc.offsets(), -1)
    order = np.argsort(offs, kind="stable")
    s = offs[order]
    same = s[1:] == s[:-1]
    if not same.any():
        return
    k = int(np.argmax(same))
    i, j = sorted((int(order[k]), int(order[k + 1])))
    ci, cj = np.unravel_index(i, acc.shape), np.unravel_index(j, acc.shape)
    dup = int(s[k])
    raise _err("APK405", f"{op}: {role} {acc.name} writes storage element {dup} twice "
               f"(logical {fmt_coord(ci)} and {fmt_coord(cj)})",
               notes=[f"{int(same.sum())} writes land on an element already written by this "
                      "instruction", f"view shape {acc.shape}, storage "
                      f"{acc.storage.describe()}"],
               help="a destination cannot repeat elements: no broadcast (stride 0), no "
               "overlapping .ap pattern, no repeated runtime index",
               tensor=acc.name, offset=dup)


def _written_part(acc: Access, offset: int) -> str | None:
    """For the unwritten element at storage `offset` (in elements of the access dtype): "2 of
    its 4 bytes" when some of its units are written, else None."""
    storage = acc.storage
    eb, ub = acc.dtype.bits, storage.unit_bits
    if eb <= ub:
        return None
    units = storage.mask[units_of(acc.dtype, storage, np.array([offset]))[0]]
    done = int(np.count_nonzero(units))
    if not done:
        return None
    if ub % 8 == 0:
        return f"{done * ub // 8} of its {eb // 8} bytes"
    return f"{done} of its {units.size} nibbles"


def _refine(storage: Storage, bits: int) -> None:
    """Written state per `bits`-bit unit from now on (a narrower view is about to write)."""
    ratio = storage.refine(bits)
    if storage in _written_count:
        _written_count[storage] *= ratio
    if storage.taint is not None:
        storage.taint.ids = np.repeat(storage.taint.ids, ratio)


def mark_written(acc: Access) -> None:
    """The instruction under way wrote every element of `acc`: they are written, except those
    that depend on unwritten data it read (`unwritten`), which it leaves unwritten."""
    storage = acc.storage
    if storage.buffer == "psum":
        psum.note_write(acc)
    if not storage.all_written:
        _mark(acc, storage)
    if current().taint is not None:
        _poison(acc)


def _mark(acc: Access, storage: Storage) -> None:
    # The write was checked free of duplicates, so covering every bit means covering all.
    if acc.size * acc.dtype.bits >= storage.nbytes * 8:
        counted = storage._mask is not None  # (only a storage with a mask is ever counted)
        storage.note_written_all()
        if counted and _written_count:  # (a lookup makes a weak reference)
            _written_count.pop(storage, None)
        return
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)  # part of a unit: only that part is written
    total = _written_count.get(storage, 0) + acc.mark()
    if total >= storage.units_total:
        storage.note_written_all()
        _written_count.pop(storage, None)
    else:
        _written_count[storage] = total


def note_written_view(acc: Access) -> None:
    """Check mode: the elements of `acc` count as written (no data moved, no PSUM state)."""
    if not acc.storage.all_written:
        _mark(acc, acc.storage)


def note_written_whole(storage: Storage) -> None:
    """Check mode: `storage` counts as written whole."""
    if not storage.all_written:
        counted = storage._mask is not None
        storage.note_written_all()
        if counted and _written_count:
            _written_count.pop(storage, None)


def _poison(acc: Access, wrote: np.ndarray | None = None) -> None:
    """Leave unwritten the elements of `acc` (of those in `wrote`) that depend on the unwritten
    data the instruction under way read, with its origin; an error when `acc` is in HBM/GM
    (a store is an observable point)."""
    p = unwritten.pending()
    if p is None:
        return
    bad = p.poison(acc.shape)
    if wrote is not None:
        bad &= np.reshape(wrote, acc.shape)
    if not bad.any():
        return
    _unwrite(acc, bad, p.origin)
    if acc.storage.buffer in unwritten.OBSERVED_BUFFERS:
        role, racc, rbad, _ = p.inputs[0]
        raise unwritten_error(racc, p.op, role, ~rbad, reaching=acc)


def _unwrite(acc: Access, bad: np.ndarray, origin: unwritten.Origin) -> None:
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)
    units = units_of(acc.dtype, storage, acc.offsets())[bad]
    _assign_units(storage, units, np.zeros(units.shape, bool))
    taint = storage.taint
    if taint is None:
        taint = storage.taint = unwritten.Taint(storage.units_total)
    taint.ids[units] = taint.index(origin)


def leave_unwritten(acc: Access, bad: np.ndarray, origin: unwritten.Origin) -> None:
    """Elements `bad` (logical shape) of `acc`, which the instruction under way just wrote
    from engine state holding unwritten data (an accumulator a reduction added unwritten data
    to), are unwritten, with `origin` (on-chip: never an observable point)."""
    bad = np.reshape(np.asarray(bad, bool), acc.shape)
    if bad.any():
        _unwrite(acc, bad, origin)


def set_written(acc: Access, written: np.ndarray, wrote: np.ndarray | None = None) -> None:
    """Make the written state of the elements `acc` touches exactly `written` (logical shape:
    an element's units all written or all not), keeping the count of written units exact.
    `wrote`: the elements the instruction under way wrote (a masked write), which it leaves
    unwritten where they depend on unwritten data it read (see `mark_written`)."""
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)
    units = units_of(acc.dtype, storage, acc.offsets())
    if units.ndim > written.ndim:
        written = np.broadcast_to(written[..., None], units.shape)
    _assign_units(storage, units, written)
    if wrote is not None and current().taint is not None:
        _poison(acc, wrote)


def copy_written(dst: Access, src: Access) -> None:
    """Give the elements `dst` touches the written state of the elements `src` touches, byte
    for byte (same dtype and element count: a move of stored bytes such as LoadData, which is
    not an init-checked read).  Partly written elements stay partly written."""
    sst = src.storage
    if sst.all_written:
        mark_written(dst)
        return
    ok = src.written()
    if ok is True:
        mark_written(dst)
        return
    _copy_origins(dst, src, ok)
    u = sst.unit_bits
    if u >= src.dtype.bits:  # whole elements only: the per-element state is exact
        set_written(dst, np.reshape(ok, dst.shape))
        return
    r = src.dtype.bits // u
    state = sst.mask[units_of(src.dtype, sst, src.offsets())].reshape(dst.shape + (r,))
    dstorage = dst.storage
    if dstorage.unit_bits > u:
        _refine(dstorage, u)
    units = units_of(dst.dtype, dstorage, dst.offsets())
    rd = units.shape[-1] if units.ndim > len(dst.shape) else 1
    if rd == 1:
        units = units[..., None]
    _assign_units(dstorage, units, np.repeat(state, rd // r, axis=-1) if rd != r else state)


def _copy_origins(dst: Access, src: Access, ok: np.ndarray) -> None:
    """The origins of the unwritten data `src` holds (where not `ok`), given to the same
    elements of `dst` (a move of stored bytes)."""
    taint = src.storage.taint
    if taint is None:
        return
    bad = ~np.asarray(ok, bool)
    sunits = np.reshape(units_of(src.dtype, src.storage, src.offsets()), src.shape + (-1,))
    ids = taint.ids[sunits[bad][:, 0]]
    if not ids.any():
        return
    dstorage = dst.storage
    if dstorage.taint is None:
        dstorage.taint = unwritten.Taint(dstorage.units_total)
    dunits = np.reshape(units_of(dst.dtype, dstorage, dst.offsets()), dst.shape + (-1,))
    dbad = np.reshape(bad, dst.shape)
    for i in np.unique(ids[ids > 0]):
        k = dstorage.taint.index(taint.origins[int(i) - 1])
        dstorage.taint.ids[dunits[dbad][ids == i]] = k


def _assign_units(storage: Storage, units: np.ndarray, values: np.ndarray) -> None:
    total = storage.units_total
    counted = total if storage.all_written else _written_count.get(storage, 0)
    mask = storage.mask  # materialised (all True when everything was written)
    storage.all_written = False
    before = int(np.count_nonzero(mask[units]))
    mask[units] = values
    after = int(np.count_nonzero(mask[units]))
    count = counted - before + after
    if count >= total:
        storage.note_written_all()
        _written_count.pop(storage, None)
    else:
        _written_count[storage] = count


def has_written(storage: Storage) -> bool:
    """Whether anything of `storage` may have been written."""
    # Only a storage whose mask is made is ever counted: partly written state lives in the
    # mask, and whatever drops the mask (whole, forgotten) drops the count with it.  So most
    # storages are decided without a lookup (each makes a weak reference).
    return storage.all_written or storage._mask is not None and bool(
        _written_count.get(storage))


def forget_all(storage: Storage) -> None:
    """Every byte of `storage` unwritten again (a reused buffer's old contents are not data)."""
    counted = storage._mask is not None  # (see `has_written`)
    if counted and storage.unit_bits == storage.dtype.bits:
        storage._mask[...] = False  # (reused: a tile loop binds the same buffer again and again)
    else:
        storage.unit_bits = storage.dtype.bits
        storage._mask = None  # made again, all False, when needed
    storage.all_written = False
    storage.taint = None
    if counted and _written_count:  # no unit written: not counted (absent counts as 0)
        _written_count.pop(storage, None)


def forget_written(acc: Access) -> None:
    """The units `acc` touches unwritten again, keeping the count of written units exact (or
    `mark_written` could later declare the storage whole)."""
    storage = acc.storage
    if not has_written(storage):
        return
    if acc.dtype.bits < storage.unit_bits:
        _refine(storage, acc.dtype.bits)
    was_all = storage.all_written
    storage.mask  # noqa: B018 - materialised (all True when everything was written)
    storage.all_written = False
    before = storage.units_total if was_all else _written_count.get(storage, 0)
    _written_count[storage] = max(0, before - acc.unmark())
    if storage.taint is not None:  # nothing wrote them now: no origin
        storage.taint.ids[units_of(acc.dtype, storage, acc.offsets())] = 0
