"""What an instruction table entry is: `Operand` and `Instruction`, and the memory and dtype
sets entries share.

The table (`apdsl.runtime.table`) assembles the entries; they are declared by group, each group
in its own module under `apdsl.runtime.table.entries` (`compute`: element-wise arithmetic and
selection; `reduce`: activations, reductions, statistics and random numbers; `movement`:
transposes, gathers, shuffles and registers), next to the core entries in the table itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from ...records import record

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
                     ("ub", "ub"): "V", ("l1", "bt"): "MTE1"}
# memset on Ascend: Duplicate (vector pipe) on UB, InitConstValue on L1/L0A/L0B, which runs on
# MTE1 (its CCE intrinsics set_l1_2d/set_l0a_2d/set_l0b_2d list PIPE_MTE1).
ASCEND_MEMSET_PIPES = {"ub": "V", "l1": "MTE1", "l0a": "MTE1", "l0b": "MTE1"}


@record
class Operand:
    """One tensor operand: its role (the parameter name), whether the instruction writes it,
    the buffers it may be in per target family (absent family: not an operand there) and the
    dtypes it may have (None: the executor's own rules decide)."""

    role: str
    writes: bool
    memory: dict[str, tuple[str, ...]]
    dtypes: tuple[str, ...] | None = None


@record
class Call:
    """What a limit depends on in one call: the target, the operands' dtypes by role, and the
    call's own settings that change a bound (`nc_matmul`: its tile rows and columns, whether it
    runs in transpose mode)."""

    target: Any  # apdsl.tensor.targets.Target
    dtypes: Mapping[str, str]
    settings: Mapping[str, Any] = MappingProxyType({})


@record
class Limit:
    """A size limit: `bound(call)` is the largest value allowed.  `tiled`: the bound shrinks
    with the call's tiling (a refusal says so when it is below the target's partitions);
    `advice`: what the help adds after "split X into tiles of at most N"."""

    bound: Callable[[Call], int]
    tiled: bool = False
    advice: str = ""


@record
class Domain:
    """The inputs an instruction's function is defined on: `inside(values)` is a mask of the
    elements in it; `says` is the rule in the refusal's words."""

    inside: Callable[..., Any]
    says: str


@record
class Routes:
    """An Ascend instruction whose pipe is chosen by where its data goes: `by` is "path" (the
    (src, dst) buffers) or "dst" (the destination buffer), `pipes` maps that key to the pipe."""

    by: str
    pipes: Mapping[Any, str]

    def pipe(self, operands: Mapping[str, Any]) -> str | None:
        if self.by == "path":
            return self.pipes.get((operands["src"].buffer, operands["dst"].buffer))
        return self.pipes.get(operands["dst"].buffer)


# The cost classes the profile (`apdsl.profile.model`) prices: a DMA transfer; a matrix
# multiply on the Tensor Engine or cube unit; a register instruction (NKI's Sync engine); an
# element-wise pass over the data on a compute engine (NKI) or the vector unit (Ascend: one
# 256-byte repeat a cycle; memset's InitConstValue on L1/L0 likewise); a top-K search over
# a 16-partition snake (GpSimd, topk: the docstring's 4 n + K cycles).
COST_CLASSES = ("dma", "matmul", "register", "vector", "snake")


# How an instruction's outputs depend on its inputs, for unwritten data (SPEC 4: it propagates
# as MemorySanitizer's uninitialised bits do; `apdsl.runtime.core.unwritten` reads these):
# "element": an output element depends on the input element at its place (same element count:
#     the same row-major position; a [P, 1] column: its partition; fewer outputs a partition than
#     inputs: every input of its partition, a reduction);
# "partition": every input element of the output's partition (a free-axis reduction);
# "cross": every input element of the output's free position (a reduction across partitions);
# "transpose": the input element at the exchanged place (partitions <-> free elements);
# "matmul": every input element it sums (`Depends.contract`);
# "whole": any input element (what is not known more precisely; never too little).
DEPENDENCY_KINDS = ("element", "partition", "cross", "transpose", "matmul", "whole")


@record
class Depends:
    """An entry's dependency class (`DEPENDENCY_KINDS`).  `observed`: the inputs whose values
    are an observable point (a predicate, an index, a bound, a seed, a scan's carry chain):
    unwritten data there is an error where it is read.  `contract` (matmul): per input role,
    (the axis it sums over, the axis of dst its other axis becomes), both of the operand and
    dst seen as 2-d (first axis, the rest)."""

    kind: str = "whole"
    observed: tuple[str, ...] = ()
    contract: Mapping[str, tuple[int, int]] = MappingProxyType({})


ELEMENT = Depends("element")
PARTITION = Depends("partition")
WHOLE = Depends("whole")


@record
class Instruction:
    name: str
    module: str  # the executor, `apdsl.runtime.<module>.<name>` (e.g. "nki.matmul")
    operands: tuple[Operand, ...]
    # family -> the engines (NKI) or pipes (Ascend) that may run it, the default first
    engines: dict[str, tuple[str, ...]]
    semantics: Callable[..., Any] | None
    # sizes (`Limit`, or a number the executor compares), domains (`Domain`) and the facts
    # the executor's rules read; never a string naming a rule kept elsewhere
    limits: Mapping[str, Any] = MappingProxyType({})  # none (shared: read-only)
    # the destination is written whole, through `dst` itself (check mode's APK405 check)
    writes_dst: bool = False
    summary: str = ""
    cost: str = "vector"  # its cost class (COST_CLASSES) for the profile
    routes: Routes | None = None  # on Ascend, the pipe by where the data goes
    depends: Depends = WHOLE  # how its outputs depend on its inputs (unwritten data)

    def operand(self, role: str) -> Operand:
        return next(o for o in self.operands if o.role == role)

    def engine(self, family: str, operands: dict[str, Any], hint: str | None = None) -> str | None:
        """The engine or pipe that runs this instance: the hint when given, else the default
        (on Ascend, by the path the operands take)."""
        if hint not in (None, "unknown"):
            return hint
        if family == "ascend" and self.routes is not None:
            return self.routes.pipe(operands)
        engines = self.engines.get(family, ())
        return engines[0] if engines else None


PATH_PIPES = Routes("path", MappingProxyType(ASCEND_COPY_PIPES))


def nki_ascend(nki: tuple[str, ...], ascend: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {"nki": nki, "ascend": ascend}


ASCEND_ALL = ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt")

