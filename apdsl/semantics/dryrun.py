"""Check mode's stand-in for the checks an instruction makes as it moves data.

In check mode (the machine's `check` flag) an instruction validates and lowers its operands but
returns before it moves data, so the checks it makes on the way (a destination touching an
element twice, APK405) would be lost.  The destination does not depend on data when its layout
is static and it has no runtime index, so check mode makes that check here, after the
instruction's own checks passed: in the same order as `run`, with the same message.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from ..runtime.table import TABLE, outputs
from ..tensor import targets
from ..tensor.view import Tensor
from .host import Host

if TYPE_CHECKING:
    from ..tensor.registers import VirtualRegister

# The instructions that write their `dst` operand whole, through `dst` itself (the table says
# which).  On Ascend,
# `mmad` and a copy between TLA tiles write only the valid extent (nothing when it is empty),
# and a memset of a formatted tensor or a load into L0A/L0B writes the fractals around it:
# those are left to `run` rather than checked on a view they would not write.
WRITERS = frozenset(name for name, entry in TABLE.items() if entry.writes_dst)
ASCEND_WRITERS = frozenset(name for name, entry in TABLE.items() if entry.writes_dst
                           and "ascend" in entry.operand("dst").memory)


@cache
def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def check_destination(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """Raise the APK405 that executing instruction `op` would raise for its destination."""
    if op not in WRITERS:
        return
    sig = _signature(fn)
    if sig is None:
        return
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return
    dst = bound.arguments.get("dst")
    from ..runtime.core import execute as ex
    if type(dst) is not Tensor or dst.dynamic is not None or not (
            dst.layout.static or ex.registers_known(dst.layout)):
        return
    if targets.family(dst.buffer) != "nki":
        src = bound.arguments.get("src")
        if op not in ASCEND_WRITERS or dst.origin_shape is not None or (
                type(src) is Tensor and src.origin_shape is not None):
            return
        if op == "memset" and dst.format != "ND":
            return  # InitConstValue writes the whole fractals under dst, not dst itself
        from ..runtime.ascend.dma import LOAD_PATHS
        if type(src) is Tensor and (src.buffer, dst.buffer) in LOAD_PATHS:
            return  # Load2D and LoadData move the whole fractals under dst, not dst itself
    from ..runtime.core import execute as ex
    from ..runtime.core.trace import instruction_label
    label = instruction_label(op, bound.arguments.get("name"))
    ex.prepare_write(ex.resolve(dst, label, "dst"), label, "dst")


# Check mode keeps exact written state only for storages up to this many units (a mask of a
# byte a unit; check of a program over huge HBM tensors must stay as cheap as it was): a larger
# one written by any instruction counts as written whole.
EXACT_UNITS = 1 << 24


def note_written(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """Check mode's written state, for a kernel's result (APK180 at its return, as `run`
    says it): the `dst` a table entry writes whole, when static, is marked written as `run`
    marks it; any other output the call writes counts as written whole (check mode cannot
    tell which of its elements, and an error it cannot be sure of is not reported)."""
    from ..runtime.core import execute as ex
    from ..runtime.core.trace import instruction_label
    from ..runtime.core.written import note_written_view, note_written_whole
    sig = _signature(fn)
    try:
        bound = sig.bind(*args, **kwargs).arguments if sig is not None else None
    except TypeError:
        bound = None
    roles = _output_roles(op)
    for role, t in (bound or {}).items():
        if role not in roles or type(t) is not Tensor:
            continue
        exact = role == "dst" and op in WRITERS and targets.family(t.buffer) == "nki" and \
            t.dynamic is None and t.layout.static and t.storage.units_total <= EXACT_UNITS
        if exact:
            label = instruction_label(op, bound.get("name"))  # type: ignore[union-attr]
            note_written_view(ex.resolve(t, label, role))
        else:
            note_written_whole(t.storage)


def _output_roles(op: str) -> frozenset[str]:
    return outputs(op) or frozenset()


def written(op: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> list[Tensor]:
    """The tensors the call of instruction `op` writes: every operand its table entry declares
    written (`dst`, `reduce_res`, `dst_idx`, ...), by keyword or by position.  When the call
    does not bind (the instruction will refuse it), every tensor passed counts: forgetting a
    value check mode knew costs a check, a stale one would be checked as if it were true."""
    roles = _output_roles(op)
    sig = _signature(fn)
    try:
        bound = sig.bind(*args, **kwargs).arguments if sig is not None else None
    except TypeError:
        bound = None
    if bound is None:
        return [t for v in (*args, *kwargs.values()) for t in _tensors_in(v)]
    return [t for role, v in bound.items() if role in roles for t in _tensors_in(v)]


def _tensors_in(v: Any) -> list[Tensor]:
    """A tensor, or the tensors of a (nested) list of them (the collectives' `dsts`,
    `dsts_by_channel`)."""
    if type(v) is Tensor:
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors_in(x)]
    return []


def loaded_register(op: str, args: tuple, kwargs: dict) -> VirtualRegister | None:
    """The register a `register_load` set (its value comes from memory, which check mode does
    not read), else None."""
    if op != "register_load":
        return None
    from ..tensor.registers import VirtualRegister
    reg = kwargs.get("reg", args[0] if args else None)
    return reg if isinstance(reg, VirtualRegister) else None


def run_dry(program: Host, op: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """Check mode's call of instruction `op`: it validates and lowers its operands, moves no
    data, and makes the checks executing it would make on its destination.  Every output
    operand (`written`) loses its known value first: a later `host()` of it is unknown.  `program` (an
    `.apk` interpreter or a Python kernel's host) keeps `known_values` (storage whose input
    values are still known) and `loaded_registers` (registers whose value check mode cannot
    know).  The program's machine is in check mode, so the instruction itself moves nothing."""
    for t in written(op, fn, args, kwargs):  # their contents are no longer known
        program.known_values.discard(t.storage)
    result = fn(*args, **kwargs)
    check_destination(op, fn, args, kwargs)
    note_written(op, fn, args, kwargs)
    reg = loaded_register(op, args, kwargs)
    if reg is not None:
        program.loaded_registers[id(reg)] = reg
    return result
