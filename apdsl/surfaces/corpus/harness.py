"""Repositories whose tests hand each kernel to a test orchestrator rather than calling it:
nki-library's tests build `KernelArgs` (the kernel, its inputs, the golden outputs from the
test's torch reference and the tolerances) and pass them to `Orchestrator.execute`, which
compiles and runs on a Trainium host.  In a corpus run, `OrchestratorAdapter` (a pytest
plugin) replaces that one method: the kernel runs on apdsl with the test's inputs, on the
test's platform and logical core count, and each output is compared with the test's golden
output by the harness's own criterion (`|actual - golden| <= atol + rtol * max|golden|`
elementwise, the "max" mode the harness validates with), or by the test's own validator."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .standins import packed_name, unpack_values


class Comparisons(Protocol):
    """Where the outcome of each comparison goes (the corpus watch)."""

    def compared(self, ok: bool) -> None: ...


def _outputs(result: Any) -> list[Any]:
    if result is None:
        return []
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _golden(golden: Any) -> tuple[list[str], dict[str, Any] | None]:
    """(output names in order, name -> golden array or validator; None: nothing to compare)."""
    if hasattr(golden, "for_rank"):
        raise AssertionError("a per-rank golden output (collectives): apdsl runs one rank")
    if hasattr(golden, "output_ndarray") and hasattr(golden, "golden"):
        return list(golden.output_ndarray), golden.golden
    return list(golden), dict(golden)


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


def _platform(compiler_input: Any) -> str:
    name = str(getattr(getattr(compiler_input, "platform_target", None), "value", "") or "trn2")
    return "trn3" if name.startswith("trn3") else name


class OrchestratorAdapter:
    """The pytest plugin: patches the `execute` of the `Orchestrator` class a conftest
    imports, for the session."""

    def __init__(self, comparisons: Comparisons) -> None:
        self.comparisons = comparisons
        self.patched: list[tuple[type, Any]] = []

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

    def execute(self, kernel_args: Any) -> None:
        from ...nki.kernel import simulate
        from ...tensor.targets import target
        inputs = {k.removesuffix(".must_alias_input"): v
                  for k, v in (kernel_args.kernel_input or {}).items()}
        compiler = kernel_args.compiler_input
        cores = int(getattr(compiler, "logical_nc_config", 1) or 1)
        with target(_platform(compiler)):
            result = _outputs(simulate(kernel_args.kernel_func)[cores](**inputs))
        validation = kernel_args.validation_args
        if validation is None:
            return
        names, golden = _golden(validation.golden_output)
        if golden is None:
            return
        if len(result) != len(names):
            self.comparisons.compared(False)
            raise AssertionError(f"the kernel returned {len(result)} outputs, the test "
                                 f"expects {len(names)} ({', '.join(names)})")
        for name, actual in zip(names, result):
            self._compare(name, actual, golden[name], validation)

    def _compare(self, name: str, actual: Any, expected: Any, validation: Any) -> None:
        if hasattr(expected, "validator"):  # the test's own validator decides
            ok = bool(expected.validator(None).validate(
                np.asarray(actual, dtype=expected.output_ndarray.dtype)))
            detail = "the test's validator rejects it"
        else:
            rtol, atol = validation.relative_accuracy, validation.absolute_accuracy
            packed = packed_name(expected)
            if packed:  # packed MX outputs: compared as their values, as the harness does
                got, expected = unpack_values(actual, packed), unpack_values(expected, packed)
            else:
                expected = np.asarray(expected)
                got = np.asarray(actual, dtype=expected.dtype)
            ok = within(got, expected, rtol, atol)
            detail = f"outside rtol {rtol:g} / atol {atol:g} of the test's golden output"
        self.comparisons.compared(ok)
        if not ok:
            raise AssertionError(f"output {name}: {detail}")
