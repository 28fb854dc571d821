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
    # (the instructions: every Python name of the instruction table, `_instructions()`)
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

# the error classes, re-exported (`X as X`: public names of this module)
from .errors import ApdslAssertionError as ApdslAssertionError  # noqa: E402
from .errors import ApdslError as ApdslError  # noqa: E402
from .errors import ApdslIOError as ApdslIOError  # noqa: E402
from .errors import ApdslNameError as ApdslNameError  # noqa: E402
from .errors import ApdslRuntimeError as ApdslRuntimeError  # noqa: E402
from .errors import ApdslSyntaxError as ApdslSyntaxError  # noqa: E402
from .errors import ApdslTypeError as ApdslTypeError  # noqa: E402
from .errors import FormatError as FormatError  # noqa: E402
from .errors import PatternError as PatternError  # noqa: E402
from .errors import TargetError as TargetError  # noqa: E402
from .errors import ViewError as ViewError  # noqa: E402

_DTYPE_NAMES = ("float32", "float16", "bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                "int4", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                "float8_e8m0fnu", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4")
_BUFFER_NAMES = ("sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "gm", "l1", "l0a", "l0b",
                 "l0c", "ub", "bt")

# The composition root: the tensor layer reads and writes views through the device interface
# it defines (apdsl.tensor.machine.Device); the runtime installs its NumPy device (cheaply).
from .runtime import device as _device  # noqa: E402, F401

# and how a view shows itself in a notebook: the surfaces' access picture (as cheaply)
from .surfaces.notebook import pictures as _pictures  # noqa: E402, F401

# Buffer constants are their names; dtype constants resolve to DType objects on first use.
for _b in _BUFFER_NAMES:
    globals()[_b] = _b


def _instructions() -> tuple[str, ...]:
    """The instruction table's Python names (`apdsl.runtime.table.PYTHON_NAMES`): loaded on
    first use, since the table imports NumPy and `import apdsl` must stay cheap."""
    from .runtime.table import PYTHON_NAMES
    return PYTHON_NAMES


def load_ipython_extension(shell: Any) -> None:
    """`%load_ext apdsl` in IPython or Jupyter: adds the `%%apk` cell magic (a cell that is an
    `.apk` program; see `apdsl.surfaces.notebook.magic`)."""
    from .surfaces.notebook import load
    load(shell)


def _public() -> list[str]:
    return [*_ERRORS, *_LAZY, *_instructions(), *_MODULES, *_DTYPE_NAMES, *_BUFFER_NAMES]


def __getattr__(name: str) -> Any:
    if name == "__all__":  # derived from the table, so computed on first use
        value = _public()
    elif name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    elif name in _MODULES:
        value = import_module(_MODULES[name])
    elif name in _DTYPE_NAMES:
        from .tensor.dtypes import DTYPES
        value = DTYPES[name]
    elif not name.startswith("__") and name in _instructions():
        from .runtime.table import implementation
        value = implementation(name)
    else:
        raise AttributeError(f"module 'apdsl' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not (the module's globals hold only those used so far)."""
    return sorted({*_public(), "__version__"})


_ERRORS = ("ApdslAssertionError", "ApdslError", "ApdslIOError", "ApdslNameError",
           "ApdslRuntimeError", "ApdslSyntaxError", "ApdslTypeError", "FormatError",
           "PatternError", "TargetError", "ViewError")
# `__all__` (the public names) is computed by `__getattr__` on first use
