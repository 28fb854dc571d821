"""The DMA move itself, once the family's rules are checked: both operands resolved, the same
number of elements, the instruction recorded, then the elements copied in logical row-major
order (converting the dtype through float32).  NKI's `dma_copy` (`copies`) and the Ascend DMA
(`ascend`, after its alignment and fractal rules) both end here."""

from __future__ import annotations

from math import prod
from typing import Any

from ...errors import TargetError
from ...tensor.machine import current
from ...tensor.view import Tensor
from . import execute as ex
from . import trace
from .operands import operand_shapes, resolve_operands

__all__ = ["nki_dma"]


def nki_dma(dst: Tensor, src: Tensor, name: str | None, label: str,
            given: dict[str, Any] | None = None) -> list[ex.Access] | None:
    """The copy; returns the resolved accesses (src, dst), None in check mode."""
    if src.dynamic is None and dst.dynamic is None and not current().check:
        # the common case of `resolve_operands`, without its generality
        accs = [ex.resolve(src, label, "src"), ex.resolve(dst, label, "dst")]
        if accs[0].size != accs[1].size:
            _count_error(dst, src, accs[1].shape, accs[0].shape, label)
    else:
        accs = resolve_operands(label, ex.TI_GROUP, ("src", src), ("dst", dst))
        ss, ds = operand_shapes(accs, src, dst)
        if ss is not None and ds is not None and prod(ss) != prod(ds):
            _count_error(dst, src, ds, ss, label)
    trace.record("dma_copy", name, {"dst": dst, "src": src}, hints=given)
    if accs is not None:
        ex.copy(accs[1], accs[0], label)
    return accs


def _count_error(dst: Tensor, src: Tensor, ds: tuple[int, ...], ss: tuple[int, ...],
                 label: str) -> None:
    raise TargetError(f"{label}: dst has {prod(ds)} elements {ds}, src has {prod(ss)} {ss}",
                      code="APK306",
                      notes=[f"dst {dst.name} @ {dst.buffer}, src {src.name} @ {src.buffer}"],
                      help="a DMA moves elements in row-major order; both sides must hold the "
                      "same number of elements", dst_shape=ds, src_shape=ss)
