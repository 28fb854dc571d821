"""The runtime's side of `apdsl.tensor.machine.Device`: how the tensor layer reads and writes
views (`Tensor.numpy()`, `from_numpy`, binding a TLA tile) without importing the runtime.

Importing this module is cheap (the executing modules load on first use); `apdsl/__init__.py`
imports it, so the device is installed before any tensor exists.
"""

from __future__ import annotations

from typing import Any

from ..tensor.machine import Machine


class NumpyDevice:
    """Views executed on NumPy (`apdsl.runtime.core.move`, `apdsl.runtime.ascend.dma`)."""

    def read_view(self, t: Any) -> Any:
        from .core.move import read_view
        return read_view(t)

    def write_view(self, t: Any, values: Any) -> None:
        from .core.move import write_view
        write_view(t, values)

    def forget(self, t: Any) -> None:
        # every make_tensor_like of a bound tile calls this: after the first call the
        # instance's own attribute is the runtime's function (an import statement per call
        # cost ~0.9 us, more than the forgetting)
        from .ascend.dma import forget
        self.forget = forget  # type: ignore[method-assign]
        forget(t)


def install() -> None:
    """Make NumPy execution the device of every machine."""
    Machine.device = NumpyDevice()


install()
