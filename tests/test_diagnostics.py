"""Diagnostics rendering: golden reports, layout properties, JSON, colour choice, explain."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from apdsl.catalogue import entry
from apdsl.errors import (
    ApdslError,
    ApdslSyntaxError,
    Label,
    PatternError,
    Span,
    ViewError,
    Warning_,
)
from apdsl.surfaces.diagnostics import render, render_explain, render_list, to_json, use_color

GOLDEN = Path(__file__).parent / "golden" / "diagnostics"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

KERNEL = """\
# slicing past the end
t: f32[128, 64] @ sbuf
v = t.reshape((128, 64))
u = t.slice(1, 8, 80)
"""

GEMM = """\
def matmul_tile(a, b, out):
    ta = a.tile_view((0, 0), (128, 128))
    mmad(out, ta, b)
"""


def _error(cls=ViewError, message="m", *, span=None, labels=(), primary=None, **kw) -> ApdslError:
    err = cls(message, span=span, labels=list(labels), **kw)
    if primary is not None:
        err = err.with_label(span, primary)
    return err


def case_one_line():
    err = _error(message="slice end 80 is past the end of dimension 1 (size 64)", code="APK203",
                 span=Span("slice.apk", 4, 19, 4, 21), primary="end must be <= 64")
    return err, {"slice.apk": KERNEL}


def case_label_same_file():
    err = _error(message="slice end 80 is past the end of dimension 1 (size 64)", code="APK203",
                 span=Span("slice.apk", 4, 19, 4, 21), primary="end must be <= 64",
                 labels=[Label(Span("slice.apk", 2, 1, 2, 23), "t declared here")],
                 notes=["t.shape = (128, 64)"], help="use an end of at most 64")
    return err, {"slice.apk": KERNEL}


def case_label_other_file():
    src = "from gemm import matmul_tile\nA: f16[128, 100] @ l0a as ZZ\nmatmul_tile(A, B, C)\n"
    err = _error(message="tile (0, 0) of shape (128, 128) does not fit (128, 100)",
                 code="APK510", span=Span("main.apk", 3, 1, 3, 21),
                 labels=[Label(Span("<stdlib>/gemm.apk", 2, 10, 2, 41), "tile made here"),
                         Label(Span("<stdlib>/tiles.apk", 7, 5, 7, 9), "layout fixed here"),
                         Label(Span("main.apk", 2, 1, 2, 2), "A declared here")])
    return err, {"main.apk": src, "<stdlib>/gemm.apk": GEMM}


def case_multi_line():
    src = ("kernel copy(A: f32[128, 64] @ hbm):\n"
           "    r = ndarray((128, 64), f32, sbuf)\n"
           "    dma_copy(\n"
           "        dst=r,\n"
           "        src=A.slice(0, 0, 64),\n"
           "    )\n")
    err = _error(message="dma_copy moves 4096 elements into 8192", code="APK401",
                 span=Span("copy.apk", 3, 5, 6, 6), primary="element counts differ",
                 labels=[Label(Span("copy.apk", 2, 5, 2, 6), "r has 8192 elements")])
    return err, {"copy.apk": src}


def case_long_multi_line():
    body = "".join(f"    {n},\n" for n in range(10))
    src = "x = [\n" + body + "]\nassert x == 1\n"
    err = _error(ApdslSyntaxError, "list literal too long", code="APK007",
                 span=Span("list.apk", 1, 5, 12, 2), primary="this list")
    return err, {"list.apk": src}


def case_no_span():
    err = _error(ApdslError, "no kernel named 'gemm' in the file", code="APK601",
                 notes=["kernels: copy, gather_rows"], help="pass one of them", file="main.apk")
    return err, {}


def case_no_span_no_file():
    return _error(ApdslError, "options() got an unknown option 'speed'", code="APK120"), None


def case_warning():
    src = ("offsets = ndarray((64, 1), int32, sbuf)\n"
           "v = A.ap([[7, 64], [1, 512]], vector_offset=offsets, indirect_dim=0)\n")
    col = src.splitlines()[1].index("[7, 64]") + 1
    err = _error(Warning_, "the leading stride 7 is ignored with vector_offset", code="APK450",
                 span=Span("w.apk", 2, col, 2, col + 7), primary="ignored",
                 notes=["the base stride of dimension 0 is 512"])
    return err, {"w.apk": src}


def case_notes_help():
    src = "u = t.ap([[64, 128], [1, 16]], offset=2.5)\n"
    err = _error(ViewError, "offset must be an int, got 2.5", code="APK210",
                 span=Span("ap.apk", 1, 39, 1, 42),
                 notes=["t.shape = (128, 64)", "t.offset = 0",
                        "patterns count elements:\nuse whole numbers"],
                 help="did you mean src.ap([32, 16], [1, 32])?")
    return err, {"ap.apk": src}


def case_string_caret():
    src = 'y = t.rearrange("b (h w) -> b w h q", h=4)\n'
    pattern = "b (h w) -> b w h q"
    first = src.index('"') + 2  # 1-based column of the pattern's first character
    start = pattern.index("q")
    assert src[first - 1 + start] == "q"
    err = _error(PatternError, "axis 'q' is on the right but not on the left", code="APK703",
                 span=Span("r.apk", 1, first + start, 1, first + start + 1),
                 primary="not in the input", pattern=pattern, start=start, end=start + 1)
    return err, {"r.apk": src}


def case_tabs_and_wide():
    src = "\tx = host(\u4e2d\u6587)\t+ y  # \u00e9t\u00e9\n"
    y, host = src.index("y") + 1, src.index("host") + 1
    err = _error(ApdslError, "unknown name 'y'", code="APK101", span=Span("t.apk", 1, y, 1, y + 1),
                 primary="not defined",
                 labels=[Label(Span("t.apk", 1, host, 1, src.index(")") + 2), "host value")])
    return err, {"t.apk": src}


def case_long_line():
    src = "x = " + " + ".join(f"a{i}" for i in range(40)) + " + bad + " + \
        " + ".join(f"b{i}" for i in range(30)) + "\n"
    col = src.index("bad") + 1
    err = _error(ApdslError, "unknown name 'bad'", code="APK101",
                 span=Span("long.apk", 1, col, 1, col + 3), primary="not defined",
                 labels=[Label(Span("long.apk", 1, 1, 1, 2), "assigned here")])
    return err, {"long.apk": src}


def case_hanging_labels():
    src = "nc_matmul(dst, a.slice(0, 0, 64), b)\n"
    err = _error(ApdslError, "stationary and moving have different K", code="APK310",
                 span=Span("mm.apk", 1, 35, 1, 36), primary="K = 128",
                 labels=[Label(Span("mm.apk", 1, 16, 1, 33), "K = 64"),
                         Label(Span("mm.apk", 1, 11, 1, 14), "dst")])
    return err, {"mm.apk": src}


def case_span_past_end():
    err = _error(ApdslSyntaxError, "unexpected end of file", code="APK005",
                 span=Span("eof.apk", 40, 1, 40, 1), help="close the open bracket")
    return err, {"eof.apk": "x = (1,\n"}


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    err, sources = CASES[name]()
    width = 80 if name == "long_line" else 100
    text = render(err, sources, color=False, width=width) + "\n"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("APDSL_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


# --- properties of the layout --------------------------------------------------------------

def _rows(text: str) -> list[str]:
    return text.split("\n")


def test_header_is_exactly_the_spec_line() -> None:
    err, sources = case_one_line()
    assert _rows(render(err, sources, color=False))[0] == (
        "slice.apk:4:19: error[APK203]: slice end 80 is past the end of dimension 1 (size 64)")
    err, sources = case_warning()
    assert _rows(render(err, sources, color=False))[0].startswith("w.apk:2:11: warning[APK450]: ")
    assert _rows(render(case_no_span()[0], {}, color=False))[0] == (
        "main.apk: error[APK601]: no kernel named 'gemm' in the file")
    assert render(case_no_span_no_file()[0], None, color=False) == (
        "error[APK120]: options() got an unknown option 'speed'")


def test_plain_string_source_is_the_primary_file() -> None:
    err, sources = case_one_line()
    assert render(err, KERNEL, color=False) == render(err, sources, color=False)


# Narrow scripts plus the wide ones whose width every terminal agrees on (CJK ideographs,
# Hangul syllables, fullwidth forms); emoji modifiers and the like are left out on purpose.
PRINTABLE = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(min_codepoint=0xC0, max_codepoint=0x24F),
    st.characters(min_codepoint=0x391, max_codepoint=0x3C9, blacklist_categories=("Cn",)),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),
    st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),
)


@settings(max_examples=150, deadline=None)
@given(prefix=st.text(alphabet=st.one_of(PRINTABLE, st.just("\t")), max_size=30),
       marked=st.text(alphabet=PRINTABLE, min_size=1, max_size=10),
       suffix=st.text(alphabet=st.one_of(PRINTABLE, st.just("\t")), max_size=20))
def test_carets_sit_under_the_span(prefix: str, marked: str, suffix: str) -> None:
    # Oracle: rich's cell widths of the text with tabs as four spaces.
    line = prefix + marked + suffix
    start = len(prefix) + 1
    err = ApdslError("m", span=Span("f.apk", 2, start, 2, start + len(marked)))
    rows = _rows(render(err, {"f.apk": "first\n" + line + "\n"}, color=False, width=10_000))
    code, underline = rows[2], rows[3]
    assert code.startswith("2 | ")
    carets = underline[4:]
    column = cell_len(prefix.replace("\t", "    "))
    assert carets == " " * column + "^" * cell_len(marked)
    assert cell_len(code[4:4 + len(prefix.replace("\t", "    "))]) == column


def test_control_characters_never_reach_the_terminal() -> None:
    src = "x = 1\x1b[31m + \u202ey\r\n"
    err = ApdslError("bad \x1b[2J name\nsecond", span=Span("c.apk", 1, 14, 1, 15),
                     notes=["a\x07b"], help="c\x1bd")
    text = render(err, {"c.apk": src}, color=False)
    assert not any(ch in text for ch in "\x1b\x07\r\u202e")
    assert len(_rows(text)[0].split("bad")) == 2 and "second" in _rows(text)[0]
    underline = _rows(text)[3]
    code = _rows(text)[2]
    assert code.index("\ufffd") == underline.index("^")  # the bidi override, made visible


def test_crlf_source_renders_like_lf() -> None:
    err, sources = case_label_same_file()
    crlf = {k: v.replace("\n", "\r\n") for k, v in sources.items()}
    assert render(err, crlf, color=False) == render(err, sources, color=False)


def test_gap_of_several_lines_is_elided() -> None:
    src = "".join(f"x{i} = {i}\n" for i in range(1, 30))
    err = ApdslError("m", span=Span("g.apk", 25, 1, 25, 4),
                     labels=[Label(Span("g.apk", 3, 1, 3, 3), "first")])
    rows = _rows(render(err, {"g.apk": src}, color=False))
    numbers = [r.split("|")[0].strip() for r in rows[1:]]
    assert " 3 | x3 = 3" in rows and "25 | x25 = 25" in rows
    assert "..." in rows and "4" not in numbers and "24" not in numbers


def test_span_ending_at_column_one_stops_at_previous_line_end() -> None:
    src = "a = (1,\n     2)\nb = 3\n"
    err = ApdslError("m", span=Span("s.apk", 1, 5, 3, 1))
    rows = _rows(render(err, {"s.apk": src}, color=False))
    assert not any(r.startswith("3 |") for r in rows)
    assert rows[rows.index("2 |      2)") + 1] == "  |      ^^"


@settings(max_examples=200, deadline=None)
@given(source=st.text(alphabet=st.one_of(st.sampled_from("\n\n\t\r x=(),\x1b\u4e2d\u0301\u200d"),
                                         st.characters()), max_size=60),
       spans=st.lists(st.tuples(st.sampled_from(["a.apk", "b.apk", "<stdlib>/c.apk"]),
                                *[st.integers(-3, 12)] * 4), min_size=1, max_size=4),
       width=st.integers(-5, 200), color=st.booleans())
def test_render_never_raises(source, spans, width, color) -> None:
    (file, *pos), *rest = spans
    err = ApdslError("m\x1b", span=Span(file, *pos), notes=[source[:10]], help=source[-5:])
    for f, *p in rest:
        err = err.with_label(Span(f, *p), source[:7])
    text = render(err, {"a.apk": source, "b.apk": ""}, color=color, width=width)
    assert ANSI.sub("", text).startswith(f"{file}:")
    if not color:
        assert "\x1b" not in text


def test_renderer_bug_falls_back_to_a_header() -> None:
    class Odd(ApdslError):
        @property
        def labels(self):  # a broken error object still gets reported
            raise RuntimeError("boom")

        @labels.setter
        def labels(self, value):
            pass

    err = Odd("still shown", code="APK999", span=Span("x.apk", 1, 1, 1, 2))
    text = render(err, {"x.apk": "x = 1\n"}, color=False)
    assert text.startswith("x.apk:1:1: error[APK999]: still shown")


# --- colour --------------------------------------------------------------------------------

def test_colour_output_has_ansi_and_plain_has_none() -> None:
    for name, make in CASES.items():
        err, sources = make()
        plain = render(err, sources, color=False)
        coloured = render(err, sources, color=True)
        assert "\x1b[" not in plain, name
        assert ANSI.search(coloured), name
        assert ANSI.sub("", coloured) == plain, name


def test_colour_highlights_the_source_line_as_apk() -> None:
    err, sources = case_label_same_file()
    coloured = render(err, sources, color=True)
    code_row = next(r for r in coloured.split("\n") if "sbuf" in r and "declared" not in r)
    # the dtype, the buffer and the marker are coloured separately from plain names
    assert re.search(r"\x1b\[[0-9;]*mf32\x1b\[0m", code_row)
    assert re.search(r"\x1b\[[0-9;]*msbuf\x1b\[0m", code_row)
    assert "\x1b[1;31merror[APK203]" in coloured  # the severity in bold red


def test_colour_ignores_environment(monkeypatch) -> None:
    # render's caller decides (use_color); NO_COLOR must not silently strip colour here
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    err, sources = case_one_line()
    assert ANSI.search(render(err, sources, color=True))


# --- JSON ------------------------------------------------------------------------------------

SPEC_KEYS = ["severity", "code", "message", "file", "line", "column", "end_line", "end_column",
             "notes", "help"]


def test_to_json_with_span_and_labels() -> None:
    err, _ = case_label_other_file()
    err = err.replace(notes=[*err.notes, "n"])
    data = to_json(err)
    assert list(data) == SPEC_KEYS + ["labels"]
    assert data["severity"] == "error" and data["code"] == "APK510"
    assert (data["file"], data["line"], data["column"], data["end_line"], data["end_column"]) \
        == ("main.apk", 3, 1, 3, 21)
    assert data["notes"] == ["n"] and data["help"] is None
    assert data["labels"][0] == {"message": "tile made here", "file": "<stdlib>/gemm.apk",
                                 "line": 2, "column": 10, "end_line": 2, "end_column": 41}
    assert json.loads(json.dumps(data)) == data


def test_to_json_without_span() -> None:
    data = to_json(case_no_span()[0])
    assert list(data) == SPEC_KEYS + ["labels"]
    assert data["file"] == "main.apk"
    assert [data[k] for k in ("line", "column", "end_line", "end_column")] == [None] * 4
    assert data["help"] == "pass one of them" and data["labels"] == []
    assert to_json(case_no_span_no_file()[0])["file"] is None
    assert to_json(case_warning()[0])["severity"] == "warning"


# --- use_color -------------------------------------------------------------------------------

class FakeStream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("tty", "no_color", "term", "expected"), [
    (True, None, "xterm-256color", True),
    (False, None, "xterm-256color", False),
    (True, "1", "xterm-256color", False),
    (True, "", "xterm-256color", True),  # no-color.org: an empty value does not count
    (True, None, "dumb", False),
    (True, None, None, True),
])
def test_use_color(monkeypatch, tty, no_color, term, expected) -> None:
    for var, value in (("NO_COLOR", no_color), ("TERM", term)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    assert use_color(FakeStream(tty)) is expected


def test_use_color_on_odd_streams(monkeypatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_color(object()) is False

    class Closed:
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    assert use_color(Closed()) is False


# --- explain ---------------------------------------------------------------------------------

EXAMPLE = entry("APK203", "slice end past the dimension", """
`slice(dim, start, end)` needs `end <= shape[dim]`.
Views never grow a tensor.
""", """
t: f32[128, 64] @ sbuf
u = t.slice(1, 8, 80)   # end 80 > 64
""")


def test_render_explain_plain() -> None:
    text = render_explain(EXAMPLE, color=False)
    rows = _rows(text)
    assert rows[0] == "APK203: slice end past the dimension"
    assert "`slice(dim, start, end)` needs `end <= shape[dim]`." in rows
    assert "Views never grow a tensor." in rows
    assert "    t: f32[128, 64] @ sbuf" in rows
    assert "    u = t.slice(1, 8, 80)   # end 80 > 64" in rows
    assert rows.index("Example:") < rows.index("    t: f32[128, 64] @ sbuf")
    assert "\x1b" not in text


def test_render_explain_colour_highlights_example() -> None:
    text = render_explain(EXAMPLE, color=True)
    assert ANSI.sub("", text) == render_explain(EXAMPLE, color=False)
    example_row = next(r for r in text.split("\n") if "# end" in r)
    assert re.search(r"\x1b\[[0-9;]*m# end 80 > 64\x1b\[0m", example_row)  # the comment


def test_render_list() -> None:
    entries = {"APK001": entry("APK001", "unexpected token", "x", "x"),
               "APK7": entry("APK7", "short code", "x", "x")}
    assert render_list(entries, color=False) == "APK001  unexpected token\nAPK7    short code"
    assert render_list(list(entries.values()), color=False).count("\n") == 1
    assert ANSI.search(render_list(entries, color=True))
    assert render_list([], color=False) == ""


def test_render_list_of_the_catalogue() -> None:
    from apdsl.catalogue import all_entries

    table = all_entries()
    text = render_list(table, color=False)
    assert len(text.splitlines()) == len(table) or not table
    for code in table:
        assert render_explain(table[code], color=False).startswith(code + ": ")


# --- cold start ------------------------------------------------------------------------------

def test_plain_rendering_imports_neither_rich_nor_pygments() -> None:
    code = (
        "import sys\n"
        "from apdsl.errors import ApdslError, Span\n"
        "from apdsl.surfaces.diagnostics import render\n"
        "err = ApdslError('m', span=Span('a', 1, 1, 1, 2))\n"
        "render(err, {'a': 'x = 1'}, color=False)\n"
        "bad = [m for m in ('rich', 'pygments', 'numpy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
