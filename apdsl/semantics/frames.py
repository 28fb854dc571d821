"""The run-time state of compiled code: the frame a closure reads its names from, the signals
that leave a block early (return, break, continue, a reported check failure), and the freeing
of tensors a block declared when it ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..syntax import ast
from ..tensor.view import Tensor

Closure = Callable[["Frame"], Any]


class Frame:
    __slots__ = ("vars", "glob", "owned", "ret")

    def __init__(self, vars: dict[str, Any], glob: dict[str, Any]) -> None:
        self.vars = vars
        self.glob = glob
        self.owned: list[Any] = []
        self.ret: Any = None  # what a function's last statement, a `return`, gave


class ReturnSignal(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class BreakSignal(Exception):
    pass


class Reported(Exception):
    """Check mode: an assertion failed and was reported; the rest of its block is not run (it
    would only report what follows from the failure), and callers poison what it defined."""


class ContinueSignal(Exception):
    pass



def scoped(run: Closure, frees: bool) -> Closure:
    """`run`, freeing what the block declared when it ends (each loop iteration)."""
    if not frees:
        return run

    def run_scoped(frame: Frame) -> None:
        mark = len(frame.owned)
        try:
            run(frame)
        except ReturnSignal as r:  # the returned tensors outlive the block that declared them
            free_owned(frame, mark, keep=r.value)
            raise
        except BaseException:
            free_owned(frame, mark)
            raise
        free_owned(frame, mark)
    return run_scoped


def may_jump(node: Any) -> bool:
    """Whether a statement can leave its block early (break, continue, return)."""
    kind = type(node)
    if kind is ast.Break or kind is ast.Continue or kind is ast.Return:
        return True
    if kind is ast.If:
        return any(may_jump(s) for s in node.body) or any(may_jump(s) for s in node.orelse)
    if kind is ast.For or kind is ast.While:
        # the loop catches its own break and continue; its `else:` block does not
        return any(may_return(s) for s in node.body) or any(may_jump(s) for s in node.orelse)
    return False


def may_return(node: Any) -> bool:
    kind = type(node)
    if kind is ast.Return:
        return True
    if kind is ast.If:
        return any(may_return(s) for s in node.body) or \
            any(may_return(s) for s in node.orelse)
    if kind is ast.For or kind is ast.While:
        return any(may_return(s) for s in node.body) or \
            any(may_return(s) for s in node.orelse)
    return False


def free_owned(frame: Frame, mark: int = 0, keep: Any = None) -> None:
    """End the storage the block declared, except what `keep` (a returned value) holds: that
    lives on as long as something refers to it (garbage collection returns its memory)."""
    kept = _storages(keep) if keep is not None else ()
    for storage in frame.owned[mark:]:
        if storage not in kept:
            storage.free()
    del frame.owned[mark:]


def _storages(value: Any, depth: int = 0) -> set[Any]:
    """The storage of every tensor in a value (tensors, and tuples, lists and dicts of them)."""
    if isinstance(value, Tensor):
        return {value.storage}
    out: set[Any] = set()
    if depth < 50 and isinstance(value, (tuple, list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            out |= _storages(item, depth + 1)
    return out
