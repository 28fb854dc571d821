"""The corpus harness on collective tests, in-process: a test that asks for n ranks
(`InferenceArgs(collective_ranks=n)`) with inputs per rank runs the kernel on a simulated group
of n ranks, each rank's outputs compared with that rank's golden (a single golden: rank 0's
only, as the repository's validator does); the group's run is one call to the watch, so a
deadlock or a rank that differs is the kernel's located error, never a rank unwinding.  Also
which platform a test asks for (`PlatformChooser`) and the environment verdict of a package
the repository imports that is not installed.  Kernels, harness objects and goldens are made
here: the goldens are NumPy's sums, concatenations and chunks over the ranks' inputs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl.nki as nki
import apdsl.nki.collectives as ncc
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError
from apdsl.nki.observe import observing
from apdsl.surfaces.corpus.harness import OrchestratorAdapter, ranks_of
from apdsl.surfaces.corpus.platforms import PlatformChooser, choose, skipped_for
from apdsl.surfaces.corpus.verdict import classify
from apdsl.surfaces.corpus.watch import Watch, verdict_of


def _staged(x: Any, shape: tuple[int, ...] | None = None) -> tuple[Any, Any]:
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    dst = nl.ndarray(shape or x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="dst")
    nisa.dma_copy(dst=src, src=x)
    return src, dst


def _out(t: Any) -> Any:
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def summed(x, replica_group):
    src, dst = _staged(x)
    ncc.all_reduce(dsts=[dst], srcs=[src], op=nl.add, replica_group=replica_group)
    return _out(dst)


@nki.jit
def gathered(x, replica_group, n):
    src, dst = _staged(x, (x.shape[0] * n, x.shape[1]))
    ncc.all_gather(dsts=[dst], srcs=[src], replica_group=replica_group, collective_dim=0)
    return _out(dst)


@nki.jit
def exchanged(x, replica_group):
    src, dst = _staged(x)
    ncc.all_to_all(dsts=[dst], srcs=[src], replica_group=replica_group, collective_dim=0)
    return _out(dst)


@nki.jit
def skips_unless(x, replica_group, joins):
    src, dst = _staged(x)
    if joins:  # a rank given joins=False never arrives
        ncc.all_reduce(dsts=[dst], srcs=[src], op=nl.add, replica_group=replica_group)
        return _out(dst)
    return _out(src)


class PerRank:
    """The repositories' per-rank generators: `for_rank(r)` gives rank r's dict."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def for_rank(self, rank_id: int) -> dict[str, Any]:
        return self.make(rank_id)


class Lazy:
    def __init__(self, golden: dict[str, Any]) -> None:
        self.output_ndarray, self.golden = golden, golden


class Recorded:
    """The comparisons the harness made, in order."""

    def __init__(self) -> None:
        self.outcomes: list[bool] = []
        self.details: list[str] = []

    def compared(self, ok: bool, boolean: bool = False, detail: str = "") -> None:
        self.outcomes.append(ok)
        self.details.append(detail)


def _kernel_args(kernel: Any, inputs: Any, golden: Any, ranks: int) -> SimpleNamespace:
    return SimpleNamespace(
        kernel_func=kernel, compiler_input=SimpleNamespace(logical_nc_config=1),
        kernel_input=inputs, inference_args=SimpleNamespace(collective_ranks=ranks),
        validation_args=SimpleNamespace(golden_output=golden, relative_accuracy=1e-5,
                                        absolute_accuracy=1e-6))


def _group(n: int) -> Any:
    return ncc.ReplicaGroup([list(range(n))])


