"""An NKI Python file as the command line runs it (`apdsl run|check|lower kernel.py`): the
same queries and operations as an `.apk` `Program` (kernels, check, run), its kernels being
the file's `@nki.jit` functions.

The file is imported as a module under a private name (`loading`: so `if __name__ ==
"__main__":` does not run, a file called `copy.py` replaces no module, and its helper modules
beside it import) with `nki` installed as apdsl when the real package is absent."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ApdslError, Span
from ..semantics.program import RunResult, UsageError, pick_kernel, read_source
from .kernel import Kernel, call, on_platform
from .locate import char_column
from .usercode import from_exception, users

if TYPE_CHECKING:
    from ..tensor.machine import Machine


class _Sources:
    """What the command line reads of a run's interpreter: the sources spans point into."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources


class PyProgram:
    def __init__(self, path: str, source: str | None = None) -> None:
        """The kernel file at `path`; `source` is its text when it is not the file's (an
        editor's unsaved buffer, checked by `apdsl lsp`)."""
        self.file = path
        self.source = read_source(path) if source is None else source
        self.resolved = str(Path(path).resolve())
        try:
            self.module = self._load(path)
        except ApdslError as e:
            raise self._shown(e) from None

    @classmethod
    def from_path(cls, path: str) -> PyProgram:
        return cls(path)

    # -- what a frontend's program changes (apdsl.asc's: its kernels, its launch) -------------
    KERNEL = Kernel
    KIND = "@nki.jit kernel"

    def _load(self, path: str) -> Any:
        from .install import install
        install()
        return import_file(path, self.source)

    def _invoke(self, fn: Any, args: tuple, grid: tuple[int, ...], *, dry: bool = False,
                raw: bool = False) -> Any:
        return call(fn, args, {}, grid, dry=dry, raw=raw)

    # a group of ranks (`--ranks N`, SPEC 16): NKI Python kernels only
    RANKS = True

    # -- queries ------------------------------------------------------------------------------
    def _kernels(self) -> dict[str, Kernel]:
        name = self.module.__name__
        return {k: v for k, v in vars(self.module).items()
                if isinstance(v, self.KERNEL) and getattr(v.fn, "__module__", None) == name}

    def kernels(self) -> list[Any]:
        return list(self._kernels().values())

    def kernel_function(self, name: str) -> Any:
        """The Python function of kernel `name`."""
        return self._kernels()[name].fn

    def kernel_params(self, name: str) -> list[str]:
        k = self._kernels().get(name)
        return [] if k is None else list(inspect.signature(k.fn).parameters)

    def select_kernel(self, name: str | None) -> str | None:
        return pick_kernel(self.file, list(self._kernels()), name, self.KIND)

    def buffers(self) -> set[str]:
        return {"sbuf"}  # an NKI file: only NKI targets apply

    # -- operations ---------------------------------------------------------------------------
    def _arguments(self, name: str, inputs: dict[str, Any]) -> list[Any]:
        """The kernel's positional arguments: each parameter without a default needs `-i`."""
        sig = inspect.signature(self._kernels()[name].fn)
        args: list[Any] = []
        missing = []
        for p in sig.parameters.values():
            if p.name in inputs:
                args.append(inputs[p.name])
            elif p.default is inspect.Parameter.empty:
                missing.append(p.name)
            else:
                break  # the rest take their defaults
        for key in inputs:
            if key not in sig.parameters:
                raise UsageError(f"-i {key}: kernel {name} has no parameter '{key}' "
                                 f"(parameters: {', '.join(sig.parameters) or 'none'})")
        if missing:
            raise UsageError(f"kernel {name} needs its inputs: " + " ".join(
                f"-i {m}=FILE.npy" for m in missing) + " (a Python kernel declares no shapes)")
        return args

    def run(self, kernel: str | None = None, inputs: dict[str, np.ndarray] | None = None, *,
            out: Any = None, trace: bool = False, grid: tuple[int, ...] = (),
            ranks: int = 1) -> RunResult:
        """Run `kernel` (once per program id of `grid`) on the `-i` arrays; with `ranks` > 1
        on a group of that many ranks, every rank given the same arrays (`RunResult.ranks`)."""
        from contextlib import nullcontext

        from ..runtime.core.trace import collect_warnings, tracing
        from ..tensor.machine import current as current_machine
        name = self.select_kernel(kernel)
        if name is None:
            if inputs:
                raise UsageError(f"-i given but {self.file} has no kernel")
            return RunResult(None, None, _Sources(self._sources()))
        args = self._arguments(name, dict(inputs or {}))
        # the run's own machine: targets and options the kernel sets stay in it
        machine = current_machine().child()
        with machine.active(), collect_warnings() as warnings, \
                (tracing() if trace and ranks == 1 else nullcontext()) as tr:
            try:
                with self._platform(name):
                    if ranks > 1:
                        return self._run_ranks(name, args, ranks, grid, trace, warnings, machine)
                    value = _user(self._invoke, self._kernels()[name].fn, tuple(args), grid,
                                  raw=True)
            except ApdslError as e:
                # the run's boundary: what rendering and `lower` need, on a new error value
                raise self._shown(e, name).replace(sources=self._sources(), trace=tr) \
                    .with_traceback(e.__traceback__) from None
        return RunResult(value, name, _Sources(self._sources()), tr, list(warnings), machine)

    def _run_ranks(self, name: str, args: list[Any], ranks: int, grid: tuple[int, ...],
                   trace: bool, warnings: list[ApdslError], machine: Machine) -> RunResult:
        from .ranks import run_ranks
        got = _user(run_ranks, self._kernels()[name].fn, ranks, lambda r: (tuple(args), {}),
                    grid, trace=trace, raw=True)
        sources = _Sources(self._sources())
        per = [RunResult(v, name, sources, t, [], m)
               for v, t, m in zip(got.values, got.traces, got.machines)]
        return RunResult(None, name, sources, None, list(warnings), machine, ranks=per)

    def check(self, out: Any = None, kernel: str | None = None,
              inputs: dict[str, Any] | None = None, *,
              grid: tuple[int, ...] = (), ranks: int = 1) -> list[ApdslError]:
        """A dry run of the selected kernel (the only one, or `kernel`) on inputs of the `-i`
        shapes and dtypes: it validates and lowers every instruction and moves no data.
        `inputs` may hold (shape, dtype) pairs, as read from the `.npy` headers."""
        from ..runtime.core.trace import collect_warnings
        from ..tensor.machine import current as current_machine
        name = self.select_kernel(kernel)
        if name is None:
            return []
        given = {k: _placeholder(v) for k, v in (inputs or {}).items()}
        args = self._arguments(name, given)
        errors: list[ApdslError] = []
        with current_machine().child(check=True).active(), collect_warnings() as warnings:
            try:
                with self._platform(name):
                    if ranks > 1:
                        from .ranks import run_ranks
                        _user(run_ranks, self._kernels()[name].fn, ranks,
                              lambda r: (tuple(args), {}), grid, dry=True)
                    else:
                        _user(self._invoke, self._kernels()[name].fn, tuple(args), grid,
                              dry=True)
            except ApdslError as e:
                errors.append(self._shown(e, name))
        return [*errors, *warnings]

    def _platform(self, name: str) -> Any:
        """The target the kernel's `platform_target` names, for its run (`on_platform`)."""
        return on_platform(getattr(self._kernels()[name], "platform", None), name)

    def _shown(self, e: ApdslError, kernel: str | None = None) -> ApdslError:
        """Spans in the file name it as the command line gave it (SPEC section 7); an input
        the kernel cannot take (an error with an `input` fact) is located at that parameter
        of KERNEL's `def` (SPEC section 2), not where the frontend was called from."""
        def named(span: Span | None) -> Span | None:
            if span is not None and span.file == self.resolved:
                return Span(self.file, span.line, span.column, span.end_line, span.end_column)
            return span
        param = e.facts.get("input")
        at = self._param_span(kernel, param) if kernel and isinstance(param, str) else None
        return e.replace(span=at or named(e.span),
                         labels=[type(lab)(named(lab.span), lab.message) for lab in e.labels])

    def _param_span(self, kernel: str, param: str) -> Span | None:
        """Where parameter `param` is written in the `def` of kernel `kernel`."""
        import ast
        fn = self._kernels()[kernel].fn
        first = fn.__code__.co_firstlineno  # the first decorator's line, else the def's
        try:
            tree = ast.parse(self.source)
        except (SyntaxError, ValueError):
            return None
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.name == fn.__name__ and \
                    min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first:
                a = node.args
                for arg in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]:
                    if arg is not None and arg.arg == param:
                        text = self.source.splitlines()[arg.lineno - 1]
                        start = char_column(text, arg.col_offset)
                        stop = char_column(text, arg.end_col_offset or arg.col_offset + 1)
                        return Span(self.file, arg.lineno, start + 1, arg.lineno, stop + 1)
        return None

    def _sources(self) -> dict[str, str]:
        return {self.file: self.source}


