"""The operations of Ascend cores on the core of the current machine (SPEC 17): the block index
functions, the AIC/AIV split, cross-core flags and `sync_all`, as AscendC and pyasc define
them (the model and its rules: `apdsl.runtime.ascend.cores`)."""

from __future__ import annotations

from typing import Any

from ...tensor.machine import current
from ..sync.pipes import PIPE_INDEX
from ..sync.world import SyncError
from .cores import CROSS_FLAGS, CROSS_PIPES, MODES, CoreState


def core() -> CoreState | None:
    """The core the current machine simulates (None outside a launch)."""
    return current().core


def block_idx() -> int:
    st = core()
    return 0 if st is None else st.block_idx


def block_num() -> int:
    st = core()
    return 1 if st is None else st.launch.blocks


def _split(what: str) -> CoreState | None:
    st = core()
    if st is not None and st.kind in ("?", "aic") and st.launch.mix is None:
        st.launch.ask(st)
    elif st is not None:
        st.asked = True
        if st.launch.mix is False:
            st.launch.decide(True, st)  # raises APK584
    return st


def is_aic() -> bool:
    """`ascend_is_aic()`: this core is an AI core's cube core (outside a launch: a kernel on
    one core, which splits like any other -- it is then its AIC)."""
    st = _split("ascend_is_aic")
    return st is None or st.kind == "aic"


def is_aiv() -> bool:
    st = _split("ascend_is_aiv")
    return st is not None and st.kind == "aiv"


def sub_block_idx() -> int:
    st = _split("get_sub_block_idx")
    return 0 if st is None else st.sub


def sub_block_num() -> int:
    """`get_sub_block_num()`: 1 on an AIC, 2 on an AIV of a split kernel (the docs, 1:2)."""
    st = _split("get_sub_block_num")
    return 2 if st is not None and st.kind == "aiv" else 1


def task_ratio() -> int:
    """`get_task_ratio()`: AIVs (or AICs) per AI core: 2 on an AIV of a split kernel, else 1."""
    return sub_block_num()


def pipe_name(pipe: Any, what: str) -> str:
    """A pipe given as `"MTE3"`, `"PIPE_MTE3"` or an enum member named so."""
    name = getattr(pipe, "name", pipe)
    if isinstance(name, str):
        bare = name.upper().removeprefix("PIPE_")
        if bare in PIPE_INDEX or bare == "ALL":
            return bare
    raise SyncError(f"{what}: unknown pipe {pipe!r}", code="APK586",
                    help="a pipe is one of " + ", ".join(f'"{p}"' for p in CROSS_PIPES)
                    + " (or asc.PipeID.PIPE_X)", pipe=str(pipe))


def _flag_args(flag_id: Any, mode_id: Any, what: str) -> tuple[int, int]:
    if isinstance(flag_id, bool) or not isinstance(flag_id, int) or \
            not 0 <= flag_id < CROSS_FLAGS:
        raise SyncError(f"{what}: flag_id {flag_id!r} is not an int 0-{CROSS_FLAGS - 1}",
                        code="APK586", notes=["Atlas A2: each AIC and AIV has 16 cross-core "
                                              "flags, ids 0-15 (modes 0, 1, 2)"],
                        help="use a flag id 0-15 (sync_all uses 11-14 itself: avoid those "
                        "when the kernel calls it)", flag=str(flag_id))
    if isinstance(mode_id, bool) or mode_id not in MODES:
        raise SyncError(f"{what}: mode_id {mode_id!r} is not a mode of Atlas A2",
                        code="APK586", notes=["mode 0: every AIC (or every AIV) of the "
                                              "launch; mode 1: the two AIVs of an AI core; "
                                              "mode 2: the AIC and the AIVs of an AI core "
                                              "(mode 4 is Ascend 950's)"],
                        help="use mode_id 0, 1 or 2", mode=str(mode_id))
    return flag_id, mode_id


