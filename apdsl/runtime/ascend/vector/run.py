"""One vector instruction instance: checked, recorded on pipe V, executed.

`prepare` does what every vector instruction does before it computes: each operand a tensor
in a buffer and of a dtype its table entry allows (APK309/APK461/APK462), in UB 32-byte
aligned (APK524), contiguous (APK551); the addressing form (count, or mask + repeats +
strides: `repeat`) turned into the elements each operand touches, inside the operand
(APK552), with AscendC's overlap rule (APK553); the instance recorded on its pipe (the race
checker, `lower`, `profile`).  The `Instance` it returns reads the touched elements (with the
init check) and writes dst's; check mode returns None after the checks, as does an instance
that touches nothing (a count or repeat_times of 0 is a no-op on Atlas A2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ....errors import ApdslRuntimeError
from ....tensor.machine import current
from ....tensor.view import Tensor
from ...core import execute as ex
from ...core import trace, unwritten
from ...core.operands import check_operand, instruction_label, tensor_arg
from ...core.resolve import check_live
from ...table import TABLE
from ..atomic import check_dtype, combine
from ..dma import check_alignment
from . import repeat as rp

INT_RANGES = {name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
              for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")}


def is_float(dtype: str) -> bool:
    return dtype in ("float16", "float32", "bfloat16")


class Instance:
    """A checked instance: its label, operands and the storage elements each touches."""

    def __init__(self, label: str, tensors: dict[str, Tensor], offs: dict[str, np.ndarray],
                 form: rp.Form) -> None:
        self.label = label
        self.tensors = tensors
        self.offs = offs
        self.form = form

    def dtype(self, role: str) -> str:
        return self.tensors[role].dtype.name

    def _acc(self, role: str) -> ex.Access:
        t = self.tensors[role]
        o = self.offs[role]
        return ex.Indexed(t.name, t.storage, t.dtype, o.shape, None, o)

    def raw(self, role: str) -> np.ndarray:
        """The touched elements of `role` as stored (init-checked)."""
        return ex.read(self._acc(role), self.label, role)

    def math(self, role: str) -> np.ndarray:
        """The touched elements as the arithmetic sees them: float32 for floating dtypes,
        int64 (exact) for integers."""
        if is_float(self.dtype(role)):
            return ex.read_float32(self._acc(role), self.label, role)
        return self.raw(role).astype(np.int64)

    def write(self, values: np.ndarray, role: str = "dst") -> None:
        """Write `role`'s touched elements: floats by the one cast rule, integers exactly
        (APK554 when a result does not fit: the AscendC docs do not say what the vector unit
        does then), values already of the dtype bit for bit."""
        acc = self._acc(role)
        dtype = self.dtype(role)
        values = np.asarray(values)
        if self.tensors[role].buffer == "gm":  # under set_atomic_add a GM write adds
            values = combine(acc, values, self.label, self.tensors[role])
        if values.dtype.kind in "iu" and dtype in INT_RANGES and values.dtype != acc.dtype.np:
            lo, hi = INT_RANGES[dtype]
            bad = (values < lo) | (values > hi)
            if bad.any():
                bad &= ~unwritten.defined(np.zeros(bad.shape, bool))
            if bad.any():
                i = int(np.argmax(bad.ravel()))
                raise ApdslRuntimeError(
                    f"{self.label}: the result {int(values.ravel()[i])} does not fit {dtype} "
                    f"(element {int(acc.offs.ravel()[i])} of {self.tensors[role].name})",
                    code="APK554", notes=[f"{int(bad.sum())} results are outside "
                                          f"[{lo}, {hi}]"],
                    help="the AscendC docs do not say whether the vector unit wraps or "
                    "saturates here, so apdsl stops: keep the values in range, or compute "
                    "in a wider dtype", dtype=dtype)
        ex.store(acc, values.reshape(acc.shape))


def lanes_of(tensors: Mapping[str, Tensor]) -> int:
    """Lanes of one repeat: 256 bytes of the widest operand dtype."""
    return rp.lanes_per_repeat(max(t.dtype.bits for t in tensors.values()))


def form_of(label: str, lanes: int, count: Any, mask: Any, repeat_times: Any,
            repeat_params: Any, is_set_mask: Any, params_cls: type | None,
            strides: Mapping[str, tuple[Any, Any]] | None = None) -> rp.Form:
    """The form an instance's arguments choose: `count` alone is the count form; `mask`
    (or the fourth positional argument), `repeat_times` and `repeat_params` the mask form."""
    if repeat_times is None and repeat_params is None and strides is None:
        if mask is not None:
            raise ApdslRuntimeError(f"{label}: mask= needs repeat_times and repeat_params "
                                    "(the mask form)", code="APK550",
                                    help="give mask, repeat_times and repeat_params, or only "
                                    "count")
        if count is None:
            raise ApdslRuntimeError(f"{label}: give count (the count form) or mask, "
                                    "repeat_times and repeat_params (the mask form)",
                                    code="APK550", help="for example count=256")
        return rp.count_form(label, count)
    m = mask if mask is not None else count
    if m is None or repeat_times is None or (repeat_params is None and strides is None):
        raise ApdslRuntimeError(f"{label}: the mask form needs mask, repeat_times and "
                                "repeat_params", code="APK550",
                                help="give all three, or only count (the count form)")
    if strides is None:
        if params_cls is not None and not isinstance(repeat_params, params_cls):
            raise ApdslRuntimeError(
                f"{label}: repeat_params must be an asc.{params_cls.__name__}, got "
                f"{type(repeat_params).__name__}", code="APK550",
                help=f"asc.{params_cls.__name__}(...) with the block and repeat strides")
        strides = repeat_params.strides()
    return rp.mask_form(label, m, repeat_times, strides, lanes, is_set_mask)


def checked(op: str, operands: dict[str, Any], name: str | None,
            aligned: tuple[str, ...] | None = None,
            ) -> tuple[str, dict[str, Tensor], dict[str, int]]:
    """(label, tensors, start elements): each operand in a buffer and of a dtype the entry
    allows, contiguous, and 32-byte aligned in UB (`aligned`: the roles that rule binds,
    default all; a reduction's result has its own)."""
    entry = TABLE[op]
    label = instruction_label(op, name)
    tensors = {role: tensor_arg(t, label, role) for role, t in operands.items()}
    for role, t in tensors.items():
        check_live(t, label, role)  # a queue's freed tensor (free_tensor) is APK408
        check_operand(entry, label, role, t)
        if aligned is None or role in aligned:
            check_alignment(t, label, role)
    starts = {role: rp.start_of(t, label, role) for role, t in tensors.items()}
    return label, tensors, starts


def finish(op: str, name: str | None, label: str, tensors: dict[str, Tensor],
           starts: dict[str, int], rels: dict[str, np.ndarray], views: dict[str, Tensor],
           form: rp.Form, sources: tuple[str, ...] | None = None,
           engine: str | None = None) -> Instance | None:
    """Bounds (APK552) and overlap (APK553) of the touched elements `rels` (from each
    operand's start), then the record (`views`: what `lower` and the race checker see) on
    the entry's pipe; the `Instance`, or None in check mode or for a no-op."""
    for role, t in tensors.items():
        rp.check_bounds(label, role, t, rels[role], form)
    if next(iter(rels.values())).size == 0:
        return None  # count 0 or repeat_times 0: a no-op
    offs = {role: rels[role] + starts[role] for role in tensors}
    if "dst" in tensors:
        roles = {role: (tensors[role], offs[role]) for role in tensors}
        others = tuple(r for r in tensors if r != "dst") if sources is None else sources
        rp.check_overlap(label, roles, "dst", others)
    if "dst" in tensors and tensors["dst"].buffer == "gm":
        check_dtype(label, tensors["dst"])  # under set_atomic_add (APK515)
    if engine is None:
        engine = TABLE[op].engines["ascend"][0]
    trace.record(op, name, views, engine=engine)
    if current().check:
        return None
    return Instance(label, tensors, offs, form)


def prepare(op: str, operands: dict[str, Any], name: str | None, make_form: Any,
            sources: tuple[str, ...] | None = None, bits: Mapping[str, int] | None = None,
            ) -> Instance | None:
    """Check and record instance `op` of the table on `operands` (role -> tensor, `dst`
    first; see the module docstring).  `make_form(label, tensors)` gives its `Form`;
    `sources`: the roles the overlap rule compares with dst (default: every other role);
    `bits`: the element size a role is addressed in, where it differs from its dtype's."""
    label, tensors, starts = checked(op, operands, name)
    form = make_form(label, tensors)
    size = {role: (bits or {}).get(role, t.dtype.bits) for role, t in tensors.items()}
    rels = {role: rp.relative(form, role, size[role]) for role in tensors}
    views = {}
    for role, t in tensors.items():
        rp.check_bounds(label, role, t, rels[role], form)
        if rels[role].size:
            views[role] = rp.record_view(t, rels[role], form, role, size[role])
    return finish(op, name, label, tensors, starts, rels, views, form, sources)
