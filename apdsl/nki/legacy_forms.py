"""The legacy (`neuronxcc.nki`) forms of the NKI instructions: called without `dst`, each
returns a new tile (SBUF; PSUM for `nc_matmul` and the Tensor Engine `nc_transpose`), as the
legacy reference documents them.  A form is the legacy signature (a stub whose parameters are
the reference's), the rule for the result tile (shape, dtype, buffer) and how its arguments
become the current instruction's keywords; the instruction itself is the same one the current
API calls, with the same checks (`apdsl.nki.legacy` issues it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from math import ceil, prod
from typing import Any

from ..errors import ApdslTypeError
from ..runtime.table.operators import OPERATORS
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.index_grid import IndexExpr, Predicate, affine_terms

Bound = dict[str, Any]
Result = tuple[tuple[int, ...], Any, str]  # shape, dtype, buffer


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in t.shape)


def _dtype(b: Bound, default: Any) -> Any:
    return to_dtype(b["dtype"]) if b.get("dtype") is not None else default


def _like(role: str, buffer: str = "sbuf") -> Callable[[Bound], Result]:
    def rule(b: Bound) -> Result:
        return _shape(b[role]), _dtype(b, b[role].dtype), buffer
    return rule


def _per_partition(role: str, n: int, dtype: str | None = None) -> Callable[[Bound], Result]:
    def rule(b: Bound) -> Result:
        default = to_dtype(dtype) if dtype else b[role].dtype
        return (_shape(b[role])[0], n), _dtype(b, default), "sbuf"
    return rule


def _tensor_tensor(b: Bound) -> Result:
    from ..semantics.nl_operators import promote
    return _shape(b["data1"]), _dtype(b, promote(b["data1"].dtype, b["data2"].dtype)), "sbuf"


def _reduced(b: Bound) -> Result:
    shape = _shape(b["data"])
    axis = b["axis"]
    axes = {axis} if isinstance(axis, int) else set(axis)
    axes = {a % len(shape) for a in axes}
    if b.get("keepdims"):
        out = tuple(1 if k in axes else n for k, n in enumerate(shape))
    else:
        out = tuple(n for k, n in enumerate(shape) if k not in axes)
        if len(out) < 2:  # an on-chip tile keeps one free dimension
            out = (*out, 1)
    return out, _dtype(b, b["data"].dtype), "sbuf"


def _bn_stats(b: Bound) -> Result:
    shape = _shape(b["data"])
    return (shape[0], 6 * max(1, ceil(prod(shape[1:]) / 512))), _dtype(b, b["data"].dtype), "sbuf"


def _matmul(b: Bound) -> Result:
    if b.get("is_transpose"):
        m = b["moving"]
        return (prod(_shape(m)[1:]), _shape(m)[0]), m.dtype, "psum"
    # double_row splits K over the partitions and the first free dim of 2 (the isa docstring:
    # stationary [128, 2, M], moving [128, 2, N] give dst [M, N])
    mode = getattr(b.get("perf_mode"), "name", b.get("perf_mode"))
    k = 2 if mode in ("double_row", "double_row_gen3") else 1
    return (prod(_shape(b["stationary"])[k:]), prod(_shape(b["moving"])[k:])), \
        to_dtype("float32"), "psum"


def _transpose(b: Bound) -> Result:
    shape = _shape(b["data"])
    engine = str(b.get("engine") or "unknown")
    buffer = "sbuf" if engine.endswith("vector") else "psum"
    return (prod(shape[1:]), shape[0]), _dtype(b, b["data"].dtype), buffer


def _dma_transpose(b: Bound) -> Result:
    shape = _shape(b["src"])
    axes = b.get("axes") or tuple(reversed(range(len(shape))))
    return tuple(shape[a] for a in axes), _dtype(b, b["src"].dtype), "sbuf"


def _local_gather(b: Bound) -> Result:
    # The legacy docstring's NumPy semantics build the output as (partitions,
    # num_valid_indices, num_elem_per_idx); num_valid_indices defaults to the indices of one
    # core's 16-partition slice, index.size / (index.shape[0] / 16)
    from ..runtime.nki.shuffle import gather_args  # (checked as the instruction checks them)
    per_core = 16 * prod(_shape(b["index"])[1:])
    n, valid = gather_args("local_gather", b["num_elem_per_idx"], b["num_valid_indices"],
                           per_core)
    return (_shape(b["src_buffer"])[0], valid, n), b["src_buffer"].dtype, "sbuf"


def _partition_reduce(b: Bound) -> Result:
    return (1, *_shape(b["data"])[1:]), _dtype(b, b["data"].dtype), "sbuf"


def _bounds(b: Bound) -> Result:
    shape = _shape(b["segment_ids"])
    return (shape[0], 2, prod(shape[1:])), _dtype(b, b["segment_ids"].dtype), "sbuf"


def _memset(b: Bound) -> Result:
    return tuple(int(n) for n in b["shape"]), to_dtype(b["dtype"]), "sbuf"


def _expr(b: Bound, role: str) -> IndexExpr:
    e = b[role]
    if not isinstance(e, IndexExpr):
        raise ApdslTypeError(f"{role} must be an index expression of nl.arange/nl.mgrid, "
                             f"not {type(e).__name__}", code="APK940")
    return e


def _iota(b: Bound) -> Result:
    e = _expr(b, "expr")
    shape = e.shape if len(e.shape) >= 2 else (*e.shape, 1)
    return tuple(shape), to_dtype(b["dtype"]), "sbuf"


def _iota_args(b: Bound) -> Bound:
    offset, cm, pattern = affine_terms(_expr(b, "expr"))
    return {"pattern": pattern, "offset": offset, "channel_multiplier": cm}


_COMPARE = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}


def _affine_select_args(b: Bound) -> Bound:
    pred = b["pred"]
    if not isinstance(pred, Predicate) or len(pred.conds) != 1:
        raise ApdslTypeError("affine_select's pred must be one comparison of an affine index "
                             "expression (e.g. i_p - i_f >= 0)", code="APK940",
                             help="make two affine_select calls for two conditions")
    (diff, op), = pred.conds
    offset, cm, pattern = affine_terms(diff)
    out = {k: v for k, v in b.items() if k not in ("pred", "dtype")}
    out.update(pattern=pattern, channel_multiplier=cm, offset=offset,
               cmp_op=OPERATORS[_COMPARE[op]])
    return out


def _memset_args(b: Bound) -> Bound:
    return {k: v for k, v in b.items() if k in ("value", "engine")}


# -- the legacy signatures (the reference's parameters; `dtype` is the result's) ----------------
def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd="idle", dtype=None): ...
def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, dtype=None): ...
def affine_select(pred, on_true_tile, on_false_value, *, dtype=None): ...
def bn_aggr(data, *, dtype=None): ...
def bn_stats(data, *, dtype=None): ...
def dma_transpose(src, *, axes=None, dtype=None, dge_mode="unknown"): ...
def dropout(data, prob, *, dtype=None): ...
def iota(expr, dtype): ...
def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None): ...
def max8(*, src, dtype=None): ...
def memset(shape, value, dtype, *, engine="unknown"): ...
def nc_find_index8(*, data, vals, dtype=None): ...
def nc_match_replace8(*, data, vals, imm, dst_idx=None, dtype=None): ...
def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), perf_mode=None): ...
def nc_transpose(data, *, dtype=None, engine="unknown"): ...
def range_select(*, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd="idle",
                 reduce_res=None, reduce_op=None, range_start=0,
                 on_false_value=-3.4028234663852886e+38, dtype=None): ...
def reciprocal(data, *, dtype=None): ...
def sequence_bounds(*, segment_ids, dtype=None): ...
def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False,
                         reverse1=False, dtype=None): ...
def tensor_copy(src, *, dtype=None, engine="unknown"): ...
def tensor_partition_reduce(op, data, *, dtype=None): ...
def tensor_reduce(op, data, axis, *, dtype=None, negate=False, keepdims=False): ...
def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, *, dtype=None, engine="unknown"): ...
def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         dtype=None): ...
def tensor_tensor(data1, data2, op, *, dtype=None, engine="unknown"): ...
def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *,
                       dtype=None): ...


class Form:
    """One legacy form: its signature, its result tile's rule, its arguments as the current
    instruction's keywords (default: the same names, `dtype` dropped), and the operands a PSUM
    tile of which the legacy compiler reads through SBUF (`staged`)."""

    __slots__ = ("signature", "result", "convert", "staged", "keeps")

    def __init__(self, stub: Callable[..., Any], result: Callable[[Bound], Result],
                 convert: Callable[[Bound], Bound] | None = None,
                 staged: tuple[str, ...] = (), keeps: str | None = None) -> None:
        self.signature = inspect.signature(stub)
        self.result = result
        self.convert = convert or (lambda b: {k: v for k, v in b.items() if k != "dtype"})
        self.staged = staged
        # the operand whose dtype the instruction writes unconverted: a result of another
        # dtype is a cast after it (`keeps`)
        self.keeps = keeps


FORMS: dict[str, Form] = {
    "activation": Form(activation, _like("data")),
    "activation_reduce": Form(activation_reduce, _like("data")),
    # The legacy affine_select runs on GpSimd, which "cannot access PSUM" (the legacy
    # tensor_copy and tensor_tensor docstrings), yet its legacy docstring puts no memory rule on
    # on_true_tile and defines the result for any tile: output[x] = pred[x] ? on_true_tile[x]
    # : on_false_value.  The SDK's own legacy SD-attention tutorial and nki-samples' reference
    # flash attention (simulated against a CPU golden in its tests) pass the matmul's PSUM tile,
    # so the compiler moved it to SBUF first, as it does for `nl.store` of a PSUM tile (whose
    # docstring says so).  The current API's form keeps the current rule: SBUF only (APK309).
    "affine_select": Form(affine_select, _like("on_true_tile"), _affine_select_args,
                          staged=("on_true_tile",)),
    "bn_aggr": Form(bn_aggr, _per_partition("data", 2)),
    "bn_stats": Form(bn_stats, _bn_stats),
    "dma_transpose": Form(dma_transpose, _dma_transpose),
    "dropout": Form(dropout, _like("data")),
    "iota": Form(iota, _iota, _iota_args),
    "local_gather": Form(local_gather, _local_gather),
    "max8": Form(max8, _per_partition("src", 8)),
    "memset": Form(memset, _memset, _memset_args),
    "nc_find_index8": Form(nc_find_index8, _per_partition("data", 8, "uint32")),
    "nc_match_replace8": Form(nc_match_replace8, _like("data")),
    "nc_matmul": Form(nc_matmul, _matmul),
    # The legacy nc_transpose's dtype: "if specified and it's different from the data type of
    # input tile data, an additional nki.isa.cast instruction will be inserted to cast the
    # transposed data into the target dtype"; its result is otherwise of data's dtype, which a
    # tile of another dtype it is written to converts.
    "nc_transpose": Form(nc_transpose, _transpose, keeps="data"),
    "range_select": Form(range_select, _like("on_true_tile")),
    "reciprocal": Form(reciprocal, _like("data")),
    "scalar_tensor_tensor": Form(scalar_tensor_tensor, _like("data")),
    "sequence_bounds": Form(sequence_bounds, _bounds),
    "tensor_copy": Form(tensor_copy, _like("src")),
    "tensor_partition_reduce": Form(tensor_partition_reduce, _partition_reduce),
    "tensor_reduce": Form(tensor_reduce, _reduced),
    "tensor_scalar": Form(tensor_scalar, _like("data")),
    "tensor_scalar_reduce": Form(tensor_scalar_reduce, _like("data")),
    "tensor_tensor": Form(tensor_tensor, _tensor_tensor),
    "tensor_tensor_scan": Form(tensor_tensor_scan, _like("data0")),
}
