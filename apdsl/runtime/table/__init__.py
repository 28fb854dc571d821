"""The instruction table: each instruction declared once.

An entry names the instruction's operands and their roles (read or written), the engine (NKI) or
pipe (Ascend) it runs on, the memory types and dtypes each operand may have per target family,
its limits, its NumPy meaning (`apdsl.runtime.table.semantics`) and the module that executes it.
Generic code reads the table: the language's builtins and the Python API take the instruction
callables from it, `trace.record` puts the engine or pipe in every trace record (for `lower`,
the profile and scheduling), `apdsl.runtime.nki.compute` checks, resolves, records and executes an
element-wise instruction from its entry alone, and check mode's destination check knows from it
which instructions write their `dst` whole.

The table imports no executor (they import it); `implementation(name)` loads one on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from types import MappingProxyType
from typing import Any

from . import semantics
from .entries import collectives, compute, cube, movement, mx, reduce, vector
from .spec import (
    ASCEND_ALL,
    ASCEND_COPY_PIPES,
    ASCEND_MEMSET_PIPES,
    ELEMENT,
    NKI_DMA,
    NKI_ONCHIP,
    PATH_PIPES,
    TRN3_DTYPES,
    VECTOR_DTYPES,
    Call,
    Depends,
    Domain,
    Instruction,
    Limit,
    Operand,
    Routes,
    nki_ascend,
)


def matmul_max_n(call: Call) -> int:
    """nc_matmul's N (the moving free size): the target's `matmul_max_n`, twice that for a
    bfloat16 dst outside transpose mode (trn3, the one target whose dst may be bfloat16)."""
    double = call.dtypes["dst"] == "bfloat16" and not call.settings["transpose"]
    return call.target.matmul_max_n * (2 if double else 1)


TABLE: dict[str, Instruction] = {e.name: e for e in (
    Instruction(
        "dma_copy", "copies",
        (Operand("dst", True, nki_ascend(NKI_DMA, ASCEND_ALL)),
         Operand("src", False, nki_ascend(NKI_DMA, ASCEND_ALL))),
        {"nki": ("dma",), "ascend": tuple(sorted(set(ASCEND_COPY_PIPES.values())))},
        semantics.copy, writes_dst=True, cost="dma", routes=PATH_PIPES,
        summary="copy in logical row-major order, converting through float32", depends=ELEMENT),
    Instruction(
        "dma_compute", "nki.dma_compute",
        (Operand("dst", True, {"nki": NKI_DMA}), Operand("srcs", False, {"nki": NKI_DMA})),
        {"nki": ("dma",)}, None, writes_dst=True, cost="dma",
        summary="dst = srcs[0] + srcs[1] + ... in float32, element by element, by DMA",
        depends=ELEMENT),
    Instruction(
        "tensor_copy", "copies",
        (Operand("dst", True, {"nki": NKI_ONCHIP}), Operand("src", False, {"nki": NKI_ONCHIP})),
        {"nki": ("vector", "scalar", "gpsimd")}, semantics.copy, writes_dst=True,
        summary="copy on chip, each partition in its partition", depends=ELEMENT),
    Instruction(
        "memset", "copies",
        (Operand("dst", True, nki_ascend(NKI_ONCHIP, ("ub", "l1", "l0a", "l0b"))),),
        {"nki": ("vector", "gpsimd"), "ascend": ("V", "MTE1")}, semantics.fill,
        writes_dst=True, routes=Routes("dst", MappingProxyType(ASCEND_MEMSET_PIPES)),
        summary="set every element to one value", depends=ELEMENT),
    Instruction(
        "iota", "copies", (Operand("dst", True, {"nki": ("sbuf",)}),),
        {"nki": ("gpsimd",)}, semantics.iota, limits={"pattern_entries": 4}, writes_dst=True,
        summary="offset + p * channel_multiplier + sum(i_k * step_k), in int32", depends=ELEMENT),
    Instruction(
        "nc_matmul", "nki.matmul",
        (Operand("dst", True, {"nki": ("psum",)}),
         Operand("stationary", False, {"nki": ("sbuf",)}),
         Operand("moving", False, {"nki": ("sbuf",)})),
        {"nki": ("tensor",)}, semantics.matmul,
        limits={"K": Limit(lambda c: c.settings["rows"], tiled=True,
                           advice=" and accumulate over K tiles"),
                "M": Limit(lambda c: c.settings["cols"], tiled=True),
                "N": Limit(matmul_max_n)},
        writes_dst=True, cost="matmul", summary="dst (+)= stationary.T @ moving",
        depends=Depends("matmul", contract=MappingProxyType({"stationary": (0, 0),
                                                             "moving": (0, 1)}))),
    Instruction(
        "mmad", "ascend.mmad",
        (Operand("dst", True, {"ascend": ("l0c",)}), Operand("a", False, {"ascend": ("l0a",)}),
         Operand("b", False, {"ascend": ("l0b",)}),
         Operand("bias", False, {"ascend": ("bt",)}, ("float32", "int32"))),
        {"ascend": ("M",)}, semantics.mmad, cost="matmul",
        summary="dst (+)= a @ b on the cube unit; with bias= (the bias table), dst = a @ b + "
        "bias",
        depends=Depends("matmul", contract=MappingProxyType({"a": (1, 0), "b": (0, 1)}))),
    Instruction(
        "register_alloc", "nki.register_ops", (), {}, None, cost="register",
        summary="a virtual register"),
    Instruction(
        "register_load", "nki.register_ops",
        (Operand("src", False, {"nki": ("sbuf", "hbm", "private_hbm", "shared_hbm")}),),
        {}, None, cost="register", summary="load a register from a one-element integer tensor",
        depends=Depends("whole", observed=("src",))),
    Instruction(
        "reciprocal", "nki.compute",
        (Operand("dst", True, {"nki": NKI_ONCHIP}, VECTOR_DTYPES + TRN3_DTYPES),
         Operand("data", False, {"nki": NKI_ONCHIP}, VECTOR_DTYPES + TRN3_DTYPES)),
        {"nki": ("vector",)}, semantics.reciprocal, writes_dst=True,
        limits={"domain": Domain(semantics.nonzero, "data != 0")},
        summary="dst = 1 / data, in float32, cast to dst", depends=ELEMENT),
) + compute.ENTRIES + reduce.ENTRIES + movement.ENTRIES + mx.ENTRIES + collectives.ENTRIES
   + vector.ENTRIES + cube.ENTRIES}

NAMES = tuple(TABLE)
# the instructions that are Python names: `apdsl.X`, `apdsl.runtime.instructions`, the `.apk`
# builtins and the lexer's list (`asc.add` and the other dotted names are reached through
# their namespace)
PYTHON_NAMES = tuple(name for name in TABLE if name.isidentifier())

# Each instruction's outputs: every operand its entry declares written (`dst`, and the second
# outputs `reduce_res`, `dst_idx`, ...).  Whatever orders accesses (check mode's written state,
# the profile's dependency graph) takes them from here, so a second output is never a read.
OUTPUTS: Mapping[str, frozenset[str]] = MappingProxyType({
    name: frozenset(o.role for o in entry.operands if o.writes) for name, entry in TABLE.items()})


def outputs(op: str) -> frozenset[str] | None:
    """The roles instruction `op` writes (None: `op` is not in the table)."""
    return OUTPUTS.get(op)


def implementation(name: str) -> Callable[..., Any]:
    """The callable that executes instruction `name` (its module loads on first use)."""
    entry = TABLE[name]
    # `asc.add` is the function `add` of its module (the prefix names the family's namespace)
    return getattr(import_module(f"apdsl.runtime.{entry.module}"), name.rpartition(".")[2])


def engine_of(op: str, operands: dict[str, Any], hint: str | None = None) -> str | None:
    """The engine or pipe running instruction `op` on these operands (None: not declared)."""
    entry = TABLE.get(op)
    if entry is None or not operands:
        return None
    from ...tensor.targets import family
    return entry.engine(family(next(iter(operands.values())).buffer), operands, hint)
