"""The NKI hint keywords of the instructions (`engine=`, `dge_mode=`, `oob_mode=`, `priority=`),
checked where the NKI API reference gives a rule.

A hint is a name of the reference's enums (`nisa.engine.vector`, `nisa.dge_mode.hwdge`,
`nisa.oob_mode.skip`), that name as a string, or the member's number in the reference.  The rules (NKI isa docstrings and the
Trainium/Inferentia2 architecture guide): GpSimd cannot access PSUM; on NeuronCore-v2 (trn1)
`tensor_copy` does not run on the Scalar engine and hardware DGE does not exist; a DMA `engine`
only chooses the HWDGE trigger (sync or scalar); `priority` (0-3) is NeuronCore-v4 (trn3) only
and needs DGE; a hardware-DGE copy moves equal dtypes (SPEC section 4); a per-row indexed
(gather/scatter) access takes software DGE only (the NKI DGE guide).
"""

from __future__ import annotations

from typing import Any

from ...errors import TargetError
from ...tensor import targets

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync", "unknown")
DGE_MODES = ("unknown", "swdge", "hwdge", "none")
OOB_MODES = ("error", "skip")
# The members' values as the NKI API reference numbers its enums (nki.isa: engine.vector = 5,
# dge_mode.none = 3, oob_mode.skip = 1): published kernels pass the number itself (nki-library's
# `_DGE_MODE_NONE = 3  # Use STATIC DMA mode`), which names the same member.
NUMBERED = {"engine": {0: "unknown", 1: "tensor", 2: "scalar", 3: "gpsimd", 4: "dma",
                       5: "vector", 6: "sync"},
            "dge_mode": dict(enumerate(DGE_MODES)), "oob_mode": dict(enumerate(OOB_MODES))}


def member(what: str, value: Any) -> Any:
    """The member name of an enum hint given as a member, its name or its number; anything
    else as it is (to be checked)."""
    name = getattr(value, "name", value)
    if isinstance(name, int) and not isinstance(name, bool):
        return NUMBERED.get(what, {}).get(name, name)
    return name


def _name(value: Any, what: str, allowed: tuple[str, ...], label: str) -> str:
    name = member(what, value)
    name = "unknown" if name is None and "unknown" in allowed else name
    if not isinstance(name, str) or name not in allowed:
        raise TargetError(f"{label}: {what} must be one of {', '.join(allowed)}, got {value!r}",
                          code="APK347", help=f"for example {what}=nisa.{what}.{allowed[0]}"
                          if what != "engine" else "for example engine=nisa.engine.vector")
    return name


def _engine_error(label: str, message: str, fix: str) -> TargetError:
    return TargetError(f"{label}: {message}", code="APK348", help=fix)


def compute_engine(label: str, engine: Any, allowed: tuple[str, ...], operands: Any,
                   indirect: bool = False) -> str:
    """Check `engine=` of a compute instruction that may run on `allowed` (plus unknown)."""
    name = _name(engine, "engine", ENGINES, label)
    if name == "unknown":
        return name
    if name not in allowed:
        raise _engine_error(label, f"engine={name} cannot run this instruction; it runs on "
                            f"{', '.join(allowed)}", f"pick one of {', '.join(allowed)}, or "
                            "leave engine unset")
    if name == "gpsimd":
        for role, t in operands:
            if t.buffer == "psum":
                others = " or ".join(f"nisa.engine.{e}" for e in allowed if e != "gpsimd")
                raise _engine_error(label, f"the GpSimd engine cannot access PSUM ({role} "
                                    f"{t.name} is in psum)", f"use engine={others}, or leave "
                                    "engine unset")
        if indirect:
            raise _engine_error(label, "Tensor Indirection runs on the Vector or Scalar engine, "
                                "not GpSimd", "use engine=nisa.engine.vector")
    return name


