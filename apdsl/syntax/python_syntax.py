"""Python that `.apk` does not take, named: when the statement a parse error stops in is valid
Python, the error says which Python construct it is ("relative imports are not part of .apk")
instead of listing the tokens apk would have expected, and points at the Python frontend.

Only the failing statement (its lines, dedented) is given to Python's own parser, which reads
it and runs nothing; this happens on the error path only.
"""

from __future__ import annotations

import ast as pyast
import textwrap
import warnings

# Python syntax apk lacks that the lexer does not already name, innermost node first.
_DESCRIBED: list[tuple[type, object, str]] = [
    (pyast.Match, None, "'match' statements are"),
    (pyast.Constant, lambda n: isinstance(n.value, bytes), "bytes literals are"),
    (pyast.Constant, lambda n: isinstance(n.value, complex), "complex numbers are"),
    (pyast.Dict, lambda n: None in n.keys, "'**' in a dict display is"),
    (pyast.ImportFrom, lambda n: n.level > 0, "relative imports are"),
    (pyast.ImportFrom, lambda n: any(a.name == "*" for a in n.names), "'from M import *' is"),
    (pyast.Import, lambda n: len(n.names) > 1, "importing several modules in one 'import' is"),
    (pyast.arguments, lambda n: bool(n.posonlyargs), "positional-only parameters ('/') are"),
    (pyast.AnnAssign, lambda n: not isinstance(n.target, pyast.Name),
     "an annotated assignment to an element or attribute is"),
    (pyast.comprehension, lambda n: bool(n.is_async), "async comprehensions are"),
]

_MAX_BACK = 12  # lines before the error a statement may start
_MAX_AHEAD = 24  # lines after it may end


def python_construct(source: str, line: int, column: int, opened: int | None = None
                     ) -> str | None:
    """"X is/are" for the Python construct at (`line`, `column`, 1-based) when the statement
    there is valid Python; None when it is not Python either (a plain mistake).  `opened`:
    the line of the outermost bracket still open, where the statement starts at the latest."""
    lines = source.split("\n")
    first = min(line, opened or line)
    for start in range(first, max(0, first - _MAX_BACK), -1):
        for end in range(line, min(len(lines), line + _MAX_AHEAD) + 1):
            chunk = lines[start - 1:end]
            tree, indent = _parse(chunk)
            if tree is not None:
                return _describe(tree, line - start + 1, column - 1 - indent)
    return None


def _parse(chunk: list[str]) -> tuple[pyast.AST | None, int]:
    text = "\n".join(chunk)
    body = textwrap.dedent(text)
    first = next((ln for ln in chunk if ln.strip()), "")
    indent = len(first) - len(first.lstrip())
    if body.rstrip().endswith(":"):
        body += "\n    pass"
    try:
        with warnings.catch_warnings():  # Python's own warnings about the text are not ours
            warnings.simplefilter("ignore")
            return pyast.parse(body), indent
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None, indent


def _describe(tree: pyast.AST, line: int, col: int) -> str:
    best: tuple[int, str] | None = None
    for node in pyast.walk(tree):
        for kind, test, text in _DESCRIBED:
            if type(node) is kind and (test is None or test(node)):  # type: ignore[operator]
                size = _size(node, line, col)
                if size is not None and (best is None or size < best[0]):
                    best = (size, text)
    return best[1] if best is not None else "this Python syntax is"


def _size(node: pyast.AST, line: int, col: int) -> int | None:
    """How much source `node` covers when it contains the position, else None."""
    first = getattr(node, "lineno", None)
    if first is None:  # `arguments` and `comprehension` carry no position: take the statement's
        return 10 ** 9
    last = getattr(node, "end_lineno", first) or first
    c0 = node.col_offset
    c1 = getattr(node, "end_col_offset", c0) or c0
    if not (first, c0) <= (line, col) <= (last, c1):
        return None
    return (last - first) * 10_000 + (c1 - c0)
