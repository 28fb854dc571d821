"""Children of a view kept on the view: `t[0:128, :]`, `t.slice(1, 0, 64)`, `t.permute(...)`,
`t.reshape(...)`, `t.ap(...)` (every view method, `derived`) or `t.vector_select(0, idx)`
asked for again returns the very view it returned before; so do the TLA tiles `tile_view`,
`get_tile` and `make_tensor_like` make of a view or bind to a buffer (`apdsl.tensor.tla`).
So a view costs the same however it is spelled (SPEC 10: speed does not depend on spelling).

A view is an immutable value, and indexing it (or gathering it by an index tensor) is a pure
function of the view and the key: the child's layout, dtype, storage and runtime index are all
decided by them, with no machine state involved.  Returning the same child object lets
everything the runtime memoises on a view (its resolved access, a dma_copy plan) serve a loop
that makes its views afresh in every iteration.  Only children that were made successfully are
kept, so a key that raises raises every time.

The table lives on the parent (it dies with it) and is bounded: a loop over ever new keys
starts it over instead of growing it.  A slice's child holds nothing its parent does not (the
same storage); a gather's child holds its index tensor, so a parent keeps the children of at
most `GATHERS_PER_VIEW` index tensors (the last ones used), lest it keep many tensors alive
(and their capacity counted) that the program has let go.

With the `plans` option off nothing is kept or found: every view is made afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from ..machine import current

KIDS_PER_VIEW = 256  # children kept per view; past it the table starts over
GATHERS_PER_VIEW = 4  # vector_select children kept per view (each holds its index tensor)


def index_key(key: Any) -> tuple[Any, ...] | None:
    """A hashable key for an indexing key of ints, slices of ints (or None) and `...`; None for
    anything else (not cached).  Exact types only: `True` and `1` hash alike but index
    differently (a bool index is an error), and so do NumPy integers (the general path)."""
    many = type(key) is tuple
    out: list[Any] = ["index", many]
    for k in key if many else (key,):
        tk = type(k)
        if tk is slice:
            a, b, c = k.start, k.stop, k.step
            # (None or an exact int each: a slice is not hashable, its three parts are)
            if (a is None or type(a) is int) and (b is None or type(b) is int) and \
                    (c is None or type(c) is int):
                out.append((a, b, c))
            else:
                return None
        elif tk is int or k is Ellipsis:
            out.append(k)
        else:
            return None
    return tuple(out)


M = TypeVar("M", bound=Callable[..., Any])


def _container(x: Any) -> tuple[Any, ...] | None:
    """A list or tuple argument as part of a key (its type kept) when it holds ints, strs,
    None, or lists or tuples of ints (an access pattern's pairs); None otherwise (exact types
    only, as in `index_key`)."""
    tx = type(x)
    if tx is not tuple and tx is not list:
        return None
    out: list[Any] = [tx is list]
    for v in x:
        tv = type(v)
        if tv is int or tv is str or v is None:
            out.append(v)
        elif tv is list or tv is tuple:
            inner: list[Any] = [tv is list]
            for w in v:
                if type(w) is not int:
                    return None
                inner.append(w)
            out.append(tuple(inner))
        else:
            return None
    return tuple(out)


def call_key(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of view method `name` called with these arguments, or None (not kept)."""
    key: list[Any] = [name]
    for a in args:
        ta = type(a)
        if ta is int or ta is str or a is None:
            key.append(a)
        else:
            a = _container(a)
            if a is None:
                return None
            key.append(a)
    if kwargs:
        for k, v in kwargs.items():
            tv = type(v)
            if not (tv is int or tv is str or v is None):
                v = _container(v)
                if v is None:
                    return None
            key.append((k, v))
    return tuple(key)


def derived(method: M) -> M:
    """A view method whose result is a function of the view and its arguments only (no machine
    state): its child kept under (method, the arguments' exact values), as indexing's, so a
    loop that spells its views with methods gets back the views (and everything the runtime
    keeps for them) it made before.  A call that raises keeps nothing."""
    name = method.__name__

    @wraps(method)
    def kept(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            key = call_key(name, args, kwargs)
        else:  # (the common call, ints only, without building a list)
            for a in args:
                if type(a) is not int:
                    key = call_key(name, args, kwargs)
                    break
            else:
                key = (name, *args)
        if key is None:
            return method(self, *args, **kwargs)
        kids = getattr(self, "kids", None)
        if kids is not None and current().options.plans:
            hit = kids.get(key)
            if hit is not None:
                return hit
        return keep(self, key, method(self, *args, **kwargs))
    return kept  # type: ignore[return-value]


def exact_ints(x: Any) -> tuple[int, ...] | None:
    """`x` as a tuple when it is a tuple or list of plain ints, else None: the part of a key an
    argument of ints (a tile's coordinate or shape) may be.  Exact types, as in `index_key`."""
    tx = type(x)
    if tx is tuple:
        if len(x) == 2:  # (the common case, without a generator)
            return x if type(x[0]) is int and type(x[1]) is int else None
    elif tx is not list:
        return None
    for v in x:
        if type(v) is not int:
            return None
    return tuple(x)


def kids_of(t: Any) -> dict[Any, Any] | None:
    """The children kept on `t` (None: none, or the `plans` option off)."""
    kids = getattr(t, "kids", None)
    return kids if kids is None or current().options.plans else None


def child(t: Any, key: tuple[Any, ...]) -> Any:
    """The child of `t` kept under `key`, or None."""
    kids = kids_of(t)
    return None if kids is None else kids.get(key)


def keep(t: Any, key: tuple[Any, ...], view: Any) -> Any:
    """Keep `view` as the child of `t` under `key`; returns `view`."""
    if view is t or not current().options.plans:
        return view
    kids = getattr(t, "kids", None)
    if kids is None:
        kids = {}
        try:
            object.__setattr__(t, "kids", kids)
        except AttributeError:  # an object without the slot keeps nothing
            return view
    elif len(kids) >= KIDS_PER_VIEW:
        kids.clear()
    kids[key] = view
    return view


def gather_child(t: Any, dim: Any, index: Any) -> Any:
    """The child `t.vector_select(dim, index)` made before, or None."""
    kids = kids_of(t)
    if kids is None or type(dim) is not int:
        return None
    gathers = kids.get(("vector_select", dim))
    if gathers is None:
        return None
    entry = gathers.get(id(index))
    return entry[1] if entry is not None and entry[0] is index else None


def keep_gather(t: Any, dim: Any, index: Any, view: Any) -> Any:
    """Keep `view`, made by `t.vector_select(dim, index)`; returns it."""
    if type(dim) is not int or not current().options.plans:
        return view
    key = ("vector_select", dim)
    gathers = child(t, key)
    if gathers is None:
        gathers = {}
        keep(t, key, gathers)
    elif len(gathers) >= GATHERS_PER_VIEW:
        del gathers[next(iter(gathers))]  # the oldest
    gathers[id(index)] = (index, view)  # by identity (an id is unique while the index lives)
    return view
