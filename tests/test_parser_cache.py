"""The table-driven parser (`apdsl.syntax.lalr`) and its on-disk tables (`lalr_tables`).

Oracle: Lark itself.  The runtime must give the same AST as Lark's own LALR parser with the same
builder, for every program, and the same diagnostic for every broken one; its cache must never
serve tables of another grammar, Lark or Python, nor a damaged file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import NKI_EXAMPLE, SPEC_EXAMPLE

from apdsl.errors import ApdslSyntaxError
from apdsl.resources import stdlib_path
from apdsl.syntax import lalr_tables as T
from apdsl.syntax import parser as P
from apdsl.syntax.ast import dump

ROOT = Path(__file__).resolve().parent.parent


def _sources() -> list[tuple[str, str]]:
    files = sorted((ROOT / "examples").glob("*.apk")) + sorted(stdlib_path().rglob("*.apk"))
    return [(f.name, f.read_text()) for f in files] + [("spec", SPEC_EXAMPLE),
                                                       ("nki", NKI_EXAMPLE)]


@pytest.fixture(scope="module")
def parsers(tmp_path_factory: pytest.TempPathFactory) -> tuple[P._Parser, P._Parser]:
    cache = tmp_path_factory.mktemp("cache")
    P._Parser(cache)  # computes and stores the tables
    fast = P._Parser(cache)
    assert fast.fast is not None, "the runtime must handle the .apk grammar"
    lark_only = P._Parser(cache)
    lark_only.fast = None  # every parse through Lark
    return fast, lark_only


@pytest.fixture(scope="module")
def cacheless() -> P._Parser:
    """A parser with no cache (its tables built in memory): the oracle of the cached ones.
    One for the module: each build costs half a second of CPU."""
    return P._Parser(None)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bytes]:
    """The name and bytes of a tables file as the parser writes it, built once for the
    module; a test that damages or reads tables starts from a copy (`_written`)."""
    path = _build(tmp_path_factory.mktemp("stored"))
    return path.name, path.read_bytes()


def _outcome(parser: P._Parser, text: str) -> tuple:
    try:
        return ("ok", dump(parser.parse(text, "t.apk")))
    except ApdslSyntaxError as e:
        return ("error", e.code, str(e), e.span, e.notes, e.help, e.labels)


def test_runtime_builds_the_ast_lark_builds(parsers: tuple[P._Parser, P._Parser]) -> None:
    fast, lark_only = parsers
    for name, text in _sources():
        got = _outcome(fast, text)
        assert got[0] == "ok", (name, got)
        assert got == _outcome(lark_only, text), name
    assert fast._lark is None  # no source needed Lark


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_broken_programs_give_lark_s_diagnostic(parsers: tuple[P._Parser, P._Parser],
                                                data: st.DataObject) -> None:
    """Cut, spliced or mistyped programs: whatever Lark says (an AST, or which error where),
    the runtime says too."""
    fast, lark_only = parsers
    sources = _sources()
    _, text = data.draw(st.sampled_from(sources))
    cut = data.draw(st.integers(0, len(text)))
    insert = data.draw(st.sampled_from(["", "(", ")", ":", "\t", " ", "\n    ", "f'{", "'",
                                        "]", "x =", "if", "$", "is not", "not in", "**"]))
    broken = text[:cut] + insert + text[cut + data.draw(st.integers(0, 3)):]
    assert _outcome(fast, broken) == _outcome(lark_only, broken)


def test_fstring_fields_and_their_errors(parsers: tuple[P._Parser, P._Parser]) -> None:
    fast, lark_only = parsers
    for text in ['x = f"{a + 1} and {b!r:>{w}}"\n', 'x = f"{a +}"\n', 'x = f"{}"\n',
                 "x = f'{a is not b} {c not in d}'\n", 'x = f"{(1,\n 2)}"\n']:
        assert _outcome(fast, text) == _outcome(lark_only, text), text


def _key() -> str:
    return T.cache_key(P.grammar_text(), repr((P._OPTIONS, P._STARTS)))


def test_tables_are_cached_and_reused(tmp_path: Path, cacheless: P._Parser) -> None:
    P._Parser(tmp_path)
    (tables,) = tmp_path.glob("*.tables")
    again = P._Parser(tmp_path)
    assert again._lark is None and again.fast is not None  # served from the file
    assert dump(again.parse(SPEC_EXAMPLE, "a")) == dump(cacheless.parse(SPEC_EXAMPLE, "a"))
    assert list(tmp_path.glob("*.tables")) == [tables]


def test_the_key_names_grammar_options_lark_and_python() -> None:
    grammar = P.grammar_text()
    key = _key()
    assert T.cache_key(grammar + "\n// changed\n", repr((P._OPTIONS, P._STARTS))) != key
    assert T.cache_key(grammar, repr((P._OPTIONS, ["start"]))) != key
    import lark
    assert f"lark{lark.__version__}-" in key
    assert f"-py{sys.version_info[0]}{sys.version_info[1]}" in key
    assert T.lark_version() == lark.__version__


def test_lark_version_is_read_without_importing_lark() -> None:
    code = ("import sys; from apdsl.syntax import lalr_tables as T; v = T.lark_version(); "
            "print(v, 'lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    import lark
    assert out.stdout.split() == [lark.__version__, "False"]


def test_stale_tables_are_not_used(tmp_path: Path, stored: tuple[str, bytes]) -> None:
    """Tables stored under another key (another grammar, Lark or Python) are never read."""
    key = _key()
    good = T.read_cache(str(_written(tmp_path, stored)), key)
    assert good is not None
    path = tmp_path / "other.tables"
    T.write_cache(str(path), "f1-other-grammar", good)
    assert T.read_cache(str(path), "f1-other-grammar") is not None
    assert T.read_cache(str(path), key) is None


def _build(folder: Path) -> Path:
    """The tables file a parser computes and writes in an empty `folder`."""
    P._Parser(folder)
    (path,) = folder.glob("*.tables")
    return path


def _written(tmp_path: Path, stored: tuple[str, bytes]) -> Path:
    """A copy of the module's tables file in `tmp_path`, where a parser looks for it."""
    name, blob = stored
    path = tmp_path / name
    path.write_bytes(blob)
    return path


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "flipped byte",
                                    "bad data, good checksum"])