def tensor_copy_engine(label: str, engine: Any, operands: Any, indirect: bool) -> str:
    name = compute_engine(label, engine, ("vector", "scalar", "gpsimd"), operands, indirect)
    if name == "scalar" and targets.target_for(operands[0][1].buffer).name == "trn1":
        raise _engine_error(label, "on trn1 (NeuronCore-v2) tensor_copy does not run on the "
                            "Scalar engine", "use engine=nisa.engine.vector, or activation with "
                            "op=nl.copy on the Scalar engine")
    return name


def dma(label: str, dst: Any, src: Any, priority: Any, oob_mode: Any, dge_mode: Any,
        engine: Any) -> tuple[str, str]:
    """Check the DMA hints; returns (dge_mode, oob_mode)."""
    dge = _name(dge_mode, "dge_mode", DGE_MODES, label)
    oob = _name(oob_mode, "oob_mode", OOB_MODES, label)
    eng = _name(engine, "engine", ENGINES, label)
    tgt = targets.target_for(dst.buffer)
    if dge == "hwdge":
        if tgt.name == "trn1":
            raise _engine_error(label, "hardware DGE (dge_mode=hwdge) needs NeuronCore-v3 "
                                "(trn2) or newer; the target is trn1",
                                "use dge_mode=nisa.dge_mode.swdge, or leave it unset")
        if dst.dtype != src.dtype:
            raise TargetError(f"{label}: a hardware-DGE copy moves equal dtypes; dst is "
                              f"{dst.dtype}, src {src.dtype}", code="APK347",
                              help="convert with a compute instruction first, or leave dge_mode "
                              "unset (DMA then converts through float32)")
    gathers = [(r, t) for r, t in (("dst", dst), ("src", src))
               if t.dynamic is not None and t.dynamic.kind == "vector"]
    if gathers and dge in ("hwdge", "none"):
        role, t = gathers[0]
        raise TargetError(f"{label}: dge_mode={dge} cannot gather or scatter; {role} {t.name} "
                          "is indexed per row (vector_offset / vector_select)", code="APK495",
                          notes=["NKI DGE guide: an access with vector_offset takes dge_mode "
                                 "unknown or swdge (software DGE, on GpSimd)"],
                          help="use dge_mode=nisa.dge_mode.swdge, or leave it unset",
                          dge_mode=dge, role=role)
    if eng != "unknown":
        if dge != "hwdge" or eng not in ("sync", "scalar"):
            raise _engine_error(label, f"engine={eng}: a DMA engine only picks the hardware-DGE "
                                "trigger, sync or scalar, with dge_mode=hwdge",
                                "pass dge_mode=nisa.dge_mode.hwdge with engine sync or scalar, "
                                "or leave engine unset")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or \
                not 0 <= priority <= 3:
            raise TargetError(f"{label}: priority must be an int 0-3, got {priority!r}",
                              code="APK347", help="0 is the highest priority")
        if tgt.name != "trn3":
            raise TargetError(f"{label}: DMA priority needs NeuronCore-v4 (trn3); the target is "
                              f"{tgt.name}", code="APK347", help="drop priority=")
        if dge == "none":
            raise TargetError(f"{label}: priority is not supported with dge_mode=none",
                              code="APK347", help="drop priority= or use a DGE mode")
    return dge, oob


# The value each hint keyword has when a program leaves it out: a hint equal to it says nothing.
DEFAULTS: dict[str, Any] = {"engine": "unknown", "dge_mode": "unknown", "oob_mode": "error",
                            "priority": None}


def given(**hints: Any) -> dict[str, Any] | None:
    """The hint keywords worth recording for `apdsl lower` (SPEC 4: hints are recorded in the
    lowered output): each by its enum name (`nisa.engine.vector` -> "vector"), priority as its
    int, in the order given; those left at their default are omitted (None when none is left).
    The values must be checked already."""
    out = {}
    for key, value in hints.items():
        value = member(key, value)
        if value is not None and value != DEFAULTS.get(key):
            out[key] = value
    return out or None