def _launch_of(what: str) -> CoreState:
    st = core()
    if st is None:
        raise SyncError(f"{what} outside a kernel: cross-core synchronisation orders the cores "
                        "of a launch", code="APK586",
                        help="call it inside an Ascend kernel")
    return st


def cross_set(flag_id: Any, mode_id: Any, pipe: Any) -> None:
    """`cross_core_set_flag(flag_id, mode_id, pipe)`: once pipe `pipe`'s earlier instructions
    are done, this core's part of flag `flag_id`'s round is in (see the module docstring)."""
    what = "cross_core_set_flag"
    flag, mode = _flag_args(flag_id, mode_id, what)
    p = pipe_name(pipe, what)
    if p not in CROSS_PIPES:
        raise SyncError(f"{what}: pipe {p} cannot set a cross-core flag", code="APK586",
                        help="the pipe of the work the flag releases: one of "
                        + ", ".join(CROSS_PIPES), pipe=p)
    st = _launch_of(what)
    launch = st.launch
    if mode in (1, 2):
        _split(what)
        if st.kind == "aic" and mode == 1:
            raise SyncError(f"{what}: mode 1 syncs the two AIVs of an AI core, and "
                            f"{st.short} is its AIC", code="APK586",
                            help="call it under `if ascend_is_aiv():`; the AIC and its AIVs "
                            "sync with mode 2")
    elif launch.mix is None:
        launch.decide(False, st)
    launch.flag_ids.add(flag)
    snap = None
    if st.sync is not None:
        if st.sync.pipes is not None and PIPE_INDEX[p] not in st.sync.pipes:
            raise SyncError(f"{what}: {st.short} has no pipe {p}", code="APK586",
                            help="AIC pipes: MTE1, MTE2, M, FIX; AIV pipes: MTE2, MTE3, V")
        snap = st.sync.snapshot(PIPE_INDEX[p])
    members, targets = launch.group(st, mode)
    launch.arrive(st, (mode, tuple(c.index for c in members), flag), members, targets, snap,
                  flag)


def cross_wait(flag_id: Any, mode_id: Any = 0, pipe: Any = "S") -> None:
    """`cross_core_wait_flag(flag_id, mode_id, pipe)`: block this core until flag `flag_id`'s
    counter is non-zero, and take one (on Atlas A2 every pipe waits, whatever `pipe`)."""
    what = "cross_core_wait_flag"
    flag, mode = _flag_args(flag_id, mode_id, what)
    pipe_name(pipe, what)
    st = _launch_of(what)
    if mode in (1, 2):
        _split(what)
    st.launch.flag_ids.add(flag)
    _take(st, flag, f"cross_core_wait_flag({flag})")


def _take(st: CoreState, key: Any, what: str) -> None:
    st.launch.block(st, key, what)
    snap = st.counters[key].popleft()
    if snap is not None and st.sync is not None:
        st.sync.join_all(snap)


def sync_all(is_aiv_only: bool = True) -> None:
    """`sync_all()`: a barrier of every core of the launch (in a split kernel with
    `is_aiv_only=True`, of every AIV; `False`: of every AIC and AIV), every pipe."""
    st = _launch_of("sync_all")
    launch = st.launch
    if not is_aiv_only:
        _split("sync_all")
    elif launch.mix is None:
        launch.decide(False, st)
    if launch.mix and is_aiv_only:
        if st.kind == "aic":
            raise SyncError("sync_all() on an AIC: is_aiv_only=True syncs the AIVs only",
                            code="APK586", help="in a kernel with AIC and AIV parts, "
                            "sync_all(is_aiv_only=False) syncs every core")
        members = [c for c in launch.cores if c.kind == "aiv"]
    else:
        members = list(launch.cores)
    snap = st.sync.snapshot_all() if st.sync is not None else None
    launch.arrive(st, ("all", tuple(c.index for c in members), 0), members, members, snap,
                  "sync_all")
    _take(st, "sync_all", "sync_all()")
