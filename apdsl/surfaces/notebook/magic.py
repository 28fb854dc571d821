"""`%%apk`: a notebook cell that is an `.apk` program.

    %%apk [KERNEL] [-i NAME[=VARIABLE]]... [-o VARIABLE] [--target T] [--check | --profile]

The cell runs as `apdsl run` runs a file: its top-level statements, then KERNEL (or its only
kernel), whose inputs are NumPy arrays of the notebook (`-i A=a`: parameter A gets variable a;
`-i A`: variable A), seeded data otherwise.  What the program prints appears as the cell's
output; the kernel's result is the cell's value (a NumPy array, or a tuple of them), also
stored in VARIABLE with `-o`.  `--check` checks the cell as `apdsl check` does; `--profile`
shows the estimated timeline of `apdsl profile`.  A diagnostic is shown as the command line
renders it, as HTML, with the cell's lines and the span underlined; nothing of apdsl's own
is a Python traceback.  The cell is named `<cell>` in diagnostics and may `load`/`save` files
of the working directory.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ...errors import ApdslError, ApdslRuntimeError

__all__ = ["CELL", "cell_magic", "run_cell", "Diagnostics"]

CELL = "<cell>"


class Diagnostics:
    """Diagnostics as a notebook shows them: HTML (the source excerpt, coloured) or plain."""

    def __init__(self, errors: list[ApdslError], sources: dict[str, str]) -> None:
        self.errors = list(errors)
        self.sources = dict(sources)

    def _repr_html_(self) -> str:
        from ..diagnostics import render_html
        return "\n".join(render_html(e, self.sources) for e in self.errors)

    def __repr__(self) -> str:
        from ..diagnostics import render
        return "\n".join(render(e, self.sources, color=False) for e in self.errors)

    @property
    def codes(self) -> list[str]:
        return [e.code for e in self.errors]


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # (argparse would exit the kernel's process)
        raise _Usage(message)


def _parser() -> _Parser:
    p = _Parser(prog="%%apk", add_help=False)
    p.add_argument("kernel", nargs="?")
    p.add_argument("-i", dest="inputs", action="append", default=[], metavar="NAME[=VARIABLE]")
    p.add_argument("-o", dest="output", metavar="VARIABLE")
    p.add_argument("--target")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--check", action="store_true")
    how.add_argument("--profile", action="store_true")
    return p


def usage_error(message: str) -> ApdslError:
    return ApdslRuntimeError(message, code="APK983", file="%%apk",
                             help="%%apk [KERNEL] [-i NAME[=VARIABLE]]... [-o VARIABLE] "
                             "[--target T] [--check | --profile]")


def run_cell(line: str, cell: str, namespace: dict[str, Any],
             show: Callable[[Any], None]) -> Any:
    """Run the cell (see the module docstring): diagnostics and warnings go to `show`, the
    kernel's result is returned (None after a diagnostic, or without a kernel)."""
    try:
        args = _parser().parse_args(shlex.split(line))
        inputs = _inputs(args.inputs, namespace)
    except (_Usage, ValueError) as e:
        show(Diagnostics([usage_error(str(e))], {}))
        return None
    from ...semantics.program import Program, UsageError
    from ...tensor.targets import target
    sources = {CELL: cell}
    try:
        with target(args.target) if args.target else nullcontext():
            program = Program(cell, CELL, os.getcwd())
            if args.check:
                found = program.check(kernel=args.kernel, inputs=inputs)
                show(Diagnostics(found, sources) if found else "ok: no diagnostics")
                return None
            if args.profile:
                return _profile(program, args.kernel, inputs)
            result = program.run(args.kernel, inputs, out=sys.stdout)
    except UsageError as e:
        show(Diagnostics([usage_error(str(e))], sources))
        return None
    except ApdslError as e:
        show(Diagnostics([e], {**e.sources, **sources}))
        return None
    if result.warnings:
        show(Diagnostics(result.warnings, {**result.interpreter.sources, **sources}))
    value = _numpy(result.value)
    if args.output and value is not None:
        namespace[args.output] = value
    return value


def _inputs(items: list[str], namespace: dict[str, Any]) -> dict[str, Any]:
    inputs = {}
    for item in items:
        name, _, variable = item.partition("=")
        variable = variable or name
        if not name.isidentifier() or not variable.isidentifier():
            raise ValueError(f"-i {item}: expected NAME=VARIABLE (a kernel parameter and a "
                             "variable of the notebook)")
        if variable not in namespace:
            raise ValueError(f"-i {item}: the notebook has no variable '{variable}'")
        inputs[name] = namespace[variable]
    return inputs


def _numpy(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_numpy(v) for v in value)
    return value.numpy() if hasattr(value, "numpy") else value


def _profile(program: Any, kernel: str | None, inputs: dict[str, Any]) -> Any:
    from ...profile import profile_run
    return profile_run(program.run(kernel, inputs, out=sys.stdout, trace=True))


def cell_magic(shell: Any) -> Callable[[str, str], Any]:
    """The `%%apk` function IPython calls, reading and writing `shell`'s variables."""
    from IPython.display import display

    def apk(line: str, cell: str) -> Any:
        return run_cell(line, cell, shell.user_ns, display)

    apk.__doc__ = __doc__
    return apk
