"""The `apdsl` command line's arguments (SPEC section 2): the parser and the option types."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"apdsl: error: {message}", file=sys.stderr)
        sys.exit(2)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's formatter imports `shutil` (and its compression modules) only to ask the
        # terminal's width; `add_argument` makes one per argument
        return self.formatter_class(prog=self.prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`: $COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


def program_options(sp: argparse.ArgumentParser) -> None:
    """The options of the machine a program runs on (every command that runs one, and the
    REPL): the one place they are declared.  `option_settings` turns them into the
    `apdsl.options` values `main` holds for the whole command."""
    sp.add_argument("--target", metavar="T", help="trn1, trn2 (default for NKI buffers), "
                    "trn3, ascend-a2 (default for Ascend buffers); it must be of the family "
                    "of the program's buffers")
    init = sp.add_mutually_exclusive_group()
    init.add_argument("--no-init-check", action="store_true",
                      help="read unwritten memory as 0 instead of failing")
    init.add_argument("--strict-init", action="store_true",
                      help="reading unwritten memory is an error where it is read (by "
                      "default data computed from it is an error where it reaches a store, a "
                      "result or a host read)")
    sp.add_argument("--strict-padding", action="store_true",
                    help="mmad reads K in whole fractals, as hardware does")
    sp.add_argument("--no-mx-alternative-emax", action="store_true",
                    help="quantize_mx takes the OCP block scale, values saturating (neuronx-cc "
                    "without --enable-mx-alternative-emax, the default up to Neuron SDK 2.30); "
                    "by default the scale is twice that, as the docstring says")
    sp.add_argument("--sync", choices=("on", "off"),
                    help="check Ascend pipe synchronisation inside kernels (on, the default) "
                    "or run as if every instruction waited for all earlier ones (off)")
    sp.add_argument("--max-steps", metavar="N", type=step_count,
                    help="stop a program after N steps: statements, tests, loop iterations, "
                    "calls (default 100,000,000)")
    sp.add_argument("--max-time", metavar="SECONDS", type=seconds_count,
                    help="stop a program after SECONDS of processor time (default: 10 for "
                    "check, no limit for the commands that move data)")
    sp.add_argument("--max-memory", metavar="BYTES", type=byte_count,
                    help="bound on live tensor storage plus its bookkeeping, all buffers "
                    "(suffix K, M, G or T: powers of 1024; default half the physical memory)")


def run_options(sp: argparse.ArgumentParser) -> None:
    """The run options of SPEC section 2, taken by every command that runs a program (run,
    check, lower, profile, show): the machine's options and the launch (`--grid`, `--ranks`)."""
    program_options(sp)
    sp.add_argument("--grid", metavar="N", type=step_count,
                    help="launch the kernel on N logical NeuronCores, as kernel[N](...) "
                    "(1 or 2; trn1: 1)")
    sp.add_argument("--ranks", metavar="N", type=step_count,
                    help="run an NKI Python kernel on a group of N ranks, each its own device "
                    "meeting at the collectives (every rank gets the same -i inputs; -o OUT.npz "
                    "holds rank0, rank1, ...)")


def step_count(text: str) -> int:
    """`--max-steps` values: a positive integer (`_` separators allowed)."""
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def seconds_count(text: str) -> float:
    """`--max-time` values: a positive number of seconds (`2.5` allowed)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got '{text}'")
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
    if getattr(args, "strict_init", False):
        settings["init_check"] = "strict"
    if getattr(args, "strict_padding", False):
        settings["strict_padding"] = True
    if getattr(args, "no_mx_alternative_emax", False):
        settings["mx_alternative_emax"] = False
    if getattr(args, "max_memory", None) is not None:
        settings["max_memory"] = args.max_memory
    if getattr(args, "sync", None) == "off":
        settings["sync"] = False
    if getattr(args, "max_steps", None) is not None:
        settings["max_steps"] = args.max_steps
    if getattr(args, "max_time", None) is not None:
        settings["max_time"] = args.max_time
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


class Commands(_Parser):
    """The whole command line's parser, with each command's own parser by name (`commands`):
    a mistake found after parsing is reported with that command's usage (SPEC section 2)."""

    commands: dict[str, argparse.ArgumentParser]


def build_parser(argv: Sequence[str] | None = None) -> Commands:
    """The parser of the whole command line.  Given the `argv` it will parse, when that starts
    with a command's name, only that command's parser is made (the others' cost a tenth of a
    cold `apdsl check`): argparse hands everything after the name to that command's parser and
    consults no other, so the outcome is the same."""
    p = Commands(prog="apdsl", description="Check, run and lower .apk kernels: NKI access "
                 "patterns and Ascend fractal formats, executed on NumPy.")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    only = argv[0] if argv and argv[0] in _COMMANDS else None
    p.commands = {}
    for name, (help_text, declare) in _COMMANDS.items():
        if only is None or name == only:
            p.commands[name] = sub.add_parser(name, help=help_text)
            declare(p.commands[name])
    return p


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """The command line's arguments and the parser of its command (the whole command line's
    when it names none).  A mistake is reported with the command's usage, exit 2."""
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    own = parser.commands.get(args.command or "", parser)
    if extra:  # (argparse would report them with the top-level usage)
        own.error(f"unrecognized arguments: {' '.join(extra)}")
    return args, own


def _run(r: argparse.ArgumentParser) -> None:
    r.add_argument("file", metavar="FILE")
    r.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(r, "an .apk kernel's missing inputs get seeded data; a .py kernel needs "
                  "every input")
    r.add_argument("-o", dest="output", metavar="OUT.npy", help="write the result (atomically)")
    run_options(r)


