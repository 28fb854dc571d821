"""A kernel's result, checked as the kernel returns (`.apk` and Python kernels alike, in `run`
and in `check`): each returned tensor was written whole, and holds no data computed from
unwritten memory (SPEC 4: a kernel's returned tensor is an observable point).  A forgotten
store returns memory nothing wrote; it is said of the result, at the kernel's `return`, rather
than left to whatever reads the result later (printing it, `-o`), which would report a read of
an unwritten element with no line of the kernel.  The check follows the machine's `init_check`
option, as every read does.  In check mode the written state is what the instructions'
destinations say (`apdsl.semantics.dryrun.note_written`): no data, the same answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, Span
from ...tensor.liveness import DORMANT, PENDING, revive, start
from ...tensor.machine import current
from ...tensor.view import Tensor
from .access import fmt_coord, units_of
from .resolve import resolve
from .written import has_written, unwritten_error


def tensors_of(value: Any) -> Iterator[Tensor]:
    """The tensors of a kernel's result (a tensor, or tuples and lists of them)."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_of(v)


def check_written(value: Any, kernel: str, where: Callable[[], Span | None]) -> None:
    """APK180 when a returned tensor (or part of it) was never written; `where()` gives the
    kernel's return (asked only then)."""
    if not current().options.init_check:
        return
    for t in tensors_of(value):
        storage = t.storage
        if storage.freed is DORMANT:  # a result is read after the kernel: live to its end
            revive(storage, f"kernel {kernel}", "result")
        elif storage.freed is PENDING:  # never accessed in the kernel: read now
            start(storage)
        if storage.all_written or storage.freed:
            continue
        ok: Any = False
        if has_written(storage) or storage.taint is not None:
            acc = resolve(t, f"kernel {kernel}", "result")
            ok = acc.written()
            if ok is True:
                continue
            if storage.taint is not None:  # data computed from unwritten memory
                bad = ~np.asarray(ok, bool)
                if storage.taint.ids[np.reshape(units_of(acc.dtype, storage, acc.offsets()),
                                                acc.shape + (-1,))[bad]].any():
                    raise unwritten_error(acc, f"kernel {kernel}", "result", ok).replace(
                        span=where())
        name = f"`{t.name}`" if t.name else "tensor"
        if ok is False:
            what = "was never written"
            notes = ["nothing stored into it: a store (dma_copy, nl.store into it) is "
                     "missing, or writes another tensor"]
        else:
            missing = int(ok.size - np.count_nonzero(ok))
            coord = np.unravel_index(int(np.argmin(np.reshape(ok, -1))), ok.shape)
            what = "is only partly written"
            notes = [f"{missing} of its {ok.size} elements were never written, the first at "
                     f"{t.name}{fmt_coord(coord)}",
                     "NKI known issues: \"Unwritten output tensor will have garbage data\": "
                     "the caller would read garbage there, so every element of a returned "
                     "tensor must be written (memset it first if only some are computed)"]
            if storage.unit_bits < t.dtype.bits:  # written through a narrower view
                notes.append("an element counts as written only when all its bytes are: a "
                             "write through a narrower view (a bfloat16 or uint8 view of "
                             "float32, an int4 nibble) wrote part of it")
        raise ApdslRuntimeError(
            f"the kernel's result {name} {what}", code="APK180", span=where(),
            notes=[*notes, f"view {t.name}: shape {tuple(t.shape)}, storage "
                   f"{storage.describe()}"],
            help="store the result into it before returning it (dma_copy(dst=out, "
            "src=tile)); --no-init-check reads unwritten memory as 0",
            tensor=t.name, kernel=kernel).with_label(storage.span, "allocated here")
