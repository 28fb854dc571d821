"""The pytest plugin: `pytest -p apdsl.asc` installs apdsl as `asc` (when the real pyasc is
absent) before conftest files and test modules are imported."""

from __future__ import annotations

from typing import Any


def pytest_load_initial_conftests(early_config: Any) -> None:
    from .install import install
    install()


def pytest_configure(config: Any) -> None:
    from .install import install
    install()  # idempotent: also covers a plugin registered after the initial conftests
