"""The suite's own set-up: Hypothesis is derandomised unless a random run is asked for, and tries
half of each property's examples but in the long run (APDSL_DEEP=1) or a random one; the suite
runs in parallel; CI runs the README's test command."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from conftest import examples_in_this_run, hypothesis_profile, pytest_collection_modifyitems
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def test_the_profile_is_fixed_by_default_and_in_ci():
    assert hypothesis_profile({}) == "apdsl-fixed"
    assert hypothesis_profile({"CI": "true"}) == "apdsl-fixed"
    assert hypothesis_profile({"APDSL_HYPOTHESIS": "fixed"}) == "apdsl-fixed"
    assert hypothesis_profile({"APDSL_HYPOTHESIS": "random", "CI": "1"}) == "apdsl-random"
    assert hypothesis_profile({"APDSL_HYPOTHESIS": " Random "}) == "apdsl-random"


def test_the_loaded_profile_matches_the_environment():
    wanted = os.environ.get("APDSL_HYPOTHESIS", "").strip().lower() != "random"
    assert settings.default.derandomize is wanted
    # settings built by test modules inherit it
    assert settings(max_examples=3).derandomize is wanted


_SEEN: list[int] = []


@settings(max_examples=5)
@given(st.integers(0, 2**62))
def _draw(x: int) -> None:
    _SEEN.append(x)


def test_two_runs_of_a_property_try_the_same_examples():
    if not settings.default.derandomize:
        return  # a random run on demand: nothing to compare
    _SEEN.clear()
    _draw()
    first = list(_SEEN)
    _SEEN.clear()
    _draw()
    assert _SEEN == first and len(first) >= 1


def test_random_runs_on_demand():
    env = {**os.environ, "APDSL_HYPOTHESIS": "random", "PYTHONPATH": str(ROOT)}
    test = "tests/test_testing_setup.py::test_the_loaded_profile_matches_the_environment"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", test],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_the_suite_runs_in_parallel_as_ci_and_the_readme_run_it():
    import re
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = re.search(r"^test = \[(.*)\]$", pyproject, re.M)
    assert extra is not None and '"pytest-xdist' in extra.group(1)
    addopts = re.search(r'^addopts = "(.*)"$', pyproject, re.M)
    assert addopts is not None and addopts.group(1).split()[:2] == ["-n", "auto"]
    command = "pip install -e '.[test]' && python -m pytest"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in readme and command in (ROOT / ".ci" / "run").read_text()


def test_verbose_runs_name_each_test():
    # no `-q` in the configuration cancels the user's `-v`
    test = "tests/test_testing_setup.py::test_the_profile_is_fixed_by_default_and_in_ci"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
                           "-v", test], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{test} PASSED" in done.stdout


def test_an_ordinary_run_tries_half_of_a_propertys_examples_and_the_long_run_all():
    assert examples_in_this_run(200, {}) == 100
    assert examples_in_this_run(30, {}) == 25 and examples_in_this_run(10, {}) == 10
    assert examples_in_this_run(200, {"APDSL_DEEP": "1"}) == 200
    assert examples_in_this_run(200, {"APDSL_HYPOTHESIS": "random"}) == 200


def test_the_collection_gives_a_property_the_examples_of_this_run():
    tried: list[int] = []

    @settings(max_examples=120, deadline=None)
    @given(st.integers(0, 2**62))
    def prop(x: int) -> None:
        tried.append(x)

    pytest_collection_modifyitems([SimpleNamespace(obj=prop)])
    prop()
    wanted = examples_in_this_run(120, os.environ)
    assert wanted // 2 < len(tried) <= wanted
