"""The names every `.apk` program starts with: the tensor model's constructors and instructions,
dtypes, buffers, host helpers and a few safe Python builtins.  A prefixed name (`nl.X`,
`nisa.X`: the parser marks it, `ast.Name.space`) is NKI's: the table files the NKI names whose
meaning differs from the bare builtin's under their prefixed key (`"nl.load"`, `"nl.max"`,
the high-level functions of `nl_functions`), and `nki_lookup` finds those first, then the
bare builtin, so NKI documentation code pastes in unchanged while bare `max` stays Python's."""

from __future__ import annotations

import builtins as py
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ..errors import ApdslAssertionError, ApdslTypeError, Span
from ..runtime.table import NAMES, TABLE, implementation
from ..runtime.table.operators import OPERATORS
from ..tensor import targets
from ..tensor.dtypes import ALIASES, DTYPES, DType
from ..tensor.view import Tensor
from . import limits
from .host import Files, Host
from .values import UNKNOWN, Module, Unknown

INSTRUCTIONS = NAMES  # every instruction of the table (apdsl.runtime.table)
EVENTS = ("set_flag", "wait_flag", "pipe_barrier")  # Ascend synchronisation (SPEC 13)
_ASCEND_ONLY = frozenset(n for n in NAMES if set(TABLE[n].engines) == {"ascend"})
TLA = ("make_layout", "make_tensor", "get_tile", "tile_view", "make_tensor_like")


def host_value(x: Any, interp: Host | None = None) -> Any:
    """A host copy of a tensor's logical contents (NumPy array); host values pass through."""
    if isinstance(x, Tensor):
        if interp is not None and interp.dry and x.storage not in interp.known_values:
            return UNKNOWN
        return x.numpy()
    if isinstance(x, (Unknown,)):
        return x
    if isinstance(x, (list, tuple, int, float)):
        return np.asarray(x)
    if isinstance(x, np.ndarray):
        return x
    raise ApdslTypeError(f"host() takes a tensor, not {type(x).__name__}", code="APK110")


def _pair(x: Any, y: Any, interp: Host) -> tuple[Any, Any]:
    return host_value(x, interp), host_value(y, interp)


def direct_instructions(table: dict[str, Any]) -> dict[Any, Callable[..., Any]]:
    """The instruction wrappers of a builtins table (run mode) and the implementations they
    call, for an interpreter to call straight: every wrapper that shows its executor (the
    Ascend-only ones load on first use and keep their wrapper)."""
    out: dict[Any, Callable[..., Any]] = {}
    for name in INSTRUCTIONS:
        call = table[name]
        impl = getattr(call, "__wrapped__", None)  # (loads the NKI executors: a run calls them)
        if impl is not None:
            out[call] = impl
    return out


class InstructionBuiltin:
    """Instruction `name` as a builtin of host `host`: a call runs `host.instruction` with the
    executor.  The executor's module loads on the first call, or when `__wrapped__` is first
    read (`inspect.signature` follows it: the checker asks for the signatures of the
    instructions a program calls), so checking a program imports only the executors it uses
    (two thirds of the modules the builtins loaded on a cold `apdsl check`, SPEC 10).  An
    Ascend-only instruction shows no `__wrapped__` (its wrapper's signature is `*args`)."""

    __slots__ = ("__name__", "host", "fn", "shown")

    def __init__(self, name: str, host: Host, shown: bool) -> None:
        self.__name__ = name
        self.host = host
        self.fn: Callable[..., Any] | None = None
        self.shown = shown  # whether `__wrapped__` is the executor

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        if fn is None:
            fn = self.fn = _implementation(self.__name__)
        return self.host.instruction(self.__name__, fn, args, kwargs)

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        if not self.shown:
            raise AttributeError("__wrapped__")
        fn = self.fn
        if fn is None:
            fn = self.fn = _implementation(self.__name__)
        return fn

    def __repr__(self) -> str:
        return f"<instruction {self.__name__}>"


