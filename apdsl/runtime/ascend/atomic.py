"""`asc.set_atomic_add(dtype)` and `asc.set_atomic_none()`: atomic accumulation of the writes
to GM (AscendC SetAtomicAdd / SetAtomicNone, Atlas A2).

While it is on, every write to GM by MTE3 (UB -> GM: `dma_copy`, `asc.data_copy`,
`asc.data_copy_pad`) and by FIX (L0C -> GM: `dma_copy`, `asc.fixpipe`) adds what it moves to
what GM holds instead of replacing it.  The setting belongs to the core that made it (each AI
core has its own control register; it is kept in the core's machine) and holds until
`set_atomic_none`.  The AscendC page lists int8, int16, float16, bfloat16, int32 and float32
on Atlas A2; a write of another dtype than the one set, or a sum that leaves an integer
dtype's range (the page does not say whether it wraps or saturates), is an error (APK515).
GM is not zeroed first: the sum reads it, init-checked.

Two atomic writes to the same GM bytes are not a race, from two pipes or two cores: the
hardware adds them in some order and the sum is the same (the race checker,
`apdsl.runtime.sync`, reads the setting); an atomic write and a read of those bytes still are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.dtypes import dtype as to_dtype
from ...tensor.machine import current
from ..core import execute as ex
from ..core.operands import instruction_label

# the machine's engine_state key (the sync checker reads the same key)
KEY = "ascend.atomic"
ATOMIC_DTYPES = ("int8", "int16", "float16", "bfloat16", "int32", "float32")


def set_atomic_add(dtype: Any, name: str | None = None) -> None:
    """From now on this core's MTE3 and FIX writes to GM add `dtype` data to GM's."""
    label = instruction_label("asc.set_atomic_add", name)
    try:
        d = to_dtype(dtype).name
    except Exception:  # noqa: BLE001 - any non-dtype is the same error here
        d = None
    if d not in ATOMIC_DTYPES:
        raise ApdslRuntimeError(f"{label}: {dtype!r} is not an atomic-add dtype of Atlas A2",
                                code="APK515", notes=[f"SetAtomicAdd takes "
                                                      f"{', '.join(ATOMIC_DTYPES)}"],
                                help="asc.set_atomic_add(float32), for example")
    current().engine_state[KEY] = d


def set_atomic_none(name: str | None = None) -> None:
    """Writes to GM replace GM's data again."""
    current().engine_state.pop(KEY, None)


def state() -> str | None:
    """The dtype atomic add is on for in this core, or None."""
    return current().engine_state.get(KEY)


def check_dtype(label: str, dst: Any) -> None:
    """APK515 for a write to GM under atomic add of another dtype than the one set (checked
    before anything runs, in check mode too)."""
    on = current().engine_state.get(KEY)
    if on is not None and dst.buffer == "gm" and dst.dtype.name != on:
        raise ApdslRuntimeError(f"{label}: atomic add is on for {on}, but dst {dst.name} is "
                                f"{dst.dtype}", code="APK515",
                                notes=["SetAtomicAdd<T> adds data of dtype T; the page does "
                                       "not say what another dtype's write does"],
                                help=f"asc.set_atomic_add({dst.dtype}) before this write, or "
                                "asc.set_atomic_none()")


def combine(acc: ex.Access, values: np.ndarray, label: str, dst: Any) -> np.ndarray:
    """What a write of `values` through `acc` (a GM destination) stores: under atomic add, the
    sum with what GM holds; otherwise `values`."""
    on = current().engine_state.get(KEY)
    if on is None or dst.buffer != "gm":
        return values
    check_dtype(label, dst)
    old = ex.read(acc, label, "dst").reshape(np.shape(values))
    if dst.dtype.kind == "f":
        return old.astype(np.float32) + np.asarray(values, dtype=np.float32)
    total = old.astype(np.int64) + np.asarray(values).astype(np.int64)
    info = np.iinfo(dst.dtype.np)
    if ((total < info.min) | (total > info.max)).any():
        raise ApdslRuntimeError(f"{label}: an atomic add leaves {dst.dtype}'s range",
                                code="APK527", notes=["the AscendC page does not say whether "
                                                      "atomic integer adds wrap or saturate"],
                                help="keep the sums in range, or accumulate in a wider dtype")
    return total


def atomic_copy(dst: Any, src: Any, name: str | None, label: str) -> bool:
    """`dma_copy` UB -> GM or L0C -> GM under atomic add: the copy's rules, then the sum (no
    fast path: each write reads GM).  False: atomic add is off or the copy is not one of
    those, and the ordinary copy runs."""
    if KEY not in current().engine_state or dst.buffer != "gm" or src.buffer not in ("ub",
                                                                                      "l0c"):
        return False
    from ..core import trace
    from ..core.operands import resolve_operands
    from .dma import copy_plan
    check_dtype(label, dst)
    plan = copy_plan(dst, src, label)
    if plan.empty:
        return True
    dv = dst if plan.dv is None else plan.dv
    sv = src if plan.sv is None else plan.sv
    accs = resolve_operands(label, ex.TI_GROUP, ("src", sv), ("dst", dv))
    trace.record("dma_copy", name, {"dst": dv, "src": sv})
    if accs is None:
        return True
    sacc, dacc = accs
    if sacc.size != dacc.size:
        raise ApdslRuntimeError(f"{label}: dst has {dacc.size} elements, src {sacc.size}",
                                code="APK306", help="a DMA moves as many elements as it reads")
    values = ex.read(sacc, label, "src").reshape(dacc.shape)
    out = combine(dacc, values, label, dst)
    ex.prepare_write(dacc, label, "dst")
    ex.store(dacc, out)
    return True
