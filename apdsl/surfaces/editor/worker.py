"""One job of the language server, in a process of its own:
`python -m apdsl.surfaces.editor.worker`, one JSON request on standard input, one JSON answer
on standard output.

    {"op": "check", "file": PATH, "source": TEXT, "options": {...}}
        -> {"diagnostics": [the objects `apdsl check --json PATH` prints]}
    {"op": "view", "file": PATH, "source": TEXT, "options": {...}, "line": L, "column": C}
        -> {"view": {...}} | {"none": REASON}

`options` are `apdsl.options` settings (`max_steps`, `max_memory`, `max_time`).  The file is
read from `source` (the editor's buffer, saved or not); imports and `load` resolve from its
folder as for the command line.  What the program prints goes to standard error, which the
server does not read.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ...errors import ApdslError, Span
from ..plumbing import json_objects, open_program


class Unchecked(ApdslError):
    """Part of a file the editor cannot check on its own (a kernel that needs `-i` inputs,
    several Python kernels with one needing them): told as information, not an error."""

    severity = "note"
    default_code = "APK981"


def main() -> int:
    request = json.loads(sys.stdin.read() or "{}")
    answer_out = sys.stdout
    sys.stdout = sys.stderr  # a kernel file's own prints must not corrupt the answer
    answer = answer_to(request)
    answer_out.write(json.dumps(answer))
    answer_out.flush()
    return 0


def answer_to(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (never raises: a failure is a diagnostic or a reason)."""
    from ...runtime.core.options import options
    op = request.get("op")
    file, source = str(request.get("file")), str(request.get("source", ""))
    settings = {k: v for k, v in (request.get("options") or {}).items() if v is not None}
    with options(**settings):
        if op == "check":
            return {"diagnostics": json_objects(checked(file, source), file)}
        if op == "view":
            from .views import view_at
            return view_at(file, source, int(request["line"]), int(request["column"]))
    return {"none": f"unknown request {op!r}"}


def checked(file: str, source: str) -> list[ApdslError]:
    """What `apdsl check FILE` reports of the buffer; where the command line would need a
    KERNEL or `-i` inputs, each kernel that runs without them, and a note at the others."""
    from ...semantics.program import UsageError
    try:
        program = open_program(file, source)
        try:
            return program.check()
        except UsageError as e:
            return _each_kernel(program, str(e))
    except ApdslError as e:
        return [e]
    except (MemoryError, RecursionError) as e:
        from ...semantics.limits import nested_too_deeply
        from ...tensor.budget import out_of_memory
        return [out_of_memory(f"checking {file}", e) if isinstance(e, MemoryError)
                else nested_too_deeply()]
    # anything else is a bug of apdsl: the worker ends without an answer, and the server
    # tells the user so (APK982), with the exception's last line


def _each_kernel(program: Any, why: str) -> list[ApdslError]:
    """Several kernels, or one needing `-i`: `apdsl check FILE KERNEL` of each kernel, a
    Python kernel's inputs found in its file (`inputs`) when it takes parameters; a kernel
    that cannot be checked gets a note at its definition saying why."""
    names = _kernel_names(program)
    if not names:
        return [_unchecked(program, None, why)]
    found: list[ApdslError] = []
    for name in names:
        found.extend(_kernel_checked(program, name))
    unique: dict[str, ApdslError] = {}
    for e in found:  # the top level's own errors are found once per kernel checked
        unique.setdefault(json.dumps(json_objects([e], program.file)), e)
    return list(unique.values())


def _kernel_checked(program: Any, name: str) -> list[ApdslError]:
    from ...semantics.program import UsageError
    from .inputs import Missing, inputs_for
    try:
        return program.check(kernel=name)
    except UsageError as e:
        if not hasattr(program, "module"):  # a .apk kernel: its untyped parameters need -i
            return [_unchecked(program, name, str(e))]
    except ApdslError as e:
        return [e]
    got = inputs_for(program, name)
    if isinstance(got, Missing):
        params = ", ".join(_needed(program, name))
        return [_unchecked(program, name, f"nothing in the file gives its inputs ({params}): "
                           f"{got.why}")]
    try:
        return program.check(kernel=name, inputs=got.inputs, grid=got.grid)
    except UsageError as e:
        return [_unchecked(program, name, f"the inputs {got.origin} gives do not fit: {e}")]
    except ApdslError as e:
        return [e]


def _needed(program: Any, name: str) -> list[str]:
    import inspect
    sig = inspect.signature(program.kernel_function(name))
    return [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _kernel_names(program: Any) -> list[str]:
    kernels = program.kernels()
    return [getattr(k, "name", None) or k.fn.__name__ for k in kernels]


def _unchecked(program: Any, kernel: str | None, why: str) -> ApdslError:
    from .outline import outline
    where = next((d.span for d in outline(program.file, program.source).definitions
                  if d.name == kernel), None) if kernel else None
    return Unchecked(f"kernel {kernel} is not checked as you type: {why}" if kernel else why,
                     span=where or Span(program.file, 1, 1, 1, 1),
                     help="the editor checks a kernel whose inputs the file gives: a .apk "
                     "kernel's typed parameters; a Python kernel's parameters annotated "
                     "nki.typing.tensor[shape, dtype], else the first call of it in the file's "
                     "`if __name__ == \"__main__\":` block; check this one with "
                     f"`apdsl check {program.file} {kernel or 'KERNEL'} -i NAME=FILE.npy`")


if __name__ == "__main__":
    sys.exit(main())
