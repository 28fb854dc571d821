"""`@asc.jit` kernels: `kernel[n_cores, stream](x, y, z, n)` runs the kernel on apdsl's n_cores
AI cores (`apdsl.runtime.ascend.cores`: each core its own buffers, pipes and flags; global
memory shared), its `asc.GlobalAddress` parameters being the caller's NumPy arrays (or CPU
torch tensors), which get what the kernel wrote into global memory, as on the device.  The
Ascend synchronisation checker is always on, across the cores too (SPEC 18)."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ApdslError, ApdslTypeError
from ..nki.arguments import parameter_names
from ..nki.host import Host, active, hosting
from ..nki.kernel import locate
from ..nki.locate import caller_span
from ..nki.observe import observer
from ..tensor import torch_arrays
from . import errors
from .launcher import CompiledKernel, Launcher, LaunchOptions
from .memory import GlobalAddress
from .mock import MockTensor
from .placement import PLACEMENT, Placement
from .served import AUTO, CUBE_ONLY, ServedByCube


class JitKernel:
    """An `@asc.jit` function: launched as `kernel[n_cores, stream](...)` (or called)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any] | None = None) -> None:
        self.fn = block_loops(fn)
        self.options = dict(options or {})
        functools.update_wrapper(self, fn)

    def __getitem__(self, launch: Any) -> Callable[..., Any]:
        cores = launch[0] if isinstance(launch, tuple) else launch
        try:
            checked = check_cores(cores)
        except ApdslError as e:
            raise locate(e, caller_span(2)) from None
        return functools.partial(_launched, self, checked)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if active() is not None:  # a jit function called from a kernel: a plain call
            return self.fn(*args, **kwargs)
        return call(self.fn, args, kwargs)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<asc kernel {self.fn.__name__}>"


def check_cores(cores: Any) -> int:
    """The n_cores of `kernel[n_cores, stream]`: an int 1-65535 (AscendC's numBlocks), else
    APK661."""
    from ..runtime.ascend.cores import MAX_BLOCKS
    if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= MAX_BLOCKS:
        raise errors.cores(cores, MAX_BLOCKS)
    return cores


def _launched(kernel: JitKernel, cores: int, *args: Any, **kwargs: Any) -> Any:
    kwargs.pop("always_compile", None)  # pyasc's compile option: no meaning on apdsl
    with compiled_as(kernel.fn, kernel.options):
        return call(kernel.fn, args, kwargs, cores=cores)


@contextlib.contextmanager
def compiled_as(fn: Callable[..., Any], options: dict[str, Any]) -> Any:
    """Run kernel `fn`'s launch as pyasc compiles it with these `@asc.jit` options: who runs
    its Matmul (`matmul_cube_only`) and whether the compiler synchronises it (`insert_sync`)."""
    cube = CUBE_ONLY.set(bool(options.get("matmul_cube_only")))
    auto = AUTO.set(insert_sync(fn, options.get("insert_sync")))
    try:
        yield
    finally:
        AUTO.reset(auto)
        CUBE_ONLY.reset(cube)


