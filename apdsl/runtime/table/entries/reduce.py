"""Instruction table entries: the reduce group (see `apdsl.runtime.table.entries`): activations,
reductions, statistics and random numbers (NKI isa docstrings; `docs/facts/nki_isa.md`
sections 3.4-3.7, 3.17-3.21, 3.24)."""

from __future__ import annotations

from .. import semantics_reduce as sem
from ..spec import (
    ELEMENT,
    NKI_ONCHIP,
    PARTITION,
    TRN3_DTYPES,
    VECTOR_DTYPES,
    Depends,
    Instruction,
    Operand,
)

ANY = VECTOR_DTYPES + TRN3_DTYPES
INDEX_DTYPES = ("uint16", "uint32")
# nc_match_replace8's dst_idx: the docs' example writes uint32 and name no dtype; apdsl takes
# the integer dtypes that hold every position (up to 16383) exactly.
POSITION_DTYPES = ("int16", "uint16", "int32", "uint32")
RNG_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
RAND2_DTYPES = ("float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32",
                "int8", "int16", "int32", "uint8", "uint16", "uint32")


def _on_chip(role: str, writes: bool = False, dtypes: tuple[str, ...] | None = ANY) -> Operand:
    return Operand(role, writes, {"nki": NKI_ONCHIP}, dtypes)


CUMULATIVE_DTYPES = ("bfloat16", "float16", "float32", "float8_e4m3", "float8_e5m2", "uint8",
                     "uint16", "int8", "int16")
EXP_DST = ("float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32", "int8",
           "int16", "int32", "uint8", "uint16")
EXP_SRC = ("float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "int8", "int16",
           "int32", "uint8", "uint16", "uint32")
ACC_RES = ("float8_e4m3", "float8_e5m2", "float16", "bfloat16", "float32", "tfloat32")

