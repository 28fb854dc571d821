"""The instruction table: each instruction declared once.

An entry names the instruction's operands and their roles (read or written), the engine (NKI) or
pipe (Ascend) it runs on, the memory types and dtypes each operand may have per target family,
its limits, its NumPy meaning (`apdsl.runtime.semantics`) and the module that executes it.
Generic code reads the table: the language's builtins and the Python API take the instruction
callables from it, `trace.record` puts the engine or pipe in every trace record (for `lower`,
the profile and scheduling), `apdsl.runtime.compute` checks, resolves, records and executes an
element-wise instruction from its entry alone, and check mode's destination check knows from it
which instructions write their `dst` whole.

The table imports no executor (they import it); `implementation(name)` loads one on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from . import semantics

NKI_ONCHIP = ("sbuf", "psum")
NKI_DMA = ("sbuf", "hbm", "private_hbm", "shared_hbm")
# Element dtypes of the NKI compute engines' arithmetic (SPEC 11: float32 math, then cast);
# float8_e4m3fn exists from trn3 on.  tfloat32 is a Tensor Engine input format, int4 and
# int64 are not NKI tile dtypes: an element-wise instruction refuses them (APK461).
VECTOR_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2", "int8",
                 "uint8", "int16", "uint16", "int32", "uint32")
TRN3_DTYPES = ("float8_e4m3fn",)

# Ascend DMA paths and the pipe that moves each (AscendC: MTE2 brings data in from GM, MTE1
# moves L1 -> L0A/L0B, FIXPIPE drains L0C, MTE3 writes UB out; a UB -> UB copy runs on the
# vector pipe).
ASCEND_COPY_PIPES = {("gm", "l1"): "MTE2", ("gm", "ub"): "MTE2", ("gm", "l0a"): "MTE2",
                     ("gm", "l0b"): "MTE2", ("l1", "l0a"): "MTE1", ("l1", "l0b"): "MTE1",
                     ("l0c", "gm"): "FIX", ("l0c", "l1"): "FIX", ("ub", "gm"): "MTE3",
                     ("ub", "ub"): "V"}
# memset on Ascend: Duplicate (vector pipe) on UB, InitConstValue on L1/L0A/L0B, which runs on
# MTE1 (its CCE intrinsics set_l1_2d/set_l0a_2d/set_l0b_2d list PIPE_MTE1).
ASCEND_MEMSET_PIPES = {"ub": "V", "l1": "MTE1", "l0a": "MTE1", "l0b": "MTE1"}


@dataclass(frozen=True)
class Operand:
    """One tensor operand: its role (the parameter name), whether the instruction writes it,
    the buffers it may be in per target family (absent family: not an operand there) and the
    dtypes it may have (None: the executor's own rules decide)."""

    role: str
    writes: bool
    memory: dict[str, tuple[str, ...]]
    dtypes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Instruction:
    name: str
    module: str  # the executor, `apdsl.runtime.<module>.<name>`
    operands: tuple[Operand, ...]
    # family -> the engines (NKI) or pipes (Ascend) that may run it, the default first
    engines: dict[str, tuple[str, ...]]
    semantics: Callable[..., Any] | None
    limits: dict[str, Any] = field(default_factory=dict)
    # the destination is written whole, through `dst` itself (check mode's APK405 check)
    writes_dst: bool = False
    summary: str = ""

    def operand(self, role: str) -> Operand:
        return next(o for o in self.operands if o.role == role)

    def engine(self, family: str, operands: dict[str, Any], hint: str | None = None) -> str | None:
        """The engine or pipe that runs this instance: the hint when given, else the default
        (on Ascend, by the path the operands take)."""
        if hint not in (None, "unknown"):
            return hint
        if family == "ascend":
            if self.name == "dma_copy":
                return ASCEND_COPY_PIPES.get((operands["src"].buffer, operands["dst"].buffer))
            if self.name == "memset":
                return ASCEND_MEMSET_PIPES.get(operands["dst"].buffer)
        engines = self.engines.get(family, ())
        return engines[0] if engines else None


def _nki_ascend(nki: tuple[str, ...], ascend: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {"nki": nki, "ascend": ascend}


ASCEND_ALL = ("gm", "l1", "l0a", "l0b", "l0c", "ub")

TABLE: dict[str, Instruction] = {e.name: e for e in (
    Instruction(
        "dma_copy", "copies",
        (Operand("dst", True, _nki_ascend(NKI_DMA, ASCEND_ALL)),
         Operand("src", False, _nki_ascend(NKI_DMA, ASCEND_ALL))),
        {"nki": ("dma",), "ascend": tuple(sorted(set(ASCEND_COPY_PIPES.values())))},
        semantics.copy, writes_dst=True,
        summary="copy in logical row-major order, converting through float32"),
    Instruction(
        "tensor_copy", "copies",
        (Operand("dst", True, {"nki": NKI_ONCHIP}), Operand("src", False, {"nki": NKI_ONCHIP})),
        {"nki": ("vector", "scalar", "gpsimd")}, semantics.copy, writes_dst=True,
        summary="copy on chip, each partition in its partition"),
    Instruction(
        "memset", "copies",
        (Operand("dst", True, _nki_ascend(NKI_ONCHIP, ("ub", "l1", "l0a", "l0b"))),),
        {"nki": ("vector", "gpsimd"), "ascend": ("V", "MTE1")}, semantics.fill,
        writes_dst=True, summary="set every element to one value"),
    Instruction(
        "iota", "copies", (Operand("dst", True, {"nki": ("sbuf",)}),),
        {"nki": ("gpsimd",)}, semantics.iota, limits={"pattern_entries": 4}, writes_dst=True,
        summary="offset + p * channel_multiplier + sum(i_k * step_k), in int32"),
    Instruction(
        "nc_matmul", "matmul",
        (Operand("dst", True, {"nki": ("psum",)}),
         Operand("stationary", False, {"nki": ("sbuf",)}),
         Operand("moving", False, {"nki": ("sbuf",)})),
        {"nki": ("tensor",)}, semantics.matmul,
        limits={"K": 128, "M": 128, "N": "Target.matmul_max_n"}, writes_dst=True,
        summary="dst (+)= stationary.T @ moving"),
    Instruction(
        "mmad", "mmad",
        (Operand("dst", True, {"ascend": ("l0c",)}), Operand("a", False, {"ascend": ("l0a",)}),
         Operand("b", False, {"ascend": ("l0b",)})),
        {"ascend": ("M",)}, semantics.mmad, summary="dst (+)= a @ b on the cube unit"),
    Instruction(
        "register_alloc", "register_ops", (), {}, None, summary="a virtual register"),
    Instruction(
        "register_load", "register_ops",
        (Operand("src", False, {"nki": ("sbuf", "hbm", "private_hbm", "shared_hbm")}),),
        {}, None, summary="load a register from a one-element integer tensor"),
    Instruction(
        "reciprocal", "compute",
        (Operand("dst", True, {"nki": NKI_ONCHIP}, VECTOR_DTYPES + TRN3_DTYPES),
         Operand("data", False, {"nki": NKI_ONCHIP}, VECTOR_DTYPES + TRN3_DTYPES)),
        {"nki": ("vector",)}, semantics.reciprocal, writes_dst=True,
        limits={"domain": "data != 0", "inside": semantics.nonzero},
        summary="dst = 1 / data, in float32, cast to dst"),
)}

NAMES = tuple(TABLE)


def implementation(name: str) -> Callable[..., Any]:
    """The callable that executes instruction `name` (its module loads on first use)."""
    entry = TABLE[name]
    return getattr(import_module(f"{__package__}.{entry.module}"), name)


def engine_of(op: str, operands: dict[str, Any], hint: str | None = None) -> str | None:
    """The engine or pipe running instruction `op` on these operands (None: not declared)."""
    entry = TABLE.get(op)
    if entry is None or not operands:
        return None
    from ..tensor.targets import family
    return entry.engine(family(next(iter(operands.values())).buffer), operands, hint)
