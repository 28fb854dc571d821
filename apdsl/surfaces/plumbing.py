"""The plumbing every command shares (`show` and the REPL use it too): exit statuses, reporting
diagnostics, `--target`, loading the program, `-i` inputs and the `lower` table."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import ApdslError


class Exit(Exception):
    """Ends a command with an exit status; what the user needs to know is already printed,
    but for a usage error's `message`, which `ended` prints after the command's usage."""

    def __init__(self, status: int, message: str | None = None) -> None:
        self.status = status
        self.message = message


def usage(message: str) -> Exit:
    """A mistake in the command line (exit 2), found after parsing it."""
    return Exit(2, message)


def ended(e: Exit, parser: Any = None) -> int:
    """The exit status of a command `e` ended; a usage error is told after the usage of the
    command (`parser`, SPEC section 2)."""
    if e.message is not None:
        if parser is not None:
            parser.print_usage(sys.stderr)
        print(f"apdsl: error: {e.message}", file=sys.stderr)
    return e.status


def report(errors: list[ApdslError], sources: dict[str, str]) -> None:
    """Render diagnostics to stderr; stdlib files that spans point into are read as needed."""
    if not errors:
        return
    from .diagnostics import render, use_color, width_for
    color = use_color(sys.stderr)
    width = width_for(sys.stderr)
    sources = with_module_sources(sources, errors)
    for err in errors:
        text = render(err, sources, color=color, width=width)
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


def headed(errors: list[ApdslError], file: str | None) -> list[ApdslError]:
    """The errors as reported: one without a span is headed by `file` (a new error value with
    that fact, unless it names a file of its own)."""
    if file is None:
        return list(errors)
    return [e if e.span is not None else e.with_facts(file=file) for e in errors]


def fail(errors: list[ApdslError], sources: dict[str, str], file: str | None = None) -> Exit:
    """Report errors (an error without a span is headed by `file`) and exit with status 1."""
    report(headed(errors, file), sources)
    explain(errors)
    return Exit(1)


def explain(errors: list[ApdslError]) -> None:
    """The last line of a command's report: `apdsl explain CODE` for the errors' codes."""
    from .diagnostics import explain_hint
    hint = explain_hint(errors)
    if hint is not None:
        print(hint, file=sys.stderr)


def finish(errors: list[ApdslError], sources: dict[str, str], file: str,
           as_json: bool) -> Exit:
    """End a command on diagnostics (`diagnose`, then the `apdsl explain` line): its Exit."""
    status = diagnose(errors, sources, file, as_json)
    if not as_json:
        explain(errors)
    return Exit(status)


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


def open_program(file: str, source: str | None = None) -> Any:
    """An `.apk` program, or an NKI (or pyasc) Python file (`.py`, SPEC sections 12 and 18)
    run by apdsl.nki (apdsl.asc).  `source`: the file's text when it is not what the file
    holds (an editor's unsaved buffer); imports and `load` still resolve from its folder."""
    if file.endswith(".py"):
        from ..asc.program import AscProgram, is_pyasc
        from ..nki.program import PyProgram
        from ..semantics.program import read_source
        text = read_source(file) if source is None else source
        if is_pyasc(text):
            return AscProgram(file, text)
        return PyProgram(file, text)
    from ..semantics.program import Program
    if source is None:
        return Program.from_path(file)
    return Program(source, file, os.path.dirname(file) or ".")


def load_program(file: str, target: str | None = None) -> Any:
    """Parse FILE; with `target` (the --target given), also check it is of the program's
    family."""
    try:
        program = open_program(file)
    except ApdslError as e:
        raise fail([e], {}, file) from None
    check_target_family(program, target)
    return program


def launch_of(args: argparse.Namespace, program: Any = None) -> dict[str, Any]:
    """`--grid N` as the keyword `program.run` takes (checked like `kernel[N]`: an Ascend
    kernel's N is its AI cores); `--ranks N` past one rank as `ranks=N` for an NKI Python
    file (a group of ranks, SPEC 16), APK170 for any other program."""
    ranks = getattr(args, "ranks", None)
    launch: dict[str, Any] = {}
    if ranks is not None and ranks > 1:
        if not getattr(program, "RANKS", False):
            from ..errors import ApdslRuntimeError
            raise finish([ApdslRuntimeError(
                f"--ranks {ranks}: a group of ranks runs NKI Python kernels (@nki.jit in a .py "
                f"file); {args.file} is not one", code="APK170", ranks=ranks,
                help="leave out --ranks (or give --ranks 1); --grid N launches N cores")],
                {}, "<command line>", getattr(args, "json", False) and args.command == "check")
        launch["ranks"] = ranks
    n = getattr(args, "grid", None)
    if n is None:
        return launch
    from ..nki.kernel import launch_grid
    try:
        kernel = getattr(args, "kernel", None)
        if getattr(program, "is_ascend", None) is not None and program.is_ascend(kernel):
            from ..semantics.spmd import check_ascend_grid
            return {**launch, "grid": check_ascend_grid(n, kernel or "kernel")}
        from ..nki.locate import imports_legacy
        file = str(args.file)  # (a legacy-API file's --grid N is N programs, as kernel[N])
        legacy = file.endswith(".py") and imports_legacy(os.path.abspath(file))
        return {**launch, "grid": launch_grid(n, kernel or "kernel", legacy)}
    except ApdslError as e:
        raise usage(f"--grid {n}: {e.message}") from None


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


def diagnose(errors: list[ApdslError], sources: dict[str, str], file: str,
              as_json: bool) -> int:
    """Diagnostics as JSON lines on stdout (`--json`) or rendered on stderr; the exit status
    they make (1 when one is an error)."""
    errors = headed(errors, file)
    if as_json:
        import json
        for obj in json_objects(errors, file):
            print(json.dumps(obj))
    else:
        report(errors, sources)
    return 1 if any(e.severity == "error" for e in errors) else 0


def json_objects(errors: list[ApdslError], file: str) -> list[dict[str, Any]]:
    """The diagnostics as `check --json` prints them (SPEC section 7), one object each; an
    error without a span is headed by `file` (the editor's language server sends the same)."""
    from .diagnostics import to_json
    out = []
    for e in headed(errors, file):
        obj = to_json(e)
        if obj.get("file") is None:
            obj["file"] = file
        out.append(obj)
    return out


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in pairs:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise usage(f"-i expects NAME=PATH.npy, got '{item}'")
        if name in out:
            raise usage(f"-i {name} given twice")
        out[name] = path
    return out


# The options that name a file a command writes (`run -o`, `profile --trace/--svg`, `show --svg`).
OUTPUTS = (("output", "-o"), ("trace", "--trace"), ("svg", "--svg"))


def check_outputs(args: argparse.Namespace) -> None:
    """Nothing a command reads is lost to what it writes: an empty output name, or an output
    that is the program or an `-i` input (compared by real path, symlinks and hard links
    included) or another output of the same command, is a usage error, before anything runs."""
    reads = [(f"the program {args.file}", args.file)] + [
        (f"the input -i {name}={path}", path)
        for name, path in parse_inputs(getattr(args, "inputs", [])).items()]
    written: list[tuple[str, str]] = []
    for attr, flag in OUTPUTS:
        path = getattr(args, attr, None)
        if path is None:
            continue
        if not path.strip():
            raise usage(f"{flag} needs a file name")
        for what, other in [*reads, *((f"{f} {o}", o) for f, o in written)]:
            if _same_file(path, other):
                raise usage(f"{flag} {path} would replace {what}; write to another file")
        written.append((flag, path))


def _same_file(a: str, b: str) -> bool:
    import os
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)  # hard links to one file
    except OSError:
        return False  # one of them does not exist (yet): not the same file


