"""`apdsl repl`: the interactive front end (prompt_toolkit) and the scripted one.

Both hand complete inputs to a `Session`.  Interactively, the ApkLexer highlights as you type,
Tab completes, a line ending in `:` opens a block (auto-indented) that a blank line ends, and
history persists across sessions.  With standard input not a terminal there are no prompts and
inputs are cut with file semantics: a block ends at the first line back at column 0, so a
script piped in runs as the file would, but an error does not stop the rest.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tensor.view import Tensor
from .session import ALIASES, COMMANDS, Session

__all__ = ["main", "run_script", "run_interactive", "history_path", "make_prompt", "Scan",
           "scan", "continuation", "ScriptReader", "ApkCompleter", "receiver", "INPUT_STYLE",
           "input_style"]

PROMPT = "apk> "
CONTINUATION = "...  "
INDENT = "    "
BLOCK_CONTINUERS = ("elif", "else")


def main() -> int:
    from .diagnostics import use_color
    session = Session(color=use_color(sys.stdout), err_color=use_color(sys.stderr))
    try:
        if not sys.stdin.isatty():
            return run_script(sys.stdin, session)
        return run_interactive(session)
    finally:
        session.close()


# -- where an input ends --------------------------------------------------------------------------

@dataclass(frozen=True)
class Scan:
    """What the text typed so far leaves open."""

    depth: int  # brackets still open
    in_string: bool  # inside a triple-quoted string
    continued: bool  # ends with a backslash line continuation
    opens_block: bool  # some logical line ends with ':' (a block header)
    last_colon: bool  # the last non-empty logical line ends with ':'
    decorator: bool  # the last non-empty logical line is a decorator ('@...')

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.in_string or self.continued


def scan(text: str) -> Scan:
    """Brackets, strings, comments and line ends of `.apk` text, without parsing it."""
    depth, quote, i, n = 0, "", 0, len(text)
    last, first = "", ""  # last and first significant characters of the logical line
    opens_block = last_colon = decorator = False
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote, last = "", "'"
                continue
            if ch == "\n" and len(quote) == 1:
                quote = ""  # an unterminated one-line string ends with its line
            else:
                i += 1
                continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else ch
            i += len(quote)
            first = first or ch
            continue
        if ch == "\n":
            if depth == 0 and last != "\\":
                if last:
                    last_colon, decorator = last == ":", first == "@"
                    opens_block = opens_block or last_colon
                last, first = "", ""
            i += 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if not ch.isspace():
            last = ch
            first = first or ch
        i += 1
    if last and depth == 0 and not quote:
        last_colon, decorator = last == ":", first == "@"
        opens_block = opens_block or last_colon
    return Scan(depth, len(quote) == 3, last == "\\" and not quote, opens_block, last_colon,
                decorator)


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def continuation(text: str) -> str | None:
    """Interactive Enter: None when `text` is a complete input, else the indentation the next
    line starts with.  A block (some line ends with ':') goes on until an empty line."""
    if text.lstrip().startswith(":") and "\n" not in text.strip():
        return None
    s = scan(text)
    lines = text.split("\n")
    last = lines[-1]
    if s.open:
        return _indent(last)
    if not last.strip():
        return None
    if s.last_colon:
        return _indent(last) + INDENT
    if s.decorator or s.opens_block:
        return _indent(last)
    return None


class ScriptReader:
    """Cuts piped-in lines into complete inputs with file semantics (see the module
    docstring).  `feed` returns the inputs a line completes, with their first line number."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.start = 0
        self.lineno = 0

    def _flush(self) -> tuple[str, int]:
        text = "".join(self.pending)
        self.pending = []
        return text, self.start

    def feed(self, line: str) -> list[tuple[str, int]]:
        self.lineno += 1
        out: list[tuple[str, int]] = []
        if self.pending:
            s = scan("".join(self.pending))
            significant = line.strip() and not line.lstrip().startswith("#")
            if (not s.open and s.opens_block and not s.decorator and significant
                    and not line[0].isspace() and not _continues_block(line)):
                out.append(self._flush())
        if not self.pending:
            if not line.strip() or line.lstrip().startswith("#"):
                return out
            if line.startswith(":"):
                out.append((line.rstrip("\n"), self.lineno))
                return out
            self.start = self.lineno
        self.pending.append(line if line.endswith("\n") else line + "\n")
        s = scan("".join(self.pending))
        if not s.open and not s.opens_block and not s.decorator:
            out.append(self._flush())
        return out

    def finish(self) -> list[tuple[str, int]]:
        return [self._flush()] if self.pending else []


