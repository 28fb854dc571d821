"""The Pygments lexer for `.apk`: token types, plugin registration, pygmentize and rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String

from apdsl.surfaces.lexer import BUFFERS, DTYPE_NAMES, FORMATS, KEYWORDS, PYTHON_ONLY, ApkLexer

SAMPLE = '''\
# gather every other row
from gemm import matmul_tile
import tiles.fractal as tf
t: f32[128, 64] @ sbuf                  # declaration
w: nl.bfloat16[32, 32] @ l1 as NZ = zeros
u = t.slice(1, 8, 24)
assert u.get_pattern() == [[64, 128], [1, 16]], "bad\\tpattern"
x = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
kernel gather(A: f16[M, K] @ hbm) -> f32[64, 512] @ shared_hbm:
    for i in range(4):
        if i % 2 == 0 and not False:
            pass
        elif i is None:
            continue
        else:
            break
    nisa.dma_copy(dst=r, src=A.vector_select(0, offs), name='c1')
    z = host(A) @ host(B).T + 1.5e-3 - 0x1F // 2 ** 3
    return r
def helper(a, b=1):
    return a.shape
'''


def tokens(code: str) -> list[tuple[object, str]]:
    return [(t, v) for _, t, v in ApkLexer().get_tokens_unprocessed(code) if v.strip()]


def kinds(code: str) -> dict[str, set]:
    found: dict[str, set] = {}
    for t, v in tokens(code):
        found.setdefault(v, set()).add(t)
    return found


def test_sample_token_types() -> None:
    found = kinds(SAMPLE)

    def only(value: str, token) -> None:
        assert found[value] == {token}, (value, found[value])

    only("# gather every other row", Comment.Single)
    only("# declaration", Comment.Single)
    for word in ("assert", "for", "in", "if", "and", "not", "pass", "elif", "is", "continue",
                 "else", "break", "return", "as"):
        only(word, Keyword)
    only("kernel", Keyword.Declaration)
    only("def", Keyword.Declaration)
    only("from", Keyword.Namespace)
    only("import", Keyword.Namespace)
    only("gemm", Name.Namespace)
    only("tiles.fractal", Name.Namespace)
    only("False", Keyword.Constant)
    only("None", Keyword.Constant)
    for name in ("f32", "bfloat16", "f16", "float32"):
        only(name, Keyword.Type)
    for name in ("sbuf", "l1", "hbm", "shared_hbm"):
        only(name, Name.Constant)
    only("NZ", Name.Class)
    for name in ("zeros", "ndarray", "range", "dma_copy", "host"):
        only(name, Name.Builtin)
    for name in ("nl", "nisa"):
        only(name, Name.Namespace)
    # declared names (`t:` at line start, the parameter `A:`) are variables where declared
    # and plain names where used
    for name in ("t", "A"):
        assert found[name] == {Name.Variable, Name}, name
        assert next(t for t, v in tokens(SAMPLE) if v == name) == Name.Variable
    only("w", Name.Variable)
    for name in ("gather", "helper", "slice", "get_pattern", "vector_select"):
        only(name, Name.Function)
    only("T", Name.Attribute)
    only("shape", Name.Attribute)
    only("matmul_tile", Name)
    only("1.5e-3", Number.Float)
    only("0x1F", Number.Hex)
    only("128", Number.Integer)
    only("\\t", String.Escape)
    only("->", Punctuation)
    for op in ("==", "%", "+", "-", "//", "**", "="):
        only(op, Operator)
    # `@` marks a buffer after a type, and is matrix multiply between values
    at = [t for t, v in tokens(SAMPLE) if v == "@"]
    assert at.count(Punctuation.Marker) == 4 and at.count(Operator) == 1


def test_sample_has_no_error_tokens_and_round_trips() -> None:
    pieces = list(ApkLexer().get_tokens_unprocessed(SAMPLE))
    assert "".join(v for _, _, v in pieces) == SAMPLE
    assert not [v for _, t, v in pieces if t in Error]


def test_stray_characters_are_errors() -> None:
    assert (Error, "$") in tokens("x = a $ b")
    assert (Error, "?") in tokens("x = a ? b")


def test_declaration_only_at_line_start_or_before_a_dtype() -> None:
    assert (Name.Variable, "total") in tokens("    total: i32[1, 1] @ sbuf\n")
    assert (Keyword, "else") in tokens("else:\n")
    assert (Name, "x") in tokens("d = {x: 1}\n")  # a dict key is not a declaration
    assert (Name.Variable, "x") in tokens("f(x: int8[4] @ ub)\n")


def test_keyword_prefixes_do_not_split_names() -> None:
    for name in ("index", "is_ok", "format_nz", "iffy", "notes", "int4x", "sbufs"):
        assert tokens(name) == [(Name, name)], name
    assert tokens("int4") == [(Keyword.Type, "int4")]


def test_format_names_only_after_as_or_format() -> None:
    assert (Name, "NZ") in tokens("NZ = 3\n")
    assert (Name.Class, "FRACTAL_Z_3D") in tokens("w: f16[4, 4] @ gm as FRACTAL_Z_3D\n")
    assert (Name.Class, "zN") in tokens("a = ndarray((16, 16), f16, l1, format=zN)\n")


def test_strings_and_unterminated_strings() -> None:
    assert (String.Double, "b (h w) -> b w h") in tokens('t.rearrange("b (h w) -> b w h")')
    # an unterminated string stops at the end of its line
    found = tokens('s = "open\nx = 1\n')
    assert (Name, "x") in found and (Number.Integer, "1") in found
    assert (String.Double, "a\n b") in tokens('"""a\n b"""')


def test_word_lists_match_the_language() -> None:
    from apdsl.tensor.dtypes import ALL_NAMES

    assert set(DTYPE_NAMES) == set(ALL_NAMES)
    assert set(BUFFERS) == {"sbuf", "psum", "hbm", "private_hbm", "shared_hbm", "gm", "l1", "l0a",
                            "l0b", "l0c", "ub", "bt"}
    assert {"NZ", "ZZ", "ZN", "NC1HWC0", "FRACTAL_Z", "NDC1HWC0", "FRACTAL_Z_3D", "ND_ALIGN",
            "COLUMN_MAJOR"} <= set(FORMATS)
    assert {"while", "lambda", "del", "raise"} <= set(KEYWORDS)
    assert not set(KEYWORDS) & set(PYTHON_ONLY)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_any_text_lexes_losslessly(text: str) -> None:
    assert "".join(v for _, _, v in ApkLexer().get_tokens_unprocessed(text)) == text


def test_found_by_name_and_filename_through_the_entry_point() -> None:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    for alias in ("apk", "apdsl"):
        assert type(get_lexer_by_name(alias)).__name__ == "ApkLexer"
    assert type(get_lexer_for_filename("kernels/gemm.apk")).__name__ == "ApkLexer"


def test_pygmentize_cli(tmp_path) -> None:
    path = tmp_path / "sample.apk"
    path.write_text(SAMPLE, encoding="utf-8")
    # the pygmentize of this interpreter's environment (the one apdsl's lexer plugin is
    # installed in), not whichever one PATH finds first (a pyenv shim has no apk lexer)
    exe = Path(sys.executable).with_name("pygmentize")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pygments"]
    out = subprocess.run([*cmd, "-l", "apk", "-f", "raw", str(path)], check=True,
                         capture_output=True, text=True).stdout
    assert "Token.Keyword.Type\t'f32'" in out
    assert "Token.Punctuation.Marker\t'@'" in out
    coloured = subprocess.run([*cmd, "-l", "apk", "-f", "terminal", str(path)], check=True,
                              capture_output=True, text=True).stdout
    assert "\x1b[" in coloured and "gather" in coloured


def test_rich_syntax_uses_the_lexer() -> None:
    from io import StringIO

    from rich.console import Console
    from rich.syntax import Syntax

    syntax = Syntax(SAMPLE, "apk", theme="ansi_dark")
    assert type(syntax.lexer).__name__ == "ApkLexer"
    buffer = StringIO()
    Console(file=buffer, force_terminal=True, color_system="standard", width=120).print(syntax)
    out = buffer.getvalue()
    assert "\x1b[" in out and "shared_hbm" in out
    plain = Syntax(SAMPLE, "text", theme="ansi_dark").highlight(SAMPLE)
    assert syntax.highlight(SAMPLE).spans != plain.spans


def test_lexer_import_is_light() -> None:
    code = ("import sys\nimport apdsl.surfaces.lexer\n"
            "bad = [m for m in ('numpy', 'rich', 'ml_dtypes') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("code", ["kernel", "t: f32[", "@", "nl.", "x.\n", "'''", "1e", "0x"])
def test_fragments_lex(code: str) -> None:
    assert "".join(v for _, _, v in ApkLexer().get_tokens_unprocessed(code)) == code


def test_fstrings_lex_their_fields_as_code() -> None:
    from pygments.token import Keyword, String

    found = tokens('x = f"a{n + 1!r:>{w}} {{b}}"\n')
    assert (String.Affix, "f") in found and (String.Interpol, "{") in found
    assert (Name, "n") in found and (Name, "w") in found
    assert (String.Interpol, "!r") in found and (String.Escape, "{{") in found
    assert (Keyword, "while") in tokens("while x:\n    del y\n")
    assert (Keyword, "lambda") in tokens("f = lambda q: q\n")
    # Python that .apk does not take is coloured as reserved, not as a declaration
    assert (Keyword.Reserved, "try") in tokens("try:\n    pass\n")
    assert (Keyword.Reserved, "class") in tokens("class A:\n    pass\n")
