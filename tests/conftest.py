"""Each test runs on a fresh simulated device (`apdsl.tensor.machine.Machine`): its own
accounting, memory budget, trace and warnings, on the default targets and options.

Hypothesis runs derandomised by default (each test's examples come from a seed fixed by the
test itself), so a run in CI and a run on a laptop try the same inputs and a failure reproduces.
`APDSL_HYPOTHESIS=random` asks for fresh random examples, to hunt for new failures.
"""

import os

import pytest
from hypothesis import settings

from apdsl.tensor.machine import Machine

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
