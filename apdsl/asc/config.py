"""`asc.runtime.config` as pyasc's tutorials and tests use it on the host: the backend
(`Backend.Model`, pyasc's simulator, is what apdsl is; there is no NPU here) and the platform
(the Atlas A2/A3 parts pyasc lists, whose AI core apdsl's `ascend-a2` target models).
`set_platform` checks its arguments and changes nothing: apdsl's target is the machine's."""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..errors import ApdslRuntimeError, ApdslTypeError


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
    """pyasc's `set_platform(backend, soc_version, device_id, check)`: Backend.Model runs on
    apdsl; Backend.NPU is refused (APK665: there is no NPU here)."""
    if _member(Backend, backend, "backend") is Backend.NPU:
        raise ApdslRuntimeError(
            "set_platform(Backend.NPU): apdsl simulates the NPU; there is no NPU to run on",
            code="APK665", help="use Backend.Model (the tutorials' default, -r Model): "
            "apdsl.asc is pyasc's model backend")
    if soc_version is not None:
        _member(Platform, getattr(soc_version, "value", soc_version), "platform pyasc lists")
