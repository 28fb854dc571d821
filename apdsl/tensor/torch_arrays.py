"""torch tensors as the NumPy arrays kernels take, and back.

A kernel launched from PyTorch (NKI's `nki.jit` kernels on XLA tensors, pyasc's on "npu"
tensors) gets torch tensors.  apdsl runs on the CPU, so it reads a CPU tensor through a NumPy
view of the same memory: what the kernel writes into an input reaches the tensor.  NumPy has no
bfloat16 or float8, so those tensors are viewed through their bits as ml_dtypes' types, which
share the tensor's bytes too.  torch is never imported here: a value is a torch tensor only if
torch, already imported by the caller, made it."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

# torch dtypes NumPy cannot hold, by name: (the same-width integer torch views them as, the
# ml_dtypes type of the bits)
_BITS = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
         "float8_e5m2": ("uint8", "float8_e5m2"), "float8_e4m3fnuz": ("uint8", "float8_e4m3fnuz"),
         "float8_e5m2fnuz": ("uint8", "float8_e5m2fnuz")}


def is_torch(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def as_numpy(value: Any) -> np.ndarray:
    """The NumPy view of the CPU torch tensor `value` (same memory).  Raises ValueError for a
    tensor on another device or of a dtype NumPy cannot view."""
    import ml_dtypes
    torch = sys.modules["torch"]
    if value.device.type != "cpu":
        raise ValueError(f"the tensor is on the {value.device} device, not the CPU")
    t = value.detach()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    name = str(t.dtype).removeprefix("torch.")
    if name in _BITS:
        bits, ml = _BITS[name]
        return t.view(getattr(torch, bits)).numpy().view(getattr(ml_dtypes, ml))
    try:
        return t.numpy()
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"NumPy cannot hold a {t.dtype} tensor ({e})") from None


def to_torch(array: np.ndarray) -> Any:
    """A CPU torch tensor holding `array` (sharing its memory where torch can)."""
    torch = sys.modules["torch"]
    for name, (bits, ml) in _BITS.items():
        if array.dtype.name == ml and hasattr(torch, name):
            return torch.from_numpy(np.ascontiguousarray(array).view(bits)).view(
                getattr(torch, name))
    return torch.from_numpy(np.ascontiguousarray(array))
