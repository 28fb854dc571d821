"""What one kernel's run came to: the status vocabulary of `apdsl corpus` and how an exception
is classified.  The figure is meant to be honest:

- `matches`: the kernel ran to the end and every comparison the repository's own code made of
  its results (NumPy's allclose/array_equal/testing.assert_*, after the kernel returned) agreed,
  at least one comparison being made;
- `runs`: it ran to the end and nothing compared its results;
- `mismatch`: it ran to the end and the repository's comparison disagreed (a wrong answer);
- `error`: a located apdsl diagnostic (`code`), what the SPEC asks of anything unsupported;
- `crash`: a bare Python exception raised in apdsl's own code, or an `nki`/`neuronxcc` name
  that does not import: a defect of apdsl;
- `raises`: a Python exception raised by the repository's code while the kernel ran (its own
  assert, or a value apdsl gave it that it did not expect);
- `timeout`: the run did not end within the time allowed;
- `environment`: the repository's code that drives the kernel (its conftest, a test module,
  the kernel's own module) imports a Python package that is not installed here (named, with
  the line that imports it), a part of torch_xla or torch_neuronx that apdsl's stand-ins for
  them do not provide, or a module of the Neuron compiler that is no part of NKI's API (the
  kernels neuronx-cc bundles): neither apdsl's fault nor the kernel's;
- `no inputs`: nothing in the repository calls the kernel in a way that can run here (its
  tests need packages that are absent, or no test calls it) and its signature gives no inputs,
  or the inputs made from its signature needed sizes apdsl assumed and the run stopped (the
  stop may be the assumed size's)."""

from __future__ import annotations

import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from ...errors import ApdslError
from ...nki.modules import FRAMEWORKS, NkiModuleError, compiler_part
from ...records import record
from .standins import AbsentFromCheckout

STATUSES = ("matches", "runs", "mismatch", "error", "crash", "raises", "timeout", "environment",
            "no inputs")
PASSING = frozenset({"matches", "runs"})
PACKAGE = str(Path(__file__).resolve().parents[2])  # apdsl's own source folder
NKI_ROOTS = ("nki", "neuronxcc")


@record
class Verdict:
    """One kernel's status, the error code (APKnnn, or the Python exception's type), where it
    happened (file:line) and a one-line detail."""

    status: str
    code: str = ""
    where: str = ""
    detail: str = ""
    driver: str = ""

    def by(self, driver: str) -> Verdict:
        """This verdict, as reached through `driver`."""
        return Verdict(self.status, self.code, self.where, self.detail, driver)

    def as_json(self) -> dict[str, str]:
        return {"status": self.status, "code": self.code, "where": self.where,
                "detail": self.detail, "driver": self.driver}


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _frames(error: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(error.__traceback__))


def _in_apdsl(filename: str) -> bool:
    try:
        path = os.path.realpath(filename)
    except (OSError, ValueError):
        return False
    return path.startswith(PACKAGE + os.sep)


def missing_nki_module(error: BaseException) -> str | None:
    """The `nki`/`neuronxcc` module a ModuleNotFoundError is about, if it is one."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        if error.name.split(".")[0] in NKI_ROOTS:
            return error.name
    return None


def underlying(error: BaseException) -> BaseException:
    """The error a test framework's wrapper stands for: pytest's ConftestImportFailure (a
    conftest that does not import) and CollectError (a test module that does not)."""
    kind = type(error).__name__
    cause = getattr(error, "cause", None) if kind == "ConftestImportFailure" else \
        error.__cause__ if kind == "CollectError" else None
    return cause if isinstance(cause, BaseException) else error


# hooks a repository's conftest may define that belong to a pytest plugin, not to pytest: with
# the plugin absent, pytest refuses the conftest ("unknown hook") and no test starts
PLUGIN_HOOKS = (("pytest_configure_node", "pytest-xdist"), ("pytest_testnode", "pytest-xdist"),
                ("pytest_xdist_", "pytest-xdist"), ("pytest_handlecrashitem", "pytest-xdist"),
                ("pytest_html_", "pytest-html"), ("pytest_metadata", "pytest-metadata"))


class MissingPlugin(RuntimeError):
    """The repository's conftest implements a hook of a pytest plugin that is not installed."""

    def __init__(self, hook: str, package: str, where: str) -> None:
        super().__init__(f"{where} defines {hook}, a hook of {package}, which is not "
                         f"installed: pytest refuses the conftest and runs no test")
        self.hook, self.package, self.where = hook, package, where


