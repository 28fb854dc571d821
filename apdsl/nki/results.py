"""What a Python kernel gives back, checked as it returns, at the user's `return`:

- its returned tensors live in HBM (APK143: an SBUF or PSUM tile ends with the kernel);
- each was written whole (APK180: a forgotten store returns memory nothing wrote; said of the
  result, at the return, rather than as a read of it by whatever later copies it out);
- a `shared_hbm` tensor the kernel wrote is among them (APK181, a warning: an output written
  and not returned is lost when the kernel ends, and the caller sees None); an
  `nl.shared_constant` is the host's data, not an output.

The written checks follow the machine's `init_check` option, as every read does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError, Warning_
from ..runtime.core import results as written
from ..runtime.core.results import tensors_of
from ..runtime.core.written import has_written
from ..semantics.nl_constants import is_constant
from ..tensor import targets
from ..tensor.view import Tensor
from .locate import return_span


def check_on_chip(value: Any, fn: Callable[..., Any]) -> None:
    """APK143 for a returned SBUF or PSUM tile, at the kernel's return."""
    for t in tensors_of(value):
        if targets.is_onchip(t.buffer):
            err = ApdslTypeError(
                f"kernel {fn.__name__} returns {_named(t)} in {t.buffer}; a kernel's outputs "
                "live in HBM", code="APK143", span=return_span(fn),
                notes=["NKI known issues: \"Top-level tensors must be on HBM. The input and "
                       "output tensors of the top-level NKI kernel ... must be located in HBM\""],
                help="allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm) "
                "and dma_copy the result into it")
            raise err.with_label(t.storage.span, "allocated here")


def check_written(value: Any, fn: Callable[..., Any]) -> None:
    """APK180 for a returned tensor (part of which) nothing wrote, at the kernel's return."""
    written.check_written(value, fn.__name__, lambda: return_span(fn))


def unreturned(value: Any, outputs: list[Tensor], fn: Callable[..., Any]) -> list[Warning_]:
    """APK181 for each `shared_hbm` tensor the kernel wrote but does not return."""
    returned = {t.storage.id for t in tensors_of(value)}
    out = []
    seen = set()
    for t in outputs:
        storage = t.storage
        if storage.id in returned or storage.id in seen or not has_written(storage) or \
                is_constant(t):
            continue
        seen.add(storage.id)
        got = "returns None" if value is None else "does not return it"
        w = Warning_(f"kernel {fn.__name__} writes the shared_hbm tensor {_named(t)} but {got}: "
                     "its data is lost when the kernel ends", code="APK181",
                     span=storage.span, help=f"return {t.name} (a kernel's outputs are what it "
                     "returns)", tensor=t.name)
        out.append(w.with_label(return_span(fn), f"kernel {fn.__name__} returns "
                                f"{'None' if value is None else 'here'}"))
    return out


def _named(t: Tensor) -> str:
    return f"`{t.name}`" if t.name else "a tensor"
