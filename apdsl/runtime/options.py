"""Process-wide execution options.

`options(init_check=False)` sets an option at once; used as a context manager it also restores
the previous values when the block ends, so the one call serves both as a setter and as
`with apdsl.options(init_check=False): ...`.

Options: `init_check` (default True), `execute` (False in check mode), `strict_padding`
(default False; read by the Ascend `mmad`), `max_memory` (bytes of live storage and its
written-state bookkeeping, SPEC section 15; default half of the machine's physical memory) and
`max_steps` (the step budget of SPEC section 15, default 100,000,000; read when an interpreter
starts a program).

A program cannot change these for its caller: `saved()` snapshots them (and the target
generations) around `apdsl.run`/`apdsl.check` and every command.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from ..errors import ApdslRuntimeError


def physical_memory() -> int:
    """The machine's physical memory in bytes (8 GiB when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 8 << 30


DEFAULT_MAX_MEMORY = physical_memory() // 2
DEFAULT_MAX_STEPS = 100_000_000


@dataclass
class _Options:
    # Reading memory that nothing wrote is an error (as on hardware it reads garbage).
    init_check: bool = True
    # False in check mode (`apdsl check`): instructions validate and lower their operands but
    # read no runtime values and move no data.
    execute: bool = True
    # mmad reads K in whole fractals, as hardware does, so unwritten K padding is reported.
    strict_padding: bool = False
    # Bytes of live storage plus its written-state bookkeeping, every buffer included
    # (apdsl.tensor.budget); an allocation past it is APK430.
    max_memory: int = DEFAULT_MAX_MEMORY
    # The step budget of one program run or check (apdsl.semantics.limits); APK801 past it.
    max_steps: int = DEFAULT_MAX_STEPS


# The live values.  Instructions read `OPTIONS.init_check` directly: one attribute lookup.
OPTIONS = _Options()
# Each option's type: bool options take True/False, int options a positive int (not a bool).
_TYPES: dict[str, type] = {"init_check": bool, "execute": bool, "strict_padding": bool,
                           "max_memory": int, "max_steps": int}


class options:  # noqa: N801 - used like a function: apdsl.options(init_check=False)
    """Set options now; as a context manager, restore the previous values on exit.

    `init_check=False` makes unwritten memory read as 0; `strict_padding=True` makes `mmad` read
    K in whole fractals; `max_steps=N` and `max_memory=BYTES` set the limits of SPEC 15.

    >>> with apdsl.options(init_check=False):
    ...     apdsl.ndarray((2, 2), "float32", "hbm").numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    """

    def __init__(self, **values: Any) -> None:
        for key, value in values.items():
            if key not in _TYPES:
                close = get_close_matches(key, _TYPES, n=1)
                raise ApdslRuntimeError(
                    f"unknown option '{key}'", code="APK421",
                    help=f"did you mean '{close[0]}'?" if close
                    else f"options are: {', '.join(_TYPES)}", option=key)
            kind = _TYPES[key]
            if kind is int and (isinstance(value, bool) or not isinstance(value, int)
                                or value < 1):
                raise ApdslRuntimeError(
                    f"option {key} must be a positive int, got {value!r}", code="APK421",
                    option=key)
            if not isinstance(value, kind):
                raise ApdslRuntimeError(
                    f"option {key} must be {kind.__name__}, got {value!r}",
                    code="APK421", option=key)
        self._saved = {key: getattr(OPTIONS, key) for key in values}
        for key, value in values.items():
            setattr(OPTIONS, key, value)

    def __enter__(self) -> _Options:
        return OPTIONS

    def __exit__(self, *exc: object) -> None:
        for key, value in self._saved.items():
            setattr(OPTIONS, key, value)

    def __repr__(self) -> str:
        return f"options({', '.join(f'{f}={getattr(OPTIONS, f)!r}' for f in _TYPES)})"


def current() -> dict[str, Any]:
    """A snapshot of every option's value."""
    return {name: getattr(OPTIONS, name) for name in _TYPES}


@contextmanager
def saved() -> Iterator[None]:
    """Restore every option and the target generations when the block ends, whatever the
    program inside set (`set_target()` in a program must not change its caller's target)."""
    from ..tensor import targets
    before = current()
    generations = targets.snapshot()
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(OPTIONS, name, value)
        targets.restore(generations)
