"""`nl.ndarray(shape, dtype, buffer=sbuf, name='', address=None)` as the NKI language reference
defines it, and `address=` on the `.apk` `ndarray`: with an address the tensor is placed at
that (partition_offset, free_offset) of SBUF or PSUM (`apdsl.tensor.placement` says what the
docs fix and what apdsl refuses); without one it is allocated as any other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import TargetError
from ..tensor import placement, targets
from ..tensor.placement import ADDRESS
from ..tensor.view import Tensor
from .host import Host


def allocate(interp: Host, shape: Any, dtype: Any, buffer: Any, fmt: Any, name: str,
             address: Any) -> Tensor:
    """A new tensor through the program's allocator (`interp.allocate`: names, launches),
    placed at `address` when one is given."""
    span = interp.call_span
    if address is None:
        return interp.allocate(shape, dtype, buffer, fmt, name, span=span)
    buf = targets.buffer_name(buffer)
    if not targets.is_onchip(buf) or targets.family(buf) != "nki":
        raise TargetError(
            f"address=: {buf} has no (partition, free) address; the NKI reference places "
            "SBUF and PSUM tensors", code="APK161", buffer=buf, param=ADDRESS,
            help="drop address= (HBM tensors are placed by the runtime)")
    placement.address_pair(address)  # its form, before anything is allocated
    from ..tensor.machine import current
    # the shape, dtype and name as any allocation makes them, on a scratch machine so where
    # apdsl would have put the tensor cannot fail (the real place is the address)
    with current().child().active():
        t = interp.allocate(shape, dtype, buf, fmt, name, span=span)
    return placement.place(t, address)


def make(interp: Host) -> dict[str, Callable[..., Any]]:
    """`nl.ndarray` with the reference's parameters (its fourth positional is the name)."""

    def ndarray(shape: Any, dtype: Any, buffer: Any = "sbuf", name: str = "",
                address: Any = None) -> Tensor:
        """`nl.ndarray(shape, dtype, buffer=nl.sbuf, name='', address=None)`: a new tensor
        (memory unwritten), at `address` = (partition_offset, free_offset in bytes) when
        given."""
        if address is None:
            return interp.allocate(shape, dtype, buffer, "ND", name, span=interp.call_span)
        return allocate(interp, shape, dtype, buffer, "ND", name, address)

    return {"ndarray": ndarray}


NAMES = ("ndarray",)
