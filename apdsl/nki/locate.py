"""Where in the user's Python a call was made: the innermost frame outside apdsl, with the
column range Python 3.11+ records for each instruction (`co_positions`)."""

from __future__ import annotations

import ast
import dis
import linecache
import os
import sys
from functools import cache, lru_cache
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Any

from ..errors import Span
from ..tensor import liveness

# apdsl's own source folder: frames whose file is under it are apdsl's, not the user's
PACKAGE = str(Path(__file__).resolve().parent.parent)


def is_user_file(filename: str) -> bool:
    """A frame of the user's code (not apdsl's, not Python's own `<frozen ...>` machinery).

    Asked for every frame of every traced instruction (the innermost user frame of each), so
    the answer is kept per file: resolving a path is a system call per component.  A relative
    name depends on the working directory, so it is kept per directory too."""
    if filename.startswith("<"):
        return False
    if os.path.isabs(filename):
        return _user_path(filename, "")
    return _user_path(filename, os.getcwd())


@lru_cache(maxsize=4096)
def _user_path(filename: str, cwd: str) -> bool:
    """`is_user_file` of `filename` (relative names: in `cwd`), computed once per pair."""
    try:
        path = str(Path(cwd, filename).resolve())
    except OSError:
        return False
    return not (path == PACKAGE or path.startswith(PACKAGE + "/"))


@lru_cache(maxsize=1024)
def _positions(code: CodeType) -> tuple[tuple[Any, ...], ...]:
    """`code.co_positions()` as a tuple, made once per code object (a kernel's instruction
    calls are located from the same few functions, each listing its positions anew cost a
    tenth of an LNC=2 MoE kernel's run)."""
    return tuple(code.co_positions())


def _span(code: CodeType, lasti: int, line: int | None) -> Span:
    file = code.co_filename
    if hasattr(code, "co_positions") and lasti >= 0:
        try:
            start, end, col, end_col = _positions(code)[lasti // 2]
        except (IndexError, ValueError):
            start = None
        if start is not None and col is not None:
            return Span(file, start, _column(file, start, col) + 1, end or start,
                        _column(file, end or start, end_col or col) + 1)
    line = line or code.co_firstlineno
    return Span(file, line, 1, line, 1)


def char_column(text: str, offset: int) -> int:
    """The character offset in the line `text` of a UTF-8 byte offset (Python's
    `co_positions` and `ast` columns count bytes; a Span counts characters)."""
    if text.isascii():
        return offset
    return len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


def _column(file: str, line: int, offset: int) -> int:
    import linecache
    return char_column(linecache.getline(file, line), offset)


def caller_span(depth: int = 1) -> Span | None:
    """The span of the innermost call in user code on the current stack."""
    frame: FrameType | None = sys._getframe(depth)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return _span(frame.f_code, frame.f_lasti, frame.f_lineno)


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def importing_from() -> bool:
    """Is the innermost user frame on the stack executing a `from ... import name`?"""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or frame.f_lasti < 0:
        return False
    return frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM


def traceback_span(tb: TracebackType | None) -> Span | None:
    """The span of the innermost user-code frame of a traceback (where a mistake surfaced)."""
    found = None
    while tb is not None:
        if is_user_file(tb.tb_frame.f_code.co_filename):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    return _span(found.tb_frame.f_code, found.tb_lasti, found.tb_lineno)


@cache
def _stores(code: CodeType) -> dict[int, str]:
    """Offsets of the calls whose result `code` stores straight into a variable, and the
    variable's name (`t = nl.ndarray(...)`)."""
    out: dict[int, str] = {}
    instrs = list(dis.get_instructions(code))
    for here, after in zip(instrs, instrs[1:]):
        if here.opname.startswith("CALL") and after.opname in (
                "STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"):
            # a frame inside the call reports the CALL or one of its cache entries as its
            # last instruction (which one depends on the Python version): every code unit
            # from the call to the store names the variable
            for offset in range(here.offset, after.offset, 2):
                out[offset] = str(after.argval)
    return out


def assigned_name() -> str:
    """The variable the user's innermost call on the stack is assigned to ("" if none): what
    `lower` and the diagnostics call a tensor `nl.ndarray` allocates there."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return ""
    return _stores(frame.f_code).get(frame.f_lasti, "")


def return_span(fn: Any) -> Span | None:
    """Where kernel `fn` gives its result: its one `return VALUE` statement, else (none, or
    several: which one ran is not recorded) the line of its `def`.  Read from the source only
    when a diagnostic needs it."""
    import ast
    import linecache
    code = getattr(fn, "__code__", None)
    if code is None or not is_user_file(code.co_filename):
        return None
    file = code.co_filename
    try:
        tree = ast.parse("".join(linecache.getlines(file)), file)
    except (SyntaxError, ValueError):
        return None
    node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef))
                 and n.name == code.co_name and code.co_firstlineno in
                 (n.lineno, *(d.lineno for d in n.decorator_list))), None)
    if node is None:
        return None
    returns = []
    stack: list[ast.AST] = list(node.body)
    while stack:  # the function's own statements, not those of functions nested in it
        n = stack.pop()
        if isinstance(n, ast.Return) and n.value is not None:
            returns.append(n)
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    where: ast.stmt = returns[0] if len(returns) == 1 else node
    end_line = where.end_lineno if where is not node else node.lineno
    end_col = where.end_col_offset if where is not node else None
    if end_col is None:  # the def line: from `def` to the end of that line (in characters)
        end_col = len(linecache.getline(file, node.lineno).rstrip())
        return Span(file, where.lineno, _column(file, where.lineno, where.col_offset) + 1,
                    node.lineno, end_col + 1)
    return Span(file, where.lineno, _column(file, where.lineno, where.col_offset) + 1,
                end_line or where.lineno, _column(file, end_line or where.lineno, end_col) + 1)


@lru_cache(maxsize=512)
def imports_legacy(file: str) -> bool:
    """Does the Python source `file` hold an import statement of `neuronxcc` (parsed: an
    import inside a string is not one)?"""
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(n == "neuronxcc" or n.startswith("neuronxcc.") for n in names):
            return True
    return False


def legacy_caller() -> bool:
    """Is the user's code making the current call in a file that imports `neuronxcc`?"""
    span = caller_span(2)
    return span is not None and imports_legacy(span.file)


# an access that makes an overdraft's tile live again is reported at the user's line
liveness.here = caller_span
