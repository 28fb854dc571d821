"""A REPL session: one interpreter and namespace that every input runs in.

Independent of any terminal: the front ends (`apdsl.surfaces.repl`) hand complete inputs to
`Session.handle` and the session prints results to `out` and diagnostics to `err`.  Each input
is appended to a transcript kept in `interp.sources` under the file name `<repl>` and parsed at
its own line numbers (the parser is given blank lines for the inputs before it), so a
diagnostic's span, and labels pointing into earlier inputs ("t declared here"), render exactly
as the command line renders them.  An error stops only the input it occurs in; every name bound
before it stays bound.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from ..errors import ApdslError, ApdslTypeError, Span
from ..semantics.limits import deep_stack, nested_too_deeply
from ..syntax import ast
from ..tensor.view import Tensor

__all__ = ["Session", "FILE", "COMMANDS", "tensor_panel"]

FILE = "<repl>"
COMMANDS = {  # name -> (argument, what it does)
    ":help": ("", "this help"),
    ":lower": ("NAME", "the lowered access pattern(s) of a view, or the instructions a kernel "
               "runs (on seeded inputs)"),
    ":show": ("NAME", "draw which storage elements a view touches, and in which order"),
    ":load": ("FILE", "run an .apk file into the session"),
    ":reset": ("", "forget every name and start a fresh interpreter"),
    ":quit": ("", "leave (Ctrl-D works too)"),
}
ALIASES = {":q": ":quit", ":exit": ":quit", ":h": ":help", ":?": ":help"}

HELP = """\
Type .apk statements: declarations (t: f32[128, 64] @ sbuf), assignments, view chains,
instructions, kernels.  An expression's value is printed; a tensor prints as a panel.
A line ending in ':' opens a block; an empty line ends it.  Tab completes names, keywords,
dtypes, buffers, and a tensor's methods after '.'.  Ctrl-C cancels the input being typed.

