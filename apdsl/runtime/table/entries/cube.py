"""Instruction table entries: the rest of the cube path (Atlas A2), under pyasc's names.

`asc.fixpipe` (L0C -> GM / L1 on FIX, with ReLU, quantisation and NZ -> ND), `asc.load_data`
with `asc.LoadData3DParamsV2` (img2col, L1 -> L0A on MTE1), and `asc.set_atomic_add` /
`asc.set_atomic_none` (the core's atomic-add setting for MTE3 and FIX writes to GM; no
operands, on the scalar pipe).  The bias table is `mmad`'s `bias` operand and the L1 -> BT
route of `dma_copy`; the unit flag is a parameter of `mmad` and of `asc.fixpipe`.
"""

from __future__ import annotations

from .. import semantics_cube as cube
from ..spec import Instruction, Operand

# Fixpipe's source: the L0C accumulator; its destination: any dtype a mode writes
FIX_SRC = ("float32", "int32")
FIX_DST = ("float32", "int32", "float16", "bfloat16", "int8", "uint8")
# LoadData 3D v2, TPosition A1/A2 on Atlas A2 (int4 has no apdsl tile path here)
LOAD3D = ("int8", "uint8", "float16", "bfloat16", "int32", "uint32", "float32")


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
        (Operand("dst", True, {"ascend": ("l0a",)}, LOAD3D),
         Operand("src", False, {"ascend": ("l1",)}, LOAD3D)),
        {"ascend": ("MTE1",)}, cube.img2col, cost="dma",
        summary="dst = a window of the img2col matrix of an L1 feature map (LoadData 3D v2)"),
    Instruction(
        "asc.set_atomic_add", "ascend.atomic", (), {"ascend": ("S",)}, None, cost="register",
        summary="this core's MTE3 and FIX writes to GM add to GM from now on (SetAtomicAdd)"),
    Instruction(
        "asc.set_atomic_none", "ascend.atomic", (), {"ascend": ("S",)}, None, cost="register",
        summary="writes to GM replace GM's data again (SetAtomicNone)"),
)
