"""Each test runs on a fresh simulated device (`apdsl.tensor.machine.Machine`): its own
accounting, memory budget, trace and warnings, on the default targets and options.

Hypothesis runs derandomised by default (each test's examples come from a seed fixed by the
test itself), so a run in CI and a run on a laptop try the same inputs and a failure reproduces.
`APDSL_HYPOTHESIS=random` asks for fresh random examples, to hunt for new failures.
"""

import os
import sys
import tempfile


def keep_bytecode(environ: "os._Environ[str] | dict[str, str]") -> None:
    """When the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE), every process of
    the run, the suite's workers and each `apdsl` the tests start, compiles apdsl, the tests and
    their assertion rewrites from source again: a third of the suite's CPU.  Its bytecode goes
    instead to a folder outside the checkout (so the tree stays as clean as that setting keeps
    it), shared by the run's processes and reused by the next run; Python checks each file
    against its source as always.  Without that setting Python's own `__pycache__` is left be."""
    if not sys.dont_write_bytecode and not environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    prefix = sys.pycache_prefix or environ.get("PYTHONPYCACHEPREFIX") or os.path.join(
        tempfile.gettempdir(), f"apdsl-tests-pycache-{getattr(os, 'getuid', int)()}")
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    environ["PYTHONPYCACHEPREFIX"] = prefix
    environ.pop("PYTHONDONTWRITEBYTECODE", None)


# First, before this run imports apdsl and the test modules (and before xdist starts workers).
keep_bytecode(os.environ)

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from apdsl.tensor.machine import Machine  # noqa: E402

settings.register_profile("apdsl-fixed", derandomize=True, database=None, print_blob=True)
settings.register_profile("apdsl-random", derandomize=False, print_blob=True)


def hypothesis_profile(environ: "os._Environ[str] | dict[str, str]") -> str:
    """The profile for an environment: random only when asked for, fixed otherwise (CI too)."""
    mode = environ.get("APDSL_HYPOTHESIS", "").strip().lower()
    return "apdsl-random" if mode == "random" else "apdsl-fixed"


# Loaded at import, before any test module builds its own `settings(...)` on top of the default.
settings.load_profile(hypothesis_profile(os.environ))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "plans: a test of the fast paths themselves (apdsl.runtime.plans): its "
        "machine has plans on whatever APDSL_PLANS says; it compares them with the general "
        "path by turning them off itself (apdsl.options(plans=False))")


@pytest.fixture(autouse=True)
def machine(request: pytest.FixtureRequest):
    """The test's machine (current while it runs).  `APDSL_PLANS=0` runs the tests on the
    general path (every fast path off, SPEC 10's plans' oracle), but for tests marked
    `plans`."""
    m = Machine()
    if request.node.get_closest_marker("plans") is not None:
        m.options.plans = True
    with m.active():
        yield m


# A property's examples in an ordinary run: half of what the test asks for, but never fewer
# than SHARE_FLOOR (or than it asks for, when that is fewer).  The properties were a seventh of
# the suite's CPU; half of each still tries the same kinds of inputs (derandomised, every run
# the same), and `APDSL_DEEP=1` (the long run) or a random run (APDSL_HYPOTHESIS=random, a hunt
# for new failures) gives each test all it asks for.
SHARE_FLOOR = 25


def examples_in_this_run(asked: int, environ: "os._Environ[str] | dict[str, str]") -> int:
    """The examples a property that asks for `asked` tries in a run under `environ`."""
    if environ.get("APDSL_DEEP") or hypothesis_profile(environ) == "apdsl-random":
        return asked
    return min(asked, max(SHARE_FLOOR, asked // 2))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        if getattr(test, "hypothesis", None) is None or id(test) in seen:
            continue
        seen.add(id(test))
        asked = test._hypothesis_internal_use_settings  # what @settings (or the profile) says
        wanted = examples_in_this_run(asked.max_examples, os.environ)
        if wanted != asked.max_examples:
            test._hypothesis_internal_use_settings = settings(asked, max_examples=wanted)