def make_builtins(interp: Host) -> dict[str, Any]:
    """Builtins bound to one host (host() and friends need its mode): the `.apk` interpreter,
    a Python or pyasc kernel's call (`apdsl.semantics.host`)."""

    def host(t: Any) -> Any:
        return host_value(t, interp)

    def allclose(x: Any, y: Any, rtol: float = 1e-5, atol: float = 1e-8) -> Any:
        a, b = _pair(x, y, interp)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise ApdslAssertionError(f"allclose: shapes differ: {a.shape} vs {b.shape}",
                                      code="APK902")
        return bool(np.allclose(a, b, rtol=rtol, atol=atol))

    def equal(x: Any, y: Any) -> Any:
        a, b = _pair(x, y, interp)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return UNKNOWN
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))

    def ndarray(shape: Any, dtype: Any = "float32", buffer: Any = "sbuf", format: str = "ND",
                name: str = "", address: Any = None) -> Tensor:
        if address is None:
            return interp.allocate(shape, dtype, buffer, format, name, span=interp.call_span)
        from .placing import allocate  # address=(partition, byte) places it (SPEC 4)
        return allocate(interp, shape, dtype, buffer, format, name, address)

    def print_(*values: Any, sep: str = " ") -> None:
        for value in values:
            limits.walk_printed(value, interp.budget)
        interp.print(*values, sep=sep)

    def cdiv(a: int, b: int) -> int:
        return -(-a // b)

    table: dict[str, Any] = {
        "host": host, "allclose": allclose, "equal": equal, "ndarray": ndarray,
        "print": print_, "cdiv": cdiv,
        "range": py.range, "affine_range": py.range, "sequential_range": py.range,
        "static_range": py.range, "len": py.len, "abs": py.abs,
        "bool": py.bool, "enumerate": py.enumerate, "zip": py.zip,
        "round": _round, "reversed": py.reversed,
        "set_target": _set_target, "zeros_like": _no_host_alloc,
    }
    if isinstance(interp, Files):  # `.apk` only (APK_ONLY): Python code reads files with NumPy
        table.update(_files(interp))
    table.update(_walking(interp.budget))
    table.update(_launch(interp))
    from .tile_size import TILE_SIZE, ds, dynamic_range
    table["tile_size"], table["ds"] = TILE_SIZE, ds
    table["dynamic_range"] = dynamic_range
    for name in INSTRUCTIONS:
        table[name] = InstructionBuiltin(name, interp, name not in _ASCEND_ONLY)
    table.update(_events(interp))
    from . import cores  # Ascend cores: block index, AIC/AIV, cross-core flags (SPEC 17)
    table.update(cores.make(interp))
    table.update(_hint_enums())
    for name in TLA:
        table[name] = _tla(name)
    table.update(_nki_overlay(interp, table))
    from . import asc_names  # asc.RoundMode, asc.BinaryRepeatParams, ... (pyasc's names)
    table.update(asc_names.make())
    table.update(DTYPES)
    for alias, real in ALIASES.items():
        table[alias] = DTYPES[real]
    # `float` is Python's float when called and the float32 alias where a dtype is expected
    table["float"] = FLOAT
    for b in targets.BUFFERS:
        table[b] = b
    from .pybuiltins import python_builtins  # isinstance, divmod, pow, any, all, set
    table.update(python_builtins(interp.budget, table))
    # the NKI operators as values (nl.add, nl.exp, ...); where a name is already a builtin
    # (equal, abs, reciprocal) that one stays, and `nl.X` picks the operator (namespace lane)
    for op_name, op in OPERATORS.items():
        table.setdefault(op_name, op)
    return table


def _files(files: Files) -> dict[str, Callable[..., Any]]:
    """`load(path)` and `save(value, path)`: `.npy` files relative to the program."""

    def load(path: str) -> Any:
        return files.load_npy(path)

    def save(value: Any, path: str) -> None:
        files.save_npy(value, path)

    return {"load": load, "save": save}


@cache
def _implementation(name: str) -> Callable[..., Any]:
    """The table's implementation of instruction `name`, looked up once per process (the
    functions are the modules' own; each interpreter wraps them anew)."""
    return implementation(name)


LAUNCH = ("program_id", "num_programs", "program_ndim")
SPACES = ("nl", "nisa", "asc")


def _nki_overlay(interp: Host, table: dict[str, Any]) -> dict[str, Any]:
    """NKI's own meaning of the names that clash with `.apk` builtins (or exist only in NKI),
    keyed `"nl.NAME"`: the high-level `nl` functions and the removed index API."""
    from . import nl_functions, nl_legacy, nl_operators
    overlay: dict[str, Any] = {}
    functions = nl_functions.make(interp, table)
    for name, fn in functions.items():
        overlay[f"nl.{name}"] = fn
    # the operators as the functions nl.add(a, b), nl.exp(x) (still operators as values)
    for name, fn in nl_operators.make(interp, table, functions["copy"]).items():
        overlay[f"nl.{name}"] = fn
    from . import nl_random, nl_reductions
    for name, fn in nl_reductions.make(interp, table).items():
        overlay[f"nl.{name}"] = fn
    for name, fn in nl_random.make(interp, table).items():
        overlay[f"nl.{name}"] = fn
    for name, removed in nl_legacy.LEGACY.items():
        overlay[f"nl.{name}"] = removed
    from . import placing  # nl.ndarray with the reference's parameters (name 4th, address)
    for name, fn in placing.make(interp).items():
        overlay[f"nl.{name}"] = fn
    from . import nl_transpose  # nl.transpose: nc_transpose into a new PSUM tile
    for name, fn in nl_transpose.make(interp, table).items():
        overlay[f"nl.{name}"] = fn
    from . import nl_constants  # broadcast_to, shared constants, device_print
    for name, fn in nl_constants.make(interp, table).items():
        overlay[f"nl.{name}"] = fn
    from . import nl_ordering  # no_reorder, and the ranges' legacy directives=
    for name, fn in nl_ordering.make().items():
        overlay[f"nl.{name}"] = fn
    from .spmd import nc, spmd_dim  # the legacy launch grid's dimensions
    overlay["nl.nc"], overlay["nl.spmd_dim"] = nc, spmd_dim
    from ..runtime.nki.register_ops import scalar_load  # NKI 2.33's device scalars
    from ..tensor.scalars import NkiScalar
    overlay["nisa.scalar_load"], overlay["nisa.NkiScalar"] = scalar_load, NkiScalar
    from . import nl_regions  # nl.MemoryRegion, nl.is_sbuf, ..., nisa.NkiValidationError
    overlay.update(nl_regions.make())
    from . import nl_compose  # nl.where, nl.expand_dims, nl.softmax, nl.rms_norm
    for name, fn in nl_compose.make(interp, table).items():
        overlay[f"nl.{name}"] = fn
    return overlay


def nki_names() -> tuple[str, ...]:
    """The prefixed keys `_nki_overlay` and `asc_names` file, without building them."""
    from . import (
        nl_compose,
        nl_constants,
        nl_functions,
        nl_legacy,
        nl_ordering,
        nl_regions,
        nl_transpose,
        placing,
    )
    from .asc_names import names as asc_names
    from .nl_operators import VALUES_ONLY
    from .nl_random import NAMES as RANDOM
    from .nl_reductions import NAMES as REDUCTIONS
    nl = tuple(f"nl.{n}" for n in (*nl_functions.NAMES, *nl_legacy.LEGACY, *REDUCTIONS,
                                    *placing.NAMES, *nl_transpose.NAMES, *RANDOM,
                                    *nl_constants.NAMES, *nl_ordering.NAMES, "nc", "spmd_dim",
                                    *(o for o in OPERATORS if o not in VALUES_ONLY)))
    # and the `asc.` names: pyasc's enums and parameter objects, the asc. instructions
    nl += tuple(f"nl.{n}" for n in (*nl_regions.NL_NAMES, *nl_compose.NAMES))
    isa = ("nisa.scalar_load", "nisa.NkiScalar",
           *(f"nisa.{n}" for n in nl_regions.ISA_NAMES))
    return nl + isa + asc_names() + tuple(n for n in INSTRUCTIONS if "." in n)


def nki_lookup(table: dict[str, Any], space: str, name: str, span: Span | None = None) -> Any:
    """`nl.NAME` / `nisa.NAME` in a builtins table: NKI's own meaning first, else the builtin
    of that name (SPEC 3: the prefixes are accepted on every builtin, dtype and buffer)."""
    try:
        return table[f"{space}.{name}"]
    except KeyError:
        pass
    try:
        return table[name]
    except KeyError:
        pass
    from difflib import get_close_matches

    from ..errors import ApdslNameError
    pool = sorted({k.split(".", 1)[-1] for k in table if "." not in k or k.startswith(space)})
    close = get_close_matches(name, pool, n=3)
    raise ApdslNameError(f"unknown name '{space}.{name}'", code="APK101", span=span,
                         help=f"did you mean {' or '.join(f'{space}.{c}' for c in close)}?"
                         if close else None, name=f"{space}.{name}")


def _launch(interp: Host) -> dict[str, Callable[..., int]]:
    """`nl.program_id(axis)`, `nl.num_programs(axes)`, `nl.program_ndim()`: they read the
    launch the program runs under (`interp.launch`; none: one program, no grid)."""
    from . import launch as ln

    def current() -> ln.Launch:
        return getattr(interp, "launch", ln.NO_GRID)

    def program_id(axis: Any = 0) -> int:
        return ln.program_id(current(), axis)

    def num_programs(axes: Any = None) -> int:
        return ln.num_programs(current(), axes)

    def program_ndim() -> int:
        return ln.program_ndim(current())

    return {"program_id": program_id, "num_programs": num_programs,
            "program_ndim": program_ndim}


# Names that live in `nki.isa` besides the instructions (every other NKI name of this table is
# `nki.language`'s): apdsl.nki sorts the table into its two namespaces with it.
ISA_NAMES = frozenset({"engine", "dge_mode", "oob_mode", "matmul_perf_mode", "reduce_cmd",
                       "nc_version", "get_nc_version", "get_nc_sub_version", "dma_engine",
                       "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine",
                       "unknown_engine"})

# The `.apk` host helpers and Python's own builtins: not names of `nki.language`/`nki.isa`
# (apdsl.nki builds those namespaces from this table without them).
APK_ONLY = frozenset({"host", "allclose", "equal", "print", "load", "save", "cdiv", "prod",
                      "set_target", "zeros_like", "True", "False", "None"})


def _events(interp: Host) -> dict[str, Any]:
    """set_flag, wait_flag, pipe_barrier: located like instructions (their spans label races
    and leftover flags)."""
    from ..runtime import sync
    from ..runtime.core.trace import record_event

    def bind(name: str) -> Callable[..., Any]:
        fn = getattr(sync, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            out = interp.instruction(name, fn, args, kwargs)
            # valid (it returned): `lower` shows it in program order
            record_event(name, tuple(args) + tuple(kwargs.values()))
            return out
        call.__name__ = name
        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    return {name: bind(name) for name in EVENTS}


def _round(number: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return py.round(number)
    return py.round(number, limits.clamp_digits(ndigits))


class _FloatBuiltin(DType):
    """`float`: the dtype alias of float32 (`ndarray(shape, float, sbuf)`, as in NKI code) that
    converts like Python's `float(x)` when called."""

    __slots__ = ()

    def __call__(self, *args: Any) -> float:
        return py.float(*args)


FLOAT = _FloatBuiltin("float32", 32, "numpy.float32", "f")


def _walking(budget: limits.Budget) -> dict[str, Any]:
    """The builtins that walk a sequence: each element costs a step, results that are lists,
    tuples, strings or ints obey the size limits (SPEC section 15)."""
    walk, check = limits.walk, limits.check_size

    made = budget.made  # a large result counts in the memory budget

    def list_(values: Any = ()) -> list:
        return made(py.list(walk(values, budget, build=True)))

    def tuple_(values: Any = ()) -> tuple:
        return made(py.tuple(walk(values, budget, build=True)))

    def sorted_(values: Any, *, key: Any = None, reverse: bool = False) -> list:
        return made(py.sorted(walk(values, budget, build=True), key=key, reverse=reverse))

    def dict_(values: Any = (), **kwargs: Any) -> dict:
        return made(py.dict(walk(values, budget, build=True), **kwargs))

    def sum_(values: Any, start: Any = 0) -> Any:
        return check(py.sum(walk(values, budget, build=False), start))

    def min_(*values: Any, **kwargs: Any) -> Any:
        return py.min(*_one(values, budget), **kwargs)

    def max_(*values: Any, **kwargs: Any) -> Any:
        return py.max(*_one(values, budget), **kwargs)

    def prod(values: Any) -> Any:
        out = 1
        for v in walk(values, budget, build=False):
            out = limits.mul(out, v)
        return out

    def int_(value: Any = 0, base: Any = None) -> int:
        return limits.check_int(py.int(value) if base is None else py.int(value, base))

    def str_(value: Any = "") -> str:
        limits.walk_printed(value, budget)
        return check(py.str(value))

    for fn, name in ((list_, "list"), (tuple_, "tuple"), (sorted_, "sorted"), (dict_, "dict"),
                     (sum_, "sum"), (min_, "min"), (max_, "max"), (int_, "int"),
                     (str_, "str")):
        fn.__name__ = name
    return {"list": list_, "tuple": tuple_, "sorted": sorted_, "dict": dict_, "sum": sum_,
            "min": min_, "max": max_, "prod": prod, "int": int_, "str": str_}


def _one(values: tuple, budget: limits.Budget) -> tuple:
    """min/max of one iterable walk it; of several values, compare them."""
    if len(values) == 1:
        return (limits.walk(values[0], budget, build=False),)
    return values


def _hint_enums() -> dict[str, Any]:
    """`nisa.engine.vector`, `nisa.dge_mode.hwdge`, `nisa.oob_mode.skip`,
    `nisa.matmul_perf_mode.double_row`: each member is its name as a string, which the
    instructions take (`apdsl.runtime.nki.hints`)."""
    from ..runtime.nki import hints
    from .nc_version import NC_VERSION, get_nc_version
    enums = {"engine": hints.ENGINES, "dge_mode": hints.DGE_MODES, "oob_mode": hints.OOB_MODES,
             "matmul_perf_mode": ("none", "double_row"), "reduce_cmd": REDUCE_CMDS,
             "dma_engine": ("dma", "gpsimd_dma")}
    table: dict[str, Any] = {name: Module(f"nisa.{name}", "<builtin>", {m: m for m in members})
                             for name, members in enums.items()}
    table["nc_version"] = NC_VERSION
    table["get_nc_version"] = get_nc_version
    # the deprecated module constants of the engines (nisa.vector_engine, ...)
    for e in ("tensor", "vector", "scalar", "gpsimd", "unknown"):
        table[f"{e}_engine"] = e
    return table


# nisa.reduce_cmd: activation's accumulator commands (NKI isa), by name as activation takes them
REDUCE_CMDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def _set_target(name: str) -> None:
    targets.set_target(name)


def _no_host_alloc(*_: Any) -> None:
    raise ApdslTypeError("zeros_like is not available: declare a tensor with '= zeros'",
                         code="APK110")


def _tla(name: str) -> Callable[..., Any]:
    fn: list[Callable[..., Any]] = []  # the TLA module loads on first use, then stays bound

    def call(*args: Any, **kwargs: Any) -> Any:
        if not fn:
            from ..tensor import tla
            fn.append(getattr(tla, name))
        return fn[0](*args, **kwargs)

    call.__name__ = name
    return call


@cache
def builtin_names() -> frozenset[str]:
    """Every builtin name (for the checker and completion), without building bound builtins."""
    names = {"host", "allclose", "equal", "ndarray", "print", "load", "save", "cdiv", "range",
             "affine_range", "sequential_range", "static_range", "len", "min", "max", "abs",
             "int", "float", "bool", "str", "tuple", "list", "dict", "enumerate", "zip",
             "sorted", "round", "sum", "reversed", "prod", "set_target", "zeros_like",
             "True", "False", "None"}
    names.update(("tile_size", "ds", "dynamic_range", "engine", "dge_mode", "oob_mode",
                  "matmul_perf_mode", "reduce_cmd", "dma_engine", "nc_version",
                  "get_nc_version", "tensor_engine", "vector_engine", "scalar_engine",
                  "gpsimd_engine", "unknown_engine"))
    from .pybuiltins import NAMES as PYTHON_NAMES
    names.update(PYTHON_NAMES)
    # (the `asc.X` instructions are prefixed keys: `nki_names` lists them)
    names.update((n for n in INSTRUCTIONS if "." not in n), EVENTS, TLA, LAUNCH, DTYPES,
                 ALIASES, targets.BUFFERS, OPERATORS)
    from .cores import NAMES as CORE_NAMES
    names.update(CORE_NAMES)
    return frozenset(names)
