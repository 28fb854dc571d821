"""Syntax errors: each message and code, their spans, the catalogue, and a fuzz proving that
`parse` raises nothing but `ApdslSyntaxError` whatever the input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl.catalogue import syntax as catalogue
from apdsl.errors import ApdslSyntaxError, Span
from apdsl.syntax import parse

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def error(source: str) -> ApdslSyntaxError:
    with pytest.raises(ApdslSyntaxError) as info:
        parse(source, "e.apk")
    return info.value


def where(err: ApdslSyntaxError) -> tuple[int, int, int, int]:
    s = err.span
    assert s is not None and s.file == "e.apk"
    return s.line, s.column, s.end_line, s.end_column


# (source, code, message, (line, column, end_line, end_column))
CASES = [
    ("x = max(1 2)\n", "APK001", "expected ')' or ','", (1, 11, 1, 12)),
    ("x = f(a b)\n", "APK001", "expected ')' or ','", (1, 9, 1, 10)),
    ("x = [1 2]\n", "APK001", "expected ']' or ','", (1, 8, 1, 9)),
    ("x = \n", "APK001", "expected an expression", (1, 5, 1, 6)),
    ("x = not  # c\n", "APK001", "expected an expression", (1, 10, 1, 11)),
    ("def (x):\n    pass\n", "APK001", "expected a name", (1, 5, 1, 6)),
    ("x = 1 2\n", "APK001", "expected end of line", (1, 7, 1, 8)),
    ("return a b\n", "APK001", "expected end of line", (1, 10, 1, 11)),
    ("if x y:\n    pass\n", "APK001", "expected ':'", (1, 6, 1, 7)),
    ("{1 2}\n", "APK001", "expected '}', ',' or ':'", (1, 4, 1, 5)),
    ("x = 1 if y\n", "APK001", "expected 'else'", (1, 11, 1, 12)),
    ("for i range(3):\n    pass\n", "APK001", "expected ',' or 'in'", (1, 7, 1, 12)),
    ("from a import\n", "APK001", "expected '(' or a name", (1, 14, 1, 15)),
    ("x = )\n", "APK001", "unmatched ')'", (1, 5, 1, 6)),
    ("x = (1]\n", "APK001", "closing ']' does not match '('", (1, 7, 1, 8)),
    (")\n", "APK001", "unmatched ')'", (1, 1, 1, 2)),
    ("x = 3 $ 4\n", "APK002", "unexpected character '$'", (1, 7, 1, 8)),
    ("x = \u201ca\u201d\n", "APK002", "unexpected character '\u201c'", (1, 5, 1, 6)),
    ("x = 1 ? 2\n", "APK002", "unexpected character '?'", (1, 7, 1, 8)),
    ("  x = 1\n", "APK003", "unexpected indent", (1, 1, 1, 3)),
    ("x = 1\n    y = 2\n", "APK003", "unexpected indent", (2, 1, 2, 5)),
    ("if x:\ny = 1\n", "APK003", "expected an indented block", (2, 1, 2, 2)),
    ("if x:\n    y = 1\n  z = 2\n", "APK003",
     "unindent does not match any outer indentation level", (3, 1, 3, 3)),
    ("if x:\n\ty = 1\n", "APK003", "indentation contains a tab", (2, 1, 2, 2)),
    ('s = "abc\n', "APK004", "unterminated string", (1, 5, 1, 9)),
    ("s = 'abc", "APK004", "unterminated string", (1, 5, 1, 9)),
    ('s = """abc\n\nx = 1\n', "APK004", "unterminated triple-quoted string", (1, 5, 1, 11)),
    ("x = f(1,", "APK005", "unexpected end of file", (1, 9, 1, 10)),
    ("x = [1,\n     2,\n", "APK005", "unexpected end of file", (2, 8, 2, 9)),
    ("if x:\n", "APK005", "unexpected end of file", (1, 6, 1, 7)),
    ("kernel k(A: f32[4] @ hbm):", "APK005", "unexpected end of file", (1, 27, 1, 28)),
    ("f(x) = 1\n", "APK006", "cannot assign to a function call", (1, 1, 1, 5)),
    ("1 = x\n", "APK006", "cannot assign to a literal", (1, 1, 1, 2)),
    ("a, f() = x\n", "APK006", "cannot assign to a function call", (1, 4, 1, 7)),
    ("a + b += 1\n", "APK006", "cannot update an operator expression with '+='", (1, 1, 1, 6)),
    ("a, b += 1\n", "APK006", "'+=' needs a single name or element to update", (1, 1, 1, 5)),
    ("x: notatype @ 3\n", "APK006", "invalid type: the dtype needs its dimensions in brackets",
     (1, 4, 1, 12)),
    ("x: f32[4]\n", "APK006", "invalid type: expected DTYPE[D0, D1, ...] @ BUFFER",
     (1, 4, 1, 10)),
    ("x: f32 @ sbuf\n", "APK006", "invalid type: the dtype needs its dimensions in brackets",
     (1, 4, 1, 7)),
    ("x: f32[1:4] @ sbuf\n", "APK006", "invalid dimension: expected a number or a name",
     (1, 8, 1, 11)),
    ("x: f32[4] @ 3\n", "APK006", "invalid type: expected a buffer name such as sbuf or hbm",
     (1, 13, 1, 14)),
    ("x: f(1)[4] @ sbuf\n", "APK006",
     "invalid type: expected a dtype name such as f32 or nl.bfloat16", (1, 4, 1, 8)),
    ("kernel k(A):\n    pass\n", "APK006", "kernel parameter 'A' needs a type", (1, 10, 1, 11)),
    ("for f(x) in y:\n    pass\n", "APK006", "cannot use a function call as a loop variable",
     (1, 5, 1, 9)),
    ("try:\n    pass\n", "APK007", "'try' is not part of .apk", (1, 1, 1, 4)),
    ("x = (y := 3)\n", "APK007", "assignment expressions (':=') are not part of .apk",
     (1, 8, 1, 10)),
    ("class A:\n    pass\n", "APK007", "'class' is not part of .apk", (1, 1, 1, 6)),
    ("f(a=1, 2)\n", "APK007", "positional argument follows a keyword argument", (1, 8, 1, 9)),
    ("f(a=1, a=2)\n", "APK007", "keyword argument 'a' is repeated", (1, 8, 1, 9)),
    ("def f(a, a):\n    pass\n", "APK007", "parameter 'a' is repeated", (1, 10, 1, 11)),
    ("def f(a=1, b):\n    pass\n", "APK007",
     "parameter 'b' without a default follows one with a default", (1, 12, 1, 13)),
    ("x = 007\n", "APK007", "leading zeros are not allowed in the integer 007", (1, 5, 1, 8)),
    ("s = 'a\\qb'\n", "APK007", "invalid escape sequence '\\q'", (1, 7, 1, 9)),
    ("s = 'a\\x4'\n", "APK007", "truncated '\\x' escape: it needs 2 hex digits", (1, 7, 1, 10)),
]


