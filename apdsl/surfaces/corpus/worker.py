"""One kernel measured in its own process: `python -m apdsl.surfaces.corpus.worker JOB OUT`.
JOB is a JSON file naming the repository root, the kernel (file, qualified name) and its
drivers (see `find`); OUT receives the verdict as JSON.  The repository's code runs unchanged,
with `nki` (and `neuronxcc.nki`) and `asc` installed as apdsl; what it prints is discarded."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import os
import runpy
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

from .find import checkout_top
from .harness import OrchestratorAdapter
from .platforms import PlatformChooser
from .run import marker, touch
from .script_calls import without_other_kernels
from .signature import Inputs, signature_inputs
from .standins import install_stand_ins
from .timing import timing_failure
from .verdict import Verdict, classify, is_apdsl_fault, plugin_missing
from .watch import Watch, comparisons_watched, verdict_of


class _PytestRecorder:
    """A pytest plugin telling the watch where each test ends and how, and what stopped a
    test file from being collected."""

    def __init__(self, watch: Watch, adapter: OrchestratorAdapter,
                 chooser: PlatformChooser | None = None, budget: float | None = None) -> None:
        self.watch = watch
        self.adapter = adapter
        # the CPU seconds (of the process) the tests may use before the kernel is reached
        # while tests for another platform wait (`chooser.elsewhere`): those get the rest
        self.chooser = chooser
        self.budget = budget
        self.errors: list[BaseException] = []
        self.ran = 0
        self.session: Any = None
        self.unreached: set[tuple[str, str]] = set()  # where tests stopped before the kernel

    def over_budget(self, kernel: Any) -> str | None:
        """Why the tests for the platform they run on should stop before running `kernel`
        (None: any kernel), or None: their CPU budget is spent, the kernel measured is not
        reached (and `kernel` is not it), and tests for another platform wait."""
        if self.budget is None or self.chooser is None or not self.chooser.elsewhere or \
                self.watch.reached or time.process_time() <= self.budget:
            return None
        fn = getattr(kernel, "fn", kernel)
        if kernel is not None and self.watch.is_target(fn):
            return None
        return (f"apdsl corpus: {self.budget:g} s of CPU spent before the kernel measured "
                "was reached; the tests for another platform have the rest")

    def pytest_sessionstart(self, session: Any) -> None:
        self.session = session

    def pytest_runtest_makereport(self, item: Any, call: Any) -> None:
        # (before the report is logged: pytest_exception_interact comes after it)
        import pytest
        if call.excinfo is not None and call.when in ("setup", "call") and \
                not call.excinfo.errisinstance((pytest.skip.Exception, pytest.xfail.Exception)):
            self.errors.append(call.excinfo.value)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.failed and report.when == "setup"):
            self.ran += report.when == "call"
            error = self.errors[-1] if report.failed and self.errors else None
            if report.failed and error is None:
                error = RuntimeError(str(report.longrepr)[:300])
            self.watch.test_ended(report.nodeid, error)
            if self.session is None:
                return
            if not self.watch.reached:
                # a test stopping at another kernel before this one is reached is not this
                # kernel's outcome: the next test may reach it (pytest's -x would end here),
                # unless it stops where an earlier one did (the tests share that path)
                if error is not None:
                    why = classify(error, self.watch.root)
                    place = (why.code, why.where or why.detail)
                    if place in self.unreached:
                        self.session.shouldstop = "the tests stop at the same place"
                    self.unreached.add(place)
                if self.over_budget(None):
                    self.session.shouldstop = self.over_budget(None)
                return
            if report.failed and (error is None or
                                  timing_failure(error, self.watch.root) is None):
                self.session.shouldstop = "the kernel's verdict is known"
            elif self.adapter.active:
                # a harness's parametrised sweep: the first test that runs the kernel
                # measures it (the rest are the same kernel at other shapes)
                self.session.shouldstop = "the kernel is measured"


def _conftest_watch(errors: list[BaseException]) -> Any:
    """A pytest plugin keeping the error of a conftest of the tests' folders that does not
    import (pytest.main prints it and returns; what it could not import is in the error)."""
    import pytest

    class ConftestWatch:
        @pytest.hookimpl(wrapper=True)
        def pytest_load_initial_conftests(self, early_config: Any, parser: Any,
                                          args: list[str]) -> Any:
            try:
                return (yield)
            except BaseException as e:
                errors.append(e)
                raise

    return ConftestWatch()


def package_root(path: str) -> tuple[str, str]:
    """(the folder to put on sys.path, the dotted module name) of a Python file."""
    folder, stem = os.path.split(os.path.realpath(path))
    parts = [stem[:-3]]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        folder, name = os.path.split(folder)
        parts.insert(0, name)
    return folder, ".".join(parts)


def run_pytest(watch: Watch, driver: dict[str, Any], root: str,
               budget: float | None = None) -> BaseException | None:
    """Run the driver's tests until the kernel's verdict is known.  Tests for another platform
    than the one they run on (see `platforms`) run afterwards on theirs when none of the
    first reached the kernel; `budget` (CPU seconds of the process) ends the first ones
    early when such tests wait."""
    import pytest
    adapter = OrchestratorAdapter(watch)
    chooser = PlatformChooser()
    recorder = _PytestRecorder(watch, adapter, chooser, budget)
    adapter.before = recorder.over_budget
    targets = driver["tests"] or [driver["file"]]
    options = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--rootdir={root}",
               "-o", "addopts=", "--no-header", "-W", "ignore"]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            status = pytest.main([*targets, *options],
                                 plugins=[recorder, adapter, chooser,
                                          _conftest_watch(recorder.errors)])
            for platform, tests in chooser.elsewhere.items():
                if watch.reached:
                    break
                again = OrchestratorAdapter(watch)
                rerun = _PytestRecorder(watch, again)
                pytest.main([*tests, *options],
                            plugins=[rerun, again, PlatformChooser(force=platform),
                                     _conftest_watch(rerun.errors)])
                recorder.errors += rerun.errors
    except BaseException as e:  # noqa: BLE001 - the repository's harness failing is a fact
        return e
    if not watch.reached and recorder.errors:
        return recorder.errors[0]
    if not watch.reached and int(status) not in (0, 1, 5):
        # the session never ran the tests (a conftest that does not import, an unknown
        # option): pytest's own first error line says why
        missing = plugin_missing(printed.getvalue(), root)
        if missing is not None:
            return missing
        why = next((line for line in printed.getvalue().splitlines()
                    if "Error" in line or "error" in line), f"pytest exit status {int(status)}")
        return RuntimeError(f"the tests did not start: {why.strip()[:200]}")
    return None


def run_main(watch: Watch, driver: dict[str, Any], root: str, kernel_file: str = "",
             qualname: str = "") -> BaseException | None:
    path = driver["file"]
    folder = os.path.dirname(path)
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    sys.argv = [path]
    sys.path.insert(0, folder)
    # (a script checking each kernel in turn: the others' checks left out, `script_calls`)
    code = without_other_kernels(path, kernel_file, qualname) if kernel_file else None
    saved_main = sys.modules.get("__main__")
    try:
        os.chdir(folder)
        if code is None:
            runpy.run_path(path, run_name="__main__")
        else:
            main = types.ModuleType("__main__")
            main.__file__ = path
            sys.modules["__main__"] = main
            exec(code, main.__dict__)  # noqa: S102 - the repository's own script
    except SystemExit as e:
        error = None if e.code in (0, None) else e
    except BaseException as e:  # noqa: BLE001 - reported as the driver's outcome
        error = e
    else:
        error = None
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    watch.test_ended("__main__", error)
    return error


def run_call(watch: Watch, driver: dict[str, Any], kernel_file: str, qualname: str
             ) -> BaseException | None:
    """The test file's module-level call of its test function at `line`, with the kernel in
    place of the kernel it passes.  The file runs as a module without its module-level calls
    of its test functions (those are other kernels' runs), then the call is made."""
    import ast
    import types
    path = driver["file"]
    tree = ast.parse(open(path, encoding="utf-8", errors="replace").read(), filename=path)
    call = next(n.value for n in tree.body if isinstance(n, ast.Expr) and
                n.lineno == driver["line"] and isinstance(n.value, ast.Call))
    tested = call.func.id if isinstance(call.func, ast.Name) else ""
    tree.body = [n for n in tree.body if not (
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and
        isinstance(n.value.func, ast.Name) and n.value.func.id == tested)]
    folder, name = package_root(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = types.ModuleType(name)
    module.__file__, module.__package__ = path, name.rpartition(".")[0]
    sys.modules[name] = module
    try:
        exec(compile(tree, path, "exec"), module.__dict__)  # noqa: S102 - the test file
        kernel = getattr(import_file(kernel_file), qualname)
    except BaseException as e:  # noqa: BLE001 - the file not running is the driver's outcome
        return e
    slot = ast.Name("__apdsl_kernel__", ast.Load())
    if driver["argument"].isdigit():
        call.args[int(driver["argument"])] = slot
    else:
        call.keywords = [ast.keyword(k.arg, slot if k.arg == driver["argument"] else k.value)
                         for k in call.keywords]
    code = compile(ast.fix_missing_locations(ast.Expression(call)), path, "eval")
    error: BaseException | None = None
    try:
        eval(code, {**vars(module), "__apdsl_kernel__": kernel})  # noqa: S307 - its own call
    except BaseException as e:  # noqa: BLE001 - seen by the watch, and the driver's outcome
        error = e
    watch.test_ended(f"{os.path.basename(path)}:{driver['line']}", error)
    return error


def import_file(path: str) -> Any:
    folder, name = package_root(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def import_kernel_file(path: str) -> Any:
    """The kernel's module.  When its package cannot be imported for a reason outside the file
    (an `__init__.py` importing the model code around the kernels), the file alone: a kernel
    file that imports only `nki` runs without its package."""
    try:
        return import_file(path)
    except BaseException as e:
        here = os.path.realpath(path)
        if any(os.path.realpath(f.filename) == here for f in traceback.extract_tb(
                e.__traceback__)):
            raise  # the file's own code stopped: that is its verdict
        spec = importlib.util.spec_from_file_location(
            "apdsl_alone_" + os.path.basename(path)[:-3], path)
        if spec is None or spec.loader is None:
            raise
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except BaseException:  # noqa: BLE001 - it needs its package after all: its error
            raise e from None
        return module


def run_signature(watch: Watch, driver: dict[str, Any], qualname: str
                  ) -> tuple[BaseException | None, Inputs | None]:
    """(what stopped the import or the call, the inputs found from the signature)."""
    try:
        module = import_kernel_file(driver["file"])
    except BaseException as e:  # noqa: BLE001 - the module's import failing is the verdict
        return e, None
    if "." in qualname:
        return None, None
    kernel = getattr(module, qualname, None)
    fn = getattr(kernel, "fn", None)
    if fn is None:
        return None, None
    inputs = signature_inputs(fn)
    if inputs is None:
        return None, None
    try:
        kernel(*inputs.args)
    except BaseException as e:  # noqa: BLE001 - seen by the watch
        watch.test_ended("signature", e)
        return None, inputs
    watch.test_ended("signature", None)
    return None, inputs


def _interim(path: str | None, label: str) -> Callable[[Watch], None] | None:
    """What the run has come to so far, kept in `path` after each event: a driver that goes
    on past the time limit (a benchmark after the check) still says how the kernel did."""
    if path is None:
        return None

    def note(watch: Watch) -> None:
        # the runner's limit is the kernel's, from its call to its return
        last = watch.events[-1].kind if watch.events else ""
        if last in ("start", "end"):
            touch(marker(path, "started" if last == "start" else "returned"))
        verdict = verdict_of(watch, label)
        if verdict is not None:
            kept = {**verdict.as_json(), "interim": True}
        else:  # not reached yet: what stopped the tests before (said if time runs out)
            stops = [e for e in watch.events if e.kind == "test" and not e.ok]
            if not stops:
                return
            why = classify(stops[0].error, watch.root)
            kept = {"unreached": f"{len(stops)} test(s) of {label} stopped before reaching "
                                 f"it, the first at {why.code or why.status} {why.detail}"}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(kept, f)
    return note


def measure(job: dict[str, Any], interim: str | None = None) -> Verdict:
    from ...asc import install as install_asc
    from ...nki import install
    from ...nki.observe import observing
    # the drivers may lie anywhere in the checkout (a folder of kernels is driven by the
    # checkout's tests): paths are told from its top, and pytest runs from there
    root = checkout_top(job["root"])
    # the folder measured imports as its own top too: a repository kept inside another's
    # checkout (apdsl's examples/nki_corpus in a clone of apdsl) finds its modules.  First on
    # the path: the checkout is what is measured, not a copy of it installed in the
    # environment (nki-library installed for NxDI: its tests would drive the installed
    # kernels, another version, which the watch does not know as the checkout's)
    for extra in reversed((root, os.path.join(root, "src"), os.path.realpath(job["root"]))):
        if os.path.isdir(extra):
            if extra in sys.path:
                sys.path.remove(extra)
            sys.path.insert(0, extra)
    install()
    stand_ins = install_stand_ins(root)
    install_asc()  # pyasc kernels: `import asc` is apdsl.asc (a real pyasc is left alone)
    failures: list[Verdict] = []
    notes: list[str] = []
    uncompared: Verdict | None = None
    for driver in job["drivers"]:
        if uncompared is not None and driver["kind"] == "signature":
            break  # (made-up inputs compare nothing a run of the repository's did not)
        label = f"{driver['kind']}:{os.path.relpath(driver['file'], root)}"
        watch = Watch(job["file"], job["qualname"], root, _interim(interim, label))
        stood_in = len(stand_ins.used)
        with observing(watch), comparisons_watched(watch):
            found, inputs = True, None
            if driver["kind"] == "pytest":
                stopped = run_pytest(watch, driver, root, job.get("budget"))
            elif driver["kind"] == "call":
                stopped = run_call(watch, driver, job["file"], job["qualname"])
            elif driver["kind"] == "main":
                stopped = run_main(watch, driver, root, job["file"], job["qualname"])
            else:
                stopped, inputs = run_signature(watch, driver, job["qualname"])
                found = inputs is not None
        verdict = verdict_of(watch, label)
        if verdict is not None:
            verdict = verdict if inputs is None else _on(verdict, inputs)
            if verdict.status != "runs":
                return verdict
            # it ran and nothing compared (a script that prints): a later driver may compare
            # (the SDK's mamba kernels: their own file prints, mamba_torch.py compares)
            uncompared = uncompared or verdict
            continue
        if stopped is not None:
            why = classify(stopped, root).by(label)
            if watch.others and not _about(why, job["file"], root):
                why = Verdict("no inputs", why.code, why.where, why.detail, label)
            failures.append(why)
            used = stand_ins.used[stood_in:]
            absent = [m for m in used if not any(o.startswith(m + ".") for o in used)]
            lacks = (f"it imports {', '.join(absent)}, which the checkout lacks (apdsl stood "
                     "in for it); " if absent else "")  # (first: the notes are cut at 300)
            notes.append(f"{label}: {lacks}{why.code} {why.detail}".strip())
        elif driver["kind"] != "signature":
            notes.append(f"{label}: does not call it")
        elif not found:
            notes.append("signature: no shapes for its parameters")
    for why in failures:
        if is_apdsl_fault(why):
            return why
    if uncompared is not None:  # (a later driver's missing package does not undo the run)
        return uncompared
    for why in failures:  # nothing ran it because a package is missing: say which
        if why.status == "environment":
            return why
    return Verdict("no inputs", "", "", "; ".join(notes)[:300], "")


def _on(verdict: Verdict, inputs: Inputs) -> Verdict:
    """The verdict of a run on inputs made from the signature, saying where their shapes came
    from and what was assumed."""
    said = f"inputs from the {inputs.source}"
    if inputs.assumed:
        said += f" (assumed: {'; '.join(inputs.assumed)})"
    status = verdict.status
    if inputs.assumed and status in ("raises", "error", "timeout"):
        # on sizes apdsl made up, a stop may be the made-up size's (a kernel asserting N is a
        # multiple of 512): neither the kernel's verdict nor a refusal apdsl can stand by
        status = "no inputs"
    detail = f"{verdict.detail}; {said}" if verdict.detail else said
    return Verdict(status, verdict.code, verdict.where, detail[:300], verdict.driver)


def _about(why: Verdict, kernel_file: str, root: str) -> bool:
    """Is what stopped a driver that ran other kernels before it reached this one about this
    one?  A located error elsewhere than in the kernel's file is another kernel's (a test
    running several stopped at one before it): a note, not the kernel's verdict."""
    if not is_apdsl_fault(why) or not why.where or why.where.startswith("apdsl/"):
        return True
    return why.where.rpartition(":")[0] == os.path.relpath(os.path.realpath(kernel_file), root)


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    try:
        verdict = measure(job, out_path)
    except BaseException as e:  # noqa: BLE001 - the worker always writes a verdict
        verdict = classify(e, checkout_top(job["root"]))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(verdict.as_json(), f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
