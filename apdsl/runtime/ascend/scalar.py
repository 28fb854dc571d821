"""Scalar access to tensor data (SPEC 17): `get_value(offset)` and `set_value(offset, value)`,
as AscendC's GlobalTensor/LocalTensor GetValue/SetValue (the scalar unit, pipe S): a read or a
write of one element, which the race checker sees as an access on pipe S (so a value a DMA
stored to GM is read only after an `MTE3_S` event, and a DMA reads what `set_value` wrote only
after `S_MTE2`/`S_MTE3`), and `lower` shows in program order.

`offset` counts elements of the tensor in its logical row-major order (a GlobalTensor is 1-D:
its element offset); a tuple is a coordinate.  In check mode an element nothing wrote reads as
0 (check mode moves no data; the value only steers the program's own control flow).

Not modelled: the scalar unit's data cache (SetValue writes the core's DCache, which reaches GM
only after DataCacheCleanAndInvalid): apdsl writes through to GM at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslTypeError
from ...tensor.machine import current
from ...tensor.view import Tensor
from ..core.trace import record_event
from ..sync.pipes import PIPE_INDEX
from ..sync.sync_facts import facts_of

_S = PIPE_INDEX["S"]


def _element(t: Any, offset: Any, what: str) -> Tensor:
    """The one-element view of `t` at `offset` (APK597 for a bad offset)."""
    if not isinstance(t, Tensor):
        raise ApdslTypeError(f"{what} is a method of tensors", code="APK597")
    shape = tuple(t.shape)
    if isinstance(offset, tuple):
        coord = offset
    elif isinstance(offset, (int, np.integer)) and not isinstance(offset, bool):
        n = int(np.prod(shape)) if shape else 1
        if not 0 <= int(offset) < n:
            raise ApdslTypeError(f"{what}({offset}): offset outside {t.name}'s {n} elements",
                                 code="APK597", help=f"an element offset 0-{n - 1}")
        coord = tuple(int(c) for c in np.unravel_index(int(offset), shape)) if shape else ()
    else:
        raise ApdslTypeError(f"{what}: the offset must be an int (elements) or a coordinate "
                             f"tuple, not {type(offset).__name__}", code="APK597")
    if len(coord) != len(shape) or not all(
            isinstance(c, (int, np.integer)) and 0 <= int(c) < n for c, n in zip(coord, shape)):
        raise ApdslTypeError(f"{what}({offset}): no element {coord} in {t.name} of shape "
                             f"{list(shape)}", code="APK597")
    return t[tuple(slice(int(c), int(c) + 1) for c in coord)] if shape else t


def _access(op: str, view: Tensor, write: bool, shown: tuple[Any, ...]) -> None:
    """Check and record the access on pipe S (inside a checked kernel), show it in `lower`."""
    m = current()
    s = m.sync
    if s is not None:
        key, base, lo, hi, dense, layout, bits, _, owner = facts_of(view)
        plan = ("S", _S, ((key, lo, hi, write, (layout, bits, base, dense, owner),
                           "dst" if write else "src"),))
        s.access(op, None, {"dst" if write else "src": view}, m.span, m.location,
                 order=False, plan=plan)
    record_event(op, shown, "S")


def get_value(t: Any, offset: Any) -> Any:
    """`t.get_value(offset)`: element `offset` of `t` as a Python number (pipe S)."""
    view = _element(t, offset, "get_value")
    _access("get_value", view, False, (offset,))
    if current().check:
        from ...errors import ApdslError
        try:
            return view.numpy().reshape(-1)[0].item()
        except ApdslError:  # (check mode: an element it cannot know)
            return 0
    return view.numpy().reshape(-1)[0].item()


def set_value(t: Any, offset: Any, value: Any) -> None:
    """`t.set_value(offset, value)`: write element `offset` of `t` (pipe S), cast to its
    dtype as a scalar assignment is."""
    view = _element(t, offset, "set_value")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ApdslTypeError(f"set_value: the value must be a number, not "
                             f"{type(value).__name__}", code="APK597")
    _access("set_value", view, True, (offset, value))
    if current().check:
        return
    from ..core.move import write_view
    write_view(view, np.asarray(value).astype(view.dtype.np).reshape(view.shape))
