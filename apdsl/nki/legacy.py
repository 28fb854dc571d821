"""The legacy NKI API (`neuronxcc.nki`) on the current model: every legacy call is the same
instruction as its current form, with the same checks, APs and costs.

What the legacy API adds, and how each becomes current instructions:
- **Masks** (`mask=(i_p < n) & (i_f < m)`): a box over the call's index grid.  Operands indexed
  with the grid's indices (`t[i_p, i_f]`, an `IndexedTile`) are made into views over the kept
  positions only; plain tiles are narrowed on the axes the mask bounds.  Masked-off elements
  are neither read nor written; a mask that keeps nothing issues nothing.
- **Instructions without `dst`** return a new tile (`legacy_forms`).  The tile is computed the
  moment anything else happens (a *pending* result), unless it is first written somewhere:
  `qk[i, j] = nisa.nc_matmul(...)` issues the matmul with `qk[i, j]` as its `dst`, and
  `acc += nisa.nc_matmul(...)` (or `nl.matmul(..., transpose_x=True)`) accumulates into the
  PSUM tile `acc`, as the legacy compiler did: a zero-filled `acc` starts the accumulation.
- **Tile writes**: `t[k] = tile` copies (tensor_copy on chip, dma_copy to or from HBM; a number
  is a memset), `t += x` / `-=` / `*=` compute in place (tensor_tensor or tensor_scalar).
- `nl.store` of a PSUM tile goes through SBUF (tensor_copy, then the DMA), as its docstring
  says; `nl.par_dim(n)` marks the partition dimension of a shape.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

import numpy as np

from ..errors import ApdslTypeError, Span, ViewError
from ..runtime.table.operators import OPERATORS
from ..semantics import host as hosts
from ..tensor.grid_view import IndexedTile
from ..tensor.index_grid import KEEPS_NOTHING, Limits, Predicate, is_empty
from ..tensor.view import Tensor
from . import legacy_divide, legacy_shapes
from .legacy_forms import FORMS
from .legacy_results import PendingTile
from .locate import assigned_name, caller_span, legacy_caller


class Host(hosts.Host, Protocol):
    """What the legacy API needs of the kernel call's host (`apdsl.nki.host.Host`): a host's
    services, and issuing an instruction at a given user's call (a pending result is issued
    later than its line)."""

    def issue(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
              span: Span | None) -> Any: ...

_SKIPPED = object()  # a masked call that keeps no element


def _mask_of(mask: Any) -> Predicate | None:
    if mask is None or mask is True or mask is np.True_:
        return None
    if mask is False or mask is np.False_:  # (a comparison of loop indices: skip the call)
        return KEEPS_NOTHING
    if not isinstance(mask, Predicate):
        raise ApdslTypeError(f"mask must be a predicate of nl.arange/nl.mgrid indices "
                             f"(e.g. (i_p < n) & (i_f < m)), not {type(mask).__name__}",
                             code="APK947")
    return mask


class Legacy:
    """One host's legacy-API state: the pending result (at most one: it is computed before
    anything else happens), and the tile writes it lends the tensors (`TileWriter`)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.pending: PendingTile | None = None
        # while a masked nl function runs: how the host allocates its result (the whole tile,
        # handed back narrowed to the mask, so the masked-off part stays unwritten)
        self.widen: Callable[..., Tensor] | None = None
        # while a masked nl function whose mask keeps nothing runs: issue no instruction
        self.skipping = False

    def wrap_builtins(self, table: dict[str, Any]) -> dict[str, Any]:
        """The host's builtins with every `nl.` function taking the legacy keywords."""
        from ..runtime.table.operators import Operator
        from ..semantics.nl_operators import NlFunction
        for key, value in list(table.items()):
            if not key.startswith("nl.") or isinstance(value, type) or not callable(value):
                continue
            name = key[3:]
            if isinstance(value, NlFunction):
                table[key] = NlFunction(value, self.nl_function(name, value.call))
            elif not isinstance(value, Operator) and name not in _NOT_FUNCTIONS:
                table[key] = self.nl_function(name, value)
        return table

    def flush(self) -> None:
        """Compute the pending result, if any, into its own tile."""
        if self.pending is not None:
            self.pending.tile  # noqa: B018  # computing it is the point

    # -- operands --------------------------------------------------------------------------------
    def narrow(self, t: Tensor, mask: Predicate | None, limits: Limits | None) -> Tensor | None:
        """A plain tile under a mask: each axis the mask bounds cut to its kept positions
        (None: nothing kept)."""
        if mask is None or not limits:
            return t
        if is_empty(limits):
            return None
        if t.ndim != len(mask.shape):
            raise ViewError(f"a mask over a {len(mask.shape)}-d index grid cannot narrow a "
                            f"{t.ndim}-d operand {t.name}", code="APK947",
                            notes=[f"mask grid shape {mask.shape}, operand shape {t.shape}"],
                            help="index the operand with the mask's indices: t[i_p, i_f]")
        out = t
        for it, axis in mask.axes:
            lo, hi = limits.get(it, (0, it.count))
            if (lo, hi) == (0, it.count) or t.shape[axis] == 1:
                continue
            if t.shape[axis] != it.count:
                raise ViewError(f"the mask's index on axis {axis} has {it.count} positions; "
                                f"operand {t.name} has {t.shape[axis]} there", code="APK947",
                                help="index the operand with the mask's indices: t[i_p, i_f]")
            out = out.slice(axis, lo, hi)
        return out

    def operand(self, value: Any, mask: Predicate | None, limits: Limits | None) -> Any:
        """`value` as the instruction takes it under the mask (tensors narrowed, index grids
        made views, computed results their tiles); `_SKIPPED` when the mask keeps nothing."""
        if isinstance(value, PendingTile):
            value = value.tile
        if isinstance(value, IndexedTile):
            view = value.resolve(limits)
            return _SKIPPED if view is None else view
        if isinstance(value, Tensor) and mask is not None:
            view = self.narrow(value, mask, limits)
            return _SKIPPED if view is None else view
        if isinstance(value, list) and any(isinstance(v, (*_SPECIAL, Tensor)) for v in value):
            made = [self.operand(v, mask, limits) for v in value]  # (dma_compute's srcs)
            return _SKIPPED if any(v is _SKIPPED for v in made) else made
        return value

    def operands(self, args: tuple, kwargs: dict, mask: Predicate | None
                 ) -> tuple[tuple, dict] | None:
        limits = mask.limits() if mask is not None else None
        out_args = tuple(self.operand(a, mask, limits) for a in args)
        out_kw = {k: self.operand(v, mask, limits) for k, v in kwargs.items()}
        if any(a is _SKIPPED for a in out_args) or any(v is _SKIPPED for v in out_kw.values()):
            return None
        return out_args, out_kw

    # -- instructions --------------------------------------------------------------------------
    def instruction(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """An `nisa` call of either API: the current form issued now (its operands made under
        its mask), a legacy form (no `dst`) returning its pending result."""
        span = caller_span(2)
        self.flush()
        if self.skipping:
            return None
        # (an Ascend `asc.` instruction's `mask` is its vector mask, not an NKI predicate)
        mask = _mask_of(kwargs.pop("mask", None)) if "mask" in kwargs and \
            not name.startswith("asc.") else None
        if name == "dma_copy" and kwargs.get("dst_rmw_op") is not None:
            name, fn, args, kwargs = _read_modify_write(args, kwargs)
        elif name == "dma_copy":
            kwargs.pop("dst_rmw_op", None)  # None: a plain copy
        form = FORMS.get(name)
        if form is not None and not _current_form(name, fn, args, kwargs):
            return self.legacy_call(name, fn, args, kwargs, mask, span)
        if mask is None and not _special(args, kwargs):
            return self.host.issue(name, fn, args, kwargs, span)
        made = self.operands(args, kwargs, mask)
        if made is None:
            return None
        return self.host.issue(name, fn, made[0], made[1], span)

    def legacy_call(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict,
                    mask: Predicate | None, span: Span | None) -> PendingTile:
        form = FORMS[name]
        try:
            bound = form.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise ApdslTypeError(f"nisa.{name}: {e} (neither the current form, with dst, nor "
                                 "the legacy form, returning its tile, takes these arguments)",
                                 code="APK948", span=span) from None
        bound.apply_defaults()
        limits = mask.limits() if mask is not None else None
        # the result's shape comes from the operands as written (before the mask narrows them)
        whole = {k: (v.tile if isinstance(v, PendingTile) else v)
                 for k, v in bound.arguments.items()}
        shape, dtype, buffer = form.result(whole)
        made = {k: self.operand(v, mask, limits) for k, v in whole.items()}
        skipped = any(v is _SKIPPED for v in made.values())
        kw = form.convert(made)

        def issue(dst: Tensor, **extra: Any) -> None:
            if skipped:
                return
            # (the copies the compiler adds are the call's, at its line)
            staged = {role: self._staged(kw[role], span) for role in form.staged
                      if isinstance(kw.get(role), Tensor) and kw[role].buffer == "psum"}
            kept = kw.get(form.keeps) if form.keeps else None
            if isinstance(kept, Tensor) and kept.dtype != dst.dtype:
                # the instruction writes kept's dtype, and a cast follows (tensor_copy)
                out = self.host.allocate(tuple(dst.shape), kept.dtype, dst.buffer,
                                         name=f"{dst.name}_{kept.dtype}")
                self.host.issue(name, fn, (), {"dst": out, **kw, **staged, **extra}, span)
                self.host.issue("tensor_copy", _impl("tensor_copy"), (),
                                {"dst": dst, "src": out}, span)
                return
            self.host.issue(name, fn, (), {"dst": dst, **kw, **staged, **extra}, span)

        pending = PendingTile(self, name, shape, dtype, buffer, issue, assigned_name(), span,
                              mask, limits)
        self.pending = pending
        return pending

    # -- the high-level nl functions -------------------------------------------------------------
    def nl_function(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`nl.NAME` taking the legacy keywords too: `mask=`, index grids and pending results
        as operands; `nl.store` of a PSUM tile through SBUF; `nl.matmul(..., transpose_x=True)`
        pending, so `+=` accumulates it in PSUM; `nl.divide` in a legacy file
        (`legacy_divide`)."""
        if name == "divide":
            fn = self._divide(fn)
        elif name == "shared_identity_matrix":
            fn = self._identity(fn)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.flush()
            mask = _mask_of(kwargs.pop("mask", None)) if "mask" in kwargs else None
            if name in _SHAPED:
                # the legacy compiler's hint of when the fill is done (at once, or deferred to
                # the tile's first use): what the tile holds when read is the same either way
                kwargs.pop("lazy_initialization", None)
                made_here = legacy_shapes.allocate(self.host, name, fn, args, kwargs)
                if made_here is not None:
                    return made_here
            if mask is None and not _special(args, kwargs):
                made: tuple[tuple, dict] | None = (args, kwargs)
            else:
                made = self.operands(args, kwargs, mask)
                if made is None:  # the mask keeps nothing: the whole result, uncomputed
                    return self._skipping(call, args, kwargs)
            a, kw = made
            if name in _REDUCTIONS:
                a, kw = _reduced_last(args, kwargs, a, kw)
            if name == "store":
                return self._store(fn, a, kw)
            if name == "matmul" and legacy_caller():
                a, kw = self._in_sbuf(a, kw)
            if name == "matmul" and mask is None and not self.skipping:
                pending = self._matmul(a, kw)
                if pending is not None:
                    return pending
            if name == "load" and mask is None and not self.skipping:
                pending = self._load(a, kw)
                if pending is not None:
                    return pending
            if mask is None:
                return fn(*a, **kw)
            return self._masked(name, fn, (args, kwargs), (a, kw), mask)

        call.__name__ = name
        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    def _divide(self, refused: Callable[..., Any]) -> Callable[..., Any]:
        """`nl.divide`: the legacy API's function where the caller's file uses that API,
        else the current API's refusal (APK183)."""
        def divide(x: Any, y: Any, dtype: Any = None) -> Any:
            if not legacy_caller():
                return refused(x, y, dtype=dtype)
            return legacy_divide.divide(self.host.builtins, x, y, dtype)
        return divide

    def _identity(self, current: Callable[..., Any]) -> Callable[..., Any]:
        """`nl.shared_identity_matrix`: where the caller's file uses the legacy API, the
        identity as a shared HBM constant (its legacy docstring: "the same behavior to
        nki.language.shared_constant"; the legacy kernels `nl.load` it), else the current
        API's SBUF tile."""
        def shared_identity_matrix(n: Any, dtype: Any = "uint8", **kwargs: Any) -> Any:
            if kwargs or not legacy_caller():
                return current(n, dtype, **kwargs)
            from ..semantics.nl_constants import identity
            return self.host.builtins["nl.shared_constant"](identity(n, None), dtype)
        return shared_identity_matrix

    def _skipping(self, call: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """A masked nl function whose mask keeps no element: called with every instruction it
        would issue dropped, so it checks its operands and returns its result tile (nothing
        of which is written, as with a legacy instruction's), and nothing moves.  An index
        expression's view may exist only under its mask, so a new tile of its shape, indexed
        by the whole grid, stands in for it (only its shape, dtype and memory are read)."""
        from ..tensor.index_grid import MGRID
        from ..tensor.view import ndarray

        def stand_in(v: Any) -> Any:
            if isinstance(v, IndexedTile):
                tile = ndarray(v.shape, v.dtype, v.buffer, name=v.name)
                return IndexedTile(tile, tuple(MGRID[tuple(slice(0, n) for n in v.shape)]))
            return v

        self.skipping = True
        try:
            return call(*(stand_in(a) for a in args),
                        **{k: stand_in(v) for k, v in kwargs.items()})
        finally:
            self.skipping = False

    def _masked(self, name: str, fn: Callable[..., Any], given: tuple[tuple, dict],
                made: tuple[tuple, dict], mask: Predicate) -> Any:
        """A masked nl function: its result is the whole tile (of its first operand's shape
        as written, less the axes a reduction drops), of which the mask's part is
        computed."""
        whole = next((v for v in (*given[0], *given[1].values())
                      if isinstance(v, (Tensor, IndexedTile, PendingTile))), None)
        if whole is None:
            return fn(*made[0], **made[1])
        whole_shape, dropped = _masked_result(name, given, tuple(whole.shape))
        limits = mask.limits()
        regions: dict[int, Tensor] = {}
        from ..tensor.view import ndarray

        def widen(shape: Any, dtype: Any, buffer: Any, fmt: str, name: str, span: Span | None) -> Tensor:
            if len(whole_shape) != len(shape) or buffer not in ("sbuf", "psum"):
                return ndarray(shape, dtype, buffer, fmt, name=name, span=span)
            tile = ndarray(whole_shape, dtype, buffer, fmt, name=name, span=span)
            # the mask bounds the operand's grid: narrow on that grid's axes, the dropped
            # ones standing in as size 1 (which narrowing leaves alone)
            probe = tile
            for d in dropped:
                probe = probe.expand_dim(d)
            region = self.narrow(probe, mask, limits)
            for d in reversed(dropped):
                region = None if region is None else region.squeeze_dim(d)
            if region is None or tuple(region.shape) != tuple(shape):
                return ndarray(shape, dtype, buffer, fmt, name=name, span=span)
            regions[id(region)] = tile
            return region

        self.widen = widen
        try:
            result = fn(*made[0], **made[1])
        finally:
            self.widen = None
        return regions.get(id(result), result)

    def _in_sbuf(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The legacy `nl.matmul`'s operands with a PSUM tile copied to SBUF first (tensor_copy),
        since its reference takes both in SBUF and the legacy API leaves tiles' memory to the
        compiler: the legacy attention example's `nl.matmul(scores, nl.transpose(v))` is, in its
        nki.isa version, `nisa.nc_transpose` into PSUM, then `nisa.tensor_copy` to SBUF."""
        def staged(v: Any) -> Any:
            return self._staged(v) if isinstance(v, Tensor) and v.buffer == "psum" else v
        return (tuple(staged(v) for v in args),
                {k: staged(v) if k in ("x", "y") else v for k, v in kwargs.items()})

    def _store(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        names = ("dst", "value")
        given = dict(zip(names, args)) | kwargs
        value = given.get("value")
        if isinstance(value, Tensor) and value.buffer == "psum":
            given["value"] = self._staged(value)  # the compiler copies it to SBUF first
        return fn(**given)

    def _load(self, args: tuple, kwargs: dict) -> PendingTile | None:
        """`nl.load(src, dtype=None)` pending: `buf[i] = nl.load(...)` is one DMA into buf[i],
        as the compiler issues it (and no temporary tile to place)."""
        given = dict(zip(("src", "dtype"), args)) | kwargs
        src = given.get("src")
        if set(given) - {"src", "dtype"} or not isinstance(src, Tensor) or src.onchip or \
                len(src.shape) < 2 or src.shape[0] > 128:
            return None  # the function itself (it reports what is wrong)
        from ..tensor.dtypes import dtype as to_dtype
        dtype = src.dtype if given.get("dtype") is None else to_dtype(given["dtype"])
        span = caller_span(2)

        def issue(dst: Tensor, **extra: Any) -> None:
            self.host.issue("dma_copy", _impl("dma_copy"), (), {"dst": dst, "src": src, **extra},
                            span)

        pending = PendingTile(self, "dma_copy", tuple(int(n) for n in src.shape), dtype, "sbuf",
                              issue, assigned_name(), span, None, None)
        self.pending = pending
        return pending

    def _matmul(self, args: tuple, kwargs: dict) -> PendingTile | None:
        given = dict(zip(("x", "y", "transpose_x"), args)) | kwargs
        x, y = given.get("x"), given.get("y")
        if not given.get("transpose_x") or not isinstance(x, Tensor) or \
                not isinstance(y, Tensor) or len(x.shape) != 2 or len(y.shape) != 2:
            return None  # the function itself (it transposes x, or reports)
        span = caller_span(2)

        def issue(dst: Tensor, **extra: Any) -> None:
            self.host.issue("nc_matmul", _impl("nc_matmul"), (),
                            {"dst": dst, "stationary": x, "moving": y, **extra}, span)

        pending = PendingTile(self, "nc_matmul", (int(x.shape[1]), int(y.shape[1])),
                              _float32(), "psum", issue, assigned_name(), span, None, None)
        self.pending = pending
        return pending

    # -- tile writes (the TileWriter the tensors borrow) ----------------------------------------
    def assign(self, target: Any, key: Any, value: Any) -> None:
        dst = target[key]
        pending = value if isinstance(value, PendingTile) and value.pending else None
        if pending is not None:
            view = self._target(dst, pending._mask, pending._limits)
            if view is None:
                self.pending = None
                return
            if self._accepts(pending.op, view):
                pending.write_into(view)
                return
        self.flush()
        view = self._target(dst, None, None)
        if isinstance(value, PendingTile):
            value = value.tile
        if isinstance(value, IndexedTile):
            value = value.view()
        if isinstance(value, Tensor):
            if value.storage is view.storage and value.layout == view.layout:
                return  # `t[k] += x` writes t[k] back onto itself
            self.copy(view, value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self.host.builtins["memset"](dst=view, value=value)
        else:
            raise ApdslTypeError(f"cannot assign a {type(value).__name__} to a tile: assign a "
                                 "tile or a number", code="APK946")

    def arithmetic(self, op: str, left: Any, right: Any) -> Any:
        """`left OP right` on tiles: the `nl` function `op` (`a + b` is `nl.add(a, b)`), with
        its checks, its instruction and its new tile."""
        return self.host.builtins[f"nl.{op}"](left, right)

    def broadcast_to(self, tile: Any, shape: Any) -> Any:
        """`tile.broadcast_to(shape)`: `nl.broadcast_to(tile, shape)`, its checks, instructions
        and new tile."""
        return self.host.builtins["nl.broadcast_to"](tile, shape)

    def _target(self, dst: Any, mask: Predicate | None, limits: Limits | None) -> Any:
        if isinstance(dst, IndexedTile):
            return dst.resolve(limits)
        return self.narrow(dst, mask, limits)

    def _accepts(self, op: str, view: Tensor) -> bool:
        from ..runtime.table import TABLE
        entry = TABLE.get(op)
        if entry is None:
            return False
        return view.buffer in entry.operand("dst").memory.get("nki", ())

    def copy(self, dst: Tensor, src: Tensor) -> None:
        """dst = src by the instruction the compiler would use: tensor_copy on chip, dma_copy
        to or from HBM (a PSUM source staged through SBUF)."""
        b = self.host.builtins
        if dst.onchip and src.onchip:
            b["tensor_copy"](dst=dst, src=src)
            return
        if src.buffer == "psum":
            src = self._staged(src)
        b["dma_copy"](dst=dst, src=src)

    def _staged(self, t: Tensor, span: Span | None = None) -> Tensor:
        """A PSUM tile copied to a new SBUF tile (tensor_copy), where an instruction cannot
        take it from PSUM; the copy is at `span` when given (the user's call that needs it),
        else at the line calling the function now."""
        staged = self.host.allocate(tuple(t.shape), t.dtype, "sbuf", name=f"{t.name}_sbuf")
        if span is not None:
            self.host.issue("tensor_copy", _impl("tensor_copy"), (), {"dst": staged, "src": t},
                            span)
        else:
            self.host.builtins["tensor_copy"](dst=staged, src=t)
        return staged

    def augmented(self, target: Any, op: str, value: Any) -> Any:
        view = target.view() if isinstance(target, IndexedTile) else target
        pending = value if isinstance(value, PendingTile) and value.pending else None
        if (pending is not None and op == "add" and pending.op == "nc_matmul"
                and view.buffer == "psum"):
            accumulate = self._accumulate(view)
            if accumulate is not _ADD:
                pending.write_into(view, accumulate=accumulate)
                return target
        self.flush()
        legacy = op == "divide" and legacy_caller()
        if op == "divide" and not legacy:
            raise ApdslTypeError("`/=` on a tile divides, and no NKI instruction divides: the "
                                 "compiler rejects divide", code="APK946",
                                 help="multiply by the reciprocal: t *= nl.reciprocal(x)")
        if isinstance(value, PendingTile):
            value = value.tile
        if isinstance(value, IndexedTile):
            value = value.view()
        b = self.host.builtins
        if legacy and (isinstance(value, Tensor) or legacy_divide.is_number(value)):
            # the legacy API divides (legacy_divide): multiply by the reciprocal
            op, value = "multiply", legacy_divide.multiplier(b, value)
        if isinstance(value, Tensor):
            if value.buffer == "psum" and view.buffer == "psum":  # at most one input in PSUM
                value = self._staged(value)
            b["tensor_tensor"](dst=view, data1=view, data2=value, op=OPERATORS[op])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            b["tensor_scalar"](dst=view, data=view, op0=OPERATORS[op], operand0=value)
        else:
            raise ApdslTypeError(f"cannot combine a tile with a {type(value).__name__}",
                                 code="APK946")
        return target

    def _accumulate(self, acc: Tensor) -> Any:
        """How `acc += matmul` accumulates (None: as `nc_matmul(accumulate=None)` infers it).
        Onto an accumulation a matmul started, in PSUM; onto a tile nothing has touched since
        it was allocated (`nl.ndarray(..., buffer=nl.psum)`), or onto zeros (`nl.zeros(...,
        buffer=nl.psum)`), by starting one (the matmul overwrites: the same sum); onto anything
        else, which a matmul cannot add to on every target, by computing the product apart and
        adding it (`_ADD`).  The untouched tile is the NKI reference's inference ("first write
        overwrites, subsequent writes accumulate", kept from the earlier compiler), which the
        published legacy attention tutorials (nki-samples v8a-v11) rely on."""
        if self.host.dry:
            return None
        if _matmul_wrote(acc) or _untouched(acc) or not acc.numpy().any():
            return None  # the matmul infers it: accumulating, or starting afresh
        return _ADD


_ADD = object()  # `acc += matmul` as a product and an add


def _matmul_wrote(t: Tensor) -> bool:
    """Can `nc_matmul(accumulate=True)` add onto every element of the PSUM view `t` on any
    target: did a matmul write each, with no other instruction writing it since?"""
    from ..runtime.core import psum
    from ..runtime.core.resolve import resolve
    c = psum.counts(resolve(t, "read", "dst"))
    return int(c[psum.ACCUMULATING] + c[psum.MATMUL_LAST_WROTE]) == int(c.sum())


def _untouched(t: Tensor) -> bool:
    """Has no instruction read or written any element of the PSUM view `t` since it was
    allocated?"""
    from ..runtime.core import psum
    from ..runtime.core.resolve import resolve
    c = psum.counts(resolve(t, "read", "dst"))
    return int(c[psum.NEW]) == int(c.sum())


def _impl(name: str) -> Callable[..., Any]:
    from ..runtime.table import implementation
    return implementation(name)


def _float32() -> Any:
    from ..tensor.dtypes import dtype
    return dtype("float32")


_SPECIAL = (IndexedTile, PendingTile)


def _special(args: tuple, kwargs: dict) -> bool:
    return any(_special_value(a) for a in (*args, *kwargs.values()))


def _special_value(v: Any) -> bool:
    return isinstance(v, _SPECIAL) or (isinstance(v, list) and any(
        isinstance(u, _SPECIAL) for u in v))


@cache
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(fn)


def _current_form(name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> bool:
    """Is this call the current API's form: its arguments bind to the current signature with
    a tensor for every tensor operand it names (`dst` first of all), or a number where the
    operand may be a scalar (`activation(t, op=..., data=..., scale=0.5)`)?"""
    if "dst" in kwargs:
        return True
    if not args:
        return False
    try:
        bound = _signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    from ..runtime.table import TABLE
    for operand in TABLE[name].operands:
        value = bound.arguments.get(operand.role)
        if value is None and operand.role != "dst":
            continue
        scalar = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) \
            and (name, operand.role) not in _TILES_ONLY
        if not isinstance(value, (Tensor, IndexedTile, PendingTile)) and \
                (operand.role == "dst" or not scalar):
            return False
    return True


def _read_modify_write(args: tuple, kwargs: dict) -> tuple[str, Callable[..., Any], tuple, dict]:
    """The legacy `dma_copy(dst=, src=, dst_rmw_op=np.add)` ("adds the source data to the
    existing destination data"; only np.add, only oob_mode=error) as the instruction the NKI
    migration guide gives for it: `dma_compute(dst, [dst, src], reduce_op=nl.add)`."""
    given = dict(zip(("dst", "src"), args)) | kwargs
    op = given.pop("dst_rmw_op")
    if not (op is np.add or getattr(op, "name", None) == "add"):
        raise ApdslTypeError(f"dma_copy: dst_rmw_op={getattr(op, '__name__', op)!r}: the legacy "
                             "reference supports only np.add", code="APK932",
                             help="pass dst_rmw_op=np.add, or compute before the copy")
    dst, src = given.pop("dst", None), given.pop("src", None)
    given.pop("dge_mode", None)  # (the compiler's choice for dma_compute)
    return "dma_compute", _impl("dma_compute"), (), {
        "dst": dst, "srcs": [dst, src], "reduce_op": OPERATORS["add"], **given}


# operands no form takes a number for: a number there means the call is the legacy form,
# its arguments one place earlier (`local_gather(src, index, 4)`: 4 is num_elem_per_idx)
_TILES_ONLY = frozenset({("local_gather", "src_buffer"), ("local_gather", "index")})
# nl names that are not functions of tiles (index grids, shape markers)
_NOT_FUNCTIONS = frozenset({"arange", "mgrid", "par_dim", "tile_size", "fp32", "bfp16"})
# nl functions taking a shape, where `nl.par_dim` may mark the partition dimension
_SHAPED = frozenset({"ndarray", "zeros", "ones", "full"})
# nl reductions `(x, axis, ...)`
_REDUCTIONS = frozenset({"sum", "max", "min", "prod", "all", "mean"})


def _masked_result(name: str, given: tuple[tuple, dict], operand: tuple[int, ...]
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The whole result of a masked nl function whose first operand has shape `operand`, and
    the operand axes it drops (ascending): for a reduction `(x, axis, ..., keepdims=False)`
    the operand's shape less the reduced axes (1 there with keepdims); for any other
    function the operand's shape.  Arguments the reduction itself refuses are left to it."""
    if name not in _REDUCTIONS:
        return operand, ()
    args, kwargs = given
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = len(operand)
    if not items or not all(isinstance(a, int) and not isinstance(a, bool) and -nd <= a < nd
                            for a in items):
        return operand, ()
    axes = sorted({a % nd for a in items})
    if axes[0] == 0:  # (across partitions: not an nl reduction's form; it reports that)
        return operand, ()
    if kwargs.get("keepdims") or (len(args) > 3 and args[3]):
        return tuple(1 if d in axes else n for d, n in enumerate(operand)), ()
    return tuple(n for d, n in enumerate(operand) if d not in axes), tuple(axes)


def _reduced_last(given: tuple, given_kw: dict, args: tuple, kwargs: dict
                  ) -> tuple[tuple, dict]:
    """A reduction of an index expression over free axes that are not the trailing ones
    (`nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4])`, the legacy AveragePool2D
    tutorial's "reducing on axes F2 and F4"): the view made of the expression lists its free
    axes with the reduced ones last (an access pattern may take its axes in any order, so no
    data moves), and the axis argument names those trailing positions.  The result keeps the
    other axes in their order.  A plain tile is left to the reduction's own rule (trailing
    and contiguous axes, as the reference says)."""
    x_given = given[0] if given else given_kw.get("x")
    x = args[0] if args else kwargs.get("x")
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    if not isinstance(x_given, IndexedTile) or not isinstance(x, Tensor) or axis is None:
        return args, kwargs
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim
    if not all(isinstance(a, int) and not isinstance(a, bool) and -nd <= a < nd
               for a in items):
        return args, kwargs
    axes = sorted({a % nd for a in items})
    if not axes or axes[0] == 0 or axes == list(range(axes[0], nd)):
        return args, kwargs
    order = [0, *(d for d in range(1, nd) if d not in axes), *axes]
    moved = x.permute(order)
    trailing = list(range(nd - len(axes), nd))
    if args:
        rest = args[2:] if len(args) > 1 else ()
        new_args = (moved, trailing, *rest) if len(args) > 1 else (moved,)
        new_kw = dict(kwargs) if len(args) > 1 else {**kwargs, "axis": trailing}
        return new_args, new_kw
    return args, {**kwargs, "x": moved, "axis": trailing}
