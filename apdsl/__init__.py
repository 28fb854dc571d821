"""apdsl: a kernel language for accelerator data movement, checked and executed on NumPy.

The public names are loaded lazily so that the command line starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .version import __version__  # noqa: F401

_LAZY = {
    # tensor model
    "ndarray": "apdsl.tensor.view", "from_numpy": "apdsl.tensor.view",
    "Tensor": "apdsl.tensor.view", "VirtualRegister": "apdsl.tensor.registers",
    "lower": "apdsl.tensor.lowering", "AccessPattern": "apdsl.tensor.lowering",
    "Layout": "apdsl.tensor.layout",
    "set_target": "apdsl.tensor.targets", "target": "apdsl.tensor.targets",
    "get_target": "apdsl.tensor.targets",
    # instructions
    "dma_copy": "apdsl.runtime.instructions", "tensor_copy": "apdsl.runtime.instructions",
    "memset": "apdsl.runtime.instructions", "iota": "apdsl.runtime.instructions",
    "nc_matmul": "apdsl.runtime.instructions", "register_alloc": "apdsl.runtime.instructions",
    "register_load": "apdsl.runtime.instructions", "mmad": "apdsl.runtime.ascend.mmad",
    "reciprocal": "apdsl.runtime.instructions",
    **dict.fromkeys(("activation", "activation_reduce", "bn_aggr", "bn_stats", "dropout",
                     "max8", "nc_find_index8", "nc_match_replace8", "rand2", "rng",
                     "set_rng_seed", "tensor_partition_reduce", "tensor_reduce"),
                    "apdsl.runtime.instructions"),
    **dict.fromkeys(("nc_transpose", "dma_transpose", "nc_stream_shuffle", "local_gather",
                     "register_move", "register_store"), "apdsl.runtime.instructions"),
    "tensor_tensor": "apdsl.runtime.instructions", "tensor_scalar": "apdsl.runtime.instructions",
    "scalar_tensor_tensor": "apdsl.runtime.instructions",
    **dict.fromkeys(("tensor_copy_predicated", "affine_select", "range_select", "select_reduce",
                     "tensor_tensor_scan"), "apdsl.runtime.instructions"),
    "operator": "apdsl.runtime.table.operators",
    "options": "apdsl.runtime.core.options",
    # Ascend synchronisation (SPEC section 13)
    "set_flag": "apdsl.runtime.sync", "wait_flag": "apdsl.runtime.sync",
    "pipe_barrier": "apdsl.runtime.sync", "pipes": "apdsl.runtime.sync",
    # Ascend TLA
    "make_layout": "apdsl.tensor.tla", "make_tensor": "apdsl.tensor.tla",
    "get_tile": "apdsl.tensor.tla", "tile_view": "apdsl.tensor.tla",
    "make_tensor_like": "apdsl.tensor.tla",
    # language
    "run": "apdsl.semantics.api", "check": "apdsl.semantics.api",
    "profile": "apdsl.profile",
}
_MODULES = {"formats": "apdsl.formats", "errors": "apdsl.errors"}

from .errors import (  # noqa: E402
    ApdslAssertionError,
    ApdslError,
    ApdslIOError,
    ApdslNameError,
    ApdslRuntimeError,
    ApdslSyntaxError,
    ApdslTypeError,
    FormatError,
    PatternError,
    TargetError,
    ViewError,
)

_DTYPE_NAMES = ("float32", "float16", "bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                "int4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")
_BUFFER_NAMES = ("sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "gm", "l1", "l0a", "l0b",
                 "l0c", "ub")

# The composition root: the tensor layer reads and writes views through the device interface
# it defines (apdsl.tensor.machine.Device); the runtime installs its NumPy device (cheaply).
from .runtime import device as _device  # noqa: E402, F401

# Buffer constants are their names; dtype constants resolve to DType objects on first use.
for _b in _BUFFER_NAMES:
    globals()[_b] = _b


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    elif name in _MODULES:
        value = import_module(_MODULES[name])
    elif name in _DTYPE_NAMES:
        from .tensor.dtypes import DTYPES
        value = DTYPES[name]
    else:
        raise AttributeError(f"module 'apdsl' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not (the module's globals hold only those used so far)."""
    return sorted({*__all__, "__version__"})


__all__ = [  # noqa: F822 - most names load lazily through __getattr__
    'ApdslAssertionError',
    'ApdslError',
    'ApdslIOError',
    'ApdslNameError',
    'ApdslRuntimeError',
    'ApdslSyntaxError',
    'ApdslTypeError',
    'FormatError',
    'PatternError',
    'TargetError',
    'ViewError',
    *_LAZY, *_MODULES, *_DTYPE_NAMES, *_BUFFER_NAMES,
]