@settings(max_examples=3, derandomize=True, deadline=None)
@given(n=st.sampled_from([2, 4]), rows=st.sampled_from([2, 8]), seed=st.integers(0, 2**16))
def test_every_rank_runs_on_its_own_inputs_and_meets_its_own_golden(n: int, rows: int,
                                                                    seed: int) -> None:
    xs = np.random.default_rng(seed).standard_normal((n, rows, 4)).astype(np.float32)
    group = _group(n)
    inputs = PerRank(lambda r: {"x": xs[r], "replica_group": group, "n": n})
    golden = PerRank(lambda r: {"out": xs.reshape(n * rows, 4)})
    seen = Recorded()
    OrchestratorAdapter(seen).execute(_kernel_args(gathered, inputs, golden, n))
    assert seen.outcomes == [True] * n  # each rank's output, against its golden

    same = {"x.must_alias_input": xs[0], "replica_group": group}
    seen = Recorded()
    OrchestratorAdapter(seen).execute(
        _kernel_args(summed, same, PerRank(lambda r: {"out": xs[0] * n}), n))
    assert seen.outcomes == [True] * n


def test_a_golden_wrong_for_one_rank_is_found_on_that_rank() -> None:
    xs = np.arange(2 * 2 * 4, dtype=np.float32).reshape(2, 2, 4)
    total = xs.sum(axis=0)
    golden = PerRank(lambda r: {"out": total + r})  # rank 1's golden is off by one
    seen = Recorded()
    with pytest.raises(AssertionError, match="rank 1: output out"):
        OrchestratorAdapter(seen).execute(_kernel_args(
            summed, PerRank(lambda r: {"x": xs[r], "replica_group": _group(2)}), golden, 2))
    assert seen.outcomes == [True, False]
    # the verdict's detail: the rank, the output, how far (each element off by exactly 1)
    assert seen.details[1].startswith("rank 1: output out: outside rtol"), seen.details
    assert "(8 of 8 elements differ, the largest by 1;" in seen.details[1], seen.details


def test_a_single_golden_checks_rank_0_only() -> None:
    # all_to_all of the same input on both ranks: rank r gets chunk r of every rank, so the
    # test's one golden (chunk 0 twice) is rank 0's and rank 1's result differs from it
    x = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    chunk = x[:2]
    seen = Recorded()
    OrchestratorAdapter(seen).execute(_kernel_args(
        exchanged, {"x": x, "replica_group": _group(2)},
        Lazy({"out": np.concatenate([chunk, chunk])}), 2))
    assert seen.outcomes == [True]


def _watched(kernel: Any, inputs: Any, golden: Any, ranks: int) -> Any:
    """The verdict a corpus worker reaches on one test of `kernel` (the watch observing the
    test, then told how the test ended)."""
    fn = kernel.fn
    watch = Watch(fn.__code__.co_filename, fn.__qualname__, str(Path(__file__).parent))
    error: BaseException | None = None
    with observing(watch):
        try:
            OrchestratorAdapter(watch).execute(_kernel_args(kernel, inputs, golden, ranks))
        except (ApdslError, AssertionError) as e:
            error = e
    watch.test_ended("test", error)
    return watch, verdict_of(watch, "pytest")


def test_the_group_is_one_call_to_the_watch() -> None:
    xs = np.ones((2, 2, 4), np.float32)
    inputs = PerRank(lambda r: {"x": xs[r], "replica_group": _group(2)})
    watch, verdict = _watched(summed, inputs, PerRank(lambda r: {"out": xs[r] * 2}), 2)
    assert [e.kind for e in watch.events] == ["start", "end", "compare", "compare", "test"]
    assert verdict.status == "matches", verdict


def test_a_deadlock_across_ranks_is_the_kernels_located_error() -> None:
    xs = np.ones((2, 2, 4), np.float32)
    inputs = PerRank(lambda r: {"x": xs[r], "replica_group": _group(2), "joins": r == 0})
    watch, verdict = _watched(skips_unless, inputs, PerRank(lambda r: {"out": xs[r]}), 2)
    assert verdict.status == "error" and verdict.code == "APK965", verdict
    assert verdict.where.endswith(f":{_line_of(skips_unless, 'all_reduce')}"), verdict
    assert "rank 0 waits" in verdict.detail, verdict


