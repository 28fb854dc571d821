"""The `apdsl` command line (SPEC section 2).

Exit status: 0 success (warnings allowed); 1 an error in a file's content or existence; 2 the
command line itself is wrong.  Diagnostics go to stderr, results to stdout.  Heavy modules are
imported inside the commands so that `apdsl check` starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from ..errors import ApdslError, ApdslIOError
from .arguments import build_parser, option_settings, parse
from .plumbing import (
    Exit,
    apply_target,
    as_given,
    check_target_family,
    diagnose,
    ended,
    execute,
    explain,
    fail,
    finish,
    format_lowered,
    internal_error,
    launch_of,
    open_program,
    read_inputs,
    usage,
)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args, parser = parse(words)
    from .collector import tune_for_one_command
    tune_for_one_command()
    if args.command is None:
        build_parser().print_help()
        return 2
    from ..runtime.core.options import options
    try:
        with options(**option_settings(args)):
            return COMMANDS[args.command](args)
    except Exit as e:
        return ended(e, parser)
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


def console() -> NoReturn:
    """The `apdsl` program (and `python -m apdsl`): `main`, then the process ends."""
    leave(main())


def leave(status: int) -> NoReturn:
    """End the process with `status` once the output is flushed and the exit handlers ran,
    without Python's teardown of every module and object (a tenth of a cold `apdsl check`;
    nothing of it is observable: files are written and closed by then).  When flushing fails
    (a closed pipe), other threads still run, or a user's Python file ran (its module may
    hold an open file that only the teardown flushes), Python's own exit handles it as always."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - reported by the interpreter's exit, as before
        sys.exit(status)
    threading = sys.modules.get("threading")  # (no thread was started without it)
    if type(status) is not int or (threading is not None and threading.active_count() > 1) \
            or "apdsl.nki" in sys.modules:  # (a .py kernel file is run by the NKI frontend)
        sys.exit(status)
    import atexit
    atexit._run_exitfuncs()
    os._exit(status)


