"""What every instruction does with its operands before it moves data: argument checks,
operand resolution (check mode: validation only), shapes, and the on-chip partition rules
shared by the compute instructions.  Messages start with the instruction's label."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError, TargetError
from ...tensor import registers, targets
from ...tensor.dtypes import DTYPES
from ...tensor.machine import current
from ...tensor.placement import partition_offset
from ...tensor.view import Tensor
from ..table.spec import TRN3_DTYPES, Instruction, Operand
from . import execute as ex
from .trace import instruction_label

__all__ = ["instruction_label"]

F32 = DTYPES["float32"]


def arg_error(label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code="APK420", **kw)


def refuse_packed_conversion(label: str, dst: Tensor, src: Tensor | None) -> None:
    """APK960: a copy that would convert into or out of a packed MX dtype (float8_e4m3fn_x4,
    float8_e5m2_x4, float4_e2m1fn_x4; `src` None: a memset's value).  Each element holds four
    values, so the float32 cast rule has no meaning for it; only quantize_mx writes such data
    from numbers and nc_matmul_mx reads it as numbers.  A same-dtype copy moves the bits."""
    d = dst.dtype
    s = None if src is None else src.dtype
    if s is d or (d.kind != "x" and (s is None or s.kind != "x")):
        return
    packed = d if d.kind == "x" else s
    role, other = ("dst", s) if packed is d else ("src", d)
    what = "a memset value" if src is None else f"{other}"
    raise TargetError(
        f"{label}: {role} is {packed}, a packed MX dtype, and the copy would convert "
        f"{'from' if packed is d else 'to'} {what}", code="APK960",
        notes=[f"{packed} holds four values in each element; converting it element by element "
               "through float32 would give a wrong answer"],
        help="quantize_mx writes MX data from bfloat16/float16 and nc_matmul_mx reads it; to "
             "move the bits, copy between tensors of the same dtype (view the other side with "
             f".view({str(packed)!r}) or .view('uint8'))", dtype=str(packed), role=role)


def tensor_arg(x: Any, label: str, role: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise arg_error(label, f"{role} must be a tensor, got {type(x).__name__}",
                         help=f"pass a tensor or a view of one as {role}")
    return x


def int_arg(x: Any, label: str, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise arg_error(label, f"{what} must be an int, got {x!r}")
    return int(x)


def step_count_pairs(pattern: Any, label: str, example: str) -> tuple[list[int], list[int]]:
    """An instruction's `[[step, count], ...]` pattern argument (iota, affine_select) as its
    steps and counts, every count at least 1; `example` is a pattern the help shows."""
    if not isinstance(pattern, (list, tuple)) or not pattern or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in pattern):
        raise arg_error(label, f"pattern must be a list of [step, count] pairs, got "
                        f"{pattern!r}", help=f"for example {example}")
    steps = [int_arg(s, label, "a pattern step") for s, _ in pattern]
    counts = [int_arg(c, label, "a pattern count") for _, c in pattern]
    if any(c < 1 for c in counts):
        raise arg_error(label, f"pattern counts must be >= 1, got {counts}")
    return steps, counts


def free_size(shape: tuple[int, ...]) -> int:
    return prod(shape[1:])


def static_shape(t: Tensor) -> tuple[int, ...] | None:
    """The view's shape when no register decides it, or (check mode) when every register it
    uses holds a value check mode knows."""
    shape = tuple(t.shape)
    if all(isinstance(n, (int, np.integer)) for n in shape):
        return shape
    if t.dynamic is None and ex.registers_known(t.layout):
        return tuple(registers.resolve(n, "a count") for n in shape)
    return None


def resolve_operands(label: str, group: int, *pairs: tuple[str, Tensor]) -> list[ex.Access] | None:
    """Resolve the operands for execution (runtime indices and registers read, bounds
    checked).  In check mode (the machine's `check` flag) nothing is read: views without runtime
    parts are still bounds-checked, and None is returned."""
    m = current()
    if not m.check and m.options.plans:
        # the common case: static views resolved before, whose access is kept on the view
        # (`resolve` returns that memo once it finds the storage live)
        out = []
        for _, t in pairs:
            memo = getattr(t, "memo", None)
            if memo is None or t.dynamic is not None or t.storage.freed:
                break
            out.append(memo)
        else:
            return out
    dynamic = False
    for role, t in pairs:
        if t.dynamic is not None:
            ex.warn_static(t, label, role)
            dynamic = True
    if not dynamic and not current().check:
        resolve = ex.resolve
        return [resolve(t, label, role, group=group) for role, t in pairs]
    if current().check:
        for role, t in pairs:
            if t.dynamic is None and (t.layout.static or ex.registers_known(t.layout)):
                ex.resolve(t, label, role, group=group)
            else:
                ex.check_dynamic(t, label, role, group=group)
        return None
    return [ex.resolve(t, label, role, group=group) for role, t in pairs]


def operand_shapes(accs: list[ex.Access] | None, *ts: Tensor) -> list[tuple[int, ...] | None]:
    """Resolved shapes when executing, else the static ones (None where a register decides)."""
    if accs is not None:
        return [a.shape for a in accs]
    return [static_shape(t) for t in ts]


def is_ti(t: Tensor) -> bool:
    return t.dynamic is not None and t.dynamic.kind == "ti"


def require_onchip(t: Tensor, label: str, role: str, what: str = "SBUF or PSUM") -> None:
    if not t.onchip:
        raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; this instruction works on "
                          f"{what} only", code="APK309",
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"],
                          help="dma_copy the data on chip first", buffer=t.buffer, role=role)


def start_partition(t: Tensor) -> int | None:
    """The first partition an on-chip view covers (None when a register decides it)."""
    base = t.layout.base
    if not isinstance(base, (int, np.integer)):
        return None
    storage = t.storage
    per_partition = prod(storage.shape[1:]) * storage.dtype.bits // t.dtype.bits
    # (physical: a tensor placed with address= starts at its partition offset)
    return (int(base) // per_partition if per_partition else 0) + partition_offset(storage)


def _either(values: tuple[int, ...]) -> str:
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def check_start_partitions(label: str, pairs: Any) -> None:
    """The start-partition rule of the Trainium/Inferentia2 architecture guide for compute
    instructions on trn1 (an operand's partitions start on a quadrant boundary that allows its
    partition count: more than 64 start at 0, more than 32 at 0 or 64, others at 0, 32, 64 or
    96).  The trn2 and trn3 guides state no such rule, so it binds trn1 only."""
    for role, t in pairs:
        if not t.onchip or targets.target_for(t.buffer).name != "trn1":
            continue
        count, start = t.layout.dims[0].size if t.layout.dims else 1, start_partition(t)
        if start is None or not isinstance(count, (int, np.integer)):
            continue
        allowed = (0,) if count > 64 else (0, 64) if count > 32 else (0, 32, 64, 96)
        if start not in allowed:
            raise TargetError(
                f"{label}: {role} {t.name} covers {count} partitions starting at partition "
                f"{start}; on trn1 an operand of {count} partitions starts at "
                f"{_either(allowed)}", code="APK343",
                notes=["Trainium/Inferentia2 architecture guide: 64 < partitions <= 128 start "
                       "at 0; 32 < partitions <= 64 at 0 or 64; up to 32 at 0, 32, 64 or 96"],
                help="move the data to an allowed start partition with dma_copy first (as the "
                "NKI library's cross_partition_copy does), or slice on a quadrant boundary",
                start=start, partitions=int(count))


def check_ti_partitions(label: str, index_of: dict[str, str], *pairs: tuple[str, Tensor]) -> None:
    """The base-partition rules the NKI docstrings give for Tensor Indirection operands: every
    `indirect()` index starts on a quadrant boundary (a multiple of 32), and the partitions of
    related operands line up.  `index_of` maps a role to the role whose start partition its
    index must share (for a source: itself; for an indirect dst: the source, or the source's
    index when that is indirect in PSUM)."""
    views = dict(pairs)
    for role, t in pairs:
        if not is_ti(t):
            continue
        index = t.dynamic.index
        start = start_partition(index)
        if start is not None and start % 32:
            raise TargetError(f"{label}: the index {index.name} of {role} {t.name}.indirect() "
                              f"starts at partition {start}; an indirect index starts on a "
                              "quadrant boundary (a multiple of 32)", code="APK345",
                              help="place the index tile at partition 0, 32, 64 or 96",
                              start=start)
        other_role = index_of.get(role)
        if other_role is None or start is None:
            continue
        other = views[other_role]
        if other_role == role:
            target, what = start_partition(t), f"{role} {t.name} itself"
        elif other.buffer == "psum":
            if not is_ti(other):
                continue  # the docs state no rule for this pair
            target = start_partition(other.dynamic.index)
            what = f"the index of {other_role} {other.name}"
        else:
            target, what = start_partition(other), f"{other_role} {other.name}"
        if target is not None and target != start:
            raise TargetError(f"{label}: the index {index.name} of {role} {t.name}.indirect() "
                              f"starts at partition {start}, but {what} starts at {target}; "
                              "they must start on the same partition", code="APK345",
                              help="allocate the index on the same partitions as "
                              f"{what}", start=start, expected=target)


# each entry's operand by role (the table is immutable, so this only saves the search)
_SPECS: dict[tuple[str, str], Operand] = {}


def check_operand(entry: Instruction, label: str, role: str, t: Tensor) -> None:
    """The buffers and dtypes the entry allows operand `role` (APK309, APK462, APK461)."""
    spec = _SPECS.get((entry.name, role))
    if spec is None:
        spec = _SPECS[entry.name, role] = entry.operand(role)
    name = t.dtype.name
    if t.buffer in spec.memory.get("nki", ()) and name not in TRN3_DTYPES and (
            spec.dtypes is None or name in spec.dtypes):
        return  # the common case, decided without the target
    fam = targets.family(t.buffer)
    allowed = spec.memory.get(fam, ())
    if t.buffer not in allowed:
        if allowed:
            says = f"{entry.name} works on {' or '.join(b.upper() for b in allowed)} only"
        else:  # APK462: an instruction of the other family; say which, in plain words
            runs = " and ".join("NKI (Trainium)" if f == "nki" else "Ascend"
                                for f in entry.operand(role).memory)
            says = (f"{entry.name} is an instruction of {runs} only, and {t.buffer.upper()} is "
                    f"{'an NKI' if fam == 'nki' else 'an Ascend'} buffer")
        raise TargetError(f"{label}: {role} {t.name} is in {t.buffer}; {says}",
                          code="APK309" if allowed else "APK462",
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"],
                          help="dma_copy the data on chip first" if allowed
                          else "on Ascend, vector arithmetic on UB is the asc. instructions "
                          "(asc.add, asc.exp, ...)" if fam == "ascend" else
                          "on NKI targets use the nisa./nl. instructions (tensor_tensor, ...)",
                          buffer=t.buffer, role=role)
    dtypes = spec.dtypes
    if dtypes is not None and (name not in dtypes or (
            name in TRN3_DTYPES and targets.target_for(t.buffer).name != "trn3")):
        trn3 = [d for d in TRN3_DTYPES if d in dtypes]
        raise TargetError(f"{label}: {role} {t.name} is {name}; {entry.name} takes "
                          f"{', '.join(d for d in dtypes if d not in TRN3_DTYPES)}"
                          + (f" (and {', '.join(trn3)} on trn3)" if trn3 else ""),
                          code="APK461", help="view or copy the data as one of those dtypes "
                          "first", dtype=name, role=role)
