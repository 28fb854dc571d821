"""The pytest plugin: `pytest -p apdsl.nki` installs apdsl as `nki` (when the real package is
absent) before conftest files and test modules are imported.  The `pytest11` entry point
(`apdsl.nki.entry`) adds `--apdsl-nki`, which does the same when asked.  How a failed test is
reported is a surface's job: `apdsl.nki` names it in `pytest_plugins`
(`apdsl.surfaces.pytest_report`), so pytest loads it and this layer imports nothing above it.
Each test runs on a fresh simulated device (`FRESH_MACHINE`)."""

from __future__ import annotations

from typing import Any


def pytest_load_initial_conftests(early_config: Any) -> None:
    from .install import install
    install()


def pytest_configure(config: Any) -> None:
    from .install import install
    install()  # idempotent: also covers a plugin registered after the initial conftests
    if not config.pluginmanager.has_plugin(FRESH_MACHINE):
        config.pluginmanager.register(_fresh_machine(), FRESH_MACHINE)


FRESH_MACHINE = "apdsl-nki-fresh-machine"


def _fresh_machine() -> Any:
    """A plugin whose autouse fixture runs each test on a fresh simulated device, as apdsl's
    own suite does: targets and `apdsl.options(...)` a test sets, its tensors, warnings and
    engine state end with it, so one test cannot hide a bug from the next.  (Made when pytest
    configures, so importing `apdsl.nki` never imports pytest.)"""
    import pytest

    from ..tensor.machine import Machine

    class FreshMachine:
        @pytest.fixture(autouse=True)
        def _apdsl_fresh_machine(self) -> Any:
            with Machine().active() as machine:
                yield machine

    return FreshMachine()