def cmd_check(args: argparse.Namespace) -> int:
    from ..semantics.program import UsageError
    apply_target(args.target)
    try:
        program = open_program(args.file)
    except ApdslError as e:
        return finish([e], {}, args.file, args.json).status
    check_target_family(program, args.target)
    # a Python kernel's check reads only the -i headers (SPEC section 12: no input values)
    inputs = read_inputs(args, program, args.json, header_only=args.file.endswith(".py"))
    launch = launch_of(args, program)
    try:
        errors = program.check(kernel=args.kernel, inputs=inputs, **launch)
    except UsageError as e:
        raise usage(str(e)) from None
    except ApdslError as e:
        errors = [e]
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        raise internal_error(e) from None
    errors = as_given(errors, args)
    status = diagnose(errors, {program.file: program.source}, args.file, args.json)
    if args.json:
        return status
    real = [e for e in errors if e.severity == "error"]
    n_k = len(program.kernels())
    if real:
        print(f"{args.file}: {len(real)} error{'s' if len(real) != 1 else ''}", file=sys.stderr)
        explain(real)
        return 1
    print(f"{args.file}: ok ({n_k} kernel{'s' if n_k != 1 else ''}"
          f"{f', {len(errors)} warnings' if errors else ''})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    program, result = execute(args, trace=False)
    if result.ranks is not None:
        return _run_ranks(args, program, result)
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


def _run_ranks(args: argparse.Namespace, program: Any, result: Any) -> int:
    """A run on a group of ranks: `-o` is an archive of rank0, rank1, ... (each rank's result,
    a tuple's values as rank0_0, rank0_1, ...); each rank's summary."""
    from ..runtime.core.files import write_npz
    ranks = result.ranks
    if args.output:
        if not args.output.endswith(".npz"):
            raise fail([ApdslIOError(f"-o {args.output}: a run on {len(ranks)} ranks writes one "
                                     "result per rank", code="APK612",
                                     help="write an archive: -o OUT.npz (arrays rank0, rank1, "
                                     "...)")], {}, args.output)
        named: dict[str, Any] = {}
        for r, one in enumerate(ranks):
            if isinstance(one.value, tuple):
                for i, v in enumerate(one.value):
                    named[f"rank{r}_{i}"] = _result_array(v, args.output)
            elif one.value is not None:
                named[f"rank{r}"] = _result_array(one.value, args.output)
        try:
            write_npz(args.output, list(named.values()), names=list(named))
        except ApdslError as e:
            raise fail([e], {}, args.output) from None
    for r, one in enumerate(ranks):
        try:
            print(f"rank {r}: {_summary(one.value, one.kernel)}")
        except ApdslError as e:
            raise fail([e], {program.file: program.source}, args.file) from None
    return 0


def _write_output(value: Any, path: str, program: Any) -> None:
    """`-o`: a tensor (or host array) as `.npy`; a tuple of them as `.npz` (r0, r1, ...)."""
    from pathlib import Path

    from ..runtime.core.files import write_npy, write_npz
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

    from ..runtime.core.files import widen_for_npy
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
    import json

    def emit(records: list[Any]) -> None:
        if args.json:
            for rec in records:
                for obj in rec.to_json():
                    print(json.dumps(obj))
        else:
            print(format_lowered(records))
        sys.stdout.flush()  # what ran comes before a diagnostic on stderr

    # a runtime error: print what executed before it, then the diagnostic
    _, result = execute(args, trace=True, out=sys.stderr if args.json else None,
                         before_error=lambda trace: emit(trace.before_error()))
    if result.ranks is not None:  # each rank's instructions, rank by rank
        for r, one in enumerate(result.ranks):
            if args.json:
                for rec in one.trace.records:
                    for obj in rec.to_json():
                        print(json.dumps({"rank": r, **obj}))
            else:
                print(f"== rank {r} ==")
                print(format_lowered(one.trace.records))
        return 0
    emit(result.trace.records if result.trace is not None else [])
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from .profile_command import command
    return command(args)


def cmd_show(args: argparse.Namespace) -> int:
    from . import show
    return show.command(args)


def cmd_repl(args: argparse.Namespace) -> int:
    from . import repl
    apply_target(args.target)
    return repl.main()


def cmd_explain(args: argparse.Namespace) -> int:
    from ..catalogue import all_entries, lookup, suggest
    from .diagnostics import render_explain, render_list, use_color
    color = use_color(sys.stdout)
    if args.list:
        print(render_list(all_entries(), color=color))
        return 0
    if not args.code:
        raise usage("explain needs a CODE (for example APK203) or --list")
    entry = lookup(args.code)
    if entry is None:
        close = suggest(args.code)
        raise usage(f"unknown error code '{args.code}'"
                    + ("; did you mean " + ", ".join(f"{e.code} ({e.title})" for e in close)
                       + "?" if close else "; `apdsl explain --list` shows every code"))
    print(render_explain(entry, color=color))
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from .corpus.command import corpus
    return corpus(args.dir, as_json=args.json, timeout=args.timeout, jobs=args.jobs,
                  lines=args.jsonl, only=tuple(args.kernel))


def cmd_script(args: argparse.Namespace) -> int:
    from .script import run_script
    return run_script(args.file, args.args)


def cmd_lsp(args: argparse.Namespace) -> int:
    if args.hover and not args.probe:
        raise usage("--hover needs --probe FILE")
    try:
        from .editor.server import main as serve
    except ImportError as e:  # the optional extra is not installed
        print(f"apdsl lsp needs pygls ({e.name or e} is missing): pip install 'apdsl[lsp]'",
              file=sys.stderr)
        return 1
    if args.probe is None:
        return serve()
    from ..semantics.program import read_source
    from .editor.probe import main as probe
    try:
        read_source(args.probe)  # a missing or unreadable file: its coded diagnostic
    except ApdslError as e:
        return finish([e], {}, args.probe, False).status
    return probe(args.probe, args.hover)


COMMANDS = {"run": cmd_run, "check": cmd_check, "lower": cmd_lower, "profile": cmd_profile,
            "show": cmd_show,
            "repl": cmd_repl, "explain": cmd_explain, "corpus": cmd_corpus, "script": cmd_script,
            "lsp": cmd_lsp}


if __name__ == "__main__":  # pragma: no cover
    console()
