"""A program: source -> AST -> checked program -> executed instructions -> results.

`Program` is what the command line, the REPL and the Python API drive: `check()` reports every
independent error without moving data; `run()` executes the top-level statements and then a
kernel with its inputs bound; `lower()` runs with the instruction trace on.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ApdslError, ApdslTypeError, LimitError, Span
from ..runtime.core.results import check_written
from ..syntax import ast
from ..syntax.source_files import read_source
from .kernels import is_kernel, missing_inputs, missing_message, tensor_type
from .limits import deep_stack
from .values import Function

if TYPE_CHECKING:
    from ..tensor.machine import Machine
    from .interpreter import Interpreter


class UsageError(Exception):
    """The command line itself is wrong (exit status 2): unknown kernel, `-i` naming no
    parameter, several kernels and none named."""


def path_stem(file: str) -> str:
    """`pathlib.PurePath(file).stem` (the last part of the path without its suffix), without
    importing pathlib on the start-up path."""
    seps = os.sep + (os.altsep or "")
    parts = [p for p in "".join("/" if c in seps else c for c in file).split("/")
             if p and p != "."]
    name = parts[-1] if parts else ""
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


def pick_kernel(file: str, names: list[str], name: str | None, what: str) -> str | None:
    """The kernel a command line names, or the only one there is; a usage error otherwise.
    `what` says what kind of kernel the file lacks when it has none ("@nki.jit kernel")."""
    if name is None:
        if len(names) > 1:
            raise UsageError(f"{file} has {len(names)} kernels ({', '.join(names)}); "
                             "name the one to run")
        return names[0] if names else None
    if name not in names:
        from difflib import get_close_matches
        close = get_close_matches(name, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else (
            f"; kernels: {', '.join(names)}" if names else f"; it has no {what}")
        raise UsageError(f"{file} has no kernel '{name}'{hint}")
    return name


@dataclass
class RunResult:
    value: Any
    kernel: str | None
    interpreter: Interpreter
    trace: Any = None
    warnings: list[ApdslError] = field(default_factory=list)
    machine: Machine | None = None  # the device the run used (its targets, for the profile)
    # a run on a group of ranks (`--ranks N`): each rank's own result, trace and machine
    ranks: list[RunResult] | None = None


class Program:
    def __init__(self, source: str, file: str = "<string>", base_dir: str | None = None) -> None:
        from ..syntax.parser import parse
        self.source = source
        self.file = file
        self.base_dir = base_dir or "."
        self.module: ast.Module = parse(source, file)

    @classmethod
    def from_path(cls, path: str) -> Program:
        # the folder (pathlib's spelling normalises it, as the interpreter does when it uses it)
        return cls(read_source(path), path, os.path.dirname(path) or ".")

    # -- queries ------------------------------------------------------------------------------
    def kernels(self) -> list[ast.Kernel | ast.FunctionDef]:
        """`kernel` statements and `def`s decorated with `@nki.jit` (or another NKI kernel
        decorator), in source order."""
        return [s for s in self.module.body if is_kernel(s)]

    def _return_span(self, name: str) -> Span | None:
        """Where kernel `name` gives its result: its one `return VALUE`, else its header."""
        for k in self.kernels():
            if k.name == name:
                returns = [n for n in _walk(k.body, skip=(ast.FunctionDef, ast.Kernel))
                           if isinstance(n, ast.Return) and n.value is not None]
                return returns[0].span if len(returns) == 1 else k.name_span
        return None

    def check_result(self, value: Any, name: str) -> None:
        """The kernel's result was written whole (APK180) and holds no data computed from
        unwritten memory (APK412), said at its `return`: the same check in `run` and `check`
        (whose written state follows the instructions' destinations) and for Python kernels
        (`apdsl.nki`)."""
        check_written(value, name, lambda: self._return_span(name))

    def require_inputs(self, name: str, inputs: Any) -> None:
        """A usage error when kernel `name` has parameters only `-i` can give (no tensor type,
        no default) and `inputs` lacks some of them."""
        for k in self.kernels():
            if k.name == name:
                missing = missing_inputs(k, inputs or {})
                if missing:
                    raise UsageError(missing_message(name, missing))

    def kernel_params(self, name: str) -> list[str]:
        for k in self.kernels():
            if k.name == name:
                return [p.name for p in k.params]
        return []

    def is_ascend(self, name: str | None) -> bool:
        """Kernel `name` (None: the only one) is an Ascend kernel: a parameter or its result is
        declared in an Ascend buffer."""
        from .spmd import ASCEND_BUFFERS
        try:
            chosen = self.select_kernel(name)
        except Exception:  # noqa: BLE001 - no such kernel: `run` says so
            return False
        for k in self.kernels():
            if k.name == chosen:
                specs = [tensor_type(p) for p in k.params] + [k.returns]
                return any(isinstance(t, ast.TypeSpec) and t.buffer in ASCEND_BUFFERS
                           for t in specs)
        return False

    def select_kernel(self, name: str | None) -> str | None:
        return pick_kernel(self.file, [k.name for k in self.kernels()], name, "kernel")

    def buffers(self) -> set[str]:
        """The buffer names the program mentions (declarations, parameters, `sbuf`/`nl.sbuf`
        names, `"l1"` strings), in this file and in the modules it imports (searched as
        `import` searches them), read without running anything."""
        from pathlib import Path

        from ..resources import stdlib_path
        from ..syntax.parser import parse
        from ..tensor.targets import BUFFERS
        found: set[str] = set()
        seen: set[str] = set()
        todo: list[tuple[Any, Path]] = [(self.module, Path(self.base_dir))]
        while todo:
            tree, base = todo.pop()
            for node in _walk(tree):
                if isinstance(node, ast.TypeSpec):
                    found.add(node.buffer.removeprefix("nl.").lower())
                elif isinstance(node, ast.Name) and node.id in BUFFERS:
                    found.add(node.id)
                elif isinstance(node, ast.Attribute) and node.attr in BUFFERS:
                    found.add(node.attr)
                elif isinstance(node, ast.Str) and node.value.lower() in BUFFERS:
                    found.add(node.value.lower())
                elif isinstance(node, (ast.Import, ast.FromImport)) and node.module not in seen:
                    seen.add(node.module)
                    rel = Path(*node.module.split(".")).with_suffix(".apk")
                    for path in (base / rel, stdlib_path() / rel):
                        if path.is_file():
                            try:
                                todo.append((parse(read_source(path), str(path)), path.parent))
                            except ApdslError:
                                pass  # running the program reports it
                            break
        return found & set(BUFFERS)

    # -- operations ---------------------------------------------------------------------------
    def interpreter(self, *, dry: bool = False, out: Any = None) -> Interpreter:
        from .interpreter import Interpreter
        interp = Interpreter(dry=dry, out=out, base_dir=self.base_dir)
        interp.sources[self.file] = self.source
        # the file's name, as a .py file's module name: `if __name__ == "__main__":` blocks
        # (host code of NKI examples) do not run, as under the Python frontend (SPEC 12)
        interp.builtins["__name__"] = path_stem(self.file)
        return interp

    def check(self, out: Any = None, kernel: str | None = None,
              inputs: dict[str, np.ndarray] | None = None, *,
              grid: tuple[int, ...] = ()) -> list[ApdslError]:
        """Every independent error: static checks, then a dry run of the top level and of each
        kernel with inputs of the declared shapes.  `inputs` (for `kernel`, or the only kernel)
        give their kernel's input shapes, dtypes and values instead, so a shape-generic or
        data-dependent kernel is checked as it would run, on the launch `grid` (as `run`).
        A limit (steps, recursion) ends the
        check with the errors found so far and the limit's error.  Targets and options the
        program sets are restored afterwards."""
        selected = self.select_kernel(kernel) if kernel is not None or inputs else None
        kernels = self.kernels()
        # the kernel the command line means (named, or the only one) must have all its inputs,
        # as `run` requires; another kernel that needs -i is checked statically only
        meant = selected or (kernels[0].name if len(kernels) == 1 else None)
        if meant is not None:
            self.require_inputs(meant, inputs)
        interp = self.interpreter(dry=True, out=out)
        with interp.machine.active(), deep_stack():
            return self._check(interp, selected, inputs, grid if meant else ())

    def _check(self, interp: Interpreter, selected: str | None,
               inputs: dict[str, np.ndarray] | None,
               grid: tuple[int, ...] = ()) -> list[ApdslError]:
        from ..runtime.core.trace import collect_warnings
        from .checker import Checker
        from .interpreter import Reported
        static = Checker(interp.builtins).check(self.module)
        for e in static:
            interp.report(e)
        namespace: dict[str, Any] = {}
        with collect_warnings() as warnings:
            try:
                interp.exec_module(self.module, namespace)
                for k in self.kernels():
                    fn = namespace.get(k.name)
                    if not isinstance(fn, Function) or missing_inputs(
                            k, (inputs or {}) if k.name == selected else {}):
                        continue
                    try:  # (the result is not kept: the next kernel has the device)
                        self.check_result(call_kernel(
                            fn, (inputs or {}) if k.name == selected else {}, interp,
                            namespace, grid), k.name)
                    except Reported:
                        pass
                    except LimitError:
                        raise
                    except ApdslError as e:
                        interp.report(e.with_span(k.span))
            except LimitError as e:
                interp.report(e)
        for w in warnings:
            interp.report(w)
        return sorted(interp.errors, key=_position)

    def run(self, kernel: str | None = None, inputs: dict[str, np.ndarray] | None = None, *,
            out: Any = None, trace: bool = False, grid: tuple[int, ...] = ()) -> RunResult:
        """Run the top level, then `kernel` with `inputs` (once per program id of the launch
        `grid`, as `apdsl run --grid N`).  Targets and options the program sets are restored
        afterwards."""
        name = self.select_kernel(kernel)
        inputs = dict(inputs or {})
        if name is not None:
            params = self.kernel_params(name)
            for key in inputs:
                if key not in params:
                    raise UsageError(f"-i {key}: kernel {name} has no parameter '{key}' "
                                     f"(parameters: {', '.join(params) or 'none'})")
            self.require_inputs(name, inputs)
        elif inputs:
            raise UsageError(f"-i given but {self.file} has no kernel")
        interp = self.interpreter(out=out)
        with interp.machine.active(), deep_stack():
            return self._run(interp, name, inputs, trace, grid)

    def _run(self, interp: Interpreter, name: str | None, inputs: dict[str, np.ndarray],
             trace: bool, grid: tuple[int, ...] = ()) -> RunResult:
        from contextlib import nullcontext

        from ..runtime.core.trace import collect_warnings, tracing
        namespace: dict[str, Any] = {}
        with collect_warnings() as warnings, (tracing() if trace else nullcontext()) as tr:
            try:
                interp.exec_module(self.module, namespace)
                value = None
                if name is not None:
                    kernel = namespace.get(name)
                    if not isinstance(kernel, Function):
                        # the top level rebound the kernel's name (`for k in ...` over kernel k)
                        raise ApdslTypeError(
                            f"{name} is no longer a kernel when the top-level statements end: "
                            f"they bound the name to a {type(kernel).__name__}",
                            code="APK109", help=f"name the other value something other than "
                            f"{name}")
                    value = call_kernel(kernel, inputs, interp, namespace, grid)
                    self.check_result(value, name)
            except ApdslError as e:
                # the run's boundary: the sources to render it against and what executed
                # before it (lower), on a new error value
                raise e.replace(sources=interp.sources, trace=tr) \
                    .with_traceback(e.__traceback__) from None
        return RunResult(value, name, interp, tr, list(warnings), interp.machine)


def _walk(node: Any, skip: tuple[type, ...] = ()) -> Any:
    """Every syntax node under `node` (itself included), not looking inside nodes of the
    `skip` classes (nested definitions)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend(n)
        elif isinstance(n, ast.Node):
            yield n
            if not isinstance(n, skip):
                stack.extend(getattr(n, f) for f in n._fields)


def _position(e: ApdslError) -> tuple:
    s = e.span
    return (0, "", 0, 0) if s is None else (1, s.file, s.line, s.column)


def call_kernel(fn: Function, inputs: dict[str, np.ndarray], interp: Interpreter,
                namespace: dict[str, Any], grid: tuple[int, ...] = ()) -> Any:
    """Bind a kernel's inputs (given or seeded), call it and check its result's type; with a
    launch `grid`, once per program id in id order, the programs sharing the inputs and their
    shared HBM outputs (SPEC section 11)."""
    try:
        args, dims = bind_inputs(fn, inputs, interp, namespace)
    except ApdslError as e:
        raise e.with_span(fn.span) from None
    from .spmd import run_programs
    return run_programs(interp, fn, tuple(args), {}, grid, dict(dims))


def input_seed(name: str) -> int:
    return zlib.crc32(name.encode())


def bind_inputs(fn: Function, inputs: dict[str, np.ndarray], interp: Interpreter,
                namespace: dict[str, Any]) -> tuple[list[Any], dict[str, int]]:
    """Kernel arguments: given arrays cast to each parameter's dtype, or seeded data of the
    declared shape; named dims bound from the inputs and checked for consistency."""
    from ..runtime.core.init import initialise, note_written, seeded
    from ..tensor.dtypes import dtype as to_dtype
    from .interpreter import Frame
    dims: dict[str, int] = {}
    frame = Frame(dims, namespace)
    args: list[Any] = []
    for p in fn.params:
        spec = tensor_type(p)
        given = inputs.get(p.name)
        if spec is None:  # untyped: the -i array in HBM, else the default
            if given is None:
                if p.name not in fn.defaults:  # (run and check refuse this as a usage error)
                    raise ApdslTypeError(f"cannot size input {p.name}: it has no tensor type "
                                         "and no -i array was given", code="APK132",
                                         span=p.span, help=f"pass -i {p.name}=FILE.npy")
                args.append(fn.defaults[p.name])
            else:
                args.append(untyped_input(p, np.asarray(given), interp))
            continue
        dt = to_dtype(spec.dtype)
        if given is not None:
            arr = np.asarray(given)
            if arr.ndim != len(spec.dims):
                raise ApdslTypeError(
                    f"input {p.name} has {arr.ndim} dimensions {arr.shape}; the kernel "
                    f"declares {len(spec.dims)}", code="APK131", span=p.span, input=p.name)
            for axis, (d, n) in enumerate(zip(spec.dims, arr.shape)):
                if isinstance(d, ast.Name) and d.id not in dims and \
                        not isinstance(namespace.get(d.id), int):
                    dims[d.id] = int(n)
                    continue
                want = _dim_value(d, frame, interp, p)
                if want != n:
                    raise _dim_mismatch(p, d, axis, arr.shape, want, dims)
            shape = arr.shape
        else:
            shape = tuple(_dim_value(d, frame, interp, p) for d in spec.dims)
            arr = None
        t = interp.allocate(shape, dt, spec.buffer, spec.format or "ND", p.name, span=p.span)
        if not interp.dry or arr is not None:  # check mode keeps the values it is given
            data = arr if arr is not None else seeded(shape, dt, input_seed(p.name))
            if data.dtype.kind not in "biuf" and data.dtype.name != "bfloat16" \
                    and not data.dtype.name.startswith("float8") and data.dtype.name != "int4":
                raise ApdslTypeError(f"input {p.name} has dtype {data.dtype}, which cannot be "
                                     f"cast to {dt}", code="APK114", span=p.span,
                                     input=p.name)
            initialise(t, "array", data, known=True)
            if interp.dry:
                interp.known_values.add(t.storage)
        else:  # check mode: seeded data of unknown values, written as in `run`
            note_written(t)
        args.append(t)
    return args, dims


def untyped_input(p: Any, arr: np.ndarray, interp: Interpreter) -> Any:
    """An HBM tensor of the `-i` array's shape, dtype and values, for a parameter without a
    tensor type (check mode keeps the values, as for a typed parameter)."""
    from ..runtime.core.init import initialise
    from ..tensor.dtypes import dtype as to_dtype
    from ..tensor.dtypes import no_nki_form
    refused = no_nki_form(p.name, arr.shape, arr.dtype)
    if refused is not None:  # a tensor type casts (SPEC section 4): say so as well
        raise refused.replace(span=p.span, notes=[
            f"a parameter with a tensor type casts its input (`{p.name}: "
            f"{refused.facts['cast']}[...] @ hbm`)"])
    try:
        dt = to_dtype(arr.dtype)
    except ApdslError as e:
        raise e.with_span(p.span).with_facts(input=p.name) from None
    t = interp.allocate(arr.shape, dt, "hbm", "ND", p.name, span=p.span)
    initialise(t, "array", arr, known=True)
    if interp.dry:
        interp.known_values.add(t.storage)
    return t


def _dim_mismatch(p: Any, d: Any, axis: int, shape: tuple, want: int,
                  dims: dict[str, int]) -> Any:
    """APK131: a dimension of input `p`'s array differs from what the type declares there.  A
    name bound by an earlier input must agree with it; a literal or an expression (of names
    the file defines) is the size itself."""
    if isinstance(d, ast.Name):
        what, why = f"dimension {d.id} is {want}", (
            f"{d.id} = {want} from an earlier input dimension: named dimensions must agree "
            "across all inputs" if d.id in dims else f"{d.id} is {want} in the file")
    else:
        what = f"the type declares {want} for dim {axis}"
        why = f"an array for {p.name} needs {want} there"
    return ApdslTypeError(f"input {p.name} has shape {shape}, but {what}", code="APK131",
                          span=d.span, input=p.name, help=why)


def _dim_value(d: Any, frame: Any, interp: Interpreter, p: Any) -> int:
    if isinstance(d, ast.Name) and d.id not in frame.vars and not isinstance(
            frame.glob.get(d.id), int):
        raise ApdslTypeError(
            f"cannot size input {p.name}: dimension {d.id} is not bound", code="APK132",
            span=d.span, help=f"pass -i {p.name}=FILE.npy, or define {d.id} = <int> at the "
            "top level of the file")
    value = interp.compile_expr(d)(frame)
    if not isinstance(value, (int, np.integer)):
        raise ApdslTypeError(f"dimension of {p.name} must be an int, got {value!r}",
                             code="APK132", span=d.span)
    return int(value)


