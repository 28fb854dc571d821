"""`apdsl repl`: the interactive front end (prompt_toolkit) and the scripted one.

Both hand complete inputs to a `Session`.  Interactively, the ApkLexer highlights as you type,
Tab completes, a line ending in `:` opens a block (auto-indented) that a blank line ends, and
history persists across sessions.  With standard input not a terminal there are no prompts and
inputs are cut with file semantics: a block ends at the first line back at column 0, so a
script piped in runs as the file would, but an error does not stop the rest.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .repl_complete import ApkCompleter, prompt_completer, receiver
from .repl_input import INDENT, Scan, ScriptReader, continuation, indent_of, scan
from .session import Session

__all__ = ["main", "run_script", "run_interactive", "history_path", "make_prompt", "Scan",
           "scan", "continuation", "ScriptReader", "ApkCompleter", "receiver", "INPUT_STYLE",
           "input_style"]

PROMPT = "apk> "
CONTINUATION = "...  "


def main() -> int:
    from .diagnostics import use_color
    session = Session(color=use_color(sys.stdout), err_color=use_color(sys.stderr))
    try:
        if not sys.stdin.isatty():
            return run_script(sys.stdin, session)
        return run_interactive(session)
    finally:
        session.close()


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
            indent = indent_of(buf.document.current_line)
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
    completer = prompt_completer(session)
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