def as_given(errors: list[ApdslError], args: argparse.Namespace) -> list[ApdslError]:
    """The errors about an `-i` input (an `input` fact naming one) as a command-line user
    needs them (SPEC section 2): the message names the `-i` argument, and a dtype to cast to
    (a `cast` fact) becomes a command that converts the file."""
    paths = parse_inputs(getattr(args, "inputs", []))
    out = []
    for e in errors:
        name = e.facts.get("input")
        path = paths.get(name) if isinstance(name, str) else None
        if path is None:
            out.append(e)
            continue
        changes = {"message": f"-i {name}={path}: {e.message}"}
        cast = e.facts.get("cast")
        if isinstance(cast, str):
            from pathlib import Path
            new = str(Path(path).with_name(f"{Path(path).stem}_{cast}.npy"))
            changes["help"] = (f"convert the file to {cast}: python -c \"import numpy as np; "
                               f"np.save({new!r}, np.load({path!r}).astype(np.{cast}))\", "
                               f"then pass -i {name}={new}")
        out.append(e.replace(**changes))
    return out


def read_inputs(args: argparse.Namespace, program: Any, as_json: bool = False,
            header_only: bool = False) -> dict[str, Any]:
    """The `-i` arrays, each naming a parameter of the selected kernel (else exit 2); an
    unreadable file is a diagnostic (a JSON line with `as_json`), exit 1.  `header_only`:
    (shape, dtype) pairs, the data left unread."""
    paths = parse_inputs(getattr(args, "inputs", []))
    if not paths:  # nothing to match to a kernel (`check` of a file of several kernels)
        return {}
    from ..runtime.core.files import read_npy
    from ..semantics.program import UsageError
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
            inputs[name] = read_npy(path, header_only=header_only, regular_only=True)
            if header_only and isinstance(inputs[name], tuple) and inputs[name][0] == ():
                # a scalar (a pyasc kernel's length parameter) is read: check needs its value
                inputs[name] = read_npy(path, regular_only=True)
        except ApdslError as e:
            raise finish([e], {}, path, as_json) from None
    return inputs


