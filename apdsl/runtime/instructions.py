"""The instructions of SPEC sections 4 and 11, one import for the Python API and the tests.

Each is declared once in the instruction table (`apdsl.runtime.table`) and executed by the
module its entry names: `copies` (dma_copy, tensor_copy, memset, iota), `matmul` (nc_matmul),
`register_ops` (register_alloc, register_load, register_move, register_store), `compute`
(reciprocal), `elementwise` (tensor_tensor, tensor_scalar, scalar_tensor_tensor),
`selection` (tensor_copy_predicated, affine_select, range_select, select_reduce,
tensor_tensor_scan), `reduce` and `rng.ops` (statistics, top-8, random numbers), `movement`
(nc_transpose, dma_transpose), `shuffle` (nc_stream_shuffle, local_gather) and, for Ascend, `ascend` and `mmad`.  Each checks its
target rules (APK3xx) where the facts are known, resolves its operands (runtime indices and
registers are read and bounds-checked), records itself for `apdsl lower` (which also enforces
the on-chip access-pattern entry limit), and only then moves data.  Messages start with the
instruction and its `name=` label.
"""

from __future__ import annotations

from .table import PYTHON_NAMES, TABLE, implementation

# every instruction of the table with a Python name, as its executor's callable, but the Ascend
# executors' (`ascend.*`: they load on first use, through `apdsl.mmad` or the builtins)
__all__ = [name for name in PYTHON_NAMES if not TABLE[name].module.startswith("ascend.")]
globals().update({name: implementation(name) for name in __all__})
