"""The TextMate grammar of `.apk` (VS Code's highlighting, `editors/vscode/syntaxes/`), made from
the Pygments lexer's word lists (`apdsl.surfaces.lexer`), so the editor and the terminal colour
the same words the same way: `python -m apdsl.surfaces.textmate > FILE` writes it, and a test
fails when the file in the repository is not what this module makes.

The patterns use only what Oniguruma (TextMate's regex engine) and Python's `re` share, so the
test can run them.
"""

from __future__ import annotations

import json
from typing import Any

from .lexer import (
    BUFFERS,
    BUILTINS,
    CONSTANTS,
    DTYPE_NAMES,
    FORMATS,
    INSTRUCTIONS,
    KEYWORDS,
    PYTHON_ONLY,
)

__all__ = ["grammar", "text", "SCOPES", "words"]

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_LOGICAL = ("and", "or", "not", "in", "is")
_IMPORTS = ("import", "from", "as")
# the scope each word list is coloured with
SCOPES = {
    "keyword": "keyword.control.apk",
    "logical": "keyword.operator.logical.apk",
    "reserved": "keyword.other.reserved.apk",
    "constant": "constant.language.apk",
    "builtin": "support.function.builtin.apk",
    "dtype": "support.type.dtype.apk",
    "buffer": "support.constant.buffer.apk",
    "format": "entity.name.type.format.apk",
}


def words(names: tuple[str, ...]) -> str:
    """A whole-word alternation, longest first (so `int4` never stops at `in`)."""
    return r"\b(?:" + "|".join(sorted(set(names), key=lambda n: (-len(n), n))) + r")\b"


def _string(begin: str, end: str, scope: str, fstring: bool) -> dict[str, Any]:
    inner: list[dict[str, Any]] = [{"match": r"\\(?:[\\'\"abfnrtv0\n]|x[0-9a-fA-F]{2}|"
                                             r"u[0-9a-fA-F]{4}|[0-7]{1,3})",
                                    "name": "constant.character.escape.apk"}]
    if fstring:
        inner.insert(0, {"match": r"\{\{|\}\}", "name": "constant.character.escape.apk"})
        inner.append({"begin": r"\{", "end": r"\}", "name": "meta.interpolation.apk",
                      "patterns": [{"include": "$self"}]})
    return {"begin": begin, "end": end, "name": scope, "patterns": inner}


def grammar() -> dict[str, Any]:
    """The grammar, as VS Code reads it (`syntaxes/apk.tmLanguage.json`)."""
    keywords = tuple(k for k in KEYWORDS if k not in _LOGICAL and k not in _IMPORTS)
    not_declared = "(?!(?:" + "|".join(KEYWORDS + PYTHON_ONLY + CONSTANTS) + r")\b)"
    patterns: list[dict[str, Any]] = [
        {"match": r"#.*$", "name": "comment.line.number-sign.apk"},
        _string(r'[fF]"""', r'"""', "string.quoted.triple.apk", True),
        _string(r"[fF]'''", r"'''", "string.quoted.triple.apk", True),
        _string(r'[fF]"', r'"|$', "string.quoted.double.apk", True),
        _string(r"[fF]'", r"'|$", "string.quoted.single.apk", True),
        _string(r'"""', r'"""', "string.quoted.triple.apk", False),
        _string(r"'''", r"'''", "string.quoted.triple.apk", False),
        _string(r'"', r'"|$', "string.quoted.double.apk", False),
        _string(r"'", r"'|$", "string.quoted.single.apk", False),
        {"match": r"\b(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|"
                  r"(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?)\b",
         "name": "constant.numeric.apk"},
        # `NAME: DTYPE[...] @ BUFFER` at the start of a line declares NAME
        {"match": r"^\s*" + not_declared + "(" + IDENT + r")\s*(:)(?!:)",
         "captures": {"1": {"name": "variable.other.declaration.apk"},
                      "2": {"name": "punctuation.separator.apk"}}},
        {"match": r"\b(kernel|def)\s+(" + IDENT + ")",
         "captures": {"1": {"name": "storage.type.function.apk"},
                      "2": {"name": "entity.name.function.apk"}}},
        {"match": r"\b(as)\s+(" + words(FORMATS)[2:] + ")",
         "captures": {"1": {"name": "keyword.control.import.apk"},
                      "2": {"name": SCOPES["format"]}}},
        {"match": r"\b(format)\s*(=)\s*(" + words(FORMATS)[2:] + ")",
         "captures": {"1": {"name": "variable.parameter.apk"},
                      "3": {"name": SCOPES["format"]}}},
        {"match": words(_IMPORTS), "name": "keyword.control.import.apk"},
        {"match": words(CONSTANTS), "name": SCOPES["constant"]},
        {"match": words(keywords), "name": SCOPES["keyword"]},
        {"match": words(_LOGICAL), "name": SCOPES["logical"]},
        {"match": words(PYTHON_ONLY), "name": SCOPES["reserved"]},
        {"match": r"\b(nki)(\.)(language|isa)(\.)(?=[A-Za-z_])",
         "captures": {"1": {"name": "entity.name.namespace.apk"},
                      "3": {"name": "entity.name.namespace.apk"}}},
        {"match": r"\b(nl|nisa|asc)(\.)(?=[A-Za-z_])",
         "captures": {"1": {"name": "entity.name.namespace.apk"}}},
        {"match": words(INSTRUCTIONS + BUILTINS), "name": SCOPES["builtin"]},
        {"match": words(DTYPE_NAMES), "name": SCOPES["dtype"]},
        {"match": words(BUFFERS), "name": SCOPES["buffer"]},
        {"match": r"(\.)\s*(" + IDENT + r")(?=\s*\()",
         "captures": {"2": {"name": "entity.name.function.member.apk"}}},
        {"match": r"->|\*\*=?|//=?|<<=?|>>=?|[-+*/%@&|^]=?|==|!=|<=|>=|[<>~=]",
         "name": "keyword.operator.apk"},
    ]
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/"
                   "tmlanguage.json",
        "name": "apk",
        "scopeName": "source.apk",
        "fileTypes": ["apk"],
        "comment": "Generated by `python -m apdsl.surfaces.textmate` from the word lists of "
                   "apdsl/surfaces/lexer.py; do not edit by hand.",
        "patterns": patterns,
    }


def text() -> str:
    """The grammar file's text."""
    return json.dumps(grammar(), indent=2) + "\n"


if __name__ == "__main__":
    import sys
    sys.stdout.write(text())
