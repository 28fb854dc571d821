"""Instruction table entries: the rest of the cube path (Atlas A2), under pyasc's names.

`asc.fixpipe` (L0C -> GM / L1 on FIX, with ReLU, quantisation and NZ -> ND), `asc.load_data`
with `asc.LoadData3DParamsV2` (img2col, L1 -> L0A on MTE1), and `asc.set_atomic_add` /
`asc.set_atomic_none` (the core's atomic-add setting for MTE3 and FIX writes to GM; no
operands, on the scalar pipe).  The bias table is `mmad`'s `bias` operand and the L1 -> BT
route of `dma_copy`; the unit flag is a parameter of `mmad` and of `asc.fixpipe`.
"""

from __future__ import annotations

from types import MappingProxyType

from .. import semantics_cube as cube
from ..spec import PATH_PIPES, Instruction, Operand, Routes

# Fixpipe's source: the L0C accumulator; its destination: any dtype a mode writes
FIX_SRC = ("float32", "int32")
FIX_DST = ("float32", "int32", "float16", "bfloat16", "int8", "uint8")
# LoadData 3D v2, TPosition A1/A2 on Atlas A2 (int4 has no apdsl tile path here)
LOAD3D = ("int8", "uint8", "float16", "bfloat16", "int32", "uint32", "float32")
# the Matmul API's inputs and outputs (Atlas A2)
MATMUL_IN = ("float16", "bfloat16", "float32", "int8")
MATMUL_OUT = ("float32", "float16", "bfloat16", "int32")
# LoadData 2D moves these too (16-bit integers); LoadData 3D checks its own
LOAD2D = LOAD3D + ("int16", "uint16")


ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "asc.fixpipe", "ascend.fixpipe",
        (Operand("dst", True, {"ascend": ("gm", "l1")}, FIX_DST),
         Operand("src", False, {"ascend": ("l0c",)}, FIX_SRC),
         Operand("cbuf_workspace", False, {"ascend": ("l1",)}, ("int64",))),
        {"ascend": ("FIX",)}, cube.quantise, cost="dma",
        summary="dst = the m_size x n_size block of L0C src, with ReLU and quantisation "
        "(QuantModes), NZ -> ND to a row-major dst (Fixpipe)"),
    Instruction(
        "asc.load_data", "ascend.load3d",
        (Operand("dst", True, {"ascend": ("l0a", "l0b")}, LOAD2D),
         Operand("src", False, {"ascend": ("l1", "gm")}, LOAD2D)),
        {"ascend": ("MTE1", "MTE2")}, cube.img2col, cost="dma", routes=PATH_PIPES,
        summary="dst = a window of the img2col matrix of an L1 feature map (LoadData 3D v2), "
        "or whole 512-byte fractals L1/GM -> L0A/L0B (LoadData 2D)"),
    Instruction(
        "asc.adv.matmul", "ascend.matmul_api",
        (Operand("dst", True, {"ascend": ("gm", "ub")}, MATMUL_OUT),
         Operand("a", False, {"ascend": ("gm",)}, MATMUL_IN),
         Operand("b", False, {"ascend": ("gm",)}, MATMUL_IN),
         Operand("bias", False, {"ascend": ("gm",)}, ("float32", "int32"))),
        {"ascend": ("MTE3", "V")}, cube.matmul_block, cost="matmul",
        routes=Routes("dst", MappingProxyType({"gm": "MTE3", "ub": "V"})),
        summary="one block of the Matmul API on a vector core: dst = a @ b (+ bias), the "
        "pipeline the API runs on the cube core and orders itself (IterateAll, GetTensorC)"),
    Instruction(
        "asc.adv.matmul_cube", "ascend.matmul_api",
        (Operand("dst", True, {"ascend": ("gm",)}, MATMUL_OUT),
         Operand("a", False, {"ascend": ("gm",)}, MATMUL_IN),
         Operand("b", False, {"ascend": ("gm",)}, MATMUL_IN),
         Operand("bias", False, {"ascend": ("gm",)}, ("float32", "int32"))),
        {"ascend": ("FIX",)}, cube.matmul_block, cost="matmul",
        summary="one block of the Matmul API on the cube core itself (matmul_cube_only): dst "
        "= a @ b (+ bias), its Fixpipe writing GM"),
    Instruction(
        "asc.set_atomic_add", "ascend.atomic", (), {"ascend": ("S",)}, None, cost="register",
        summary="this core's MTE3 and FIX writes to GM add to GM from now on (SetAtomicAdd)"),
    Instruction(
        "asc.set_atomic_none", "ascend.atomic", (), {"ascend": ("S",)}, None, cost="register",
        summary="writes to GM replace GM's data again (SetAtomicNone)"),
)