Commands:
"""


class Session:
    """See the module docstring.  `failures` counts inputs that ended in an error."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *,
                 color: bool = False, err_color: bool | None = None,
                 width: int | None = None, base_dir: str = ".") -> None:
        from rich.console import Console
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.color = color
        self.err_color = color if err_color is None else err_color
        self.base_dir = base_dir
        self.console = Console(file=self.out, force_terminal=color, no_color=not color,
                               color_system="auto" if color else None, highlight=False,
                               width=width if width is not None else (None if color else 100))
        self.interactive = False  # acknowledge commands (scripted sessions print results only)
        self.transcript = ""
        self.lines = 0  # lines in the transcript
        self.failures = 0
        self._stack = ExitStack()
        self._start()

    # -- lifetime ---------------------------------------------------------------------------
    def _start(self) -> None:
        from ..semantics.interpreter import Interpreter
        self.interp = Interpreter(out=self.out, base_dir=self.base_dir)
        # the session's own machine: its tensors, target and options, until reset
        self._stack.enter_context(self.interp.machine.active())
        self.interp.sources[FILE] = self.transcript
        self.namespace: dict[str, Any] = {}

    def reset(self) -> None:
        """Forget every name; tensors' memory is released with its accounting."""
        self._stack.close()
        self._stack = ExitStack()
        self._start()

    def close(self) -> None:
        self._stack.close()

    # -- queries (completion) -----------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self.namespace)

    def lookup(self, name: str) -> Any:
        """The value bound to `name` in the session (a builtin when not bound), or None."""
        if name in self.namespace:
            return self.namespace[name]
        return self.interp.builtins.get(name)

    # -- inputs -------------------------------------------------------------------------------
    def handle(self, text: str, line: int | None = None) -> bool:
        """Run one complete input (statements or a `:command`).  `line` is where the input
        starts in a script being piped in, so diagnostics use the script's line numbers.
        Returns False when the session should end."""
        stripped = text.strip()
        if not stripped:
            return True
        try:
            if stripped.startswith(":"):
                return self.command(stripped, line)
            self.run_source(text, line)
            return True
        finally:  # results and diagnostics interleave in order on one terminal
            self.out.flush()
            self.err.flush()

    def _record(self, text: str, line: int | None = None) -> int:
        """Append an input to the transcript; returns its first line number."""
        if line is not None and line > self.lines + 1:
            gap = line - self.lines - 1
            self.transcript += "\n" * gap
            self.lines += gap
        first = self.lines + 1
        body = text.rstrip("\n") + "\n"
        self.transcript += body
        self.lines += body.count("\n")
        self.interp.sources[FILE] = self.transcript
        return first

    def _parse(self, text: str, line: int | None = None) -> ast.Module | None:
        from ..syntax.parser import parse
        first = self._record(text, line)
        try:
            return parse("\n" * (first - 1) + text.rstrip("\n") + "\n", FILE)
        except ApdslError as e:
            self.report(e)
            return None

    def run_source(self, text: str, line: int | None = None) -> bool:
        """Parse and run statements; print expression values.  True when no error occurred."""
        from ..runtime.core.trace import collect_warnings
        module = self._parse(text, line)
        if module is None:
            return False
        self.interp.budget.reset()  # each input has the whole step budget
        with collect_warnings() as warnings:
            ok = self._guard(lambda: self._run_body(module))
        for w in warnings:
            self.report(w, count=False)
        return ok

    def _run_body(self, module: ast.Module) -> None:
        for stmt in module.body:
            if isinstance(stmt, ast.ExprStmt):
                value = self._evaluate(stmt.expr, stmt.span)
                if value is not None:
                    self.print_value(value, _snippet(self.transcript, stmt.expr))
            else:
                one = ast.Module((stmt,), FILE, self.transcript, stmt.span)
                self.interp.exec_module(one, self.namespace)
                self.interp.sources[FILE] = self.transcript

    def _evaluate(self, expr: Any, span: Span | None) -> Any:
        """The value of an expression, evaluated as the interpreter evaluates an assignment's
        right-hand side (same error locations), without binding any session name."""
        from ..semantics.interpreter import Frame
        target = "_"
        node = ast.Assign((ast.Name(target, span),), expr, span)
        scratch: dict[str, Any] = {}
        with deep_stack():
            self.interp.compile_stmt(node)(Frame(scratch, self.namespace))
        return scratch[target]

    def _guard(self, action: Any) -> bool:
        """Run `action`, turning every failure into a diagnostic; the session survives."""
        try:
            action()
            return True
        except ApdslError as e:
            self.report(e)
        except KeyboardInterrupt:
            self.failures += 1
            print("interrupted", file=self.err)
        except RecursionError:
            self.report(nested_too_deeply())
        except Exception as e:  # noqa: BLE001 - an apdsl bug must not end the session
            self.failures += 1
            print(f"apdsl: internal error: {type(e).__name__}: {e}", file=self.err)
            print("this is a bug in apdsl, not in your input; the session continues",
                  file=self.err)
        return False

    # -- output -------------------------------------------------------------------------------
    def report(self, err: ApdslError, count: bool = True) -> None:
        from .diagnostics import render
        if count and err.severity == "error":
            self.failures += 1
        sources = dict(self.interp.sources)
        sources[FILE] = self.transcript
        text = render(err, sources, color=self.err_color)
        self.err.write(text if text.endswith("\n") else text + "\n")
        self.err.flush()

    def print_value(self, value: Any, title: str = "") -> None:
        if isinstance(value, Tensor):
            self.console.print(tensor_panel(value, title))
            return
        from ..semantics.values import show
        print(show(value), file=self.out)
        self.out.flush()

    # -- commands -----------------------------------------------------------------------------
    def command(self, text: str, line: int | None = None) -> bool:
        word, _, rest = text.partition(" ")
        word = ALIASES.get(word, word)
        arg = rest.strip()
        if word == ":quit":
            return False
        if word == ":help":
            self._help()
        elif word == ":reset":
            self.reset()
            self._note("session reset: every name is forgotten")
        elif word == ":load":
            self._guard(lambda: self._load(arg))
        elif word in (":lower", ":show"):
            if not arg:
                self._usage(f"{word} needs a view or kernel name, e.g. {word} t")
            else:
                column = len(text) - len(rest.lstrip()) + 1
                then = self._lower if word == ":lower" else self._show
                self._with_value(text, column, then, line)
        else:
            from difflib import get_close_matches
            close = get_close_matches(word, list(COMMANDS), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            self._usage(f"unknown command {word}{hint} (:help lists the commands)")
        self.out.flush()
        return True

    def _note(self, message: str) -> None:
        if self.interactive:
            print(message, file=self.out)

    def _usage(self, message: str) -> None:
        self.failures += 1
        print(f"{FILE}: {message}", file=self.err)

    def _help(self) -> None:
        lines = [HELP]
        for name, (arg, text) in COMMANDS.items():
            lines.append(f"  {name:<7}{arg:<6}{text}\n")
        lines.append("NAME may be any expression: :show t[0:4, ::2], :lower t.rearrange(...)\n")
        self.out.write("".join(lines))

    def _with_value(self, command: str, column: int, then: Any, line: int | None) -> None:
        """Evaluate a command's argument as an expression.  The whole command line goes into
        the transcript, and the argument's spans are moved to its columns there, so errors
        point into the command as typed."""
        from ..syntax.parser import parse
        arg = command[column - 1:].strip()
        first = self._record(command, line)
        try:
            module = parse("\n" * (first - 1) + arg + "\n", FILE)
        except ApdslError as e:
            self.report(_shifted(e, first, column - 1))
            return
        if len(module.body) != 1 or not isinstance(module.body[0], ast.ExprStmt):
            self._usage(f"expected one name or expression, got '{arg}'")
            return
        stmt = module.body[0]
        holder: list[Any] = []

        def run() -> None:
            try:
                holder.append(self._evaluate(stmt.expr, stmt.span))
                then(holder[0], arg, stmt.span)
            except ApdslError as e:
                raise _shifted(e, first, column - 1) from None
        self._guard(run)

    def _lower(self, value: Any, text: str, span: Span | None) -> None:
        from ..semantics.values import Function
        if isinstance(value, Function) and value.is_kernel:
            self._lower_kernel(value)
            return
        if not isinstance(value, Tensor):
            from ..semantics.values import type_name
            raise ApdslTypeError(f":lower takes a view or a kernel; '{text}' is "
                                 f"{type_name(value)}", code="APK110", span=span)
        from ..tensor import targets
        from ..tensor.lowering import lower
        aps = lower(value, check_entries=False)
        n = len(aps)
        print(f"{text}: {n} access pattern{'s' if n != 1 else ''}", file=self.out)
        for i, ap in enumerate(aps):
            piece = f"piece {i + 1}/{n}: " if n > 1 else ""
            print(f"  {piece}{ap.describe()}", file=self.out)
        if value.onchip:
            limit = targets.target_for(value.buffer).max_free_entries
            worst = max(ap.free_entries for ap in aps)
            if worst > limit:
                print(f"  note: needs {worst} free entries; "
                      f"{targets.target_for(value.buffer).name} allows {limit}, so an "
                      "instruction would reject this view (APK304)", file=self.out)

    def _lower_kernel(self, fn: Any) -> None:
        """Run the kernel on seeded inputs with the trace on (as `apdsl lower` does)."""
        from ..runtime.core.trace import collect_warnings, tracing
        from ..semantics.program import call_kernel
        from ..tensor.machine import current
        from .plumbing import format_lowered
        with current().child().active(), collect_warnings() as warnings, tracing() as trace:
            call_kernel(fn, {}, self.interp, self.namespace)
        for w in warnings:
            self.report(w, count=False)
        print(format_lowered(trace.records), file=self.out)

    def _show(self, value: Any, text: str, span: Span | None) -> None:
        if not isinstance(value, Tensor):
            from ..semantics.values import type_name
            raise ApdslTypeError(f":show draws views; '{text}' is {type_name(value)}",
                                 code="APK110", span=span)
        from .picture import Picture
        from .picture_text import render
        drawing = render(Picture.of(value, text), color=self.color)
        if self.color:
            self.console.print(drawing, soft_wrap=True)
        else:
            print(drawing, file=self.out)

    def _load(self, arg: str) -> None:
        from ..syntax.parser import parse
        from ..syntax.source_files import read_source
        if not arg:
            self._usage(":load needs a file name, e.g. :load kernels/matmul.apk")
            return
        source = read_source(arg)
        self.interp.sources[arg] = source
        module = parse(source, arg)
        saved = self.interp.base_dir
        self.interp.base_dir = Path(arg).parent
        try:
            from ..runtime.core.trace import collect_warnings
            self.interp.budget.reset()
            with collect_warnings() as warnings:
                self.interp.exec_module(module, self.namespace)
        finally:
            self.interp.base_dir = saved
            self.interp.sources[FILE] = self.transcript
        for w in warnings:
            self.report(w, count=False)
        kernels = [s.name for s in module.body if isinstance(s, ast.Kernel)]
        self._note(f"loaded {arg}" + (f" (kernels: {', '.join(kernels)})" if kernels else ""))


def _shifted(err: ApdslError, line: int, delta: int) -> ApdslError:
    """Move the spans of `err` that lie on the command line `line` right by `delta` columns."""
    def move(span: Span | None) -> Span | None:
        if span is None or span.file != FILE or span.line != line:
            return span
        return span.shifted(column_delta=delta)
    return err.replace(span=move(err.span),
                       labels=[type(lab)(move(lab.span), lab.message) for lab in err.labels])


def _snippet(source: str, node: Any) -> str:
    span = node.span
    lines = source.split("\n")
    if span.line != span.end_line or span.line > len(lines):
        return ""
    return lines[span.line - 1][span.column - 1:span.end_column - 1]


def tensor_panel(t: Tensor, title: str = "") -> Any:
    """A rich panel describing a tensor or view."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from .picture import pattern_text
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    strides = "(" + ", ".join("nested" if s is None else str(s) for s in t.strides) + \
        ("," if len(t.strides) == 1 else "") + ")"
    rows = [("name", t.name), ("shape", str(tuple(t.shape))), ("dtype", str(t.dtype)),
            ("buffer", t.buffer), ("format", t.format), ("strides", strides),
            ("offset", str(t.offset)), ("pattern", pattern_text(t)),
            ("contiguous", "yes" if t.is_contiguous() else "no"),
            ("indirect", f"yes (index {t.dynamic.index_name})" if t.dynamic is not None
             else "no")]
    if t.coord is not None:
        rows.append(("coord", str(tuple(t.coord))))
    if t.origin_shape is not None:
        rows.append(("origin_shape", str(tuple(t.origin_shape))))
    for key, value in rows:
        grid.add_row(key, Text(value))  # Text: a pattern's brackets are not rich markup
    return Panel(grid, title=Text(title or t.name), title_align="left", expand=False)
