"""The non-tensor operands of an executed instruction, for `apdsl lower` (SPEC section 8).

An instruction's tensor operands are the roles its table entry declares (`Operand`); `lower`
shows each as its access pattern.  Everything else a program passes is a non-tensor operand:
operators (`op=nl.add`, `op0=`, `reduce_op=`), numbers (`scale=1.5`, a scalar `operand0=2.0`,
`value=`, `imm=`), flags (`negate=True`), enums (`reduce_cmd=reset_reduce`), shapes and patterns
(`axis=[1]`, `pattern=[[1, 64]]`) and registers.  One mechanism finds them for every
instruction: the executor's signature binds the call's arguments to parameter names; a tensor
is an operand the table declares (`trace.record` lowers it), while a declared role holding a
number (`operand0=2.0`, `scale=1.5`, `prob=0.1`) is a non-tensor operand shown here, as is every
parameter the table declares no operand for; and a value equal to the parameter's default says
nothing, as a hint keyword left at its default does (`apdsl.runtime.nki.hints.given`).  `name=` is
the instruction's label, shown already; the hint keywords `trace.record` keeps are left to it.

Values are recorded JSON-plain (`plain`), as they were when the instruction ran: operators by
their `nl.` name, tensors by name, a register as its name and value, tuples as lists.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from ...tensor.registers import VirtualRegister
from ...tensor.view import Tensor
from ..table.operators import Operator

_NONE = object()  # a parameter without a default: every value given is shown
Plan = tuple[tuple[str, ...], dict[str, Any], dict[str, int]]


@cache
def _plan(fn: Any) -> Plan | None:
    """(positional parameter names, each parameter's default, each one's place)."""
    import inspect  # (only when a trace records: not on a cold `apdsl check`'s path)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = sig.parameters.values()
    positional = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD))
    defaults = {p.name: _NONE if p.default is p.empty else p.default for p in params
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    return positional, defaults, {name: i for i, name in enumerate(defaults)}


def given(fn: Any, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """The non-tensor operands of the call `fn(*args, **kwargs)` of an instruction executor,
    JSON-plain, by parameter name in the signature's order (None when there are none)."""
    plan = _plan(fn)
    if plan is None:
        return None
    positional, defaults, rank = plan
    found: dict[str, Any] | None = None
    # (two loops, no pairs built: this runs for every instruction a trace records)
    for i, value in enumerate(args):
        if type(value) is not Tensor and i < len(positional):  # a tensor: an operand
            found = _note(found, positional[i], value, defaults)
    for name, value in kwargs.items():
        if type(value) is not Tensor:
            found = _note(found, name, value, defaults)
    if not found:
        return None
    if len(found) == 1:
        return found
    return dict(sorted(found.items(), key=lambda kv: rank[kv[0]]))


def _note(found: dict[str, Any] | None, name: str, value: Any,
          defaults: dict[str, Any]) -> dict[str, Any] | None:
    """`found` with parameter `name`'s value added, unless it says nothing (its default, the
    `name=` label, or no such parameter)."""
    default = defaults.get(name, _NONE)
    if name == "name" or (default is _NONE and name not in defaults):
        return found
    value = plain(value)
    if default is not _NONE and type(value) is type(d := plain(default)) and value == d:
        return found
    if found is None:
        found = {}
    found[name] = value
    return found


def plain(value: Any) -> Any:
    """`value` as JSON data: what `lower --json` prints and the text table shows."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Operator):
        return repr(value)  # nl.add
    if type(value) is Tensor:
        return value.name
    if isinstance(value, VirtualRegister):  # its value when the instruction ran
        return {"register": value.name, "value": value.value}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(value)
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return plain(value.item())  # a NumPy scalar
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


def text(value: Any) -> str:
    """A plain value as the text table shows it: strings (operator and enum names) bare,
    the rest as Python writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {text(v)}" for k, v in value.items()) + "}"
    return repr(value)
