"""Repositories whose tests hand each kernel to a test orchestrator rather than calling it:
nki-library's tests build `KernelArgs` (the kernel, its inputs, the golden outputs from the
test's torch reference and the tolerances) and pass them to `Orchestrator.execute`, which
compiles and runs on a Trainium host.  In a corpus run, `OrchestratorAdapter` (a pytest
plugin) replaces that one method: the kernel runs on apdsl with the test's inputs, on the
test's platform and logical core count, and each output is compared with the test's golden
output by the harness's own criterion (`|actual - golden| <= atol + rtol * max|golden|`
elementwise, the "max" mode the harness validates with), or by the test's own validator.

A collective test (`InferenceArgs(collective_ranks=n)`, n > 1) runs the kernel on a simulated
group of n ranks (`apdsl.nki.simulate_ranks`), each rank with its own inputs where the test
gives them per rank (`PerRankLazyInputGenerator.for_rank(r)`), else the same inputs.  As the
repository's validator does, a per-rank golden (`PerRankLazyGoldenGenerator`) checks every
rank's outputs against that rank's golden, and a single golden checks rank 0's only (it is
rank 0's: an all_to_all of equal inputs gives each rank another chunk)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from .standins import packed_name, unpack_values


class Comparisons(Protocol):
    """Where the outcome of each comparison goes (the corpus watch)."""

    def compared(self, ok: bool, boolean: bool = False, detail: str = "") -> None: ...


def _outputs(result: Any) -> list[Any]:
    if result is None:
        return []
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _golden(golden: Any, rank: int) -> tuple[list[str], dict[str, Any] | None]:
    """(output names in order, name -> golden array or validator; None: nothing to compare)
    of rank `rank`."""
    if hasattr(golden, "for_rank"):
        given = golden.for_rank(rank)
        return list(given), dict(given)
    if hasattr(golden, "output_ndarray") and hasattr(golden, "golden"):
        return list(golden.output_ndarray), golden.golden
    return list(golden), dict(golden)


def _inputs(given: Any, rank: int) -> dict[str, Any]:
    """Rank `rank`'s keyword arguments: the test's per-rank inputs, or the one dict for every
    rank (an output the harness aliases to an input is that input)."""
    if hasattr(given, "for_rank"):
        given = given.for_rank(rank)
    return {k.removesuffix(".must_alias_input"): v for k, v in (given or {}).items()}


def ranks_of(kernel_args: Any) -> int:
    """The number of ranks the test runs the kernel on (1 without collectives)."""
    n = getattr(getattr(kernel_args, "inference_args", None), "collective_ranks", 1)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def within(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    """The harness's "max" criterion: every element within atol + rtol * the largest finite
    magnitude of the golden output; equal values (infinities included) always agree."""
    a = np.asarray(actual, dtype=np.float32)
    b = np.asarray(expected, dtype=np.float32)
    if a.shape != b.shape:
        return False
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max()) if finite.size else 0.0
    with np.errstate(invalid="ignore"):
        close = (np.abs(a - b) <= atol + rtol * scale) | (a == b)
    return bool(close.all())


def differences(actual: Any, expected: Any) -> str:
    """Where and how far an output is from the golden one (for the verdict's detail)."""
    try:
        a = np.asarray(actual, dtype=np.float32)
        b = np.asarray(expected, dtype=np.float32)
        if a.size != b.size:
            return ""
        a, b = a.reshape(b.shape), b
        with np.errstate(invalid="ignore"):
            off = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if not off.any():
            return ""
        first = tuple(int(i) for i in np.argwhere(off)[0])
        with np.errstate(invalid="ignore"):
            err = np.abs(a - b)[off]
        return (f" ({int(off.sum())} of {b.size} elements differ, the largest by "
                f"{float(np.nanmax(err)) if np.isfinite(err).any() else float('nan'):.4g}; "
                f"the first at {list(first)}: {float(a[first]):.6g}, golden {float(b[first]):.6g})")
    except (TypeError, ValueError):  # an output NumPy cannot read as numbers
        return ""


def _platform(compiler_input: Any) -> str:
    name = str(getattr(getattr(compiler_input, "platform_target", None), "value", "") or "trn2")
    return "trn3" if name.startswith("trn3") else name


class OrchestratorAdapter:
    """The pytest plugin: patches the `execute` of the `Orchestrator` class a conftest
    imports, for the session."""

    def __init__(self, comparisons: Comparisons,
                 before: Callable[[Any], str | None] | None = None) -> None:
        self.comparisons = comparisons
        self.patched: list[tuple[type, Any]] = []
        # asked with the kernel before each run and before its reference: a reason not to go
        # on (the test is skipped)
        self.before = before

    @property
    def active(self) -> bool:
        return bool(self.patched)

    def pytest_plugin_registered(self, plugin: Any, manager: Any) -> None:
        orchestrator = getattr(plugin, "Orchestrator", None)
        if isinstance(orchestrator, type) and callable(getattr(orchestrator, "execute", None)) \
                and not any(c is orchestrator for c, _ in self.patched):
            self.patched.append((orchestrator, orchestrator.__dict__.get("execute")))
            adapter = self

            def execute(_self: Any, kernel_args: Any) -> None:
                adapter.execute(kernel_args)

            orchestrator.execute = execute  # type: ignore[attr-defined]

    def pytest_unconfigure(self, config: Any) -> None:
        for cls, original in self.patched:
            if original is not None:
                cls.execute = original  # type: ignore[attr-defined]
        self.patched.clear()

    def _ask(self, kernel: Any) -> None:
        why = None if self.before is None else self.before(kernel)
        if why:
            import pytest
            pytest.skip(why)

    def execute(self, kernel_args: Any) -> None:
        from ...nki.kernel import simulate
        from ...tensor.targets import target
        self._ask(kernel_args.kernel_func)
        compiler = kernel_args.compiler_input
        cores = int(getattr(compiler, "logical_nc_config", 1) or 1)
        kernel = simulate(kernel_args.kernel_func)[cores]
        given, ranks = kernel_args.kernel_input, ranks_of(kernel_args)
        with target(_platform(compiler)):
            if ranks == 1:
                results = [_outputs(kernel(**_inputs(given, 0)))]
            else:
                results = [_outputs(r) for r in _on_ranks(kernel, ranks, given)]
        validation = kernel_args.validation_args
        if validation is None:
            return
        self._ask(kernel_args.kernel_func)  # (again before the test's reference: it may be long)
        per_rank = hasattr(validation.golden_output, "for_rank")
        for rank in range(ranks if per_rank else 1):
            names, golden = _golden(validation.golden_output, rank)
            if golden is None:
                continue
            result = results[rank]
            label = f"rank {rank}: " if ranks > 1 else ""
            if len(result) != len(names):
                why = (f"{label}the kernel returned {len(result)} outputs, the test expects "
                       f"{len(names)} ({', '.join(names)})")
                self.comparisons.compared(False, detail=why)
                raise AssertionError(why)
            for name, actual in zip(names, result):
                self._compare(f"{label}output {name}", actual, golden[name], validation)

    def _compare(self, name: str, actual: Any, expected: Any, validation: Any) -> None:
        if hasattr(expected, "validator"):  # the test's own validator decides
            ok = bool(expected.validator(None).validate(
                np.asarray(actual, dtype=expected.output_ndarray.dtype)))
            detail = "the test's validator rejects it" + differences(
                actual, expected.output_ndarray)
        else:
            rtol, atol = validation.relative_accuracy, validation.absolute_accuracy
            packed = packed_name(expected)
            if packed:  # packed MX outputs: compared as their values, as the harness does
                got, expected = unpack_values(actual, packed), unpack_values(expected, packed)
            else:
                expected = np.asarray(expected)
                got = np.asarray(actual, dtype=expected.dtype)
            if got.shape != expected.shape and got.size == expected.size:
                # the harness reads an output's bytes in the golden's shape, not the kernel's
                # (fine_grained_allgather's [ranks, cores, channels, m, K] against [M, K])
                got = got.reshape(expected.shape)
            ok = within(got, expected, rtol, atol)
            detail = f"outside rtol {rtol:g} / atol {atol:g} of the test's golden output" \
                + differences(got, expected) if got.size == expected.size else \
                f"{got.size} elements, the test's golden output has {expected.size}"
        self.comparisons.compared(ok, detail="" if ok else f"{name}: {detail}")
        if not ok:
            raise AssertionError(f"{name}: {detail}")


class _Unheard:
    """An observer that hears nothing: the ranks' own calls of a group run are not the test's
    calls (the group's run is one, reported as a whole)."""

    def started(self, fn: Any, args: tuple, kwargs: dict[str, Any],
                launch: tuple[int, ...]) -> None:
        return None

    def finished(self, fn: Any, result: Any) -> None:
        return None

    def failed(self, fn: Any, error: BaseException) -> None:
        return None


def _on_ranks(kernel: Any, ranks: int, given: Any) -> list[Any]:
    """The kernel's results on each of `ranks` ranks, the group's run told to the observer as
    one call: it ends when every rank has, and fails with the error that stopped the group (a
    deadlock, a rank whose shapes differ), not with a rank unwinding because of it."""
    from ...nki.observe import observer, observing
    from ...nki.ranks import simulate_ranks
    watcher = observer()
    if watcher is not None:
        watcher.started(kernel.fn, (), {}, kernel.grid)
    try:
        with observing(_Unheard()):
            values = simulate_ranks(kernel, ranks, per_rank=lambda r: ((), _inputs(given, r)))
    except BaseException as e:
        if watcher is not None:
            watcher.failed(kernel.fn, e)
        raise
    if watcher is not None:
        watcher.finished(kernel.fn, values)
    return values
