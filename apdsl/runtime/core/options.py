"""`apdsl.options(...)`: the options of the current machine (`apdsl.tensor.machine`).

`options(init_check=False)` sets an option at once; used as a context manager it also restores
the previous values when the block ends, so the one call serves both as a setter and as
`with apdsl.options(init_check=False): ...`.

Options: `init_check` (default True: unwritten data propagates through instructions and is an
error where it reaches an observable point, SPEC 4; "strict", as `--strict-init`, reports an
unwritten read where it is read; False reads it as 0), `strict_padding` (default False; read by the Ascend
`mmad`), `max_memory` (bytes of live storage and its written-state bookkeeping, SPEC section
15; default half of the machine's physical memory), `max_steps` (the step budget of SPEC
section 15, default 100,000,000; read when an interpreter starts a program), `max_time`
(seconds of processor time a program run or check may take, SPEC section 15; default None:
10 seconds for a check, no limit for a run), `sync` (Ascend
pipe synchronisation, SPEC section 13: unset checks inside kernels, True everywhere, the Python
API included, False nowhere, as `--sync off`), `plans` (default True, or False when the
environment has `APDSL_PLANS=0`: every fast path off, the general path only; a program's
statements are specialised when it is compiled, so the value at `run`/`check` time counts),
`mx_alternative_emax` (default True: `quantize_mx`'s block scale is twice the OCP one, as
neuronx-cc's `--enable-mx-alternative-emax`, its default since Neuron SDK 2.31; False: the OCP
rule with saturation, the default up to SDK 2.30) and
`execute` (default True; False is check mode, held as the machine's `check` flag).

A program cannot change these for its caller: it runs on a child machine
(`Machine.child()`), whose options are a copy.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ...errors import ApdslRuntimeError
from ...tensor.machine import (
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_STEPS,
    Options,
    current,
    physical_memory,
)

__all__ = ["DEFAULT_MAX_MEMORY", "DEFAULT_MAX_STEPS", "current_values", "options",
           "physical_memory"]

# Each option's type: bool options take True/False, int options a positive int (not a bool).
_TYPES: dict[str, type] = {"init_check": bool, "execute": bool, "strict_padding": bool,
                           "max_memory": int, "max_steps": int, "max_time": float,
                           "sync": bool, "plans": bool, "mx_alternative_emax": bool}
assert {f.name for f in fields(Options)} | {"execute"} == set(_TYPES)


def _get(key: str) -> Any:
    m = current()
    return not m.check if key == "execute" else getattr(m.options, key)


def _set(key: str, value: Any) -> None:
    m = current()
    if key == "execute":
        m.check = not value
    else:
        setattr(m.options, key, value)
        if key == "sync" and value is not True and m.sync is not None and m.sync.session:
            m.sync = None  # the checker `sync=True` started ends with it


class options:  # noqa: N801 - used like a function: apdsl.options(init_check=False)
    """Set options now; as a context manager, restore the previous values on exit.

    `init_check=False` makes unwritten memory read as 0; `strict_padding=True` makes `mmad` read
    K in whole fractals; `max_steps=N`, `max_time=SECONDS` and `max_memory=BYTES` set the
    limits of SPEC 15;
    `sync=True` checks Ascend pipe synchronisation outside kernels too, `sync=False` nowhere;
    `plans=False` turns every fast path off (same results, traces and diagnostics, slower);
    `mx_alternative_emax=False` gives `quantize_mx` the OCP block scale (SDK 2.30 and before).

    >>> with apdsl.options(init_check=False):
    ...     apdsl.ndarray((2, 2), "float32", "hbm").numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    """

    def __init__(self, **values: Any) -> None:
        for key, value in values.items():
            if key not in _TYPES:
                from difflib import get_close_matches
                close = get_close_matches(key, _TYPES, n=1)
                raise ApdslRuntimeError(
                    f"unknown option '{key}'", code="APK421",
                    help=f"did you mean '{close[0]}'?" if close
                    else f"options are: {', '.join(_TYPES)}", option=key)
            kind = _TYPES[key]
            if kind is float:  # seconds: a positive number, or None for the default
                if value is not None and (isinstance(value, bool) or not isinstance(
                        value, (int, float)) or not 0 < value < float("inf")):
                    raise ApdslRuntimeError(
                        f"option {key} must be a positive number of seconds or None, got "
                        f"{value!r}", code="APK421", option=key)
                continue
            if kind is int and (isinstance(value, bool) or not isinstance(value, int)
                                or value < 1):
                raise ApdslRuntimeError(
                    f"option {key} must be a positive int, got {value!r}", code="APK421",
                    option=key)
            if key == "init_check" and value == "strict":
                continue  # `--strict-init`: an unwritten read is an error where it is read
            if not isinstance(value, kind):
                raise ApdslRuntimeError(
                    f"option {key} must be {kind.__name__}, got {value!r}",
                    code="APK421", option=key)
        self._saved = {key: _get(key) for key in values}
        for key, value in values.items():
            _set(key, value)

    def __enter__(self) -> Options:
        return current().options

    def __exit__(self, *exc: object) -> None:
        for key, value in self._saved.items():
            _set(key, value)

    def __repr__(self) -> str:
        return f"options({', '.join(f'{f}={_get(f)!r}' for f in _TYPES)})"


def current_values() -> dict[str, Any]:
    """A snapshot of every option's value on the current machine."""
    return {name: _get(name) for name in _TYPES}
