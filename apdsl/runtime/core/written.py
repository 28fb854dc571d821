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
from ...tensor.placement import PlacedStorage
from ...tensor.storage import Storage
from ..table import TABLE
from . import psum, unwritten
from .access import Access, fmt_coord, mask_at, units_of

# Units newly marked written per partly written storage (see `mark_written`).
_written_count: weakref.WeakKeyDictionary[Storage, int] = weakref.WeakKeyDictionary()


def _err(code: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code=code, **kw)


# =============================================================================================
# Checks shared by reads and writes
# =============================================================================================

def check_init(acc: Access, op: str, role: str, observed: bool = False,
               reads: np.ndarray | None = None) -> None:
    """Instruction `op` reads operand `role` through `acc`.  Unwritten elements are noted for
    the instruction's outputs (`unwritten.note_read`: they propagate, SPEC 4), or are the
    error here when the read is an observable point: `observed` (a host read, an index or a
    register), an input the table marks observed (a predicate, a scan's carry chain), an
    instruction outside the table, or every read under `init_check="strict"`.  `reads`
    (logical shape): the elements the instruction reads, when its docs say it reads only some
    of the operand (the others are neither checked nor propagated)."""
    storage = acc.storage
    if storage.lnc is not None:  # shared by the programs of an LNC=2 launch under way
        storage.lnc.read(acc, reads)
    if storage.all_written:
        return
    mode = current().options.init_check
    if not mode:
        return
    ok = acc.written()
    if ok is True:
        return
    if reads is not None:
        ok = np.asarray(ok, bool) | ~np.reshape(np.asarray(reads, bool), np.shape(ok))
        if ok.all():
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
    refine_for_write(acc)
    if acc.size <= 1 or acc.injective():
        return
    a, b, dup = repeated(acc)
    if a.size:
        ci, cj = (np.unravel_index(int(k), acc.shape) for k in (a[0], b[0]))
        raise twice_error(acc, op, role, ci, cj, int(dup[0]), a.size)


def refine_for_write(acc: Access) -> None:
    """Before a write through `acc`: a write covering parts of units refines the written
    state first, so that running out of budget for the finer record (APK430) happens before
    anything is written."""
    storage = acc.storage
    if acc.dtype.bits < storage.unit_bits and not storage.all_written \
            and acc.size * acc.dtype.bits < storage.nbytes * 8:
        _refine(storage, acc.dtype.bits)


