"""`apdsl show FILE NAME [-i ...] [--svg OUT.svg] [--steps] [--rows A:B] [--cols C:D] [--zoom]`:
draw which storage elements a view touches.

The program's top-level statements run in a fresh namespace; NAME is looked up there and drawn
as a `Picture`.  `KERNEL.NAME` names a view bound inside a kernel: the kernel then runs to the
end (on `-i` inputs or seeded ones) while its frame records every binding of NAME, and the last
view bound to it is drawn, even if the block that declared its storage has ended since.
`--rows`/`--cols` draw a window of the storage grid, `--zoom` the window around what the view
touches: a small view of a large tile is then drawn element by element, not as blocks.  With `--steps`, the chain of view operations that made NAME
(`t -> slice -> permute -> rearrange`) is re-evaluated prefix by prefix and every intermediate
view is drawn under its source text; names the chain starts from are followed back to their own
assignments, down to a declaration.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass  # Bindings: mutable state, not a value
from typing import TYPE_CHECKING, Any

from .. import records
from ..errors import ApdslError, ApdslNameError, ApdslTypeError, Span
from ..syntax import ast
from ..tensor.view import Tensor
from .picture import Picture
from .plumbing import (
    Exit,
    apply_target,
    as_given,
    check_outputs,
    ended,
    fail,
    internal_error,
    launch_of,
    load_program,
    report,
    usage,
)

if TYPE_CHECKING:
    from ..semantics.interpreter import Interpreter

__all__ = ["command", "Step", "chain_steps", "pictures_text", "write_svg", "source_text",
           "named_view"]

COMMAND_LINE = "<command line>"


@records.record
class Step:
    """One step of a view chain: its title (source text) and the view it gives."""

    title: str
    tensor: Tensor


def command(args: Any) -> int:
    """Entry point of `apdsl show` (argparse args: file, name, svg, steps, target)."""
    try:
        return _command(args)
    except Exit as e:
        from .arguments import build_parser
        return ended(e, build_parser(["show"]).commands["show"])


def _command(args: Any) -> int:
    from ..runtime.core.trace import collect_warnings
    check_outputs(args)
    apply_target(getattr(args, "target", None))
    program = load_program(args.file, getattr(args, "target", None))
    kernel, name = _split_name(program, args)
    inputs = _kernel_inputs(program, args, kernel)
    launch = launch_of(args, program)
    if launch.pop("ranks", None):
        raise usage("show draws one rank's tensors: leave out --ranks (run, check, lower and "
                    "profile take it)")
    if args.file.endswith(".py"):
        return _draw_python(program, kernel, name, inputs, args, launch)
    interp = program.interpreter(out=io.StringIO())  # drawing only: the program's prints go
    namespace: dict[str, Any] = {}
    with interp.machine.active(), collect_warnings() as warnings:
        try:
            interp.exec_module(program.module, namespace)
            bindings = _run_watching(namespace, kernel, name, inputs, interp,
                                     **launch) if kernel \
                else None
        except ApdslError as e:
            raise fail([e], {**interp.sources, program.file: program.source},
                       args.file) from None
        except Exception as e:  # noqa: BLE001 - never a traceback for the user
            raise internal_error(e) from None
        report(list(warnings), interp.sources)
        try:
            if bindings is not None:
                steps = [bindings.step(program.module, interp)]
            else:
                value = lookup(namespace, name, interp)
                if getattr(args, "steps", False):
                    steps = chain_steps(program.module, name, interp, namespace)
                else:
                    steps = [Step(_title(program.module, name), value)]
            pictures = [_framed(Picture.of(s.tensor, s.title), args) for s in steps]
        except Exit:
            raise
        except ApdslError as e:
            raise fail([e], interp.sources) from None
        except Exception as e:  # noqa: BLE001
            raise internal_error(e) from None
    return _emit(pictures, args, interp.sources)


def named_view(program: Any, kernel: str | None, name: str,
               inputs: dict[str, Any] | None = None, grid: tuple[int, ...] = ()) -> Step:
    """The view `apdsl show FILE [KERNEL.]NAME` draws, titled by the source that made it (the
    editor's hover asks the same question, and also of a top-level view bound before a later
    statement fails): an `ApdslError` when NAME is not a view there."""
    if program.file.endswith(".py"):
        from ..nki.show import bound_view
        return Step(f"{kernel}.{name}" if kernel else name,
                    bound_view(program, kernel, name, inputs or {}, grid))
    from ..runtime.core.trace import collect_warnings
    interp = program.interpreter(out=io.StringIO())
    namespace: dict[str, Any] = {}
    with interp.machine.active(), collect_warnings():
        try:
            interp.exec_module(program.module, namespace)
        except ApdslError:  # a view bound before the top level stops is still that view
            if kernel or not isinstance(namespace.get(name), Tensor):
                raise
        if kernel:
            return _run_watching(namespace, kernel, name, inputs or {}, interp,
                                 grid).step(program.module, interp)
        return Step(_title(program.module, name), lookup(namespace, name, interp))


def _emit(pictures: list[Picture], args: Any, sources: dict[str, str]) -> int:
    """Print the pictures, or write them to `--svg`."""
    if getattr(args, "svg", None):
        try:
            write_svg(pictures, args.svg)
        except ApdslError as e:
            raise fail([e], sources) from None
        print(f"wrote {args.svg}")
        return 0
    _print_pictures(pictures)
    return 0


def _draw_python(program: Any, kernel: str | None, name: str, inputs: dict[str, Any],
                 args: Any, launch: dict[str, Any]) -> int:
    """An NKI Python file's view (`apdsl.nki.show`), drawn as an `.apk` one is."""
    from ..nki.show import bound_view
    from ..semantics.program import UsageError
    from .plumbing import usage
    if getattr(args, "steps", False):
        raise usage("--steps follows the view chains of .apk programs; name a view of a .py "
                    "file as NAME or KERNEL.NAME")
    sources = {program.file: program.source}
    try:
        tensor = bound_view(program, kernel, name, inputs, **launch)
        title = f"{kernel}.{name}" if kernel else name
        pictures = [_framed(Picture.of(tensor, title), args)]
    except UsageError as e:
        raise usage(str(e)) from None
    except ApdslError as e:
        shown = e if e.span is not None else e.replace(facts={**e.facts, "file": COMMAND_LINE})
        raise fail(as_given([shown], args), {**e.sources, **sources}, args.file) from None
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        raise internal_error(e) from None
    return _emit(pictures, args, sources)


