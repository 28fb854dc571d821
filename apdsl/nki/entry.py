"""The `pytest11` entry point: pytest loads it in every session where apdsl is installed, so
it does nothing unless asked: `pytest --apdsl-nki` (or `apdsl_nki = true` in the ini file)
makes `import nki` resolve to apdsl, as `pytest -p apdsl.nki` does."""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--apdsl-nki", action="store_true", default=False,
                     help="run NKI kernels on apdsl: `import nki` resolves to apdsl.nki "
                     "when the real nki package is absent")
    parser.addini("apdsl_nki", type="bool", default=False,
                  help="as --apdsl-nki")


def pytest_load_initial_conftests(early_config: Any) -> None:
    asked = getattr(early_config.known_args_namespace, "apdsl_nki", False)
    if asked or early_config.getini("apdsl_nki"):
        from .install import install
        install()


def pytest_configure(config: Any) -> None:
    """Asked for, the session gets all of `pytest -p apdsl.nki`: the install, a fresh device
    per test and the reports of failed tests told as diagnostics."""
    if config.getoption("apdsl_nki", False) or config.getini("apdsl_nki"):
        config.pluginmanager.import_plugin("apdsl.nki")
