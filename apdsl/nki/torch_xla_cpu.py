"""`torch_xla` where it is absent: a PyTorch script that launches NKI kernels on an XLA device
(`device = xm.xla_device()`, `torch.rand(..., device=device)`, `kernel(a, b)`, `xm.mark_step()`)
runs unchanged with apdsl, the XLA device being the CPU.

What it provides, and why each means the same here:
- `torch_xla.device()`, `torch_xla.core.xla_model.xla_device()`: the CPU device.  apdsl runs a
  kernel on CPU tensors (read and written in place, `torch_arrays`), so the tensors a script puts
  on "the device" are the kernel's inputs as they are.
- `torch_xla.sync()`, `xm.mark_step()`: nothing.  XLA records operations lazily and runs them at
  these calls; apdsl and torch's CPU have already run everything by then.
- `xm.xrt_world_size()` 1, `xm.get_ordinal()` 0, `xm.is_master_ordinal()` True,
  `xm.master_print(...)` print: the one process of a run here is the only replica.
Every other `torch_xla` module (distributed training, metrics, loaders) is a located APK920
naming it (`modules.Finder`).  torch itself is imported only when a function is called."""

from __future__ import annotations

import types
from typing import Any

ROOT = "torch_xla"  # the package it stands in for


def _cpu() -> Any:
    import torch
    return torch.device("cpu")


def device(index: int | None = None) -> Any:
    """The XLA device: the CPU, where apdsl runs the kernels."""
    return _cpu()


def sync(wait: bool = False) -> None:
    """Nothing to run: every operation already ran eagerly."""
    return None


def xla_device(n: int | None = None, devkind: str | None = None) -> Any:
    """The XLA device: the CPU, where apdsl runs the kernels."""
    return _cpu()


def mark_step(wait: bool = False) -> None:
    """Nothing to run: every operation already ran eagerly."""
    return None


def xrt_world_size(defval: int = 1) -> int:
    """One replica: the process running the script."""
    return 1


def get_ordinal(defval: int = 0) -> int:
    """The one replica's number."""
    return 0


def is_master_ordinal(local: bool = True) -> bool:
    """The one replica is the master."""
    return True


def master_print(*args: Any, fd: Any = None, **kwargs: Any) -> None:
    """print, on the master replica (the only one)."""
    print(*args, file=fd, **kwargs)  # (file=None: stdout)


def modules() -> dict[str, types.ModuleType]:
    """`torch_xla`, `torch_xla.core` and `torch_xla.core.xla_model` as module objects."""
    root = types.ModuleType("torch_xla", "apdsl's stand-in for torch_xla: the XLA device is "
                            "the CPU (apdsl.nki.torch_xla_cpu)")
    core = types.ModuleType("torch_xla.core", "the package of xla_model")
    model = types.ModuleType("torch_xla.core.xla_model", "the XLA device as the CPU")
    root.__path__, core.__path__ = [], []  # packages: other submodules go through the Finder
    for m in (root, core, model):
        m.apdsl_stand_in = True  # (what uninstall() removes)
    root.device, root.sync, root.core = device, sync, core
    core.xla_model = model
    for fn in (xla_device, mark_step, xrt_world_size, get_ordinal, is_master_ordinal,
               master_print):
        setattr(model, fn.__name__, fn)
    return {"torch_xla": root, "torch_xla.core": core, "torch_xla.core.xla_model": model}