def _continues_block(line: str) -> bool:
    word = re.match(r"[A-Za-z_]\w*", line)
    return word is not None and word.group(0) in BLOCK_CONTINUERS


def run_script(lines: Iterable[str], session: Session) -> int:
    """Run piped input; exit status 1 when any input ended in an error."""
    reader = ScriptReader()
    try:
        for line in lines:
            for text, first in reader.feed(line):
                if not session.handle(text, first):
                    return 1 if session.failures else 0
        for text, first in reader.finish():
            if not session.handle(text, first):
                break
    except KeyboardInterrupt:
        return 130
    return 1 if session.failures else 0


# -- history ------------------------------------------------------------------------------------

def history_path() -> Path:
    """`$APDSL_HISTORY`, else `$XDG_DATA_HOME/apdsl/history` (`~/.local/share/...`)."""
    env = os.environ.get("APDSL_HISTORY")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return Path(base) / "apdsl" / "history"


def _history(err: Any) -> Any:
    """Persistent history when its file can be opened for appending; otherwise a warning and
    history for this session only (a folder, an unwritable path: the REPL still starts)."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    path = history_path()
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "it is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
        return FileHistory(str(path))
    except OSError as e:
        print(f"apdsl: warning: history not saved: cannot use {path}: {e.strerror or e}"
              " (set APDSL_HISTORY to a file)", file=err)
        return InMemoryHistory()


# -- completion ---------------------------------------------------------------------------------

_MEMBER = re.compile(r"\.(\w*)$")
_WORD = re.compile(r"[A-Za-z_]\w*$")
_NKI_PREFIXES = ("nl", "nisa", "nki.language", "nki.isa")
# tensor methods that return a view: their call keeps a chain completable
VIEW_METHODS = frozenset({"ap", "broadcast", "expand_dim", "flatten_dims", "indirect",
                          "permute", "rearrange", "reinterpret_cast", "reshape", "reshape_dim",
                          "select", "slice", "squeeze_dim", "vector_select", "view"})
_TENSOR = object()  # "some tensor": the static type of a view-method chain


def receiver(text: str) -> list[str] | None:
    """The chain before a member access, read backwards without evaluating anything:
    `x = t[0:4].slice(1, 0, 2)` gives ["t", "[]", "slice", "()"]; None when it is not a
    chain of names, calls and subscripts (`3`, `(a + b)`)."""
    parts: list[str] = []
    i = len(text)
    while i > 0:
        ch = text[i - 1]
        if ch in ")]":
            j = _opening(text, i - 1)
            if j is None:
                return None
            parts.append("()" if ch == ")" else "[]")
            i = j
            continue
        m = _WORD.search(text, 0, i)
        if m is None or (m.start() > 0 and text[m.start() - 1].isdigit()):
            return None
        parts.append(m.group(0))
        i = m.start()
        if i > 0 and text[i - 1] == ".":
            i -= 1
            continue
        break
    if not parts or parts[-1] in ("()", "[]"):
        return None
    return list(reversed(parts))


def _opening(text: str, close: int) -> int | None:
    """Index of the bracket matching text[close] (strings ignored: a rough scan suffices)."""
    depth = 0
    for k in range(close, -1, -1):
        if text[k] in ")]}":
            depth += 1
        elif text[k] in "([{":
            depth -= 1
            if depth == 0:
                return k
    return None


class ApkCompleter:
    """Names in scope, builtins, keywords, dtypes and buffers; after `NAME.` the attributes of
    what NAME is bound to (a tensor's methods and attributes, also after a chain of view
    methods and subscripts); after `:` the commands."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # the prompt_toolkit Completer protocol (see `_completer`)
    def get_completions(self, document: Any, complete_event: Any) -> Iterator[Any]:
        from prompt_toolkit.completion import Completion
        for text, start, meta in self.candidates(document.current_line_before_cursor,
                                                 bool(getattr(complete_event,
                                                              "completion_requested", True))):
            yield Completion(text, start_position=start, display_meta=meta)

    def candidates(self, line: str, requested: bool = True) -> list[tuple[str, int, str]]:
        """(completion, start position relative to the cursor, kind) for the line so far."""
        stripped = line.lstrip()
        if stripped.startswith(":"):
            return self._command(stripped)
        member = _MEMBER.search(line)
        if member:
            prefix = member.group(1)
            chain = receiver(line[:member.start()])
            table = self._attributes(chain) if chain else {}
        else:
            w = _WORD.search(line)
            prefix = w.group(0) if w else ""
            if not prefix and not requested:
                return []
            if w and w.start() > 0 and line[w.start() - 1].isdigit():
                return []
            table = self._names()
        return [(name, -len(prefix), meta) for name, meta in sorted(table.items())
                if name.startswith(prefix) and name != prefix]

    def _names(self) -> dict[str, str]:
        from ..semantics.builtins import builtin_names
        from ..semantics.values import type_name
        from .lexer import BUFFERS, DTYPE_NAMES, KEYWORDS
        table: dict[str, str] = {}
        for name in builtin_names():
            table[name] = "builtin"
        for name in DTYPE_NAMES:
            table[name] = "dtype"
        for name in BUFFERS:
            table[name] = "buffer"
        for name in KEYWORDS:
            table[name] = "keyword"
        for name in ("nl", "nisa"):
            table[name] = "NKI prefix"
        for name in self.session.names():
            table[name] = _kind(type_name(self.session.lookup(name)))
        return table

    def _attributes(self, chain: list[str]) -> dict[str, str]:
        from ..semantics import values
        from ..tensor.dtypes import DType
        if ".".join(chain) in _NKI_PREFIXES:
            return {k: v for k, v in self._names().items()
                    if v in ("builtin", "dtype", "buffer")}
        value = self.session.lookup(chain[0]) if chain[0] in self.session.names() else None
        pending = None  # a view method named but not called yet
        for part in chain[1:]:
            is_tensor = value is _TENSOR or isinstance(value, Tensor)
            if part == "()":
                value = _TENSOR if pending else None
                pending = None
            elif part == "[]":
                value = _TENSOR if is_tensor and not pending else None
            elif is_tensor and part in VIEW_METHODS:
                pending, value = part, None
            elif isinstance(value, values.Module) and part in value.namespace:
                value = value.namespace[part]
            else:
                return {}
        if pending:
            return {}
        if value is _TENSOR or isinstance(value, Tensor):
            return {a: "method" if callable(getattr(Tensor, a, None)) else "attribute"
                    for a in values.TENSOR_ATTRS}
        if isinstance(value, values.Module):
            return {k: _kind(values.type_name(v)) for k, v in value.namespace.items()
                    if not k.startswith("_")}
        if isinstance(value, DType):
            return {a: "attribute" for a in values.DTYPE_ATTRS}
        import numpy as np
        if isinstance(value, np.ndarray):
            return {a: "host" for a in values.HOST_ATTRS}
        return {}

    def _command(self, stripped: str) -> list[tuple[str, int, str]]:
        word, space, arg = stripped.partition(" ")
        if not space:
            names = sorted(set(COMMANDS) | set(ALIASES))
            return [(c, -len(word), "command") for c in names
                    if c.startswith(word) and c != word]
        word = ALIASES.get(word, word)
        arg = arg.lstrip()
        if word == ":load":
            return _paths(arg)
        if word in (":show", ":lower") and _WORD.fullmatch(arg or "x"):
            from ..semantics.values import Function
            out = []
            for name in self.session.names():
                v = self.session.lookup(name)
                ok = isinstance(v, Tensor) or (word == ":lower" and isinstance(v, Function)
                                               and v.is_kernel)
                if ok and name.startswith(arg) and name != arg:
                    out.append((name, -len(arg), "kernel" if not isinstance(v, Tensor)
                                else "tensor"))
            return out
        return []