def _split_name(program: Any, args: Any) -> tuple[str | None, str]:
    """(KERNEL, NAME) of `KERNEL.NAME`, or (None, NAME); a KERNEL that is not one is a
    command-line mistake (exit 2), as for `run`."""
    from .plumbing import usage
    kernel, dot, name = args.name.partition(".")
    if not dot:
        if getattr(args, "inputs", None):
            raise usage("-i gives a kernel's inputs: name a view inside it as KERNEL.NAME")
        return None, args.name
    kernels = [k.name for k in program.kernels()]
    if kernel not in kernels or not name.isidentifier():
        from difflib import get_close_matches
        close = get_close_matches(kernel, kernels, n=1)
        hint = (f"; did you mean '{close[0]}.{name}'?" if close else
                f"; kernels: {', '.join(kernels)}" if kernels else "; it has no kernel")
        raise usage(f"show {args.name}: {program.file} has no kernel '{kernel}' (NAME is a "
                    f"top-level name or KERNEL.NAME){hint}")
    if getattr(args, "steps", False):
        raise usage("--steps follows top-level view chains; KERNEL.NAME draws the last view "
                    "bound to NAME")
    return kernel, name


def _kernel_inputs(program: Any, args: Any, kernel: str | None) -> dict[str, Any]:
    if kernel is None:
        return {}
    from .plumbing import read_inputs
    args.kernel = kernel
    return read_inputs(args, program)


class _Watched(dict):
    """A kernel frame's variables that remember every value bound to one name."""

    def __init__(self, base: dict[str, Any], name: str, record: Bindings) -> None:
        super().__init__(base)
        self._name, self._record = name, record
        for k, v in base.items():
            record.saw(k, v)

    def __setitem__(self, key: str, value: Any) -> None:
        self._record.saw(key, value)
        super().__setitem__(key, value)


@dataclass
class Bindings:
    """What a kernel bound while it ran: the values of NAME, and every name bound to a view."""

    kernel: str
    name: str
    values: list[Any]
    views: set[str]

    def saw(self, key: str, value: Any) -> None:
        if isinstance(value, Tensor):
            self.views.add(key)
        if key == self.name:
            self.values.append(value)

    def step(self, module: ast.Module, interp: Interpreter) -> Step:
        """The last view bound to NAME, titled by the source that made it."""
        shown = f"{self.kernel}.{self.name}"
        views = [v for v in self.values if isinstance(v, Tensor)]
        if not views:
            if self.values:
                from ..semantics.values import type_name
                kinds = sorted({type_name(v) for v in self.values})
                err: ApdslError = ApdslTypeError(
                    f"'{shown}' is bound to {' and '.join(kinds)}, never to a tensor view",
                    code="APK110", name=self.name, file=COMMAND_LINE,
                    help="show draws tensors and views (declarations, slices, rearranges, "
                    ".ap patterns)")
            else:
                from difflib import get_close_matches
                pool = sorted(self.views)
                close = get_close_matches(self.name, pool, n=3)
                err = ApdslNameError(
                    f"unknown name '{shown}': kernel {self.kernel} never binds '{self.name}'",
                    code="APK101", name=self.name, file=COMMAND_LINE,
                    help=(f"did you mean {' or '.join(repr(f'{self.kernel}.{c}') for c in close)}?"
                          if close else f"views bound in {self.kernel}: "
                          + ", ".join(pool[:12]) if pool else
                          f"kernel {self.kernel} binds no tensor view"))
            raise err
        view = views[-1]
        span = interp.origins.get(view)
        text = source_text(module, _Spanned(span)) if span is not None and \
            span.file == module.file else ""
        return Step(f"{shown} = {text}" if text else shown, view)


