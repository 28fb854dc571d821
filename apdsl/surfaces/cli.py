"""The `apdsl` command line (SPEC section 2).

Exit status: 0 success (warnings allowed); 1 an error in a file's content or existence; 2 the
command line itself is wrong.  Diagnostics go to stderr, results to stdout.  Heavy modules are
imported inside the commands so that `apdsl check` starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ApdslError, ApdslIOError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"apdsl: error: {message}", file=sys.stderr)
        sys.exit(2)


def program_options(sp: argparse.ArgumentParser) -> None:
    """The options of every command that runs a program (run, check, lower, show, repl): the
    one place they are declared.  (SPEC section 2: --target, --sync, --max-steps, --max-memory.)
    `option_settings` turns them into the `apdsl.options` values `main` holds for the whole
    command."""
    sp.add_argument("--target", metavar="T", help="trn1, trn2 (default for NKI buffers), "
                    "trn3, ascend-a2 (default for Ascend buffers); it must be of the family "
                    "of the program's buffers")
    sp.add_argument("--max-memory", metavar="BYTES", type=byte_count,
                    help="bound on live tensor storage plus its bookkeeping, all buffers "
                    "(suffix K, M, G or T: powers of 1024; default half the physical memory)")
    sp.add_argument("--sync", choices=("on", "off"),
                    help="check Ascend pipe synchronisation inside kernels (on, the default) "
                    "or run as if every instruction waited for all earlier ones (off)")
    sp.add_argument("--max-steps", metavar="N", type=step_count,
                    help="stop a program after N steps: statements, tests, loop iterations, "
                    "calls (default 100,000,000)")


def step_count(text: str) -> int:
    """`--max-steps` values: a positive integer (`_` separators allowed)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def byte_count(text: str) -> int:
    """`--max-memory` values: `1000000`, `512M`, `4G`, `4GiB` (K, M, G, T are powers of 1024)."""
    import re
    m = re.fullmatch(r"\s*(\d+)\s*(?:([KMGT])(?:i?B)?|B)?\s*", text, re.IGNORECASE)
    if m is None:
        raise argparse.ArgumentTypeError(f"expected a number of bytes such as 4000000000 or "
                                         f"4G, got '{text}'")
    value = int(m.group(1)) << (10 * " KMGT".index((m.group(2) or " ").upper()))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got '{text}'")
    return value


