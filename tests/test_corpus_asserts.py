"""What `apdsl corpus` reads of a repository's own checks.  A plain `assert` of a result's
values counts as its comparison (the SDK's average_pool2d and mamba examples check that way):
run as a user runs it, on kernels written for this test, and the source reading that finds such
assertions.  A conftest needing an absent pytest plugin is an environment row."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus.asserts import value_checks
from apdsl.surfaces.corpus.verdict import classify, plugin_missing

KERNELS = kernel_module(*(hbm_kernel(f"{name}_kernel", "nl.multiply(nl.load(a), 2.0)")
                          for name in ("direct", "named", "unit", "shaped", "wrong", "negated",
                                       "pytested")))

# a pytest test: pytest rewrites its assertions, which still run at their own lines
PYTEST = """
import numpy as np

from kern import pytested_kernel


def test_pytested():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = pytested_kernel(x)
    assert (out == 2 * x).all()
"""

# one script per kernel: a script's failed assertion ends it, whichever kernel it was about
SCRIPTS = {
    "direct": "assert np.all(direct_kernel(x) == 2 * x)",
    "named": """
        out = named_kernel(x)
        match = (out == 2 * x).all()
        if match:
            print("match")
        assert match""",
    "unit": """
        class Check(unittest.TestCase):
            def run_unit(self):
                got = unit_kernel(x)
                self.assertTrue(np.all(got >= 0) and np.all(got <= 30))


        Check().run_unit()""",
    "shaped": "assert shaped_kernel(x).shape == x.shape",
    "negated": "assert not np.all(negated_kernel(x) == 0)",
    "wrong": """
        print("checking")
        assert (wrong_kernel(x) == 3 * x).all(), 'differs'""",
}


def script(name: str) -> str:
    body = textwrap.indent(textwrap.dedent(SCRIPTS[name]).strip(), "    ")
    return (f"import unittest\n\nimport numpy as np\n\nfrom kern import {name}_kernel\n\n"
            f"if __name__ == \"__main__\":\n"
            f"    x = np.arange(16, dtype=np.float32).reshape(4, 4)\n{body}\n")


def test_value_assertions_count_and_shape_checks_do_not(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(KERNELS)
    for name in SCRIPTS:
        (tmp_path / f"run_{name}.py").write_text(script(name))
    (tmp_path / "test_kern.py").write_text(PYTEST)
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--jsonl",
                           "--timeout", "60"], capture_output=True, text=True, timeout=300)
    rows = {row["kernel"].split("::")[1]: row for row in map(json.loads,
                                                             done.stdout.splitlines())
            if "kernel" in row}
    got = {name: rows[name]["status"] for name in rows}
    assert got == {"direct_kernel": "matches", "named_kernel": "matches",
                   "unit_kernel": "matches", "shaped_kernel": "runs",
                   "negated_kernel": "matches", "wrong_kernel": "mismatch",
                   "pytested_kernel": "matches"}, done.stdout
    assert rows["wrong_kernel"]["where"] == "run_wrong.py:10", rows["wrong_kernel"]
    assert rows["direct_kernel"]["driver"] == "main:run_direct.py", rows["direct_kernel"]


def test_the_source_reading_finds_value_checks_in_every_scope(tmp_path: Path) -> None:
    source = textwrap.dedent('''
        import numpy as np

        ok = np.all(a == b)          # 4: an assignment, not an assertion
        assert ok                    # 5
        assert a.shape == b.shape    # 6: a shape
        assert len(a) == 3           # 7


        def f(a, b):
            same = np.isclose(a, b)
            assert same.all()        # 12
            for i in range(3):
                assert a[i] == b[i]  # 14: no value call
            try:
                assert np.array_equal(a, b)  # 16
            except AssertionError:
                pass


        class T:
            def test(self):
                match = (a == b).all()
                self.assertTrue(match)       # 24
                self.assertEqual(a, b)       # 25: unittest's own, not a value call
                assert ok                    # 26: `ok` is bound in another scope
        ''')
    path = tmp_path / "src.py"
    path.write_text(source)
    assert value_checks(str(path)) == {5, 12, 16, 24}


def test_a_conftest_needing_an_absent_pytest_plugin_is_an_environment_row() -> None:
    # nki-library's conftest defines pytest-xdist's pytest_configure_node: without xdist,
    # pytest refuses it before any test starts
    printed = ("INTERNALERROR> pluggy._manager.PluginValidationError: unknown hook "
               "'pytest_configure_node' in plugin <module 'test.conftest' from "
               "'/r/test/conftest.py'>\n")
    missing = plugin_missing(printed, "/r")
    assert (missing.package, missing.where) == ("pytest-xdist", "test/conftest.py")
    got = classify(missing, "/r")
    assert (got.status, got.where) == ("environment", "test/conftest.py")
    assert "pytest-xdist, which is not installed" in got.detail
    # a hook no plugin apdsl knows defines stays pytest's own error line
    assert plugin_missing(printed.replace("configure_node", "frobnicate"), "/r") is None
