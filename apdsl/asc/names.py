"""The `asc` names a kernel uses, besides its memory objects: the instructions of the table
(`asc.add`, `asc.data_copy`, ...: the builtins `.apk` programs use, resolved for the kernel
call under way), the synchronisation builtins, the cores' functions (block index, AIC/AIV,
cross-core flags, sync_all), the scalar bit functions (`apdsl.asc.scalar_bits`), pyasc's enums
and parameter records, `asc.range` and `asc.ConstExpr`; any other pyasc name is APK660 at the user's line, naming it."""

from __future__ import annotations

import builtins as py
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import ApdslTypeError
from ..nki.host import current
from ..nki.locate import caller_span
from ..runtime.ascend import core_ops
from ..semantics import cores as cores_names
from .builtin import call_builtin
from .errors import missing
from .scalar_bits import FUNCTIONS as SCALAR_BITS
from .served import auto_sync

T = TypeVar("T")

# pyasc names apdsl does not model yet, with why (the rest of pyasc's names get APK660 too)
NOT_YET = {
    "TBufPool": "buffer pools are not in apdsl yet; use TPipe.init_buffer",
}

SYNC = ("set_flag", "wait_flag", "pipe_barrier")

# AscendC's constants pyasc reads with `asc.property(asc.X)` (Atlas A2: 32-byte blocks and
# C0, L1 512 KiB, L0C 128 KiB)
PROPERTIES = {"DEFAULT_C0_SIZE": 32, "ONE_BLK_SIZE": 32, "TOTAL_L1_SIZE": 512 * 1024,
              "TOTAL_L0C_SIZE": 128 * 1024}
# pyasc names that are a table instruction without the `asc.` prefix: `asc.mmad(dst, fm,
# filter, params)` is the table's `mmad` (its entry takes pyasc's form too)
PLAIN = frozenset({"mmad"})
# the cores' names (`asc.get_sub_block_idx()`, `asc.cross_core_set_flag(...)`, ...): the
# builtins `.apk` kernels call, bare-named as in pyasc
CORES = frozenset(cores_names.QUERIES) | frozenset(cores_names.SYNC)


def instruction(name: str) -> Callable[..., Any]:
    """`asc.NAME(...)`: the table's `asc.NAME` builtin for the call under way, its tensors
    unwrapped from pyasc's Global/LocalTensor."""
    key = name if name in SYNC or name in CORES or name in PLAIN else f"asc.{name}"

    erased = name in SYNC  # insert_sync's EraseSync pass removes the kernel's own events

    def run(*args: Any, **kwargs: Any) -> Any:
        if erased and auto_sync():
            return None
        return call_builtin(key, args, kwargs)

    run.__name__ = run.__qualname__ = name
    return run


def has_instruction(name: str) -> bool:
    return name in SYNC or name in CORES or name in PLAIN or \
        f"asc.{name}" in current().builtins


def enum_or_record(name: str) -> Any:
    from ..runtime.ascend.vector import params
    if name in params.ENUMS:
        return params.ENUMS[name]
    return params.PARAMS.get(name)


def lookup(name: str) -> Any:
    """`asc.NAME` at the user's line, or APK660 there."""
    if name.startswith("__"):
        raise AttributeError(name)
    if name in PROPERTIES:
        return Property(name, PROPERTIES[name])
    if name == "CubeFormat":  # the Matmul API's matrix formats (asc.adv.MatmulType)
        from .host import CubeFormat
        return CubeFormat
    if name in SCALAR_BITS:
        return SCALAR_BITS[name]
    if name not in NOT_YET:
        value = enum_or_record(name)
        if value is not None:
            return value
        if has_instruction(name):
            return instruction(name)
    raise missing(name, NOT_YET.get(name, "")).replace(span=caller_span(3))


def get_block_idx() -> int:
    """The core running the kernel: its block (2 * block + sub-block on an AIV of a kernel
    split into AIC and AIV parts, as AscendC's GetBlockIdx)."""
    return core_ops.block_idx()


def get_block_num() -> int:
    """The AI cores of the launch (`kernel[n_cores, stream]`)."""
    return core_ops.block_num()


def ceildiv(x: Any, y: Any) -> int:
    """`asc.ceildiv(x, y)`: pyasc's host helper, `(x + y - 1) // y` on ints (the ceiling of
    x / y for y > 0, as a kernel's `used_core_num` counts blocks)."""
    import numpy as np
    for v in (x, y):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ApdslTypeError(f"asc.ceildiv({x!r}, {y!r}): takes two ints", code="APK666",
                                 help="asc.ceildiv(size, block): ints, block > 0"
                                 ).replace(span=caller_span(2))
    if y == 0:
        raise ApdslTypeError(f"asc.ceildiv({x}, 0): division by zero", code="APK666",
                             help="the block size must not be 0").replace(span=caller_span(2))
    return (int(x) + int(y) - 1) // int(y)


def range(*args: Any, **kwargs: Any) -> py.range:  # noqa: A001 - pyasc's name
    """`asc.range(start, stop, step)`: a loop of the kernel (Python's range on apdsl)."""
    kwargs.pop("unroll_factor", None)
    kwargs.pop("parallel", None)
    return py.range(*args, **kwargs)


static_range = range


class ConstExpr(Generic[T]):
    """`x: asc.ConstExpr[int]`: a compile-time constant in pyasc; a Python value on apdsl."""


class Property:
    """`asc.DEFAULT_C0_SIZE` and the other AscendC constants: `asc.property(p)` is the value."""

    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def __repr__(self) -> str:
        return f"<asc.{self.name} = {self.value}>"


def property(prop: Any) -> int:  # noqa: A001 - pyasc's name
    """`asc.property(asc.DEFAULT_C0_SIZE)`: the constant's value."""
    if not isinstance(prop, Property):
        raise missing(f"property({prop!r})", "apdsl knows " + ", ".join(PROPERTIES)).replace(
            span=caller_span(2))
    return prop.value
