"""The plan table: what an instruction call checked once, kept for the next call on operands
of equal value.

Every rule an instruction checks of its operands, besides their state, is decided by values:
each view's layout and dtype, its storage's buffer, shape, dtype, format, size and address, the
call's other arguments, and the target.  A *plan* is what those checks concluded (the label,
the checked shapes, the engine) with each operand's leaf pattern, kept in one bounded table
(`PLANS`) under the key (instruction, target, the operands' keys, the other arguments).  A
view's key (`key_of`) stands for its value: it is made once per view (a view is immutable)
and kept on it, and views of equal value share it (`_INTERNED`), so a plan key hashes and
compares by identity.  So a loop that makes its views afresh in every iteration, a tile
declared in a loop (a new storage every round) and a view spelled another way
(`h.slice(1, 0, 64)` for `h[:, 0:64]`) all find the plan of an equal view.

A plan holds no storage and no view (a key holds none either): an operand's access is made per
call from the plan's leaf pattern over the operand's own storage (`access`; its bounds were
checked for a storage of that size, its layout is the same).

A plan is used only executing (not in check mode) with nothing tracing (a trace records every
call through the general path), and never skips what can change from one call to the next:
a storage freed since (the general path then runs and reports APK408), the init check of what
the call reads, the duplicate check and written marks of what it writes, the PSUM
accumulation state, and the sync checker.  With the `plans` option off nothing is kept or
found.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...tensor.liveness import PENDING
from ...tensor.machine import current
from ..core import psum
from ..core.access import Access, Strided, oom
from ..core.unwritten import begin
from ..core.written import check_init, check_unique, mark_written

LIMIT = 4096  # plans kept; past it the oldest goes (a loop over ever new shapes stays bounded)
KEYS = 4096  # distinct view values interned; past it the table starts over


class Key:
    """The value of a view as plans see it (`key_of`); one object per value while interned,
    hashed and compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value: tuple[Any, ...]) -> None:
        self.value = value


_INTERNED: dict[tuple[Any, ...], Key] = {}  # a view's value -> its key
# The same, by the identity of the layout and dtypes (a fresh tile's row-major layout and a kept
# child's are shared objects): no layout hashed.  Each entry holds the objects it names by id
# (its key may hold equal others), so their ids stay theirs while the entry lives.
_BY_ID: dict[tuple[Any, ...], tuple[Key, Any, Any, Any]] = {}


def key_of(t: Any) -> Key | None:
    """View `t`'s key, made once and kept on the view; None for a view no plan may stand for
    (a runtime index or a register in its layout: its checks depend on more than values), and
    with the `plans` option off."""
    k = getattr(t, "key", None)
    if k is not None:
        return k
    if t.dynamic is not None or not current().options.plans:
        return None
    layout, dtype, st = t.layout, t.dtype, t.storage
    if st.freed is PENDING:  # (its address is not chosen yet: no key to keep)
        return None
    fast = (id(layout), id(dtype), id(st.dtype), st.buffer, st.shape, st.format, st.c0,
            st.nbytes, st.address)
    got = _BY_ID.get(fast)
    if got is not None:
        k = got[0]
    else:
        if not layout.static:
            return None
        value = (layout, dtype, st.dtype, *fast[3:])
        k = _INTERNED.get(value)
        if k is None:
            if len(_INTERNED) >= KEYS:
                _INTERNED.clear()  # (views keep their keys: equal values later get new ones)
                _BY_ID.clear()
            k = _INTERNED[value] = Key(value)
        if len(_BY_ID) >= 4 * KEYS:
            _BY_ID.clear()
        _BY_ID[fast] = (k, layout, dtype, st.dtype)
    object.__setattr__(t, "key", k)
    return k


PLANS: dict[tuple[Any, ...], Any] = {}


def find(key: tuple[Any, ...]) -> Any:
    """The plan kept under `key` when it may be used now, else None."""
    m = current()
    if m.check or m.trace is not None or not m.options.plans:
        return None
    return PLANS.get(key)


def keep(key: tuple[Any, ...], plan: Any) -> None:
    """Keep `plan` under `key` (the oldest plan goes past `LIMIT`; nothing with plans off)."""
    if not current().options.plans:
        return
    if len(PLANS) >= LIMIT:
        del PLANS[next(iter(PLANS))]
    PLANS[key] = plan


def kept(op: str, t: Any = None, target: str | None = None) -> list[Any]:
    """The plans kept for instruction `op` (with view `t` among its operands; on `target`),
    oldest first: for tests and for seeing what a program planned."""
    k = None if t is None else (key_of(t) or id(t))
    return [plan for key, plan in PLANS.items() if key[0] == op and (
        k is None or k in key[2:]) and (target is None or key[1] == target)]


# -- operands: a plan's leaf patterns, an access made from one ---------------------------------

Leaf = tuple[tuple[int, ...], int, tuple[int, ...], tuple[int, ...]]


def leaf(acc: Access) -> Leaf | None:
    """What a plan keeps of a resolved operand: shape, offset, leaf counts and strides (None:
    not one strided array, so no plan)."""
    if type(acc) is not Strided:
        return None
    return acc.shape, acc.offset, acc.lshape, acc.lstrides


def access(t: Any, f: Leaf) -> Strided | None:
    """View `t`'s access as `resolve` makes it, from the leaf pattern of a view of equal key
    (the same layout and dtype give the same leaves; a storage of the same size, the same
    bounds), memoised on the view; None when its storage was freed (the general path reports
    it) or its memo is of another kind."""
    st = t.storage
    if st.freed:
        return None
    acc = getattr(t, "memo", None)
    if acc is not None:
        return acc if type(acc) is Strided else None
    acc = Strided(t.name, st, t.dtype, f[0], t.layout, f[1], f[2], f[3])
    object.__setattr__(t, "memo", acc)
    return acc


# -- the executor: what a planned call checks every time, the same for every instruction -------

def execute(label: str, reads: Iterable[tuple[str, Access]], dst: Access,
            move: Callable[[], None]) -> None:
    """Run a planned call: what its general path checks on every call, in the same order,
    around `move` (the data itself): the init check of each access read (it reads the current
    written state and the `init_check` option) with its PSUM read noted; the written-state
    refinement of a destination narrower than its storage's unit (no duplicate check: a plan
    is kept only after its call wrote dst, so its pattern was found injective, and a pattern
    does not change); then
    dst marked written, its PSUM state with it, and left unwritten where it depends on
    unwritten data it read (`apdsl.runtime.core.unwritten`: a planned call records nothing, so
    the instruction starts here).  Out of memory while moving is APK430 at dst."""
    begin()
    for role, a in reads:
        check_init(a, label, role)
        if a.storage.buffer == "psum":
            psum.note_read(a)
    try:
        if dst.dtype.bits < dst.storage.unit_bits:
            check_unique(dst, label, "dst")  # refines the written state before moving
        move()
    except MemoryError as e:
        raise oom(label, "dst", dst.storage, e) from None
    mark_written(dst)