def _kind(type_text: str) -> str:
    return type_text.removeprefix("an ").removeprefix("a ")


def _paths(arg: str) -> list[tuple[str, int, str]]:
    folder, _, stem = arg.rpartition("/")
    base = Path(folder or ".")
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    out = []
    for p in entries:
        if not p.name.startswith(stem) or p.name.startswith("."):
            continue
        if p.is_dir():
            out.append((p.name + "/", -len(stem), "folder"))
        elif p.suffix == ".apk":
            out.append((p.name, -len(stem), "file"))
    return out


# The completer must be a prompt_toolkit Completer; subclass lazily so importing this module
# (for scripted use and tests) does not import prompt_toolkit.
def _completer(session: Session) -> Any:
    from prompt_toolkit.completion import Completer

    class _Completer(ApkCompleter, Completer):
        pass

    return _Completer(session)


# -- colours of the input as you type ------------------------------------------------------------

# Pygments' default style is made for a white page (names #19177c, drawn #000087 by a 256-colour
# terminal: unreadable on black).  These are mid-tone colours of the xterm 256-colour palette
# itself (so no terminal rounds them to something darker), each with a WCAG contrast of at
# least 3 against black and against white; names, operators and punctuation keep the terminal's
# own foreground, readable whatever its background.  Only these rules apply: the default
# Pygments style is left out (`include_default_pygments_style=False`).
INPUT_STYLE: dict[str, str] = {
    "pygments.comment": "italic #878787",
    "pygments.keyword": "#af5fd7",
    "pygments.keyword.type": "#008787",
    "pygments.name.builtin": "#5f87d7",
    "pygments.name.function": "#5f8700",
    "pygments.name.variable": "bold",
    "pygments.name.constant": "#af8700",
    "pygments.name.class": "#d75f87",
    "pygments.name.namespace": "#878787",
    "pygments.punctuation.marker": "#af8700",
    "pygments.literal.string": "#af5f5f",
    "pygments.literal.string.escape": "bold #af5f5f",
    "pygments.literal.number": "#0087af",
}