@pytest.mark.parametrize("source, code, message, span", CASES,
                         ids=[c[0][:24] for c in CASES])
def test_error_message_code_and_span(source: str, code: str, message: str,
                                     span: tuple[int, int, int, int]) -> None:
    err = error(source)
    assert (err.code, err.message) == (code, message)
    assert where(err) == span


def test_expected_and_found_are_notes_and_facts() -> None:
    err = error("x = f(a b)\n")
    assert err.notes == ("found name 'b'",)
    assert err.facts["expected"] == "')' or ','"
    assert error("x = f(1,").notes == ("expected ')' or an expression",)


def test_unclosed_bracket_is_labelled() -> None:
    err = error("x = dma_copy(dst=a,\n             src=b\n")
    assert err.code == "APK005"
    (label,) = err.labels
    assert label.span == Span("e.apk", 1, 13, 1, 14)
    assert "never closed" in label.message
    later = error("a = (1,\nb = 2\n")  # the bracket swallows the next line
    assert later.message == "expected ')' or ','"
    assert later.labels[0].span == Span("e.apk", 1, 5, 1, 6)


def test_mismatched_bracket_is_labelled_at_the_opener() -> None:
    err = error("x = [1,\n  2)\n")
    assert err.message == "closing ')' does not match '['"
    assert err.labels[0].span == Span("e.apk", 1, 5, 1, 6)


