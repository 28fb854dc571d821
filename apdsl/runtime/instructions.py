"""The instructions of SPEC sections 4 and 11, one import for the Python API and the tests.

Each is declared once in the instruction table (`apdsl.runtime.table`) and executed by the
module its entry names: `copies` (dma_copy, tensor_copy, memset, iota), `matmul` (nc_matmul),
`register_ops` (register_alloc, register_load, register_move, register_store), `compute`
(reciprocal), `elementwise` (tensor_tensor, tensor_scalar, scalar_tensor_tensor),
`selection` (tensor_copy_predicated, affine_select, range_select, select_reduce,
tensor_tensor_scan), `reduce` and `rng_ops` (statistics, top-8, random numbers), `movement`
(nc_transpose, dma_transpose), `shuffle` (nc_stream_shuffle, local_gather) and, for Ascend, `ascend` and `mmad`.  Each checks its
target rules (APK3xx) where the facts are known, resolves its operands (runtime indices and
registers are read and bounds-checked), records itself for `apdsl lower` (which also enforces
the on-chip access-pattern entry limit), and only then moves data.  Messages start with the
instruction and its `name=` label.
"""

from __future__ import annotations

from .copies import dma_copy, iota, memset, tensor_copy
from .nki.activation import activation, activation_reduce
from .nki.compute import reciprocal
from .nki.elementwise import scalar_tensor_tensor, tensor_scalar, tensor_tensor
from .nki.matmul import nc_matmul
from .nki.movement import dma_transpose, nc_transpose
from .nki.reduce import (
           bn_aggr,
           bn_stats,
           max8,
           nc_find_index8,
           nc_match_replace8,
           tensor_partition_reduce,
           tensor_reduce,
)
from .nki.register_ops import register_alloc, register_load, register_move, register_store
from .nki.rng_ops import dropout, rand2, rng, set_rng_seed
from .nki.selection import (
           affine_select,
           range_select,
           select_reduce,
           tensor_copy_predicated,
           tensor_tensor_scan,
)
from .nki.shuffle import local_gather, nc_stream_shuffle

__all__ = ["dma_copy", "iota", "memset", "nc_matmul", "reciprocal", "register_alloc",
           "register_load", "tensor_copy",
           # the compute group
           "affine_select", "range_select", "scalar_tensor_tensor", "select_reduce",
           "tensor_copy_predicated", "tensor_scalar", "tensor_tensor", "tensor_tensor_scan",
           # the reduce group
           "activation", "activation_reduce", "bn_aggr", "bn_stats", "dropout", "max8",
           "nc_find_index8", "nc_match_replace8", "rand2", "rng", "set_rng_seed",
           "tensor_partition_reduce", "tensor_reduce",
           # the movement group
           "dma_transpose", "local_gather", "nc_stream_shuffle", "nc_transpose",
           "register_move", "register_store"]