def repeated(acc: Access) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The writes of `acc` that land on an element an earlier one wrote: pairs of flat
    logical positions (a[k] < b[k], consecutive writes of one element) and the storage offset
    of each, ordered by offset."""
    offs = np.reshape(acc.offsets(), -1)
    order = np.argsort(offs, kind="stable")
    s = offs[order]
    same = s[1:] == s[:-1]
    return order[:-1][same], order[1:][same], s[1:][same]


def twice_error(acc: Access, op: str, role: str, ci: tuple[int, ...], cj: tuple[int, ...],
                dup: int, count: int, notes: tuple[str, ...] = (),
                help: str | None = None) -> ApdslRuntimeError:
    """APK405: the elements at logical coordinates `ci` and `cj` of `acc` land on storage
    element `dup`; `count` writes in all land on an element already written."""
    return _err("APK405", f"{op}: {role} {acc.name} writes storage element {dup} twice "
                f"(logical {fmt_coord(ci)} and {fmt_coord(cj)})",
                notes=[f"{count} writes land on an element already written by this "
                       "instruction", *notes, f"view shape {acc.shape}, storage "
                       f"{acc.storage.describe()}"],
                help=help or "a destination cannot repeat elements: no broadcast (stride 0), "
                "no overlapping .ap pattern, no repeated runtime index",
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


def mark_written(acc: Access, wrote: np.ndarray | None = None, repeats: bool = False) -> None:
    """The instruction under way wrote every element of `acc`: they are written, except those
    that depend on unwritten data it read (`unwritten`), which it leaves unwritten.  `wrote`
    (logical shape): a masked write stored the whole of `acc` but changed only these elements
    (the caller then sets the others' state with `set_written`).  `repeats`: `acc` touches
    some elements more than once (a scatter's repeated runtime index, `scatter`)."""
    storage = acc.storage
    if storage.lnc is not None:  # shared by the programs of an LNC=2 launch under way
        storage.lnc.wrote(acc, wrote)
    if storage.buffer == "psum":
        psum.note_write(acc)
    if not storage.all_written:
        _mark(acc, storage, repeats)
    if current().taint is not None:
        _poison(acc)
    if isinstance(storage, PlacedStorage) and storage.overlaps:
        share(acc, wrote)


def _mark(acc: Access, storage: Storage, repeats: bool = False) -> None:
    # A write checked free of duplicates that covers every bit covers all.
    if not repeats and acc.size * acc.dtype.bits >= storage.nbytes * 8:
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
    storage = acc.storage
    if isinstance(storage, PlacedStorage) and storage.overlaps:
        share(acc, None, data=False)


def share(acc: Access, wrote: np.ndarray | None = None, *, data: bool = True) -> None:
    """Placed tensors over the same bytes are names of those bytes (`apdsl.tensor.placement`):
    the bytes the write through `acc` left written (of the elements in `wrote`, when given)
    are copied into every live placed storage overlapping its storage, at the same
    (partition, byte) addresses, and the units they cover whole count as written there.
    Bytes of elements left unwritten (computed from unwritten data) are not copied, and are
    unwritten there too: they do not hold what hardware holds.  `data=False` (check mode, or
    storages that are views of one memory: `PlacedStorage.copies_data`): the written state
    only."""
    storage = acc.storage
    others = _live_overlaps(storage)
    if not others:
        return
    data = data and storage.copies_data
    if wrote is None and storage.all_written and acc.size * acc.dtype.bits >= storage.nbytes * 8:
        for other in others:  # the whole storage written: rectangles of bytes
            _copy_whole(storage, other, data)
        return
    offsets = np.asarray(acc.offsets(), np.int64).reshape(-1)
    if wrote is not None:
        offsets = offsets[np.asarray(wrote, bool).reshape(-1)]
    bits = acc.dtype.bits
    row = storage.nbytes // storage.rows
    if not storage.all_written and offsets.size:
        ok = np.asarray(mask_at(storage, acc.dtype, offsets), bool).reshape(-1)
        if not ok.all():
            _unshare(storage, others, offsets[~ok], bits, row)
        offsets = offsets[ok]
    if not offsets.size:
        return
    if bits >= 8:
        flat = _bytes_of(offsets, bits)
        for other in others:
            _copy_bytes(storage, other, flat, row, data)
        return
    # elements narrower than a byte: each position within the byte on its own, so two
    # elements of one byte are both kept; the units they cover are not marked (conservative)
    per = 8 // bits
    for j in range(per):
        part = offsets[offsets % per == j]
        if part.size:
            for other in others:
                _copy_bits(storage, other, part // per, row, bits, j, data)


def copied_to_others(storage: Storage) -> bool:
    """Whether a write to `storage` must be copied into other storages (placed over some of
    its bytes, each with bytes of its own): a fast path that writes in place without
    `mark_written` must not take it."""
    return isinstance(storage, PlacedStorage) and storage.copies_data and \
        bool(storage.overlaps)


def _live_overlaps(storage: PlacedStorage) -> list[PlacedStorage]:
    """The live placed storages over some of `storage`'s bytes."""
    others = [o for o in (r() for r in storage.overlaps) if o is not None and not o.freed]
    if len(others) < len(storage.overlaps):  # (tensors of past iterations: gone for good)
        storage.overlaps[:] = [weakref.ref(o) for o in others]
    return others


def _bytes_of(offsets: np.ndarray, bits: int) -> np.ndarray:
    """The flat byte indices of the elements of `bits` (>= 8) at storage `offsets`."""
    width = bits // 8
    return (offsets[:, None] * width + np.arange(width)).reshape(-1)


def _unshare(storage: PlacedStorage, others: list[PlacedStorage], offsets: np.ndarray,
             bits: int, row: int) -> None:
    """The elements at `offsets` were just written with data computed from unwritten data:
    the units over their bytes in `others` are unwritten too (a narrower element makes its
    whole byte unwritten there)."""
    flat = _bytes_of(offsets, bits) if bits >= 8 else np.unique(offsets * bits // 8)
    for other in others:
        _, at = _targets(storage, other, flat, row)
        if not at.size or not has_written(other):
            continue
        unit = other.unit_bits
        if unit >= 8:
            units = np.unique(at // (unit // 8))
        else:
            units = (at[:, None] * (8 // unit) + np.arange(8 // unit)).reshape(-1)
        _assign_units(other, units, np.zeros(units.shape, bool))


def share_placed(storage: PlacedStorage) -> None:
    """`storage` was just placed over bytes live placed storages hold: what they hold written
    (their data too, with `copies_data`) is written in it, as the bytes are the same."""
    for other in _live_overlaps(storage):
        data = other.copies_data
        if other.all_written:
            _copy_whole(other, storage, data)
            continue
        if not has_written(other):
            continue
        unit = other.unit_bits  # the bytes whose units are all written
        if unit >= 8:
            flat = _bytes_of(np.flatnonzero(other.mask), unit)
        else:
            flat = np.flatnonzero(other.mask.reshape(-1, 8 // unit).all(axis=1))
        _copy_bytes(other, storage, flat, other.nbytes // other.rows, data)


def _copy_whole(src: PlacedStorage, dst: PlacedStorage, data: bool) -> None:
    """All of `src` was written: the rectangle of (partition, byte) both cover, copied."""
    srow, drow = src.nbytes // src.rows, dst.nbytes // dst.rows
    p0, p1 = max(src.at[0], dst.at[0]), min(src.at[0] + src.rows, dst.at[0] + dst.rows)
    b0, b1 = max(src.at[1], dst.at[1]), min(src.at[1] + srow, dst.at[1] + drow)
    if p0 >= p1 or b0 >= b1:
        return
    if data:
        s2 = src.data.reshape(src.rows, srow)
        d2 = dst.data.reshape(dst.rows, drow)
        d2[p0 - dst.at[0]:p1 - dst.at[0], b0 - dst.at[1]:b1 - dst.at[1]] = \
            s2[p0 - src.at[0]:p1 - src.at[0], b0 - src.at[1]:b1 - src.at[1]]
    if dst.all_written:
        return
    if (p1 - p0, b1 - b0) == (dst.rows, drow):
        note_written_whole(dst)
        return
    rows = np.arange(p0 - dst.at[0], p1 - dst.at[0])[:, None] * drow
    flat = (rows + np.arange(b0 - dst.at[1], b1 - dst.at[1])).reshape(-1)
    _mark_bytes(dst, flat)


def _mark_bytes(dst: PlacedStorage, at: np.ndarray) -> None:
    """The units of `dst` whose bytes are all among `at` (distinct flat byte indices) are
    written."""
    unit = dst.unit_bits
    if unit >= 8:  # a unit is covered whole when all of its bytes were copied
        per = unit // 8
        units = at // per
        if per > 1:
            count = np.bincount(units, minlength=dst.units_total)
            units = np.flatnonzero(count == per)
    else:
        units = (at[:, None] * (8 // unit) + np.arange(8 // unit)).reshape(-1)
    if units.size:
        _assign_units(dst, units, np.ones(units.shape, bool))


def _targets(src: PlacedStorage, dst: PlacedStorage, flat: np.ndarray, row: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """(which of `src`'s flat byte indices fall in `dst`, their flat byte indices in `dst`)."""
    part = src.at[0] + flat // row - dst.at[0]
    col = src.at[1] + flat % row - dst.at[1]
    drow = dst.nbytes // dst.rows
    keep = (part >= 0) & (part < dst.rows) & (col >= 0) & (col < drow)
    return keep, part[keep] * drow + col[keep]


def _copy_bytes(src: PlacedStorage, dst: PlacedStorage, flat: np.ndarray, row: int,
                data: bool) -> None:
    keep, at = _targets(src, dst, flat, row)
    if not at.size:
        return
    if data:
        dst.data[at] = src.data[flat[keep]]
    if not dst.all_written:
        _mark_bytes(dst, at)


def _copy_bits(src: PlacedStorage, dst: PlacedStorage, flat: np.ndarray, row: int,
               bits: int, j: int, data: bool) -> None:
    keep, at = _targets(src, dst, flat, row)
    if not at.size or not data:
        return
    field = np.uint8(((1 << bits) - 1) << (bits * j))
    dst.data[at] = (dst.data[at] & ~field) | (src.data[flat[keep]] & field)


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
    _copy_state(dst, src, ok)
    dstorage = dst.storage
    if isinstance(dstorage, PlacedStorage) and dstorage.overlaps:
        share(dst)  # the moved bytes, and their state, are the overlapping storages' too


def _copy_state(dst: Access, src: Access, ok: np.ndarray) -> None:
    """The written state of `dst`'s elements made `src`'s (`ok`: its written elements), unit
    for unit where `src` is written per unit narrower than its elements."""
    sst = src.storage
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
