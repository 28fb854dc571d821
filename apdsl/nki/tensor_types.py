"""`nki.typing` (and the legacy `neuronxcc.nki.typing`): `tensor`, the type of a kernel tensor
in annotations.  `tensor[128, 512]`, `tensor[(128, 512), nl.float32]` and `tensor[128, 512,
nl.float32]` are annotations that record a shape (and a dtype when given); the kernel's values
are apdsl tensors as always.  An annotation changes nothing a kernel computes."""

from __future__ import annotations

from typing import Any

from ..records import record
from ..tensor.view import Tensor


@record
class TensorAnnotation:
    """`tensor[shape..., dtype]`: the shape (ints) and the dtype (None when not given)."""

    shape: tuple[int, ...]
    dtype: Any = None

    def __repr__(self) -> str:
        inner = ", ".join(str(s) for s in self.shape)
        return f"tensor[{inner}{'' if self.dtype is None else f', {self.dtype}'}]"


def _shape_and_dtype(item: Any) -> TensorAnnotation:
    items = item if isinstance(item, tuple) else (item,)
    if items and isinstance(items[0], (tuple, list)):
        return TensorAnnotation(tuple(int(s) for s in items[0]),
                                items[1] if len(items) > 1 else None)
    shape = tuple(int(s) for s in items if isinstance(s, int) and not isinstance(s, bool))
    rest = [s for s in items if not (isinstance(s, int) and not isinstance(s, bool))]
    return TensorAnnotation(shape, rest[0] if rest else None)


class _TensorType(type):
    """`isinstance(t, tensor)` holds for a kernel's tensors."""

    def __instancecheck__(cls, value: Any) -> bool:
        # a legacy instruction's result (pending) and an index-grid view are tensors too
        from ..tensor.grid_view import IndexedTile
        from .legacy_results import PendingTile
        return isinstance(value, (Tensor, PendingTile, IndexedTile))


class tensor(metaclass=_TensorType):  # noqa: N801 - NKI's own name for the type
    """The type of an NKI tensor; subscripted, an annotation with a shape and a dtype."""

    def __class_getitem__(cls, item: Any) -> TensorAnnotation:
        return _shape_and_dtype(item)


class mutable_tensor(tensor):  # noqa: N801 - NKI's own name for the type
    """`nki.typing.mutable_tensor`: the type of a kernel argument the kernel writes in place
    (the NKI library's signatures, router_topk's `router_logits: nt.mutable_tensor`); as with
    `tensor`, an annotation changes nothing a kernel computes."""


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    from .namespace import missing
    raise missing(f"apdsl.nki has no nki.typing.{name}", code="APK144", name=name,
                  notes=["nki.typing offers: tensor, mutable_tensor"])
