"""Instruction table entries: the movement group (see `apdsl.runtime.table.entries`): transposes,
gathers, shuffles and registers.

Facts are from the NKI API reference (`nki/api/nki/isa/__init__.py`), digested with sources in
`docs/facts/nki_isa.md` sections 3.8, 3.9, 3.22, 3.23 and 3.25.
"""

from __future__ import annotations

from .. import semantics_movement as sm
from ..spec import (
    ELEMENT,
    NKI_DMA,
    NKI_ONCHIP,
    TRN3_DTYPES,
    VECTOR_DTYPES,
    WHOLE,
    Depends,
    Instruction,
    Operand,
)

# "any valid NKI data type" (nc_transpose, nc_stream_shuffle, local_gather): the tile dtypes
TILE_DTYPES = VECTOR_DTYPES + TRN3_DTYPES


ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "nc_transpose", "nki.movement",
        (Operand("dst", True, {"nki": NKI_ONCHIP}, TILE_DTYPES),
         Operand("data", False, {"nki": NKI_ONCHIP}, TILE_DTYPES)),
        # the default engine is chosen by shape and memory (`movement.transpose_engine`)
        {"nki": ("tensor", "vector")}, sm.transpose2d, writes_dst=True,
        limits={"tensor": (128, 128), "vector": (32, 32)},
        summary="dst = data.reshape(P, -1).T: partitions and free elements exchanged",
        depends=Depends("transpose")),
    Instruction(
        "dma_transpose", "nki.movement",
        (Operand("dst", True, {"nki": ("sbuf",)}),
         Operand("src", False, {"nki": NKI_DMA})),
        {"nki": ("dma",)}, sm.dma_transpose, writes_dst=True, cost="dma",
        limits={"axes": ((1, 0), (2, 1, 0), (3, 1, 2, 0)), "hwdge_last": 128,
                "hwdge_first": (1, 2, 4, 8, 16)},
        summary="dst = np.transpose(src, axes) by DMA (trn2 and later)", depends=WHOLE),
    Instruction(
        "nc_stream_shuffle", "nki.shuffle",
        (Operand("dst", True, {"nki": NKI_ONCHIP}, TILE_DTYPES),
         Operand("src", False, {"nki": NKI_ONCHIP}, TILE_DTYPES)),
        {"nki": ("vector",)}, sm.stream_shuffle, writes_dst=False,
        limits={"quadrant": sm.QUADRANT, "keep": sm.KEEP},
        summary="dst[q*32 + i] = src[q*32 + mask[i]] in each 32-partition quadrant",
        depends=ELEMENT),  # (the executor reads and writes the rows the mask pairs, in turn)
    Instruction(
        "nc_n_gather", "nki.gather",
        (Operand("dst", True, {"nki": ("sbuf",)}, TILE_DTYPES),
         Operand("data", False, {"nki": ("sbuf",)}, TILE_DTYPES),
         Operand("indices", False, {"nki": ("sbuf",)}, ("uint32",))),
        {"nki": ("gpsimd",)}, sm.n_gather, writes_dst=True,
        summary="dst[p, k] = data[p].flatten()[indices[p, k]] in each partition",
        # (the executor moves the unwritten elements of data as it moves their values)
        depends=Depends("element", observed=("indices",))),
    Instruction(
        "local_gather", "nki.shuffle",
        (Operand("dst", True, {"nki": ("sbuf",)}, TILE_DTYPES),
         Operand("src_buffer", False, {"nki": ("sbuf",)}, TILE_DTYPES),
         Operand("index", False, {"nki": ("sbuf",)}, ("uint16",))),
        {"nki": ("gpsimd",)}, sm.local_gather, writes_dst=True,
        limits={"num_elem_per_idx": (1, 2, 4, 8, 16, 32), "indices_per_core": 4096,
                "core_partitions": sm.CORE_PARTITIONS},
        summary="each 16-partition GpSimd core gathers chunks of its own partitions",
        # (the executor moves the unwritten elements of src_buffer as it moves their values)
        depends=Depends("element", observed=("index",))),
    Instruction(
        "register_move", "nki.register_ops", (), {}, None, cost="register",
        summary="set a register to an int or another register's value", depends=WHOLE),
    Instruction(
        "register_store", "nki.register_ops",
        (Operand("dst", True, {"nki": NKI_DMA}),),
        {}, None, writes_dst=True, cost="register",
        summary="store a register into a one-element integer tensor", depends=WHOLE),
)