ENTRIES: tuple[Instruction, ...] = (
    Instruction(
        "activation", "nki.activation",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("scale", False, ("float32",)),
         _on_chip("bias"), _on_chip("reduce_res", True)),
        {"nki": ("scalar",)}, None, writes_dst=True,
        summary="dst = op(data * scale + bias); reduce_regs (+)= its free-axis sum",
        depends=ELEMENT),
    Instruction(
        "activation_reduce", "nki.activation",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("scale", False, ("float32",)),
         _on_chip("bias"), _on_chip("reduce_res", True)),
        {"nki": ("scalar",)}, None, writes_dst=True,
        summary="activation with reduce_cmd=reset_reduce: reduce_res = free-axis sum",
        depends=ELEMENT),
    Instruction(
        "activate2", "nki.activation",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("imm0"), _on_chip("imm1"),
         _on_chip("relu_param"), _on_chip("reduce_res", True)),
        {"nki": ("scalar",)}, None, writes_dst=True,
        summary="trn3: dst = op((data op0 imm0) op1 imm1); reduce_regs reduced by reduce_op",
        depends=ELEMENT),
    Instruction(
        "tensor_reduce", "nki.reduce", (_on_chip("dst", True), _on_chip("data")),
        {"nki": ("vector",)}, sem.reduce_free, writes_dst=True,
        summary="reduce the trailing free axes with op (float32; bit-vector ops on bits)",
        depends=PARTITION),
    Instruction(
        "tensor_partition_reduce", "nki.reduce",
        (Operand("dst", True, {"nki": ("sbuf",)}, ANY), Operand("data", False, {"nki": ("sbuf",)},
                                                               ANY)),
        {"nki": ("gpsimd",)}, sem.reduce_partitions, writes_dst=True,
        summary="reduce across partitions into one (GpSimd)", depends=Depends("cross")),
    Instruction(
        "bn_stats", "nki.reduce", (_on_chip("dst", True), _on_chip("data")), {"nki": ("vector",)},
        sem.bn_stats, limits={"data_elements": 512}, writes_dst=True,
        summary="[count, mean, var*count] of the even, then the odd elements a partition",
        depends=PARTITION),
    Instruction(
        "bn_aggr", "nki.reduce", (_on_chip("dst", True), _on_chip("data")), {"nki": ("vector",)},
        sem.bn_aggr, writes_dst=True,
        summary="mean and variance a partition from bn_stats triples", depends=PARTITION),
    Instruction(
        "max8", "nki.reduce", (_on_chip("dst", True), _on_chip("src")), {"nki": ("vector",)},
        sem.max8, limits={"src_elements": (8, 16384)}, writes_dst=True,
        summary="the 8 largest values a partition, descending", depends=PARTITION),
    Instruction(
        "nc_find_index8", "nki.reduce",
        (_on_chip("dst", True, INDEX_DTYPES), _on_chip("data"), _on_chip("vals")),
        {"nki": ("vector",)}, sem.find_index8, limits={"data_elements": (8, 16384)},
        writes_dst=True, summary="index of the first occurrence of each of 8 values",
        depends=PARTITION),
    Instruction(
        "nc_match_replace8", "nki.reduce",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("vals"),
         _on_chip("dst_idx", True, POSITION_DTYPES)),
        {"nki": ("vector",)}, sem.match_replace8, limits={"data_elements": (8, 16384)},
        writes_dst=True, summary="first occurrence of each of 8 values replaced by imm",
        depends=PARTITION),
    Instruction(
        "dropout", "nki.rng.ops", (_on_chip("dst", True), _on_chip("data"), _on_chip("prob")),
        {"nki": ("vector",)}, sem.dropout, writes_dst=True,
        summary="each element 0 with probability prob (seeded NumPy generator)", depends=ELEMENT),
    Instruction(
        "rng", "nki.rng.ops", (_on_chip("dst", True, RNG_DTYPES),), {"nki": ("vector", "gpsimd")},
        None, writes_dst=True, summary="32 random bits an element, truncated to dst",
        depends=ELEMENT),
    Instruction(
        "rand2", "nki.rng.ops",
        (_on_chip("dst", True, RAND2_DTYPES), _on_chip("min", False, ("float32",)),
         _on_chip("max", False, ("float32",))),
        {"nki": ("vector",)}, None, writes_dst=True,
        summary="uniform random values in [min, max] (trn3)", depends=ELEMENT),
    Instruction(
        "set_rng_seed", "nki.rng.ops",
        (_on_chip("src_seeds", False, ("int32", "uint32", "float32")),), {"nki": ("vector",)},
        None, summary="seed the Vector Engine's generator",
        depends=Depends("whole", observed=("src_seeds",))),
    # rand_set_state/rand_get_state: NeuronCore-v3+, GpSimd (the default) or, from v4 (trn3),
    # Vector; 6 / 24 uint32 words a lane; the target and engine rules in the executor
    Instruction(
        "rand_set_state", "nki.rng.ops",
        (Operand("src_seeds", False, {"nki": ("sbuf",)}, ("uint32",)),),
        {"nki": ("gpsimd", "vector")}, None,
        summary="load the engine's per-lane XORWOW states (6 / 24 words a lane)",
        depends=Depends("whole", observed=("src_seeds",))),
    Instruction(
        "rand_get_state", "nki.rng.ops", (_on_chip("dst", True, ("uint32",)),),
        {"nki": ("gpsimd", "vector")}, None, writes_dst=True,
        summary="store the engine's per-lane XORWOW states (6 / 24 words a lane)",
        depends=ELEMENT),
    Instruction(
        "tensor_scalar_reduce", "nki.vector_reduce",
        (_on_chip("dst", True), _on_chip("data"), _on_chip("operand0", False, ("float32",)),
         _on_chip("reduce_init", False, ("float32",)), _on_chip("reduce_res", True)),
        {"nki": ("vector",)}, None, writes_dst=True,
        summary="dst = data op0 operand0; reduce_op of each partition into the accumulators",
        depends=ELEMENT),
    Instruction(
        "tensor_scalar_cumulative", "nki.vector_reduce",
        (_on_chip("dst", True, CUMULATIVE_DTYPES), _on_chip("src", False, CUMULATIVE_DTYPES),
         _on_chip("imm0", False, ("float32",)), _on_chip("imm1", False, ("float32",))),
        {"nki": ("vector",)}, None, writes_dst=True,
        summary="reg = op1(op0(src[i], imm0), reg); dst[i] = reg along each partition",
        depends=Depends("element", observed=("src", "imm0", "imm1"))),
    Instruction(
        "exponential", "nki.vector_reduce",
        (_on_chip("dst", True, EXP_DST), _on_chip("src", False, EXP_SRC),
         _on_chip("max_value", False, ("float32",)),
         _on_chip("reduce_init", False, ("float32",)), _on_chip("reduce_res", True, ACC_RES)),
        {"nki": ("vector",)}, None, writes_dst=True, limits={"targets": ("trn3",)},
        summary="dst = exp(src - max_value); the sum of each partition into the accumulators",
        depends=ELEMENT),
    Instruction(
        "nonzero_with_count", "nki.nonzero",
        (Operand("dst", True, {"nki": ("sbuf",)}, ("int32",)),
         Operand("src", False, {"nki": ("sbuf",)}, ("float32", "int32"))),
        {"nki": ("gpsimd",)}, None, writes_dst=False, limits={"targets": ("trn2", "trn3")},
        summary="indices of the non-zero elements, padding, their count (partitions 0, 16, ...)",
        depends=PARTITION),  # a row of dst: from its row of src
    Instruction(
        "topk", "nki.topk",
        (Operand("val_dst", True, {"nki": ("sbuf",)}, ("bfloat16",)),
         Operand("idx_dst", True, {"nki": ("sbuf",)}, ("uint32",)),
         Operand("src", False, {"nki": ("sbuf",)}, ("bfloat16",))),
        {"nki": ("gpsimd",)}, None, writes_dst=False, cost="snake",
        summary="the K largest of each 16-partition snake and their indices, ascending, "
                "as a snake",
        depends=Depends("whole", observed=("src",))),
    Instruction(
        "sequence_bounds", "nki.sequence",
        (Operand("dst", True, {"nki": NKI_ONCHIP}, ("float32", "int32")),
         Operand("segment_ids", False, {"nki": NKI_ONCHIP}, ("float32", "int32"))),
        {"nki": ("gpsimd",)}, None, writes_dst=True,
        summary="each element's segment start and end (runs of equal IDs; ID 0: n and -1)",
        depends=Depends("whole", observed=("segment_ids",))),
)
