"""Instruction ordering controls of NKI: `nl.no_reorder()` and the legacy
`nki.compiler.no_reorder()` loop directive (`nl.sequential_range(n, directives=...)`).

Both tell the Neuron compiler's scheduler to keep the instructions of a block (or a loop body)
in program order instead of reordering independent ones.  apdsl never reorders: it executes a
kernel in program order, and `apdsl profile` schedules each engine's instructions in program
order too, so a kernel means the same with or without the control.  What the control changes
here is what the reference forbids inside it: `nl.dynamic_range` loops (register-based dynamic
loops) are not supported in a `no_reorder` block (the NKI language reference and the dynamic
loops deep dive), so one inside the block is refused (APK157) rather than run.

The range functions of NKI (`affine_range`, `sequential_range`, `static_range`) are Python's
`range`; the legacy API also gave them a `directives=` keyword, which takes `no_reorder()`.

The compiled loops of NKI 0.6 (`nl.fori_loop`, `nl.while_loop`, the replacements of
`dynamic_range`) run their body as the device would, once per iteration, with bounds and
conditions read from registers when the loop (or the iteration) starts: apdsl executes a kernel
in program order, so a register holds, at that point, the value the device would read.

The compiled conditional `nl.if_else` (NKI 2.33) runs the callback its condition selects.  Its
condition is a Python bool or int (resolved at compile time: only the selected callback is
traced) or a 32-bit `NkiScalar` (`nisa.scalar_load`, read as the device reads it; `apdsl check`,
which reads no memory, checks both callbacks); a register is refused as the reference refuses
it: it belongs to one engine's sequencer, and every sequencer runs the branch."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ApdslTypeError
from ..tensor.machine import current
from ..tensor.registers import VirtualRegister
from ..tensor.scalars import NkiScalar, scalar_error
from .nki_instruction import NkiInstruction
from .tile_size import dynamic_range

RANGES = ("affine_range", "sequential_range", "static_range")
NAMES = ("no_reorder", "dynamic_range", "fori_loop", "while_loop", "if_else", *RANGES)
INT32 = (-2 ** 31, 2 ** 31)  # a loop bound is compared by a 32-bit compare-and-branch


class NoReorder:
    """`no_reorder()`: a `with` block (new API) or a loop directive (legacy API) whose
    instructions keep their program order.  `blocks` counts the open `with` blocks of the
    program that made it (None: the legacy directive, which belongs to no program)."""

    __slots__ = ("blocks",)

    def __init__(self, blocks: list[int] | None = None) -> None:
        self.blocks = blocks

    def __enter__(self) -> NoReorder:
        if self.blocks is not None:
            self.blocks[0] += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.blocks is not None:
            self.blocks[0] -= 1

    def __repr__(self) -> str:
        return "no_reorder()"


def _ranged(name: str) -> Callable[..., range]:
    def ranged(start: Any, stop: Any = None, step: Any = 1, *, directives: Any = None) -> range:
        if directives is not None and not isinstance(directives, NoReorder):
            raise ApdslTypeError(
                f"nl.{name}: directives={directives!r} is not a loop directive apdsl knows",
                code="APK152", help="the directive apdsl takes is nki.compiler.no_reorder(); "
                "leave directives= out for a loop the compiler may schedule freely")
        return range(start) if stop is None and step == 1 else range(start, stop, step)

    ranged.__name__ = ranged.__qualname__ = name
    ranged.__doc__ = (f"`nl.{name}(start, stop=None, step=1, directives=None)`: Python's "
                      "range; `directives` takes the legacy `nki.compiler.no_reorder()`.")
    return ranged


def _loop_error(message: str, **kw: Any) -> ApdslTypeError:
    return ApdslTypeError(message, code="APK155", **kw)


def _bound(value: Any, what: str, loop: str = "fori_loop") -> int:
    """A dynamic loop's bound now: an int, or the value its register holds (APK410 when
    nothing was loaded into it); 32-bit, as the loop's compare-and-branch is."""
    if isinstance(value, NkiScalar):
        got = _scalar_bound(value, what, loop)
    elif isinstance(value, VirtualRegister):
        got = value.resolve(f"the loop's {what} bound", loop)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        got = int(value)
    else:
        raise _loop_error(f"nl.{loop}: {what} must be an int, a VirtualRegister or an "
                          f"NkiScalar, not "
                          f"{type(value).__name__}",
                          help="a bound held in a tensor is read with nisa.register_load "
                          "into a register first")
    if not INT32[0] <= got < INT32[1]:
        raise _loop_error(f"nl.{loop}: {what} = {got} does not fit 32 bits",
                          notes=["the loop compiles into a 32-bit compare-and-branch"])
    return got


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[VirtualRegister], Any],
              step: int = 1) -> None:
    """`nl.fori_loop(lower, upper, body_fun, step=1)`: `body_fun(i)` for i in
    `range(lower, upper, step)`, i given as a register holding the iteration's value (the
    body reads it as a `scalar_offset`, say; writing it does not change the loop).  The bounds
    are ints or registers, read once when the loop starts; the step is a positive int."""
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 1:
        raise _loop_error(f"nl.fori_loop: step must be a positive int, got {step!r}",
                          help="the reference requires a compile-time positive step")
    if not callable(body_fun):
        raise _loop_error(f"nl.fori_loop: body_fun must be a function of the index, not "
                          f"{type(body_fun).__name__}")
    for what, bound in (("lower", lower), ("upper", upper)):
        if isinstance(bound, NkiScalar):
            _scalar_bound(bound, what, "fori_loop")  # its rules, before check mode skips it
    if _unknown(lower, upper):
        body_fun(VirtualRegister(lower if isinstance(lower, int) else None, name="i"))
        return
    for i in range(_bound(lower, "lower"), _bound(upper, "upper"), int(step)):
        body_fun(VirtualRegister(i, name="i"))