def test_a_rank_whose_shape_differs_is_located_on_that_rank() -> None:
    inputs = PerRank(lambda r: {"x": np.ones((2 + 2 * r, 4), np.float32),
                                "replica_group": _group(2)})
    _, verdict = _watched(summed, inputs, PerRank(lambda r: {"out": np.ones((2, 4))}), 2)
    assert verdict.status == "error" and verdict.code.startswith("APK"), verdict
    assert verdict.where.endswith(f":{_line_of(summed, 'all_reduce')}"), verdict


def _line_of(kernel: Any, text: str) -> int:
    import inspect
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_ranks_of_reads_the_tests_inference_arguments() -> None:
    assert ranks_of(SimpleNamespace()) == 1
    assert ranks_of(SimpleNamespace(inference_args=SimpleNamespace(collective_ranks=1))) == 1
    assert ranks_of(SimpleNamespace(inference_args=SimpleNamespace(collective_ranks=8))) == 8


class _Item:
    def __init__(self, *marks: str) -> None:
        self.marks = [SimpleNamespace(name=m) for m in marks]

    def iter_markers(self) -> Any:
        return iter(self.marks)


def test_the_platform_the_tests_ask_for() -> None:
    trn3_only, everywhere = _Item("fast", "trn3"), _Item("trn1", "trn2", "trn3")
    assert choose("trn2", [trn3_only]) == "trn3"
    assert choose("trn2", [trn3_only, everywhere]) is None  # one runs on the default
    assert choose("trn2", [_Item("fast")]) is None  # no platform marks: left alone
    assert choose("trn2", [_Item("trn1")]) == "trn1"
    assert choose("trn2", []) is None

    option = SimpleNamespace(platform_target="trn2", markexpr="fast and trn2")
    chooser = PlatformChooser()
    chooser.pytest_collection_modifyitems(SimpleNamespace(option=option), [trn3_only])
    assert (option.platform_target, option.markexpr, chooser.chosen) == \
        ("trn3", "fast and trn3", "trn3")
    # a repository that does not select by its platform option is left as it is
    option = SimpleNamespace(platform_target="trn2", markexpr="fast")
    PlatformChooser().pytest_collection_modifyitems(SimpleNamespace(option=option),
                                                    [trn3_only])
    assert option.platform_target == "trn2"


def test_tests_for_another_platform_are_kept_for_a_second_session() -> None:
    # (the sessions themselves: test_corpus_harness, marked_trn3_kernel and
    # skipped_trn3_kernel)
    assert skipped_for("MX is only supported on TRN3.", "trn2") == "trn3"
    assert skipped_for("needs trn1", "trn2") == "trn1"
    assert skipped_for("MX is only supported on TRN3.", "trn3") is None  # its own platform
    assert skipped_for("trn3x or xtrn3 or trn2", "trn2") is None  # whole words only
    assert skipped_for("", "trn2") is None

    class Item(_Item):
        def __init__(self, nodeid: str, *marks: str) -> None:
            super().__init__(*marks)
            self.nodeid = nodeid

    config = SimpleNamespace(option=SimpleNamespace(platform_target="trn2", markexpr="trn2"),
                             rootpath="/r")
    chooser = PlatformChooser()
    chooser.pytest_collection_modifyitems(config, [
        Item("t.py::test_a", "trn2", "trn3"), Item("t.py::test_mx[1]", "trn3"),
        Item("t.py::test_old", "trn1"), Item("t.py::test_none")])
    assert (config.option.platform_target, chooser.current) == ("trn2", "trn2")
    assert chooser.elsewhere == {"trn3": ["/r/t.py::test_mx[1]"], "trn1": ["/r/t.py::test_old"]}

    def report(nodeid: str, reason: str, when: str = "call", skipped: bool = True) -> Any:
        return SimpleNamespace(nodeid=nodeid, skipped=skipped, when=when,
                               longrepr=("t.py", 3, f"Skipped: {reason}"))

    chooser.pytest_runtest_logreport(report("t.py::test_b[mx]", "MX is only supported on TRN3."))
    chooser.pytest_runtest_logreport(report("t.py::test_c", "no GPU"))
    chooser.pytest_runtest_logreport(report("t.py::test_d", "trn3", when="teardown"))
    chooser.pytest_runtest_logreport(report("t.py::test_e", "trn3", skipped=False))
    assert chooser.elsewhere["trn3"] == ["/r/t.py::test_mx[1]", "/r/t.py::test_b[mx]"]

    # the second session: the option set to the platform, whatever the tests are for, and
    # nothing kept
    config = SimpleNamespace(option=SimpleNamespace(platform_target="trn2",
                                                    markexpr="fast and trn2"), rootpath="/r")
    forced = PlatformChooser(force="trn3")
    forced.pytest_collection_modifyitems(config, [Item("t.py::test_mx[1]", "trn3"),
                                                  Item("t.py::test_a", "trn2")])
    forced.pytest_runtest_logreport(report("t.py::test_b[mx]", "only on trn1"))
    assert (config.option.platform_target, config.option.markexpr) == ("trn3", "fast and trn3")
    assert forced.elsewhere == {}


