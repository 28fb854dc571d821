"""Instruction table entries: the compute group (see `apdsl.runtime.table.entries`).

Element-wise arithmetic with operators (`tensor_tensor`, `tensor_scalar`,
`scalar_tensor_tensor`) and selection (`tensor_copy_predicated`, `affine_select`,
`range_select`, `select_reduce`, `tensor_tensor_scan`), as the NKI isa docstrings give them:
memory per operand, dtypes, engines with the default first.
"""

from __future__ import annotations

from .. import semantics
from ..spec import ELEMENT, NKI_ONCHIP, TRN3_DTYPES, VECTOR_DTYPES, Depends, Instruction, Operand

TILE = VECTOR_DTYPES + TRN3_DTYPES
# A predicate may be `bool_`: NKI's dtype table gives "boolean stored as uint8" (nl.bool_ or
# numpy.bool), so a bool predicate is a uint8 one holding 0 or 1.
BOOL = ("bool_",)
FLOAT_TILE = ("float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2") + TRN3_DTYPES


def _on_chip(role: str, writes: bool = False, dtypes: tuple[str, ...] | None = TILE,
             memory: tuple[str, ...] = NKI_ONCHIP) -> Operand:
    return Operand(role, writes, {"nki": memory}, dtypes)


ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "tensor_tensor", "nki.elementwise",
        (_on_chip("dst", True), _on_chip("data1"), _on_chip("data2")),
        {"nki": ("vector", "gpsimd")}, semantics.tensor_tensor, writes_dst=True,
        summary="dst = op(data1, data2) element-wise, in float32 (bit-vector ops on the bits)",
        depends=ELEMENT),
    Instruction(
        "tensor_scalar", "nki.elementwise",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("operand0"), _on_chip("operand1")),
        {"nki": ("vector", "scalar", "gpsimd")}, semantics.tensor_scalar, writes_dst=True,
        summary="dst = (data op0 operand0) op1 operand1, operands scalars or [P, 1] columns",
        depends=ELEMENT),
    Instruction(
        "scalar_tensor_tensor", "nki.elementwise",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("operand0"), _on_chip("operand1")),
        {"nki": ("vector",)}, semantics.scalar_tensor_tensor, writes_dst=True,
        summary="dst = (data op0 operand0) op1 operand1, operand1 a tile like data",
        depends=ELEMENT),
    Instruction(
        "tensor_copy_predicated", "nki.selection",
        (_on_chip("dst", True), _on_chip("src"),
         _on_chip("predicate", dtypes=("uint8", "uint16", "uint32") + BOOL)),
        {"nki": ("vector",)}, semantics.copy_predicated,
        summary="dst = src where predicate (non-zero), else dst unchanged",
        depends=Depends("element", observed=("predicate",))),
    Instruction(
        "affine_select", "nki.selection",
        (_on_chip("dst", True, memory=("sbuf",)), _on_chip("on_true_tile", memory=("sbuf",))),
        {"nki": ("gpsimd",)}, semantics.affine_select, limits={"pattern_entries": 4},
        writes_dst=True,
        summary="dst = on_true_tile where cmp_op(iota expression, 0), else on_false_value",
        depends=ELEMENT),
    Instruction(
        "range_select", "nki.selection",
        (_on_chip("dst", True), _on_chip("on_true_tile", dtypes=FLOAT_TILE),
         _on_chip("bound0", dtypes=("float32",)), _on_chip("bound1", dtypes=("float32",)),
         _on_chip("reduce_res", True)),
        {"nki": ("vector",)}, semantics.select, writes_dst=True,
        limits={"targets": ("trn2", "trn3"), "index_max": 2**24},
        summary="dst = on_true_tile where bound0/bound1 admit the free index, else FP32_MIN; "
        "max into the accumulator", depends=Depends("element", observed=("bound0", "bound1"))),
    Instruction(
        "select_reduce", "nki.selection",
        (_on_chip("dst", True),
         _on_chip("predicate", dtypes=("int8", "uint8", "int16", "uint16") + BOOL),
         _on_chip("on_true", dtypes=tuple(d for d in TILE if d not in ("int32", "uint32"))),
         _on_chip("on_false"), _on_chip("reduce_res", True, dtypes=FLOAT_TILE)),
        {"nki": ("vector",)}, semantics.select, writes_dst=True,
        summary="dst = on_true where predicate, else on_false; max into the accumulator",
        depends=Depends("element", observed=("predicate",))),
    Instruction(
        "tensor_tensor_scan", "nki.selection",
        (_on_chip("dst", True), _on_chip("data0"), _on_chip("data1"), _on_chip("initial")),
        {"nki": ("vector",)}, semantics.tensor_tensor_scan, writes_dst=True,
        summary="r[i] = op1(op0(data0[i], r[i-1]), data1[i]) along each partition",
        depends=Depends("element", observed=("data0", "data1", "initial"))),
)