def test_unsupported_keywords_have_help() -> None:
    assert "assert" in error("try:\n    pass\n").help
    for source in ("class A:\n    pass\n", "with f() as g:\n    pass\n", "global x\n",
                   "def f():\n    yield 1\n"):
        assert "apdsl run FILE.py" in error(source).help, source


def test_errors_never_name_lark_terminals() -> None:
    for source, *_ in CASES:
        err = error(source)
        text = " ".join([err.message, *err.notes])
        for internal in ("NAME", "RPAR", "LPAR", "_NEWLINE", "$END", "__ANON", "COLON", "INT"):
            assert internal not in text, (source, text)


def test_deeply_nested_input_is_an_error_not_a_crash() -> None:
    # SPEC section 15: source nesting deeper than 200 levels is a coded error (APK125)
    err = error("x = " + "(" * 3000)
    assert err.code == "APK125"
    assert parse("x = " + "(" * 200 + "1" + ")" * 200 + "\n").body
    assert error("x = " + "(" * 201 + "1" + ")" * 201 + "\n").code == "APK125"
    assert parse("x = " + "-" * 3000 + "1\n").body


# ---- the catalogue -----------------------------------------------------------------------------

def test_catalogue_covers_every_syntax_code() -> None:
    raised = {code for _, code, _, _ in CASES}
    listed = [e.code for e in catalogue.ENTRIES]
    assert raised == set(listed) == {f"APK00{i}" for i in range(1, 8)}
    assert len(listed) == len(set(listed))
    for e in catalogue.ENTRIES:
        assert e.title and len(e.explanation) > 40


@pytest.mark.parametrize("entry", catalogue.ENTRIES, ids=lambda e: e.code)
def test_catalogue_example_triggers_its_code(entry) -> None:
    with pytest.raises(ApdslSyntaxError) as info:
        parse(entry.example + "\n", "example.apk")
    assert info.value.code == entry.code


# ---- fuzz: only ApdslSyntaxError escapes, with a span inside the text ---------------------------

VALID = '''\
t: f32[128, 64] @ sbuf as NZ = zeros  # c
u = t.slice(1, 8, 24)[0:4, ::2, ...]
kernel k(A: f32[M, 4] @ hbm) -> f32[M, 4] @ shared_hbm:
    for i, j in range(4):
        if i % 2 == 0 and not j:
            x = {"a": [1, 2.5e-3, 'q\\n'], "b": (x,)}
        elif i:
            continue
        else:
            assert i in (1, 2), "no"
    return nl.ndarray((M, 4), dtype=nl.float32, buffer=nl.shared_hbm)
from lib import a as b, c
'''

PIECES = st.sampled_from(
    list("()[]{}:,.=+-*/%@<>!&|^~#'\"\\\t\n\r $?`0123456789")
    + ["\n    ", "\n  ", "if ", "else", "elif x:", "for ", " in ", "kernel ", "def ", "return",
       "import ", "from ", "as ", "assert ", "pass", "while", "lambda", "not ", "and ", "...",
       "'''", '"""', "0x", "1e", "nl.", "x", "f32[4] @ sbuf", "\u201c", "\u00e9", "\x00"])


def check_contained(source: str) -> None:
    try:
        parse(source, "e.apk")
    except ApdslSyntaxError as err:
        assert err.code in {e.code for e in catalogue.ENTRIES}
        assert err.message and "\n" not in err.message
        s = err.span
        assert s is not None and 1 <= s.line <= s.end_line
        assert s.line <= source.count("\n") + 2 and s.column >= 1
        assert (s.end_line, s.end_column) > (s.line, s.column)


@FUZZ
@given(st.lists(PIECES, max_size=30).map("".join))
def test_fuzz_random_text(source: str) -> None:
    check_contained(source)


@FUZZ
@given(st.data())
def test_fuzz_mutated_valid_program(data) -> None:
    source = VALID
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(source)))
        j = data.draw(st.integers(i, min(len(source), i + 6)))
        action = data.draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if action == "delete":
            source = source[:i] + source[j:]
        elif action == "duplicate":
            source = source[:j] + source[i:j] + source[j:]
        else:
            piece = data.draw(PIECES)
            source = source[:i] + piece + source[j if action == "replace" else i:]
    check_contained(source)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_arbitrary_unicode(source: str) -> None:
    check_contained(source)


def test_valid_fuzz_seed_parses() -> None:
    assert len(parse(VALID).body) == 4