def test_tests_for_one_platform_leave_time_to_those_for_another() -> None:
    from apdsl.surfaces.corpus.worker import _PytestRecorder

    watch = SimpleNamespace(reached=False, root="/r", test_ended=lambda *a: None,
                            is_target=lambda fn: fn == "measured")
    chooser = PlatformChooser()
    for elsewhere, budget, stops in (({}, 0.0, False), ({"trn3": ["t"]}, 0.0, True),
                                     ({"trn3": ["t"]}, 1e9, False), ({"trn3": ["t"]}, None,
                                                                     False)):
        chooser.elsewhere = elsewhere
        recorder = _PytestRecorder(watch, SimpleNamespace(active=False), chooser, budget)
        recorder.session = SimpleNamespace(shouldstop=False)
        recorder.pytest_runtest_logreport(SimpleNamespace(when="call", failed=False,
                                                          nodeid="t.py::test_a"))
        assert bool(recorder.session.shouldstop) == stops, (elsewhere, budget)
        # the harness asks before running each kernel: another kernel is skipped, the one
        # measured still runs
        assert bool(recorder.over_budget(SimpleNamespace(fn="other"))) == stops
        assert recorder.over_budget(SimpleNamespace(fn="measured")) is None
    # what the harness does with the answer: the test is skipped before the kernel runs
    adapter = OrchestratorAdapter(SimpleNamespace(), before=lambda kernel: f"spent ({kernel})")
    with pytest.raises(pytest.skip.Exception, match=r"spent \(k\)"):
        adapter.execute(SimpleNamespace(kernel_func="k"))


def test_a_missing_package_is_an_environment_stop_at_the_line_importing_it(tmp_path) -> None:
    from _pytest.config import ConftestImportFailure
    from _pytest.nodes import Collector
    conftest = tmp_path / "conftest.py"
    conftest.write_text("import os\nimport apdsl_corpus_absent_package.extras\n")
    try:
        exec(compile(conftest.read_text(), str(conftest), "exec"), {})
    except ModuleNotFoundError as e:
        missing = e
    for wrapped in (missing, ConftestImportFailure(conftest, cause=missing),
                    _raised_from(Collector.CollectError("ImportError while importing"),
                                 missing)):
        v = classify(wrapped, str(tmp_path))
        assert (v.status, v.code, v.where) == ("environment", "ModuleNotFoundError",
                                               "conftest.py:2"), v
        assert "apdsl_corpus_absent_package" in v.detail
    # an nki name that does not import stays apdsl's crash
    nki_missing = ModuleNotFoundError("No module named 'nki.nothing'", name="nki.nothing")
    assert classify(nki_missing, str(tmp_path)).status == "crash"


def _raised_from(error: BaseException, cause: BaseException) -> BaseException:
    try:
        raise error from cause
    except BaseException as e:  # noqa: BLE001 - made to be classified
        return e

