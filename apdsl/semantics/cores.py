"""The `.apk` names of Ascend cores (SPEC 17): the block index functions, the AIC/AIV split,
cross-core flags and `sync_all`, with pyasc's names and parameters (`asc.get_block_idx()`,
`asc.cross_core_set_flag(flag_id, mode_id, pipe)`), `asc.TPipe`, `asc.TQue`, `asc.TBuf`, and
the enums `asc.PipeID`, `asc.HardEvent` and `asc.TPosition`, whose members are the names the
builtins take as strings.  The models are `apdsl.runtime.ascend.cores` and `.queues`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..runtime.ascend import core_ops as cores
from .host import Host

QUERIES: dict[str, Callable[[], Any]] = {
    "get_block_idx": cores.block_idx, "get_block_num": cores.block_num,
    "get_sub_block_idx": cores.sub_block_idx, "get_sub_block_num": cores.sub_block_num,
    "get_task_ratio": cores.task_ratio, "ascend_is_aic": cores.is_aic,
    "ascend_is_aiv": cores.is_aiv,
}
SYNC: dict[str, Callable[..., Any]] = {
    "cross_core_set_flag": cores.cross_set, "cross_core_wait_flag": cores.cross_wait,
    "sync_all": cores.sync_all,
}
NAMES = (*QUERIES, *SYNC, "PipeID", "HardEvent", "TPosition", "TPipe", "TQue", "TBuf")


def make(interp: Host) -> dict[str, Any]:
    """The builtins, bound to interpreter `interp` (the synchronisation ones are located like
    instructions: their spans label deadlocks, and `lower` shows them)."""
    from ..runtime.core.trace import record_event
    table: dict[str, Any] = dict(QUERIES)

    def bind(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            out = interp.instruction(name, fn, args, kwargs)
            pipe = kwargs.get("pipe", args[2] if len(args) > 2 else None)
            shown = tuple(args) + tuple(kwargs.values())
            record_event(name, shown or ("",), "ALL" if pipe is None or name == "sync_all"
                         else cores.pipe_name(pipe, name))
            return out
        call.__name__ = name
        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    for name, fn in SYNC.items():
        table[name] = bind(name, fn)
    from ..runtime.ascend import queues
    table["TPipe"], table["TQue"], table["TBuf"] = queues.TPipe, queues.TQue, queues.TBuf
    return table