def format_lowered(records: list[Any]) -> str:
    """The human table of `apdsl lower`: one block per executed instruction."""
    import json
    lines: list[str] = []
    for rec in records:
        for obj in rec.to_json():
            label = f" {obj['name']}" if obj.get("name") else ""
            piece = f"  piece {obj['piece'][0] + 1}/{obj['piece'][1]}" if obj.get("piece") else ""
            core = f"{obj['core']}, " if obj.get("core") else ""
            pipe = f"  [{core}pipe {obj['pipe']}]" if obj.get("pipe") else ""
            hints = "".join(f"  {k}={v}" for k, v in obj.get("hints", {}).items())
            if obj.get("arguments"):  # the non-tensor operands, before the hints
                from ..runtime.core.arguments import text
                hints = "".join(f"  {k}={text(v)}" for k, v in obj["arguments"].items()) + hints
            call = obj["op"]
            if obj.get("event") is not None:  # an Ascend event: its arguments, no operands
                call += "(" + ", ".join(json.dumps(a) for a in obj["event"]) + ")"
            lines.append(f"{obj['file']}:{obj['line']}  {call}{label}{piece}{pipe}{hints}")
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


def execute(args: argparse.Namespace, trace: bool, out: Any = None,
             before_error: Any = None) -> tuple[Any, Any]:
    """Run the program (its prints to `out`, default stdout).  A runtime error is reported and
    exits 1; with `trace`, `before_error(trace)` first gets what executed before it.  The
    commands that run a program (run, lower, profile) share it."""
    from ..semantics.program import UsageError
    check_outputs(args)
    apply_target(args.target)
    program = load_program(args.file, args.target)
    inputs = read_inputs(args, program)
    launch = launch_of(args, program)
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
        raise fail(as_given([e], args), sources, args.file) from None
    except Exception as e:  # noqa: BLE001
        raise internal_error(e) from None
    if result.warnings:
        report(result.warnings, {**result.interpreter.sources, program.file: program.source})
    return program, result