@records.record
class _Spanned:
    span: Span


def _run_watching(namespace: dict[str, Any], kernel: str, name: str, inputs: dict[str, Any],
                  interp: Interpreter, grid: tuple[int, ...] = ()) -> Bindings:
    """Run KERNEL to the end, its own frame (not its helpers') recording NAME's bindings."""
    from dataclasses import replace

    from ..semantics.program import call_kernel
    fn = namespace[kernel]
    record = Bindings(kernel, name, [], set())
    body = fn.body

    def watched(frame: Any) -> Any:
        frame.vars = _Watched(frame.vars, name, record)
        return body(frame)

    call_kernel(replace(fn, body=watched), inputs, interp, namespace, grid)
    return record


def _framed(pic: Picture, args: Any) -> Picture:
    """The window of the grid the command line asks for (`--rows`, `--cols`, `--zoom`)."""
    from .picture_text import MAX_COLS, MAX_ROWS
    rows, cols = getattr(args, "rows", None), getattr(args, "cols", None)
    try:
        if getattr(args, "zoom", False):
            pic = pic.zoomed()
        if rows or cols:
            pic = pic.window(rows, cols)
    except ValueError as e:
        from .plumbing import usage
        raise usage(f"--rows/--cols: {e}") from None
    if not (rows or cols or getattr(args, "zoom", False)) and \
            pic.cells(MAX_ROWS, MAX_COLS).summarised:
        geo = pic.zoomed().geometry
        if geo.windowed and geo.rows <= MAX_ROWS and geo.cols <= MAX_COLS:
            pic = records.replace(pic, notes=(*pic.notes, f"--zoom draws the {geo.rows} x {geo.cols} "
                                      "touched region element by element"))
    return pic


def _print_pictures(pictures: list[Picture]) -> None:
    from .diagnostics import use_color
    from .picture_text import render
    if use_color(sys.stdout):
        from rich.console import Console
        console = Console(highlight=False, soft_wrap=True)
        for i, pic in enumerate(pictures):
            if i:
                console.print()
            console.print(render(pic, color=True))
        return
    sys.stdout.write(pictures_text(pictures) + "\n")


def pictures_text(pictures: list[Picture]) -> str:
    """The plain-text pictures, separated by a blank line."""
    from .picture_text import render
    return "\n\n".join(render(p, color=False) for p in pictures)


def write_svg(pictures: list[Picture], path: str) -> None:
    """Write the SVG document by the file rules of SPEC section 15 (atomic for a regular
    file, so a reader never sees half a picture)."""
    from ..runtime.core.files import write_text
    from .picture_svg import render
    write_text(path, render(pictures))


# -- looking NAME up ------------------------------------------------------------------------------

def lookup(namespace: dict[str, Any], name: str, interp: Interpreter | None = None) -> Tensor:
    """The tensor bound to `name` at the top level, or an error naming close matches."""
    if name not in namespace and interp is not None and name in interp.builtins:
        err = ApdslTypeError(f"'{name}' is a builtin, not a tensor view", code="APK110",
                             name=name, file=COMMAND_LINE,
                             help="name a tensor or view the program defines")
        raise err
    if name not in namespace:
        from difflib import get_close_matches
        pool = sorted(k for k, v in namespace.items() if isinstance(v, Tensor))
        close = get_close_matches(name, pool, n=3)
        kernels = _kernel_names(namespace)
        inside = (f"; a view inside a kernel is KERNEL.NAME ({kernels[0]}.{name})"
                  if kernels else "")
        err = ApdslNameError(
            f"unknown name '{name}': the top level of the program does not define it",
            code="APK101", name=name, file=COMMAND_LINE,
            help=(f"did you mean {' or '.join(map(repr, close))}?{inside}" if close else
                  f"views defined at the top level: {', '.join(pool[:12])}{inside}" if pool
                  else f"the top level defines no view{inside}"))
        raise err
    value = namespace[name]
    if not isinstance(value, Tensor):
        from ..semantics.values import type_name
        is_kernel = getattr(value, "is_kernel", False)
        err = ApdslTypeError(f"'{name}' is {'kernel ' + name if is_kernel else type_name(value)}"
                             ", not a tensor view", code="APK110", name=name,
                             file=COMMAND_LINE,
                             help=f"{name}.NAME draws a view bound inside the kernel" if
                             is_kernel else "show draws tensors and views (declarations, "
                             "slices, rearranges, .ap patterns)")
        raise err
    return value