def _scalar_bound(value: NkiScalar, what: str, loop: str) -> int:
    """An NkiScalar bound: 32-bit (the reference: an int64 scalar cannot bound the loop, whose
    trip-count comparison has no 64-bit form), not a comparison's result."""
    if value.dtype != "int32" or loop != "fori_loop":
        raise scalar_error(
            f"nl.{loop}: the {what} bound is an {value.dtype} NkiScalar" if loop == "fori_loop"
            else f"nl.{loop}: the {what} bound is an NkiScalar",
            notes=["the NKI reference (fori_loop): a bound must be 32-bit; the loop compiles "
                   "into a compare-and-branch that has no 64-bit form"]
            if loop == "fori_loop" else ["NKI takes NkiScalar bounds in nl.fori_loop"],
            help="load the bound from an int32 tensor" if loop == "fori_loop"
            else "loop with nl.fori_loop")
    got = value.usable(f"the loop's {what} bound")
    return 0 if got is None else got  # (None: check mode, which `_unknown` catches first)


def _unknown(*bounds: Any) -> bool:
    """Check mode, with a bound in a register loaded from memory: check mode reads no memory,
    so the register holds no value, and the loop is checked by running its body once (the
    device runs one copy of it, whatever the trip count), from the start bound when it is an
    int, else with the iteration value unknown (a register without a value)."""
    return any(isinstance(b, (VirtualRegister, NkiScalar)) and b.value is None
               for b in bounds) and current().check


def _returned(got: Any) -> bool:
    """Did a callback return something?  An instruction's handle (a lambda that issues one,
    `lambda: nisa.dma_copy(...)`, returns it) is nothing."""
    return got is not None and not isinstance(got, NkiInstruction)


def while_loop(init: VirtualRegister, body_fun: Callable[[VirtualRegister], Any]) -> None:
    """`nl.while_loop(init, body_fun)`: while the condition register is nonzero (checked
    before each iteration, so a zero `init` runs nothing), `r = body_fun(r)`: the body gets
    the condition's value in a register of its own and returns the register of the next
    condition."""
    if not isinstance(init, VirtualRegister):
        raise _loop_error(f"nl.while_loop: init must be a VirtualRegister, not "
                          f"{type(init).__name__}",
                          help="nisa.register_alloc(value), or register_load from a tensor")
    if not callable(body_fun):
        raise _loop_error(f"nl.while_loop: body_fun must be a function of the condition "
                          f"register, not {type(body_fun).__name__}")
    condition = init
    while True:
        if _unknown(condition):  # check mode: the body once, its condition unknown
            value = None
        elif (value := condition.resolve("the loop's condition", "while_loop")) == 0:
            return
        condition = body_fun(VirtualRegister(value, name="r"))
        if not isinstance(condition, VirtualRegister):
            raise _loop_error(
                f"nl.while_loop: body_fun returned {type(condition).__name__}, not the "
                "register of the next condition",
                help="end the body with `return r` after loading the next condition into r")
        if value is None:
            return


