"""What an error says about the loops it happened in, and Python's error for a container that
changed while a loop walked it.

An error raised in a loop body gets a note with the loop variables' values at that iteration
(`in the iteration i = 1, j = 2`, the outermost loop first): the loop adds its own names as
the error passes out of it, so the path that runs without errors pays nothing.  Check mode
reports errors where they happen instead of raising them, so there the loops under way are
kept on a stack (`Walking`) that `Interpreter.report` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ApdslError, ApdslTypeError, Span
from .frames import Frame
from .values import show

_NOTE = "in the iteration "
_SHOWN = 60  # characters of a value's text in the note

# Python's messages for a dict or set (or a view of a dict) that changed size, or a dict whose
# keys changed, while it was iterated.
_MUTATED = ("changed size during iteration", "keys changed during iteration")


def brief(value: Any) -> str:
    """A value as print shows it, cut short (a long list: its first elements)."""
    if type(value) is str:
        text = repr(value)
    elif type(value) in (list, tuple) and len(value) > 8:
        head = show(type(value)(value[:4]))
        text = f"{head[:-1]}, ... ({len(value):,} elements){head[-1]}"
    else:
        text = show(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def in_iteration(err: ApdslError, names: Sequence[str], frame: Frame) -> ApdslError:
    """`err` (raised in a loop body) with the loop variables' current values in its iteration
    note, before those of the loops inside this one that it passed already."""
    if not names:
        return err
    own = tuple((n, brief(frame.vars[n])) for n in names if n in frame.vars)
    return with_iteration(err, own)


def with_iteration(err: ApdslError, pairs: tuple[tuple[str, str], ...]) -> ApdslError:
    if not pairs:
        return err
    inner = err.facts.get("iteration") or ()
    old = _note(inner) if inner else None
    both = pairs + tuple(inner)
    notes = [n for n in err.notes if n != old]
    notes.append(_note(both))
    return err.replace(notes=notes, facts={**err.facts, "iteration": both})


def _note(pairs: Sequence[tuple[str, str]]) -> str:
    return _NOTE + ", ".join(f"{n} = {v}" for n, v in pairs)


class Walking:
    """Check mode: the loops under way (their variables' names and frames), outermost first."""

    __slots__ = ("loops",)

    def __init__(self) -> None:
        self.loops: list[tuple[Sequence[str], Frame]] = []

    def annotate(self, err: ApdslError) -> ApdslError:
        pairs = tuple((n, brief(frame.vars[n])) for names, frame in self.loops for n in names
                      if n in frame.vars)
        return with_iteration(err, pairs)


def mutated(e: RuntimeError, span: Span | None) -> ApdslError:
    """The located error for a dict or set changed while a loop walked it (Python's
    RuntimeError, raised by the iteration itself); any other RuntimeError is re-raised as
    it is (it is not the program's)."""
    text = str(e)
    if type(e) is not RuntimeError or not any(m in text for m in _MUTATED):
        raise e
    kind = "set" if text.lower().startswith("set") else "dictionary"
    return ApdslTypeError(
        text, code="APK045", span=span,
        notes=[f"the loop's body added or removed an element of the {kind} the loop walks; "
               "Python stops such a loop with this error"],
        help="walk a copy (`for k in list(d):`), or collect the changes and make them after "
             "the loop")
