"""pyasc's memory objects on apdsl tensors: `GlobalAddress` (a kernel parameter: global memory
and an element offset into it, with address arithmetic), `GlobalTensor` (`set_global_buffer`)
and `LocalTensor(dtype, TPosition.X, addr, tile_size)` on the on-chip buffer the position
names.  As in AscendC, `t[k]` and `t[k:]` are the tensor from element k on (operator[]), not an
element; each wraps a one-dimensional apdsl view that the instructions take."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslRuntimeError, ApdslTypeError
from ..tensor.view import Tensor
from . import dtypes
from .placement import placement


class GlobalAddress:
    """A kernel's global-memory parameter: the flat GM tensor and an element offset;
    `address + n` moves it n elements on."""

    def __init__(self, tensor: Tensor, offset: int = 0) -> None:
        self.tensor = tensor
        self.offset = offset

    @property
    def dtype(self) -> dtypes.DataType:
        return dtypes.of(self.tensor.dtype)

    def __add__(self, n: Any) -> GlobalAddress:
        if not isinstance(n, int) or isinstance(n, bool):
            return NotImplemented
        return GlobalAddress(self.tensor, self.offset + n)

    __radd__ = __add__

    def __sub__(self, n: Any) -> GlobalAddress:
        if not isinstance(n, int) or isinstance(n, bool):
            return NotImplemented
        return GlobalAddress(self.tensor, self.offset - n)

    def __repr__(self) -> str:
        return f"<GlobalAddress {self.tensor.name}+{self.offset}>"


def _from(t: Tensor, k: Any, kind: str) -> Tensor:
    """`t[k]` / `t[k:]` of AscendC's operator[]: the view from element k on."""
    if isinstance(k, slice):
        if k.stop is not None or k.step is not None:
            raise ApdslTypeError(
                f"{kind}[start:stop:step]: a {kind} takes only [k] or [k:] (the tensor from "
                "element k on), as pyasc does", code="APK663",
                help=f"write {kind}[k:] and pass the element count to the instruction")
        k = k.start or 0
    if not isinstance(k, int) or isinstance(k, bool):
        raise ApdslTypeError(f"{kind}[{k!r}]: the offset is an element count (an int)",
                             code="APK663")
    n = t.shape[0]
    if not 0 <= k <= n:
        raise ApdslRuntimeError(
            f"{kind}[{k}:] is outside the tensor: it holds {n} elements", code="APK663",
            help="an offset is between 0 and the tensor's length")
    return t[k:]


class GlobalTensor:
    """`asc.GlobalTensor()` then `set_global_buffer(address, length)`."""

    def __init__(self, tensor: Tensor | None = None) -> None:
        self._tensor = tensor

    @property
    def tensor(self) -> Tensor:
        if self._tensor is None:
            raise ApdslRuntimeError(
                "this GlobalTensor has no global buffer yet", code="APK663",
                help="call set_global_buffer(address, length) before using it")
        return self._tensor

    def set_global_buffer(self, buffer: GlobalAddress | None = None,
                          buffer_size: int | None = None) -> None:
        if not isinstance(buffer, GlobalAddress):
            raise ApdslTypeError(
                f"set_global_buffer takes a kernel's asc.GlobalAddress parameter (plus an "
                f"offset), not {type(buffer).__name__}", code="APK663")
        whole = buffer.tensor
        n = whole.shape[0]
        end = n if buffer_size is None else buffer.offset + buffer_size
        if not 0 <= buffer.offset <= end <= n:
            raise ApdslRuntimeError(
                f"set_global_buffer({whole.name} + {buffer.offset}, {buffer_size}) reaches "
                f"outside {whole.name}, which holds {n} elements", code="APK663",
                help="the global buffer must lie inside the array passed to the kernel")
        self._tensor = whole[buffer.offset:end]

    @property
    def dtype(self) -> dtypes.DataType:
        return dtypes.of(self.tensor.dtype)

    def get_size(self) -> int:
        return self.tensor.shape[0]

    def get_phy_addr(self, offset: int = 0) -> Any:
        raise _no("GlobalTensor.get_phy_addr")

    def get_value(self, offset: Any) -> Any:
        """Element `offset`, read by the scalar unit (pipe S)."""
        return _scalar("get_value", self.tensor, offset)

    def set_value(self, offset: Any, value: Any) -> None:
        """Write element `offset` with the scalar unit (pipe S)."""
        _scalar("set_value", self.tensor, offset, value)

    def __getitem__(self, k: Any) -> GlobalTensor:
        return GlobalTensor(_from(self.tensor, k, "GlobalTensor"))

    def __getattr__(self, name: str) -> Any:
        raise _absent("GlobalTensor", name)

    def __repr__(self) -> str:
        return f"<GlobalTensor {self._tensor!r}>"