def option_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `apdsl.options` values a command line asks for (options it does not give keep
    their defaults)."""
    settings: dict[str, Any] = {}
    if getattr(args, "no_init_check", False):
        settings["init_check"] = False
    if getattr(args, "strict_padding", False):
        settings["strict_padding"] = True
    if getattr(args, "max_memory", None) is not None:
        settings["max_memory"] = args.max_memory
    if getattr(args, "sync", None) == "off":
        settings["sync"] = False
    if getattr(args, "max_steps", None) is not None:
        settings["max_steps"] = args.max_steps
    return settings


def grid_range(text: str) -> tuple[int, int]:
    """`--rows`/`--cols` values: `A:B` (B excluded), `A:` or `:B`; A defaults to 0."""
    start, colon, end = text.partition(":")
    try:
        a = int(start) if start.strip() else 0
        b = int(end) if end.strip() else 1 << 62
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B (rows or columns A to B-1), got "
                                         f"'{text}'") from None
    if not colon or a < 0 or b <= a:
        raise argparse.ArgumentTypeError(f"expected A:B with 0 <= A < B, got '{text}'")
    return a, b


def inputs_option(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument("-i", dest="inputs", metavar="NAME=PATH.npy", action="append", default=[],
                    help=f"a kernel input (repeatable); {what}")


def grid_option(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--grid", metavar="N", type=step_count,
                    help="launch a .py kernel on N logical NeuronCores, as kernel[N](...) "
                    "(1 or 2; trn1: 1)")


def launch_of(args: argparse.Namespace) -> dict[str, Any]:
    """`--grid N` as the keyword `program.run` takes (checked like `kernel[N]`)."""
    n = getattr(args, "grid", None)
    if n is None:
        return {}
    if not args.file.endswith(".py"):
        raise usage("--grid launches NKI Python kernels (.py files); an .apk kernel runs "
                    "as one program")
    from ..nki.kernel import launch_grid
    try:
        return {"grid": launch_grid(n, args.kernel or "kernel")}
    except ApdslError as e:
        raise usage(f"--grid {n}: {e.message}") from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="apdsl", description="Check, run and lower .apk kernels: NKI access "
                "patterns and Ascend fractal formats, executed on NumPy.")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("run", help="run the top level, then a kernel")
    r.add_argument("file", metavar="FILE")
    r.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(r, "missing inputs get seeded data")
    r.add_argument("-o", dest="output", metavar="OUT.npy", help="write the result (atomically)")
    grid_option(r)
    program_options(r)
    r.add_argument("--no-init-check", action="store_true",
                   help="read unwritten memory as 0 instead of failing")
    r.add_argument("--strict-padding", action="store_true",
                   help="mmad reads K in whole fractals, as hardware does")

    c = sub.add_parser("check", help="parse and check without moving data")
    c.add_argument("file", metavar="FILE")
    c.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(c, "its shape, dtype and values are used to check KERNEL")
    c.add_argument("--json", action="store_true", help="one JSON object per diagnostic")
    program_options(c)

    lw = sub.add_parser("lower", help="print every executed instruction's access patterns")
    lw.add_argument("file", metavar="FILE")
    lw.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(lw, "missing inputs get seeded data")
    lw.add_argument("--json", action="store_true", help="one JSON object per instruction")
    grid_option(lw)
    program_options(lw)

    from ..profile.command import add_parser as add_profile
    add_profile(sub, program_options, inputs_option)

    sh = sub.add_parser("show", help="draw which storage elements a view touches")
    sh.add_argument("file", metavar="FILE")
    sh.add_argument("name", metavar="NAME", help="a top-level view, or KERNEL.NAME: the last "
                    "view bound to NAME while KERNEL runs")
    inputs_option(sh, "with KERNEL.NAME; missing inputs get seeded data")
    sh.add_argument("--svg", metavar="OUT.svg", help="write the picture as an SVG file instead")
    sh.add_argument("--steps", action="store_true", help="draw every step of the view chain")
    sh.add_argument("--rows", metavar="A:B", type=grid_range,
                    help="draw only storage-grid rows A to B-1 (partitions on chip)")
    sh.add_argument("--cols", metavar="C:D", type=grid_range,
                    help="draw only storage-grid columns C to D-1")
    sh.add_argument("--zoom", action="store_true",
                    help="draw only the rows and columns the view touches")
    program_options(sh)

    program_options(sub.add_parser("repl", help="interactive session"))

    e = sub.add_parser("explain", help="explain an error code")
    e.add_argument("code", metavar="CODE", nargs="?")
    e.add_argument("--list", action="store_true", help="list every code")
    return p


def _version() -> str:
    from .. import __version__
    return f"apdsl {__version__}"


class Exit(Exception):
    """Ends a command with an exit status; what the user needs to know is already printed."""

    def __init__(self, status: int) -> None:
        self.status = status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .. import gcpause
    gcpause.FREEZE = True
    if args.command is None:
        build_parser().print_help()
        return 2
    from ..runtime.options import options
    try:
        with options(**option_settings(args)):
            return COMMANDS[args.command](args)
    except Exit as e:
        return e.status
    except RecursionError as e:  # outside any statement: still coded (APK126)
        return internal_error(e).status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError as e:  # outside any statement (writing -o, drawing): still coded
        from ..tensor.budget import out_of_memory
        return fail([out_of_memory(f"apdsl {args.command} {getattr(args, 'file', '')}".strip(),
                                   e)], {}, getattr(args, "file", None)).status


# -- plumbing shared by the commands (show and the REPL use it too) --------------------------------

def usage(message: str) -> Exit:
    print(f"apdsl: error: {message}", file=sys.stderr)
    return Exit(2)


def report(errors: list[ApdslError], sources: dict[str, str]) -> None:
    """Render diagnostics to stderr; stdlib files that spans point into are read as needed."""
    if not errors:
        return
    from .diagnostics import render, use_color
    color = use_color(sys.stderr)
    sources = with_module_sources(sources, errors)
    for err in errors:
        text = render(err, sources, color=color)
        sys.stderr.write(text if text.endswith("\n") else text + "\n")


def with_module_sources(sources: dict[str, str], errors: list[ApdslError]) -> dict[str, str]:
    from ..resources import stdlib_path
    out = dict(sources)
    for e in errors:
        for span in [e.span, *[lab.span for lab in e.labels]]:
            if span is None or span.file in out:
                continue
            path = span.file
            if path.startswith("<stdlib>/"):
                path = str(stdlib_path() / path[len("<stdlib>/"):])
            try:
                with open(path, encoding="utf-8") as f:
                    out[span.file] = f.read()
            except (OSError, UnicodeDecodeError):
                pass
    return out


def fail(errors: list[ApdslError], sources: dict[str, str], file: str | None = None) -> Exit:
    """Report errors (an error without a span is headed by `file`) and exit with status 1."""
    for err in errors:
        if err.span is None and file is not None:
            err.facts.setdefault("file", file)
    report(errors, sources)
    return Exit(1)


def apply_target(name: str | None) -> None:
    """Set `--target` (an unknown target is a usage error)."""
    if name:
        from ..tensor.targets import get_target, set_target
        try:
            get_target(name)
        except ApdslError as e:
            raise usage(f"--target: {e.message}" + (f" ({e.help})" if e.help else "")) from None
        set_target(name)


def check_target_family(program: Any, name: str | None) -> None:
    """SPEC section 2: a buffer's name says its family and `--target` picks the generation, so
    a target of a family none of the program's buffers belongs to would be ignored: a usage
    error.  (A program that names no buffer at all gives nothing to compare with.)"""
    if not name:
        return
    from ..tensor.targets import TARGETS, family, get_target
    try:
        fam = get_target(name).family
    except ApdslError:
        return  # apply_target reports it
    buffers = program.buffers()
    families = {family(b) for b in buffers}
    if families and fam not in families:
        label = {"nki": "NKI", "ascend": "Ascend"}
        other = sorted(families)[0]
        raise usage(f"--target {name} is an {label[fam]} target, but {program.file} uses only "
                    f"{label[other]} buffers ({', '.join(sorted(buffers))}); {label[other]} "
                    "targets: " + ", ".join(t for t, v in TARGETS.items() if v.family == other))


def open_program(file: str) -> Any:
    """An `.apk` program, or an NKI Python file (`.py`, SPEC section 12) run by apdsl.nki."""
    if file.endswith(".py"):
        from ..nki.program import PyProgram
        return PyProgram.from_path(file)
    from ..semantics.program import Program
    return Program.from_path(file)


def load_program(file: str, target: str | None = None) -> Any:
    """Parse FILE; with `target` (the --target given), also check it is of the program's
    family."""
    try:
        program = open_program(file)
    except ApdslError as e:
        raise fail([e], {}, file) from None
    check_target_family(program, target)
    return program


def internal_error(e: Exception) -> Exit:
    """A failure that is not the user's mistake; MemoryError and RecursionError are limits of
    the machine and become their coded diagnostics (SPEC section 15)."""
    import traceback
    if isinstance(e, (MemoryError, RecursionError)):
        from ..semantics.limits import nested_too_deeply
        from ..tensor.budget import out_of_memory
        limit = (out_of_memory("the command needs more memory than the machine could give")
                 if isinstance(e, MemoryError) else nested_too_deeply())
        print(f"apdsl: error[{limit.code}]: {limit.message}\n  = help: {limit.help}",
              file=sys.stderr)
        return Exit(1)
    print(f"apdsl: internal error: {type(e).__name__}: {e}", file=sys.stderr)
    if os.environ.get("APDSL_DEBUG"):
        traceback.print_exc()
    else:
        print("this is a bug in apdsl, not in your program; set APDSL_DEBUG=1 for details",
              file=sys.stderr)
    return Exit(1)


# -- commands ---------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    from ..semantics.program import UsageError
    apply_target(args.target)
    try:
        program = open_program(args.file)
    except ApdslError as e:
        return _diagnose([e], {}, args.file, args.json)
    check_target_family(program, args.target)
    # a Python kernel's check reads only the -i headers (SPEC section 12: no input values)
    inputs = _inputs(args, program, args.json, header_only=args.file.endswith(".py"))
    try:
        errors = program.check(kernel=args.kernel, inputs=inputs)
    except UsageError as e:
        raise usage(str(e)) from None
    except ApdslError as e:
        errors = [e]
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        raise internal_error(e) from None
    status = _diagnose(errors, {program.file: program.source}, args.file, args.json)
    if args.json:
        return status
    real = [e for e in errors if e.severity == "error"]
    n_k = len(program.kernels())
    if real:
        print(f"{args.file}: {len(real)} error{'s' if len(real) != 1 else ''}", file=sys.stderr)
        return 1
    print(f"{args.file}: ok ({n_k} kernel{'s' if n_k != 1 else ''}"
          f"{f', {len(errors)} warnings' if errors else ''})")
    return 0


def _diagnose(errors: list[ApdslError], sources: dict[str, str], file: str,
              as_json: bool) -> int:
    """Diagnostics as JSON lines on stdout (`--json`) or rendered on stderr; the exit status
    they make (1 when one is an error)."""
    for e in errors:
        if e.span is None:
            e.facts.setdefault("file", file)
    if as_json:
        from .diagnostics import to_json
        for e in errors:
            obj = to_json(e)
            if obj.get("file") is None:
                obj["file"] = file
            print(json.dumps(obj))
    else:
        report(errors, sources)
    return 1 if any(e.severity == "error" for e in errors) else 0


def _parse_inputs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in pairs:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise usage(f"-i expects NAME=PATH.npy, got '{item}'")
        if name in out:
            raise usage(f"-i {name} given twice")
        out[name] = path
    return out


def _inputs(args: argparse.Namespace, program: Any, as_json: bool = False,
            header_only: bool = False) -> dict[str, Any]:
    """The `-i` arrays, each naming a parameter of the selected kernel (else exit 2); an
    unreadable file is a diagnostic (a JSON line with `as_json`), exit 1.  `header_only`:
    (shape, dtype) pairs, the data left unread."""
    from ..runtime.files import read_npy
    from ..semantics.program import UsageError
    paths = _parse_inputs(getattr(args, "inputs", []))
    try:
        kernel = program.select_kernel(args.kernel)
        if paths and kernel is None:
            raise UsageError(f"-i given but {program.file} has no kernel")
        params = program.kernel_params(kernel or "")
        for name in paths:
            if name not in params:
                raise UsageError(f"-i {name}: no kernel parameter is called '{name}' "
                                 f"(parameters: {', '.join(params) or 'none'})")
    except UsageError as e:
        raise usage(str(e)) from None
    inputs = {}
    for name, path in paths.items():
        try:
            inputs[name] = read_npy(path, header_only=header_only)
        except ApdslError as e:
            raise Exit(_diagnose([e], {}, path, as_json)) from None
    return inputs


def _execute(args: argparse.Namespace, trace: bool, out: Any = None,
             before_error: Any = None) -> tuple[Any, Any]:
    """Run the program (its prints to `out`, default stdout).  A runtime error is reported and
    exits 1; with `trace`, `before_error(trace)` first gets what executed before it."""
    from ..semantics.program import UsageError
    apply_target(args.target)
    program = load_program(args.file, args.target)
    inputs = _inputs(args, program)
    launch = launch_of(args)
    result = None
    try:  # (the options of the command line are set by `main`)
        result = program.run(args.kernel, inputs, out=out, trace=trace, **launch)
    except UsageError as e:
        raise usage(str(e)) from None
    except ApdslError as e:
        partial = getattr(e, "trace", None)
        if partial is not None and before_error is not None:
            before_error(partial)
        sources = {**getattr(e, "sources", {}), program.file: program.source}
        raise fail([e], sources, args.file) from None
    except Exception as e:  # noqa: BLE001
        raise internal_error(e) from None
    if result.warnings:
        report(result.warnings, {**result.interpreter.sources, program.file: program.source})
    return program, result


def cmd_run(args: argparse.Namespace) -> int:
    program, result = _execute(args, trace=False)
    value = result.value
    if args.output:
        if value is None:
            raise fail([ApdslIOError("-o: the program has no kernel result to write",
                                     code="APK607")], {}, args.file)
        _write_output(value, args.output, program)
    if result.kernel is not None:
        try:
            print(_summary(value, result.kernel))
        except ApdslError as e:  # the result holds unwritten elements: reading it is the bug
            raise fail([e], {program.file: program.source}, args.file) from None
    return 0


def _write_output(value: Any, path: str, program: Any) -> None:
    """`-o`: a tensor (or host array) as `.npy`; a tuple of them as `.npz` (r0, r1, ...)."""
    from ..runtime.files import write_npy, write_npz
    try:
        if isinstance(value, tuple):
            if not path.endswith(".npz"):
                raise ApdslIOError(
                    f"-o {path}: the kernel returns a tuple of {len(value)} values", code="APK612",
                    help=f"write it as an archive: -o {Path(path).with_suffix('.npz').name} "
                    "(arrays r0, r1, ...)")
            write_npz(path, [_result_array(v, path) for v in value])
        elif path.endswith(".npz"):
            write_npz(path, [_result_array(value, path)])
        else:
            write_npy(path, _result_array(value, path))
    except ApdslError as e:
        raise fail([e], {}, path) from None


def _result_array(value: Any, path: str) -> Any:
    """The logical contents of one result, as NumPy can reload them; anything but a tensor or
    a host array of numbers is APK611."""
    import numpy as np

    from ..runtime.files import widen_for_npy
    from ..tensor.view import Tensor
    if isinstance(value, Tensor):
        return widen_for_npy(value.numpy())
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        return widen_for_npy(value)
    from ..semantics.values import type_name
    raise ApdslIOError(f"-o {path}: the kernel returns {type_name(value)}, not a tensor",
                       code="APK611", help="-o writes tensors (or a tuple of them, as .npz); "
                       "return the tensor to write")


def _summary(value: Any, kernel: str) -> str:
    import numpy as np

    from ..tensor.view import Tensor
    if isinstance(value, Tensor):
        head = (f"{kernel} -> {value.dtype}{list(value.shape)} @ {value.buffer}"
                + (f" as {value.format}" if value.format != "ND" else ""))
        data = value.numpy()
        arr = np.asarray(data.astype(np.float32) if data.dtype.kind not in "iub" else data)
        with np.printoptions(threshold=24, edgeitems=3, precision=4, suppress=True):
            body = np.array2string(arr, prefix="  ")
        return f"{head}\n  {body}"
    from ..semantics.values import show
    return f"{kernel} -> {show(value)}"


def cmd_lower(args: argparse.Namespace) -> int:
    def emit(records: list[Any]) -> None:
        if args.json:
            for rec in records:
                for obj in rec.to_json():
                    print(json.dumps(obj))
        else:
            print(format_lowered(records))
        sys.stdout.flush()  # what ran comes before a diagnostic on stderr

    # a runtime error: print what executed before it, then the diagnostic
    _, result = _execute(args, trace=True, out=sys.stderr if args.json else None,
                         before_error=lambda trace: emit(trace.before_error()))
    emit(result.trace.records if result.trace is not None else [])
    return 0


def format_lowered(records: list[Any]) -> str:
    """The human table of `apdsl lower`: one block per executed instruction."""
    lines: list[str] = []
    for rec in records:
        for obj in rec.to_json():
            label = f" {obj['name']}" if obj.get("name") else ""
            piece = f"  piece {obj['piece'][0] + 1}/{obj['piece'][1]}" if obj.get("piece") else ""
            pipe = f"  [pipe {obj['pipe']}]" if obj.get("pipe") else ""
            lines.append(f"{obj['file']}:{obj['line']}  {obj['op']}{label}{piece}{pipe}")
            width = max((len(r) for r in obj["operands"]), default=3)
            for role, op in obj["operands"].items():
                fmt = f" as {op['format']}" if op.get("format") not in (None, "ND") else ""
                dyn = ""
                if op.get("scalar_offset") is not None:
                    dyn = f"  + {op['scalar_offset']} * {op['indirect_scale']}"
                elif op.get("vector_offset") is not None:
                    dyn = f"  + {op['vector_offset']}[p] * {op['indirect_scale']}"
                lines.append(f"    {role:<{width}}  {op['tensor']:<10} {op['buffer']:<10} "
                             f"{op['dtype']:<9}{fmt} offset={op['offset']:<6} "
                             f"{op['pattern']}{dyn}")
    if not lines:
        return "(no instructions executed)"
    return "\n".join(lines)


def cmd_profile(args: argparse.Namespace) -> int:
    from ..profile.command import command
    return command(args)


def cmd_show(args: argparse.Namespace) -> int:
    from . import show
    return show.command(args)


def cmd_repl(args: argparse.Namespace) -> int:
    from . import repl
    apply_target(args.target)
    return repl.main()


def cmd_explain(args: argparse.Namespace) -> int:
    from ..catalogue import all_entries, lookup
    from .diagnostics import render_explain, render_list, use_color
    color = use_color(sys.stdout)
    if args.list:
        print(render_list(all_entries(), color=color))
        return 0
    if not args.code:
        raise usage("explain needs a CODE (for example APK203) or --list")
    entry = lookup(args.code)
    if entry is None:
        from difflib import get_close_matches
        close = get_close_matches(args.code.upper(), list(all_entries()), n=3)
        raise usage(f"unknown error code '{args.code}'"
                     + (f"; did you mean {', '.join(close)}?" if close else
                        "; `apdsl explain --list` shows every code"))
    print(render_explain(entry, color=color))
    return 0


COMMANDS = {"run": cmd_run, "check": cmd_check, "lower": cmd_lower, "profile": cmd_profile,
            "show": cmd_show,
            "repl": cmd_repl, "explain": cmd_explain}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