def plugin_missing(printed: str, root: str) -> MissingPlugin | None:
    """The plugin a session that did not start lacks, from pytest's "unknown hook" error."""
    found = re.search(r"unknown hook '(\w+)' in plugin <module '[\w.]+' from '([^']+)'>",
                      printed)
    if found is None:
        return None
    hook, path = found.groups()
    package = next((p for prefix, p in PLUGIN_HOOKS if hook.startswith(prefix)), None)
    if package is None:
        return None
    return MissingPlugin(hook, package, os.path.relpath(path, root))


def framework_missing(error: BaseException) -> str | None:
    """What an error says is missing, when it is a module or name of one of PyTorch's Neuron
    packages (torch_xla, torch_neuronx) that apdsl stands in for in part (the package itself is
    not installed, and the rest of it, model tracing, XLA ops, distributed training, is the
    framework's, not NKI's), or a module of the Neuron compiler that is no part of NKI's API
    (`modules.COMPILER_PARTS`: the kernels it bundles, its internals)."""
    if isinstance(error, ImportError):
        name = error.name or ""
    elif isinstance(error, AttributeError):
        name = getattr(getattr(error, "obj", None), "__name__", "") or ""
    else:
        return None
    said = error.message if isinstance(error, ApdslError) else str(error)
    if isinstance(error, NkiModuleError) and compiler_part(name):
        return f"neuronx-cc is not installed: {_first_line(said, 140)}"
    root = name.split(".")[0]
    if root not in FRAMEWORKS or not getattr(sys.modules.get(root), "apdsl_stand_in", False):
        return None
    return f"{root} is not installed, and what apdsl stands in for of it lacks this: " \
           f"{_first_line(said, 120)}"


def classify(error: BaseException, root: str) -> Verdict:
    """The verdict of a run that ended in `error`."""
    error = underlying(error)
    framework = framework_missing(error)
    if framework is not None:
        return Verdict("environment", type(error).__name__, _user_where(_frames(error), root),
                       framework)
    if isinstance(error, ApdslError):
        span = error.span
        where = f"{os.path.relpath(span.file, root)}:{span.line}" if span is not None and \
            span.file and not span.file.startswith("<") else ""
        return Verdict("error", error.code or "APK", where, _first_line(error.message))
    frames = _frames(error)
    kind = type(error).__name__
    message = _first_line(f"{kind}: {error}")
    module = missing_nki_module(error)
    if module is not None:
        where = _user_where(frames, root)
        return Verdict("crash", kind, where, f"module {module} does not import")
    if isinstance(error, MissingPlugin):
        return Verdict("environment", "PluginValidationError", error.where,
                       f"its conftest uses {error.package}, which is not installed (pytest "
                       f"refuses the {error.hook} hook and runs no test)")
    if isinstance(error, AbsentFromCheckout):  # (raised by apdsl's stand-in, not its fault)
        return Verdict("environment", kind, _user_where(frames, root),
                       f"{error.name} is not in the checkout: the repository's code uses a "
                       "module its public checkout leaves out")
    inner = frames[-1] if frames else None
    if inner is not None and _in_apdsl(inner.filename):
        return Verdict("crash", kind, f"apdsl/{os.path.relpath(inner.filename, PACKAGE)}:"
                       f"{inner.lineno}", message)
    if isinstance(error, AttributeError) and _names_nki(error):
        return Verdict("crash", kind, _user_where(frames, root), message)
    if isinstance(error, ModuleNotFoundError) and error.name:
        return Verdict("environment", kind, _user_where(frames, root),
                       f"module {error.name} is not installed (the repository's code imports "
                       "it)")
    return Verdict("raises", kind, _user_where(frames, root), message)


def _names_nki(error: AttributeError) -> bool:
    obj: Any = getattr(error, "obj", None)
    name = getattr(obj, "__name__", "") or ""
    return name.split(".")[0] in NKI_ROOTS or name.startswith("apdsl.")


def _user_where(frames: list[traceback.FrameSummary], root: str) -> str:
    for f in reversed(frames):
        if not f.filename.startswith("<") and not _in_apdsl(f.filename):
            path = os.path.realpath(f.filename)
            if path.startswith(os.path.realpath(root) + os.sep):
                return f"{os.path.relpath(path, os.path.realpath(root))}:{f.lineno}"
    return ""


def is_apdsl_fault(v: Verdict) -> bool:
    """A verdict that names something apdsl lacks or got wrong (not the environment)."""
    return v.status in ("error", "crash")
