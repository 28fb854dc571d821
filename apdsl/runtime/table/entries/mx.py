"""Instruction table entries: the microscaling group (see `apdsl.runtime.table.entries`):
`quantize_mx` (Vector Engine) and `nc_matmul_mx` (Tensor Engine), NeuronCore-v4 (trn3) only,
as the NKI isa docstrings give them.  Their NumPy meaning: `apdsl.runtime.table.semantics_mx`."""

from __future__ import annotations

from .. import semantics_mx as mx
from ..spec import Call, Instruction, Limit, Operand

PACKED = tuple(mx.ELEMENTS)
SCALES = ("float8_e8m0fnu", "uint8")  # e8m0 preferred; uint8 for backward compatibility


def moving_max(call: Call) -> int:
    """nc_matmul_mx's moving free size: 4096 for a float32 dst, 8192 for bfloat16 (8 PSUM
    banks, the whole PSUM)."""
    return 8192 if call.dtypes["dst"] == "bfloat16" else 4096


ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "quantize_mx", "nki.mx",
        (Operand("dst", True, {"nki": ("sbuf",)}, mx.QUANTIZED),
         Operand("src", False, {"nki": ("sbuf",)}, ("bfloat16", "float16")),
         Operand("dst_scale", True, {"nki": ("sbuf",)}, SCALES)),
        {"nki": ("vector",)}, mx.quantize, writes_dst=True,
        limits={"targets": ("trn3",)},
        summary="groups of 8 partitions x 4 values share a power-of-two scale; dst = src / "
        "scale in fp8, four values an element"),
    Instruction(
        "nc_matmul_mx", "nki.mx",
        (Operand("dst", True, {"nki": ("psum",)}, ("float32", "bfloat16")),
         Operand("stationary", False, {"nki": ("sbuf",)}, PACKED),
         Operand("moving", False, {"nki": ("sbuf",)}, PACKED),
         Operand("stationary_scale", False, {"nki": ("sbuf",)}, SCALES),
         Operand("moving_scale", False, {"nki": ("sbuf",)}, SCALES)),
        {"nki": ("tensor",)}, mx.matmul, writes_dst=True, cost="matmul",
        limits={"targets": ("trn3",),
                "K": Limit(lambda c: c.settings["rows"], tiled=True,
                           advice=" and accumulate over K tiles"),
                "M": Limit(lambda c: 128),
                "N": Limit(moving_max)},
        summary="dst (+)= dequantized stationary.T @ dequantized moving, K = partitions x 4"),
)