def _check(c: argparse.ArgumentParser) -> None:
    c.add_argument("file", metavar="FILE")
    c.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(c, "its shape, dtype and values are used to check KERNEL")
    c.add_argument("--json", action="store_true", help="one JSON object per diagnostic")
    run_options(c)


def _lower(lw: argparse.ArgumentParser) -> None:
    lw.add_argument("file", metavar="FILE")
    lw.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(lw, "an .apk kernel's missing inputs get seeded data; a .py kernel needs "
                  "every input")
    lw.add_argument("--json", action="store_true", help="one JSON object per instruction")
    run_options(lw)


def _profile(pf: argparse.ArgumentParser) -> None:
    pf.add_argument("file", metavar="FILE")
    pf.add_argument("kernel", metavar="KERNEL", nargs="?")
    inputs_option(pf, "an .apk kernel's missing inputs get seeded data; a .py kernel needs "
                  "every input")
    pf.add_argument("--json", action="store_true", help="the profile as one JSON object")
    pf.add_argument("--trace", metavar="OUT.json", help="write a Chrome trace-event file "
                    "(Perfetto, chrome://tracing) of the estimated timeline (atomically)")
    pf.add_argument("--svg", metavar="OUT.svg", help="write the estimated timeline as an SVG "
                    "picture (atomically)")
    run_options(pf)


def _show(sh: argparse.ArgumentParser) -> None:
    sh.add_argument("file", metavar="FILE")
    sh.add_argument("name", metavar="NAME", help="a top-level view, or KERNEL.NAME: the last "
                    "view bound to NAME while KERNEL runs")
    inputs_option(sh, "with KERNEL.NAME; an .apk kernel's missing inputs get seeded data")
    sh.add_argument("--svg", metavar="OUT.svg", help="write the picture as an SVG file instead")
    sh.add_argument("--steps", action="store_true", help="draw every step of the view chain")
    sh.add_argument("--rows", metavar="A:B", type=grid_range,
                    help="draw only storage-grid rows A to B-1 (partitions on chip)")
    sh.add_argument("--cols", metavar="C:D", type=grid_range,
                    help="draw only storage-grid columns C to D-1")
    sh.add_argument("--zoom", action="store_true",
                    help="draw only the rows and columns the view touches")
    run_options(sh)


def _corpus(c: argparse.ArgumentParser) -> None:
    c.add_argument("dir", metavar="DIR", help="a checkout with NKI or pyasc kernels, or a folder inside one")
    shown = c.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="the table and counts as one JSON "
                       "object")
    shown.add_argument("--jsonl", action="store_true", help="each kernel's verdict as one JSON "
                       "line the moment it is measured, then the counts (a stopped run keeps "
                       "what it measured)")
    c.add_argument("--timeout", metavar="S", type=float, default=120.0,
                   help="CPU seconds each kernel may use (default 120; a worker that "
                   "waits instead is stopped after ten times as many of wall clock)")
    c.add_argument("-j", "--jobs", metavar="N", type=int, default=1,
                   help="kernels measured at once (default 1)")
    c.add_argument("-k", "--kernel", metavar="TEXT", action="append", default=[],
                   help="measure only the entry points whose FILE::NAME (as the table shows "
                   "it) contains TEXT; repeat it for several")


def _place(text: str) -> str:
    """`--hover` values: LINE:COLUMN (1-based)."""
    line, _, column = text.partition(":")
    if not (line.isdigit() and column.isdigit() and int(line) > 0 and int(column) > 0):
        raise argparse.ArgumentTypeError(f"expected LINE:COLUMN (1-based), got '{text}'")
    return text


def _lsp(s: argparse.ArgumentParser) -> None:
    s.add_argument("--probe", metavar="FILE", help="start the server and talk to it as an "
                   "editor does: print the diagnostics it sends for FILE (and --hover's)")
    s.add_argument("--hover", metavar="LINE:COLUMN", action="append", default=[], type=_place,
                   help="with --probe: hover there too (repeatable)")


def _explain(e: argparse.ArgumentParser) -> None:
    e.add_argument("code", metavar="CODE", nargs="?")
    e.add_argument("--list", action="store_true", help="list every code")


# The commands in `apdsl -h` order: (help line, declaration of their arguments).
def _script(s: argparse.ArgumentParser) -> None:
    s.add_argument("file", metavar="FILE.py")
    s.add_argument("args", metavar="ARG", nargs=argparse.REMAINDER,
                   help="the program's own arguments (its sys.argv[1:])")


_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": ("run the top level, then a kernel", _run),
    "check": ("parse and check without moving data", _check),
    "lower": ("print every executed instruction's access patterns", _lower),
    "profile": ("estimate where a kernel's time goes on the target", _profile),
    "show": ("draw which storage elements a view touches", _show),
    "repl": ("interactive session", program_options),
    "explain": ("explain an error code", _explain),
    "corpus": ("run every NKI kernel of a repository unchanged; table and counts", _corpus),
    "script": ("run a Python program unchanged, as `python FILE.py ARG...` (a launch script: "
               "nki, neuronxcc.nki, torch_xla and asc resolve to apdsl)", _script),
    "lsp": ("language server for editors (LSP over stdio; pip install 'apdsl[lsp]')", _lsp),
}


def _version() -> str:
    from ..version import __version__
    return f"apdsl {__version__}"
