"""Errors are immutable values: made complete where raised, context (a statement's span, "in this
call of f", a program's sources) added by the boundary that knows it as a new error, never by
changing the raised one."""

from __future__ import annotations

import pickle

import pytest

from apdsl.errors import ApdslError, FormatError, Label, PatternError, Span, ViewError
from apdsl.semantics.program import Program

SPAN = Span("a.apk", 3, 5, 3, 9)
CALL = Span("a.apk", 7, 1, 7, 12)


def test_an_error_cannot_be_changed_after_it_is_made() -> None:
    err = ViewError("bad slice", code="APK203", notes=["n"], dim=1)
    for name, value in (("span", SPAN), ("message", "other"), ("code", "APK000"),
                        ("notes", ()), ("labels", ()), ("facts", {}), ("sources", {}),
                        ("trace", None), ("anything", 1)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(err, name, value)
    with pytest.raises(AttributeError):
        del err.message
    with pytest.raises(TypeError):
        err.facts["dim"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        err.notes.append("more")  # type: ignore[attr-defined]
    assert (err.span, err.notes, dict(err.facts)) == (None, ("n",), {"dim": 1})


def test_with_span_and_with_label_make_new_errors() -> None:
    err = ViewError("bad slice", code="APK203", dim=1)
    located = err.with_span(SPAN)
    assert located is not err and err.span is None and located.span == SPAN
    assert type(located) is ViewError and located.code == "APK203"
    assert dict(located.facts) == {"dim": 1} and located.message == "bad slice"
    # a finer span already set wins over the statement's
    assert located.with_span(CALL) is located
    assert err.with_span(None) is err
    labelled = located.with_label(CALL, "in this call of f")
    assert labelled.labels == (Label(CALL, "in this call of f"),) and located.labels == ()
    assert labelled.with_label(None, "x") is labelled
    # facts are added, the error's own win
    assert dict(err.with_facts(dim=9, file="x").facts) == {"dim": 1, "file": "x"}


def test_replace_keeps_a_subclass_fields_and_pickles() -> None:
    err = PatternError("bad axis", code="APK701", pattern="a b -> c", start=6, end=7)
    moved = err.replace(span=SPAN, notes=["why"])
    assert (moved.pattern, moved.start, moved.end) == ("a b -> c", 6, 7)
    assert moved.notes == ("why",) and err.notes == () and err.span is None
    again = pickle.loads(pickle.dumps(moved))
    assert type(again) is PatternError and again.span == SPAN and again.pattern == "a b -> c"
    assert str(again) == "[APK701] bad axis" and again.args == ("bad axis",)


def test_errors_are_still_exceptions_python_can_annotate() -> None:
    err = FormatError("x", code="APK501")
    err.add_note("python's own notes stay settable")
    with pytest.raises(FormatError) as raised:
        raise err.with_span(SPAN)
    assert raised.value.span == SPAN and raised.value.__traceback__ is not None


def test_a_failed_run_raises_a_new_error_carrying_its_sources() -> None:
    """The program's boundary adds the sources and the partial trace to a new error value; the
    interpreter's statement boundary adds the span."""
    source = "t: f32[4, 8] @ sbuf\nu = t.slice(1, 0, 99)\n"
    program = Program(source, "prog.apk")
    with pytest.raises(ApdslError) as raised:
        program.run()
    err = raised.value
    assert err.code == "APK203" and err.span is not None and err.span.line == 2
    assert err.sources["prog.apk"] == source
    with pytest.raises(TypeError):
        err.sources["prog.apk"] = ""  # type: ignore[index]


def test_a_warning_is_located_by_the_statement_without_changing_it() -> None:
    from apdsl.errors import Warning_
    from apdsl.runtime.core.trace import collect_warnings, warn
    from apdsl.tensor.machine import current
    made = Warning_("careful", code="APK450")
    with current().child().active():
        current().span = SPAN
        current().location = ("a.apk", 3)
        with collect_warnings() as got:
            warn(made)
    assert made.span is None and "location" not in made.facts
    assert got[0].span == SPAN and got[0].facts["location"] == ("a.apk", 3)