def if_else(cond: Any, then_fn: Callable[[], Any],
            else_fn: Callable[[], Any] | None = None) -> None:
    """`nl.if_else(cond, then_fn, else_fn=None)`: `then_fn()` when `cond` is nonzero (a
    negative value too), else `else_fn()` when given; the callbacks take no arguments and
    return nothing.  A Python bool or int condition is resolved at compile time, so only the
    selected callback runs (and is checked): no conditional control flow is emitted."""
    if then_fn is None:
        raise _loop_error("nl.if_else: then_fn must be a function of no arguments, not None")
    for role, fn in (("then_fn", then_fn), ("else_fn", else_fn)):
        if fn is not None and not _takes_no_arguments(fn):
            raise _loop_error(f"nl.if_else: {role} must be a function of no arguments, not "
                              f"{_described(fn)}",
                              notes=["the NKI reference (nl.if_else): the callbacks take no "
                                     "arguments and do not return anything"])
    if isinstance(cond, NkiScalar):
        _scalar_branch(cond, then_fn, else_fn)
        return
    if isinstance(cond, VirtualRegister):
        raise _loop_error(
            "nl.if_else: the condition is a register, which belongs to one engine's sequencer",
            notes=["the NKI reference (nl.if_else): the condition must be available on all "
                   "engines, since every sequencer runs the branch, so a value bound to one "
                   "sequencer is rejected; it takes a Python bool or int, or a 32-bit "
                   "NkiScalar (nisa.scalar_load)"],
            help="decide with a Python bool or int where the condition is known when the "
            "kernel is traced")
    if not isinstance(cond, (bool, int, np.integer, np.bool_)):
        raise _loop_error(
            f"nl.if_else: the condition is {type(cond).__name__}, not a Python bool or int",
            notes=["the NKI reference (nl.if_else) takes a Python bool or int, or a 32-bit "
                   "NkiScalar (nisa.scalar_load)"],
            help="pass a Python bool or int (a comparison of ints, say)")
    chosen = then_fn if cond else else_fn
    if chosen is not None and _returned(got := chosen()):
        role = "then_fn" if cond else "else_fn"
        raise _loop_error(f"nl.if_else: {role} returned {type(got).__name__}; the callbacks "
                          "return nothing",
                          notes=["the NKI reference (nl.if_else): the callbacks take no "
                                 "arguments and do not return anything"],
                          help="write results into a tensor the kernel allocated before the "
                          "call")


def _scalar_branch(cond: NkiScalar, then_fn: Callable[[], Any],
                   else_fn: Callable[[], Any] | None) -> None:
    """`nl.if_else` on a device scalar: the branch its value selects, as the device runs it
    (apdsl executes in program order, so the scalar holds the value the device tests).  In
    `apdsl check` the value is unknown and the compiler emits both callbacks, so both are
    checked, `then_fn` first."""
    if cond.dtype != "int32":
        raise scalar_error(
            f"nl.if_else: the condition is an {cond.dtype} NkiScalar",
            notes=["the NKI reference (nl.if_else): the condition is a Python bool or int, or "
                   "a 32-bit NkiScalar; at 64 bits a scalar has no comparisons"],
            help="load the condition from an int32 tensor")
    chosen = [then_fn, else_fn] if cond.value is None else \
        [then_fn if cond.value else else_fn]
    for fn in chosen:
        if fn is not None and _returned(got := fn()):
            raise _loop_error(f"nl.if_else: a callback returned {type(got).__name__}; the "
                              "callbacks return nothing",
                              notes=["the NKI reference (nl.if_else): the callbacks take no "
                                     "arguments and do not return anything"],
                              help="write results into a tensor the kernel allocated before "
                              "the call")


def _takes_no_arguments(fn: Any) -> bool:
    if not callable(fn):
        return False
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: let the call decide
        return True
    return True


def _described(fn: Any) -> str:
    if not callable(fn):
        return type(fn).__name__
    try:
        return f"{getattr(fn, '__name__', 'a function')}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return type(fn).__name__


def make() -> dict[str, Callable[..., Any]]:
    """The ordering controls and range functions of one program (its open `no_reorder`
    blocks counted, for the `dynamic_range` rule)."""
    blocks = [0]

    def no_reorder() -> NoReorder:
        """`nl.no_reorder()`: the block's instructions keep their program order."""
        return NoReorder(blocks)

    def dynamic(start: Any, stop: Any = None, step: Any = 1) -> Sequence[Any]:
        if blocks[0]:
            raise ApdslTypeError(
                "nl.dynamic_range inside a nl.no_reorder() block: NKI does not support a "
                "dynamic loop there", code="APK157",
                notes=["the NKI language reference: register-based dynamic loops are not "
                       "supported inside a no_reorder block; static loops are"],
                help="use nl.sequential_range (or range) inside the block, or move the "
                "dynamic loop out of it")
        # a bound held in a register is read when the loop starts, as the hardware loop
        # instruction reads it (the dynamic loops deep dive: start and stop "can be Python
        # int literals or VirtualRegister objects (runtime values computed on device)")
        if stop is None:  # (one bound: the stop, as range's)
            start, stop = 0, start
        if _unknown(start, stop):
            dynamic_range(0, 1, step)  # (the step's rules)
            return [start if isinstance(start, int) else VirtualRegister(None, name="i")]
        if isinstance(start, VirtualRegister):
            start = _bound(start, "start", "dynamic_range")
        if isinstance(stop, VirtualRegister):
            stop = _bound(stop, "stop", "dynamic_range")
        return dynamic_range(start, stop, step)

    dynamic.__name__ = "dynamic_range"
    dynamic.__doc__ = dynamic_range.__doc__
    out: dict[str, Callable[..., Any]] = {"no_reorder": no_reorder, "dynamic_range": dynamic,
                                          "fori_loop": fori_loop, "while_loop": while_loop,
                                          "if_else": if_else}
    out.update((name, _ranged(name)) for name in RANGES)
    return out