def _kernel_names(namespace: dict[str, Any]) -> list[str]:
    return sorted(k for k, v in namespace.items() if getattr(v, "is_kernel", False))


# -- view chains --------------------------------------------------------------------------------

def source_text(module: ast.Module, node: Any) -> str:
    """The source text of a node, on one line (whitespace runs collapsed)."""
    span = node.span
    lines = module.source.split("\n")
    if span.line < 1 or span.line > len(lines):
        return ""
    if span.line == span.end_line:
        text = lines[span.line - 1][span.column - 1:span.end_column - 1]
    else:
        parts = [lines[span.line - 1][span.column - 1:]]
        parts += lines[span.line:span.end_line - 1]
        if span.end_line <= len(lines):
            parts.append(lines[span.end_line - 1][:span.end_column - 1])
        text = " ".join(p.strip() for p in parts)
    return " ".join(text.split())


def _definition(module: ast.Module, name: str, before: int) -> tuple[int, Any] | None:
    """The last top-level statement before index `before` that binds `name` by a declaration or
    a plain `name = ...` assignment."""
    for i in range(min(before, len(module.body)) - 1, -1, -1):
        s = module.body[i]
        if isinstance(s, ast.Decl) and s.name == name:
            return i, s
        if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                             for t in s.targets):
            return i, s
    return None


def _title(module: ast.Module, name: str) -> str:
    found = _definition(module, name, len(module.body))
    if found is None:
        return name
    _, stmt = found
    if isinstance(stmt, ast.Decl):
        return source_text(module, stmt)
    return f"{name} = {source_text(module, stmt.value)}"


def _prefixes(expr: Any) -> list[Any]:
    """The method-call / subscript chain of `expr`, base first: `t.slice(..)[0].permute(..)`
    gives [t, t.slice(..), t.slice(..)[0], t.slice(..)[0].permute(..)]."""
    chain = [expr]
    node = expr
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
        chain.append(node)
    return list(reversed(chain))


def chain_steps(module: ast.Module, name: str, interp: Interpreter,
                namespace: dict[str, Any]) -> list[Step]:
    """Every view of the chain that made `name`, from its declaration to `name` itself."""
    from ..semantics.interpreter import Frame
    overlay: dict[str, Any] = {}  # names bound to their value at the point of the chain
    frame = Frame(overlay, namespace)
    steps: list[Step] = []

    def follow(var: str, before: int, depth: int) -> None:
        found = _definition(module, var, before)
        if found is None or depth > 64:
            value = namespace.get(var)
            if isinstance(value, Tensor):
                steps.append(Step(var, value))
                overlay[var] = value
            return
        index, stmt = found
        if isinstance(stmt, ast.Decl):
            value = namespace.get(var)
            if isinstance(value, Tensor):
                steps.append(Step(source_text(module, stmt), value))
                overlay[var] = value
            return
        prefixes = _prefixes(stmt.value)
        base = prefixes[0]
        value = None
        if isinstance(base, ast.Name) and (len(prefixes) > 1 or base.id != var):
            follow(base.id, index, depth + 1)
            prefixes = prefixes[1:]
            value = overlay.get(base.id)
        final = _definition(module, var, len(module.body)) == found
        for k, node in enumerate(prefixes):
            if k == 0 and not isinstance(node, ast.Name) and len(prefixes) == 1 and final:
                # `x = ndarray(...)`: the program's own tensor, not a second allocation
                value = namespace.get(var)
            else:
                try:
                    value = interp.compile_expr(node)(frame)
                except ApdslError as e:
                    raise e.with_span(node.span) from None
            if not isinstance(value, Tensor):
                continue
            text = source_text(module, node)
            if k == len(prefixes) - 1:
                text = f"{var} = {text}"
            steps.append(Step(text, value))
        overlay[var] = value

    follow(name, len(module.body), 0)
    final = namespace[name]
    if not steps or steps[-1].tensor is not final and not _same_view(steps[-1].tensor, final):
        # the last binding was not a plain top-level chain (a loop, an import ...): draw what
        # the program left in NAME after the steps that could be followed
        steps.append(Step(name, final))
    return steps


def _same_view(a: Tensor, b: Tensor) -> bool:
    return a.storage is b.storage and a.layout == b.layout and a.dtype == b.dtype and \
        a.dynamic == b.dynamic