def block_loops(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with each `with X.iterate(...) as count:` made `for count in X.iterate(...):`
    (pyasc compiles that `with` into a loop over the Matmul's base blocks, its body once per
    block; `adv.MatmulIterator` is that loop).  Lines stay the source's.  A function without
    such a `with`, without its source or with free variables is returned as it is (the
    `with` then says it was not rewritten: APK674)."""
    import ast
    import textwrap
    code = getattr(fn, "__code__", None)
    if code is None or code.co_freevars:
        return fn
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return fn
    source = "".join(lines)
    if ".iterate(" not in source or "with " not in source:
        return fn
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return fn

    class Loops(ast.NodeTransformer):
        changed = False

        def visit_With(self, node: ast.With) -> Any:  # noqa: N802 - ast's name
            self.generic_visit(node)
            if len(node.items) != 1:
                return node
            item = node.items[0]
            call = item.context_expr
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "iterate"):
                return node
            Loops.changed = True
            target = item.optional_vars or ast.Name("_", ast.Store())
            return ast.copy_location(ast.For(target=target, iter=call, body=node.body,
                                             orelse=[]), node)

    tree = Loops().visit(tree)
    if not Loops.changed:
        return fn
    top = tree.body[0]
    if not isinstance(top, ast.FunctionDef):
        return fn
    top.decorator_list = []
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, first - 1)
    scope: dict[str, Any] = {}
    exec(compile(tree, code.co_filename, "exec"), fn.__globals__, scope)  # noqa: S102
    new = scope[top.name]
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    return new


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`@asc.jit` or `@asc.jit(...)` (pyasc's compile and launch options are accepted and
    have no meaning on apdsl)."""
    if fn is None:
        return lambda f: JitKernel(f, options)
    return JitKernel(fn, options)


def _as_array(value: Any) -> np.ndarray | None:
    """A NumPy array, or the NumPy view of a CPU torch tensor (shares its memory, so what
    the kernel writes reaches the tensor); None for other values."""
    if isinstance(value, np.ndarray):
        return value
    if torch_arrays.is_torch(value):
        try:  # (bfloat16 and float8 too, through their bits)
            return torch_arrays.as_numpy(value)
        except ValueError as e:
            raise ApdslTypeError(f"a torch tensor given to an @asc.jit kernel must be a CPU "
                                 f"tensor NumPy can view: {e}", code="APK662") from None
    return None


def _global(param: str, value: Any, annotation: Any, host: Host) -> Any:
    array = _as_array(value)
    if array is None:
        if isinstance(value, MockTensor):
            raise errors.bad_argument(param, value)
        if annotation is GlobalAddress or (isinstance(annotation, str) and
                                           annotation.rpartition(".")[2] == "GlobalAddress"):
            raise errors.bad_argument(param, value)
        return value
    from ..tensor.view import from_numpy, ndarray
    flat = array.reshape(-1)
    if host.dry:
        return GlobalAddress(ndarray(flat.shape, flat.dtype.name, "gm", name=param))
    return GlobalAddress(from_numpy(flat, "gm", name=param))


def _run_cores(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
               host: Host, cores: int) -> None:
    """Run `fn` once per core of a launch on `cores` AI cores (each core its own machine,
    LocalTensor placement, pipes and flags; the cores take turns at cross-core waits)."""
    from ..runtime.ascend.cores import CoreLaunch, CoreState
    cube = CUBE_ONLY.get()  # the cores run on threads of their own: each sets it again
    auto = AUTO.get()

    def body(st: CoreState) -> None:
        token = PLACEMENT.set(Placement(host))
        CUBE_ONLY.set(cube)
        AUTO.set(auto)
        try:
            fn(*args, **kwargs)
        except ServedByCube:  # REGIST_MATMUL_OBJ on a mixed kernel's cube core: it returns
            pass
        except ApdslError as e:  # at the user's line in the kernel, before the core is named
            raise locate(e) from None
        finally:
            PLACEMENT.reset(token)

    with host.machine.active(), hosting(host):
        CoreLaunch(cores, body).run()


def call(fn: Callable[..., Any], args: tuple, kwargs: dict, dry: bool = False,
         raw: bool = False, cores: int = 1) -> Any:
    """Run `fn` on `cores` AI cores with its arrays in global memory; write what it wrote back
    into the caller's arrays (run mode).  `raw`: the GM tensors of the array parameters.  An
    observer (`apdsl.nki.observe.observing`: `apdsl corpus`) hears of the call, its end and
    its failure."""
    watcher = observer()
    if watcher is None:
        return _call(fn, args, kwargs, dry, raw, cores)
    watcher.started(fn, args, kwargs, (cores,))
    try:
        result = _call(fn, args, kwargs, dry, raw, cores)
    except BaseException as e:
        watcher.failed(fn, e)
        raise
    watcher.finished(fn, result)
    return result


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict, dry: bool, raw: bool,
          cores: int) -> Any:
    from ..tensor.machine import current as current_machine
    names = parameter_names(fn, args, kwargs)
    try:
        annotations = inspect.get_annotations(fn, eval_str=False)
    except (TypeError, ValueError, NameError):
        annotations = {}
    caller = current_machine()
    try:
        host = Host(dry=dry)
        converted = [_global(n, a, annotations.get(n), host) for a, n in zip(args, names)]
        kw = {k: _global(k, v, annotations.get(k), host) for k, v in kwargs.items()}
        try:
            _run_cores(fn, converted, kw, host, cores)
        finally:
            caller.warnings.extend(host.machine.warnings)
        pairs = [(a, c) for a, c in zip([*args, *kwargs.values()], [*converted, *kw.values()])
                 if isinstance(c, GlobalAddress)]
        if not dry:  # the launch proper: the writes reach the caller's arrays
            compiled = CompiledKernel(tuple((_as_array(a), c.tensor.numpy()) for a, c in pairs))
            Launcher(LaunchOptions(cores)).run(compiled, fn.__name__, tuple(args))
        return tuple(c.tensor for _, c in pairs) if raw else None
    except ApdslError as e:
        raise locate(e, caller_span(2)) from None


def uses_auto(fn: Any, seen: set[int] | None = None) -> bool:
    """Does kernel `fn`, or an `@asc.jit` function it calls, name `LocalTensorAuto` (pyasc's
    `need_insert_sync`: the module holds a LocalTensorAuto operation)?"""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or id(code) in seen:
        return False
    seen.add(id(code))
    scope = getattr(fn, "__globals__", {})
    codes = [code]
    while codes:
        c = codes.pop()
        if "LocalTensorAuto" in c.co_names:
            return True
        codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        for name in c.co_names:
            callee = scope.get(name)
            if isinstance(callee, JitKernel) and uses_auto(callee.fn, seen):
                return True
    return False


def insert_sync(kernel_fn: Any, option: Any) -> bool:
    """Whether a launch of `kernel_fn` is synchronised by the compiler: pyasc's `insert_sync`
    option, or (unset) whether the kernel makes a LocalTensorAuto."""
    return bool(option) if option is not None else uses_auto(kernel_fn)
