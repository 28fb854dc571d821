"""The VS Code extension folder (`editors/vscode/`): its TextMate grammar is what
`apdsl.surfaces.textmate` makes from the Pygments lexer's word lists, and it colours every word
of those lists as the lexer does; its manifest names files that exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import Keyword, Name

from apdsl.surfaces import lexer
from apdsl.surfaces.lexer import ApkLexer
from apdsl.surfaces.textmate import SCOPES, grammar, text

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "editors" / "vscode"


def test_the_grammar_file_is_generated_from_the_lexer() -> None:
    on_disk = (FOLDER / "syntaxes" / "apk.tmLanguage.json").read_text()
    assert on_disk == text(), ("editors/vscode/syntaxes/apk.tmLanguage.json is stale: run "
                               "python -m apdsl.surfaces.textmate > "
                               "editors/vscode/syntaxes/apk.tmLanguage.json")
    made = subprocess.run([sys.executable, "-m", "apdsl.surfaces.textmate"],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert made == on_disk


def _scope_of(word: str, line: str) -> str | None:
    """The scope the grammar's first matching pattern gives `word` (at its first occurrence
    in `line`), scanning the line as a TextMate engine does: leftmost match, first pattern."""
    start = line.index(word)
    pos = 0
    patterns = grammar()["patterns"]
    while pos < len(line):
        best = None
        for p in patterns:
            rx = p.get("match") or p.get("begin")
            m = re.compile(rx).search(line, pos)
            if m and (best is None or m.start() < best[1].start()):
                best = (p, m)
        if best is None:
            return None
        p, m = best
        end = m.end()
        if "begin" in p:  # a region: up to its end pattern (or the end of the line)
            close = re.compile(p["end"]).search(line, m.end())
            end = close.end() if close else len(line)
            if m.start() <= start < end:
                return p["name"]
        elif m.start() <= start < max(m.end(), m.start() + 1):
            if "captures" in p:
                for group, cap in p["captures"].items():
                    if m.start(int(group)) <= start < m.end(int(group)):
                        return cap["name"]
                return None
            return p.get("name")
        pos = max(end, pos + 1)
    return None


LISTS = [("builtin", lexer.INSTRUCTIONS + lexer.BUILTINS, Name.Builtin),
         ("dtype", lexer.DTYPE_NAMES, Keyword.Type),
         ("buffer", lexer.BUFFERS, Name.Constant),
         ("constant", lexer.CONSTANTS, Keyword.Constant),
         ("reserved", lexer.PYTHON_ONLY, Keyword.Reserved)]


@pytest.mark.parametrize("kind,names,token", LISTS, ids=[k for k, _, _ in LISTS])
def test_every_word_is_coloured_as_the_lexer_colours_it(kind: str, names: tuple[str, ...],
                                                       token: object) -> None:
    for name in names:
        line = f"x = {name} + 1"
        lexed = [t for t, v in ApkLexer().get_tokens(line) if v == name]
        assert lexed == [token], (name, lexed)
        assert _scope_of(name, line) == SCOPES[kind], name


def test_structure_is_coloured() -> None:
    assert _scope_of("add_one", "kernel add_one(a):") == "entity.name.function.apk"
    assert _scope_of("t", "t: f32[128, 64] @ sbuf") == "variable.other.declaration.apk"
    assert _scope_of("else", "else:") == SCOPES["keyword"]
    assert _scope_of("NZ", "y = x as NZ") == SCOPES["format"]
    assert _scope_of("hbm", "# hbm in a comment") == "comment.line.number-sign.apk"
    assert _scope_of("sbuf", 'p = "sbuf"') == "string.quoted.double.apk"
    for word in lexer.KEYWORDS:
        assert _scope_of(word, f"{word} x") in (SCOPES["keyword"], SCOPES["logical"],
                                                "keyword.control.import.apk",
                                                "storage.type.function.apk"), word


def test_the_extension_manifest() -> None:
    manifest = json.loads((FOLDER / "package.json").read_text())
    assert manifest["main"] == "./extension.js" and (FOLDER / "extension.js").is_file()
    (language,) = manifest["contributes"]["languages"]
    assert language["extensions"] == [".apk"]
    json.loads((FOLDER / language["configuration"]).read_text())
    (tm,) = manifest["contributes"]["grammars"]
    assert (FOLDER / tm["path"]).is_file() and tm["scopeName"] == grammar()["scopeName"]
    settings = manifest["contributes"]["configuration"]["properties"]
    # what the client sends is what the server reads (apdsl.surfaces.editor.jobs.Budgets.of)
    source = (ROOT / "apdsl" / "surfaces" / "editor" / "jobs.py").read_text()
    for key in ("maxSteps", "maxMemory", "maxTime", "timeLimit"):
        assert f"apdsl.{key}" in settings and f'"{key}"' in source
    script = (FOLDER / "extension.js").read_text()
    assert '"lsp"' in script and "vscode-languageclient" in manifest["dependencies"]
    readme = (FOLDER / "README.md").read_text()
    assert "code --install-extension" in readme and "apdsl[lsp]" in readme