def input_style() -> Any:
    """The prompt_toolkit style of the REPL's input highlighting (`INPUT_STYLE`)."""
    from prompt_toolkit.styles import Style
    return Style.from_dict(INPUT_STYLE)


# -- the interactive prompt ---------------------------------------------------------------------

def _bindings(completer: ApkCompleter) -> Any:
    from prompt_toolkit.key_binding import KeyBindings
    kb = KeyBindings()

    @kb.add("enter", eager=True)
    def _enter(event: Any) -> None:
        buf = event.current_buffer
        state = buf.complete_state
        if state is not None and state.current_completion is not None:
            buf.apply_completion(state.current_completion)
            return
        if buf.document.is_cursor_at_the_end:
            indent = continuation(buf.text)
            if indent is None:
                # a blank line ends a block; it is not part of the input
                buf.text = buf.text.rstrip()
                buf.validate_and_handle()
                return
        else:
            indent = _indent(buf.document.current_line)
        buf.insert_text("\n" + indent)

    @kb.add("tab", eager=True)
    def _tab(event: Any) -> None:
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if not before.strip():
            buf.insert_text(INDENT)
            return
        if buf.complete_state is not None:
            buf.complete_next()
            return
        found = completer.candidates(before, True)
        if not found:
            return
        start = found[0][1]  # every candidate replaces the same word
        common = os.path.commonprefix([text for text, _, _ in found])
        if len(found) == 1 or len(common) > -start:
            buf.delete_before_cursor(-start)
            buf.insert_text(common)
            return
        buf.start_completion(select_first=False)

    return kb


def make_prompt(session: Session, *, input: Any = None, output: Any = None,
                history: Any = None) -> Any:
    """The prompt_toolkit session of the REPL (input/output overridable for tests)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.lexers import PygmentsLexer

    from .lexer import ApkLexer
    completer = _completer(session)
    return PromptSession(
        PROMPT, multiline=True, prompt_continuation=CONTINUATION,
        lexer=PygmentsLexer(ApkLexer), style=input_style(), include_default_pygments_style=False,
        completer=completer, complete_while_typing=False,
        key_bindings=_bindings(completer), history=history if history is not None
        else _history(session.err), auto_suggest=AutoSuggestFromHistory(),
        enable_history_search=False, input=input, output=output)


def run_interactive(session: Session, *, input: Any = None, output: Any = None,
                    history: Any = None, banner: bool = True) -> int:
    from ..version import __version__
    session.interactive = True
    prompt = make_prompt(session, input=input, output=output, history=history)
    if banner:
        print(f"apdsl {__version__} repl: .apk statements, :help for commands, Ctrl-D to "
              "leave", file=session.out)
    while True:
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        try:
            if not session.handle(text):
                break
        except KeyboardInterrupt:
            print("interrupted", file=session.err)
    return 0