def test_damaged_tables_are_rebuilt(tmp_path: Path, damage: str, stored: tuple[str, bytes],
                                    cacheless: P._Parser) -> None:
    path = _written(tmp_path, stored)
    blob = path.read_bytes()
    if damage == "empty":
        blob = b""
    elif damage == "garbage":
        blob = b"garbage"
    elif damage == "truncated":
        blob = blob[: len(blob) // 2]
    elif damage == "flipped byte":
        i = len(blob) - 100
        blob = blob[:i] + bytes([blob[i] ^ 0x40]) + blob[i + 1:]
    else:  # a writer that stored the wrong shape, with a valid checksum
        import marshal
        import zlib
        header = blob[: blob.index(b"\n", len(b"apdsl-lalr\n")) + 1]
        body = marshal.dumps(([("(?P<X>x)", 0)], {}, [], [], [{"X": 99}], [], {}, {}))
        blob = header + zlib.crc32(body).to_bytes(4, "little") + body
    path.write_bytes(blob)
    assert T.read_cache(str(path), _key()) is None
    parser = P._Parser(tmp_path)  # rebuilt from Lark and rewritten
    assert parser.fast is not None
    assert dump(parser.parse(SPEC_EXAMPLE, "a")) == dump(cacheless.parse(SPEC_EXAMPLE, "a"))
    assert T.read_cache(str(path), _key()) is not None


def test_unwritable_cache_directory(tmp_path: Path, cacheless: P._Parser) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a cache directory under a file cannot be created
    parser = P._Parser(blocker / "apdsl")
    assert parser.fast is not None
    assert dump(parser.parse("x = 1\n", "a").body) == dump(cacheless.parse("x = 1\n", "a").body)
    if os.geteuid() != 0:  # root writes anywhere: the read-only case only means something
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            assert P._Parser(ro).parse("x = 1\n", "a").body
            assert list(ro.iterdir()) == []
        finally:
            ro.chmod(0o700)


def test_a_builder_lark_would_treat_differently_is_left_to_lark(
        tmp_path: Path, stored: tuple[str, bytes]) -> None:
    """A builder method named after a terminal (Lark calls it on each such token) or after an
    inlined `_rule`: the runtime declines and Lark parses."""
    class Odd(P.Builder):
        def NAME(self, tok):  # noqa: N802 - Lark's naming of terminal callbacks
            return tok
    path = _written(tmp_path, stored)
    parser = P._Parser(tmp_path)  # reads the copy
    assert parser._lark is None
    tables = T.read_cache(str(path), _key())
    names = {n for m in parser.fast.mres for n in m.groupindex}
    with pytest.raises(ValueError, match="terminal NAME"):
        T.check_builder(Odd(), tables, names)
    T.check_builder(P.Builder(), tables, names)
