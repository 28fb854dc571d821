"""Instruction table entries: the compute group (see `apdsl.runtime.entries`).

Element-wise arithmetic with operators (`tensor_tensor`, `tensor_scalar`,
`scalar_tensor_tensor`) and selection (`tensor_copy_predicated`, `affine_select`,
`range_select`, `select_reduce`, `tensor_tensor_scan`), as the NKI isa docstrings give them:
memory per operand, dtypes, engines with the default first.
"""

from __future__ import annotations

from .. import semantics
from ..spec import NKI_ONCHIP, TRN3_DTYPES, VECTOR_DTYPES, Instruction, Operand

TILE = VECTOR_DTYPES + TRN3_DTYPES


def _on_chip(role: str, writes: bool = False, dtypes: tuple[str, ...] | None = TILE,
             memory: tuple[str, ...] = NKI_ONCHIP) -> Operand:
    return Operand(role, writes, {"nki": memory}, dtypes)


ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "tensor_tensor", "elementwise",
        (_on_chip("dst", True), _on_chip("data1"), _on_chip("data2")),
        {"nki": ("vector", "gpsimd")}, semantics.tensor_tensor, writes_dst=True,
        summary="dst = op(data1, data2) element-wise, in float32 (bit-vector ops on the bits)"),
    Instruction(
        "tensor_scalar", "elementwise",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("operand0"), _on_chip("operand1")),
        {"nki": ("vector", "scalar", "gpsimd")}, semantics.tensor_scalar, writes_dst=True,
        summary="dst = (data op0 operand0) op1 operand1, operands scalars or [P, 1] columns"),
    Instruction(
        "scalar_tensor_tensor", "elementwise",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("operand0"), _on_chip("operand1")),
        {"nki": ("vector",)}, semantics.scalar_tensor_tensor, writes_dst=True,
        summary="dst = (data op0 operand0) op1 operand1, operand1 a tile like data"),
)