class LocalTensor:
    """`asc.LocalTensor(dtype, TPosition.X, addr, tile_size)`: tile_size elements at byte
    address addr of the position's buffer.  The kernel call (`Placement`) makes two
    LocalTensors at the same address, size and dtype the same storage, and LocalTensors over
    some of the same bytes (of any dtypes) storages over those bytes, as on hardware: what is
    written through one is read through the others, and the race checker sees one address."""

    def __init__(self, dtype: Any = None, pos: Any = "VECIN", addr: int = 0,
                 tile_size: int = 0, *, tensor: Tensor | None = None) -> None:
        if tensor is not None:
            self.tensor = tensor
            return
        self.tensor = placement().local(dtype, str(pos), addr, tile_size)

    @property
    def dtype(self) -> dtypes.DataType:
        return dtypes.of(self.tensor.dtype)

    def get_length(self) -> int:
        return self.tensor.shape[0]

    get_size = get_length

    def get_value(self, index: Any) -> Any:
        """Element `index`, read by the scalar unit (pipe S)."""
        return _scalar("get_value", self.tensor, index)

    def set_value(self, index: Any, value: Any) -> None:
        """Write element `index` with the scalar unit (pipe S)."""
        _scalar("set_value", self.tensor, index, value)

    def reinterpret_cast(self, dtype: Any) -> LocalTensor:
        """The same bytes as another dtype (the length rescaled)."""
        from ..tensor.dtypes import dtype as to_dtype
        return LocalTensor(tensor=self.tensor.view(to_dtype(getattr(dtype, "name", dtype))))

    def __getitem__(self, k: Any) -> LocalTensor:
        return LocalTensor(tensor=_from(self.tensor, k, "LocalTensor"))

    def __getattr__(self, name: str) -> Any:
        raise _absent("LocalTensor", name)

    def __repr__(self) -> str:
        return f"<LocalTensor {self.tensor!r}>"


def _no(name: str) -> Exception:
    from .errors import missing
    return missing(name)


def _absent(owner: str, name: str) -> Exception:
    """`obj.NAME` of a pyasc object apdsl lacks: APK660 at the user's line (still an
    AttributeError, so `hasattr` and the private names Python looks up keep working)."""
    if name.startswith("_"):
        return AttributeError(name)
    from ..nki.locate import caller_span
    from .errors import missing
    return missing(f"{owner}.{name}").replace(span=caller_span(3))


def _scalar(op: str, t: Tensor, *args: Any) -> Any:
    """`get_value`/`set_value` on the scalar unit, at the user's line (the race checker and
    `lower` locate the access there)."""
    from ..nki.locate import caller_span
    from ..runtime.ascend import scalar
    from ..runtime.core import trace
    from ..tensor.machine import current
    span = caller_span(3)
    if span is not None:
        trace.set_location(span.file, span.line, span)
    from .served import auto_sync
    sync = current().sync if auto_sync() else None
    if sync is None:
        return getattr(scalar, op)(t, *args)
    from ..runtime.sync.auto import scalar_after, scalar_before
    scalar_before(sync)  # insert_sync fences the scalar access with the vector pipe
    try:
        return getattr(scalar, op)(t, *args)
    finally:
        scalar_after(sync)


def unwrap(value: Any) -> Any:
    """What an instruction takes: the apdsl view of a Global/LocalTensor, the name of an enum
    member (as the table's builtins take), anything else as it is."""
    if isinstance(value, (GlobalTensor, LocalTensor)):
        return value.tensor
    if isinstance(value, GlobalAddress):
        return value.tensor[value.offset:]
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(v) for v in value)
    return value
