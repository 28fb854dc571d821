"""`asc.runtime.config` as pyasc's tutorials and tests use it on the host: the backend, the
platform, the device and the availability check of `set_platform(backend, soc_version,
device_id, check)`.  What a simulator does with each (pyasc's config module and the tutorials'
READMEs):

- `backend`: Backend.Model is pyasc's simulator and Backend.NPU the device; apdsl computes what
  the device computes (the AscendC docs' semantics), so both run the kernel on apdsl.  Under
  Backend.NPU a program makes its tensors on torch's "npu" device; with no torch_npu installed,
  apdsl makes that device the CPU (`npu_is_cpu`: a torch function mode), whose tensors the
  kernels read and write in place, so an unchanged NPU test runs.
- `soc_version`: one of the Atlas A2/A3 parts pyasc lists (anything else is APK665); their AI
  core is the one apdsl's `ascend-a2` target models, so the part changes no result.
- `device_id`: which NPU of a machine; no result depends on it: accepted, unused.
- `check`: pyasc's check that its runtime library loads; apdsl's always does: accepted, unused.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..errors import ApdslTypeError


class Backend(Enum):
    Model = "Model"
    NPU = "NPU"


class Platform(Enum):
    """The SoC versions pyasc lists (Atlas A2 training/inference parts and Atlas A3)."""

    Ascend910B1 = "Ascend910B1"
    Ascend910B2 = "Ascend910B2"
    Ascend910B2C = "Ascend910B2C"
    Ascend910B3 = "Ascend910B3"
    Ascend910B4 = "Ascend910B4"
    Ascend910B4_1 = "Ascend910B4-1"
    Ascend910_9362 = "Ascend910_9362"
    Ascend910_9372 = "Ascend910_9372"
    Ascend910_9381 = "Ascend910_9381"
    Ascend910_9382 = "Ascend910_9382"
    Ascend910_9391 = "Ascend910_9391"
    Ascend910_9392 = "Ascend910_9392"


class KernelType(Enum):
    AIV_ONLY = 0
    AIC_ONLY = 1
    MIX_AIV_HARD_SYNC = 2
    MIX_AIC_HARD_SYNC = 3
    MIX_AIV_1_0 = 4
    MIX_AIC_1_0 = 5
    MIX_AIC_1_1 = 6
    MIX_AIC_1_2 = 7


def _member(kind: type[Enum], value: Any, what: str) -> Enum:
    try:
        return kind(value)
    except ValueError:
        raise ApdslTypeError(
            f"set_platform: {value!r} is not a {what}", code="APK665",
            help="one of " + ", ".join(m.value for m in kind)) from None


def set_platform(backend: Any, soc_version: Any = None, device_id: Any = None,
                 check: bool = True) -> None:
    """pyasc's `set_platform(backend, soc_version, device_id, check)` (see the module
    docstring): either backend runs on apdsl; an unknown backend or platform is APK665."""
    chosen = _member(Backend, getattr(backend, "value", backend), "backend")
    if soc_version is not None:
        _member(Platform, getattr(soc_version, "value", soc_version), "platform pyasc lists")
    if device_id is not None and (isinstance(device_id, bool) or not isinstance(device_id, int)
                                  or device_id < 0):
        raise ApdslTypeError(f"set_platform: device_id {device_id!r} is not a device number",
                             code="APK665", help="an int >= 0, or None")
    if chosen is Backend.NPU:
        npu_is_cpu()


def npu_is_cpu() -> None:
    """Make torch's "npu" device the CPU for the rest of the process, when torch is installed
    and torch_npu is not (a real torch_npu keeps its device): a torch function mode that
    rewrites the device of every torch call.  Entered once; pyasc's `set_platform` is itself
    process-wide (the runtime library's backend)."""
    import importlib.util
    import sys
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return
    if importlib.util.find_spec("torch_npu") is not None:
        return
    from . import torch_npu_cpu
    torch_npu_cpu.enter()