def _placeholder(value: Any) -> Any:
    """A check-mode input: an array of the `.npy` header's shape and dtype, of zero-stride
    (nothing of it is read, nothing allocated)."""
    if isinstance(value, tuple) and len(value) == 2:
        shape, dtype = value
        return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=dtype), shape=shape,
                                               strides=(0,) * len(shape))
    return value


def _user(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call into the user's code: their own exceptions, of any class (`SystemExit` too),
    become a UserCodeError (their frames only); apdsl's errors and a real keyboard interrupt
    pass as they are."""
    try:
        return fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - the user's Python, whatever it raises
        if not users(e):
            raise
        raise from_exception(e) from None


def import_file(path: str, source: str) -> Any:
    """Run the file as a module under a private name (`loading`: never its stem, so a kernel
    called `copy.py` replaces nothing; its `__main__` block does not run).  It is compiled under the path as given, so frames, spans
    and `lower` name the file as the command line did."""
    from .loading import load
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:  # the user's file does not parse: located like theirs
        raise _syntax(e, path) from None
    try:
        return load(path, source, code)
    except BaseException as e:  # noqa: BLE001 - the user's Python, whatever it raises
        if not users(e):
            raise
        raise from_exception(e) from None


def _syntax(e: SyntaxError, path: str) -> ApdslError:
    from ..errors import ApdslSyntaxError
    line = e.lineno or 1
    col = e.offset or 1
    return ApdslSyntaxError(f"Python syntax error: {e.msg}", code="APK149",
                            span=Span(path, line, col, e.end_lineno or line,
                                      max(e.end_offset or col + 1, col + 1)))
