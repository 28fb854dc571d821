"""torch's "npu" device as the CPU (`asc.runtime.config.set_platform(Backend.NPU)` on a machine
without torch_npu): a torch function mode that rewrites a device named "npu" (a string, or a
`torch.device`) to the CPU in every torch call's arguments -- factory functions
(`torch.randn(..., device="npu")`), `Tensor.to("npu")`, `torch.device("npu")` -- and
`Tensor.npu()`, which torch_npu adds, as a no-op.  apdsl's kernels then read and write the
tensors in place, as they do CPU tensors.  Imported only when a program selects the NPU
backend, so a plain `import apdsl.asc` never imports torch."""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_ENTERED: list[TorchFunctionMode] = []  # the one mode, once entered (it stays for the process)


def _cpu(value: Any) -> Any:
    if isinstance(value, str) and value.partition(":")[0] == "npu":
        return "cpu"
    if isinstance(value, torch.device) and value.type == "npu":
        return torch.device("cpu")
    return value


class NpuIsCpu(TorchFunctionMode):
    """Every torch call with its "npu" devices made "cpu"."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        args = tuple(_cpu(a) for a in args)
        kwargs = {k: _cpu(v) for k, v in (kwargs or {}).items()}
        return func(*args, **kwargs)


def _npu(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """`Tensor.npu()`: the tensor itself (the "npu" device is the CPU)."""
    return self


def enter() -> None:
    if _ENTERED:
        return
    mode = NpuIsCpu()
    mode.__enter__()
    _ENTERED.append(mode)
    if not hasattr(torch.Tensor, "npu"):
        torch.Tensor.npu = _npu  # type: ignore[attr-defined]
