"""The pytest plugin: `pytest -p apdsl.nki` installs apdsl as `nki` (when the real package is
absent) before conftest files and test modules are imported.  The `pytest11` entry point
(`apdsl.nki.entry`) adds `--apdsl-nki`, which does the same when asked.  How a failed test is
reported is a surface's job: `apdsl.nki` names it in `pytest_plugins`
(`apdsl.surfaces.pytest_report`), so pytest loads it and this layer imports nothing above it."""

from __future__ import annotations

from typing import Any


def pytest_load_initial_conftests(early_config: Any) -> None:
    from .install import install
    install()


def pytest_configure(config: Any) -> None:
    from .install import install
    install()  # idempotent: also covers a plugin registered after the initial conftests
