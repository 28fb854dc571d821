"""`apdsl corpus DIR` (SPEC 19) run as a user runs it, on a repository made here of kernels
written for this test: each status of the table comes from what the repository's own code did
(its tests, its `__main__` blocks), never from apdsl's opinion of the kernel."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus.drivers import find_entry_points
from apdsl.surfaces.corpus.find import parse, python_files
from apdsl.surfaces.corpus.verdict import PACKAGE, classify

KERNELS_MAIN = '''

if __name__ == "__main__":
    import numpy as np
    x = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    print(np.array_equal(scale_kernel(x), x * 2))
'''

KERNELS = kernel_module(
    hbm_kernel("add_kernel", "nl.add(nl.load(a), nl.load(b))", params="a, b"),
    hbm_kernel("scale_kernel", "nl.multiply(nl.load(a), 2.0)"),
    hbm_kernel("typo_kernel", "nl.frobnicate(nl.load(a))"),
    "@nki.jit\ndef untested_kernel(a):\n    return a",
    "@nki.jit\ndef raising_kernel(a):\n    assert a.shape[0] == 3, \"needs three rows\"\n    return a",
    hbm_kernel("refused_kernel", "nl.load(a)"), after=KERNELS_MAIN)

TESTS = '''
import unittest

import nki
import nki.language as nl
import numpy as np
import pytest

from pkg.kern import add_kernel, raising_kernel, refused_kernel, typo_kernel


def helper(a):
    return add_kernel(a, a)


def test_add():
    a = np.ones((128, 64), np.float32)
    b = np.full((128, 64), 2.0, np.float32)
    np.testing.assert_allclose(add_kernel(a, b), a + b)


def test_add_through_helper():
    a = np.ones((128, 64), np.float32)
    assert np.allclose(helper(a), 2 * a)


def test_typo():
    typo_kernel(np.ones((128, 4), np.float32))


def test_raise():
    raising_kernel(np.ones((128, 4), np.float32))


def test_refusal_expected_then_wrong_reference():
    with pytest.raises(Exception):
        refused_kernel(np.ones((200, 4), np.float32))   # 200 partitions: refused, as expected
    a = np.ones((128, 4), np.float32)
    print(np.allclose(refused_kernel(a), a + 1))        # a wrong reference: a wrong answer


class TestNested(unittest.TestCase):
    def test_nested(self):
        @nki.jit
        def negate_kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.negative(nl.load(a)))
            return out

        a = np.arange(128 * 2, dtype=np.float32).reshape(128, 2)
        self.assertTrue(np.allclose(negate_kernel(a), -a))
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "kern.py").write_text(textwrap.dedent(KERNELS))
    (root / "tests").mkdir()
    (root / "tests" / "test_kern.py").write_text(textwrap.dedent(TESTS))
    return root


@pytest.fixture(scope="module")
def measured(repo: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(repo), "--json",
                           "--timeout", "200", "-j", "2"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _by_name(doc: dict) -> dict[str, dict]:
    return {k["kernel"].split("::")[-1].split(".")[-1]: k for k in doc["kernels"]}


def test_discovery_finds_every_kernel_including_nested(repo: Path) -> None:
    sources = [parse(p) for p in python_files(str(repo))]
    entries = find_entry_points([s for s in sources if s is not None])
    names = sorted(e.qualname for e in entries)
    assert names == sorted(["add_kernel", "scale_kernel", "typo_kernel", "untested_kernel",
                            "raising_kernel", "refused_kernel",
                            "TestNested.test_nested.<locals>.negate_kernel"])
    add = next(e for e in entries if e.qualname == "add_kernel")
    kinds = [d.kind for d in add.drivers]
    assert kinds == ["pytest", "signature"]
    assert sorted(t.split("::")[-1] for t in add.drivers[0].tests) == \
        ["test_add", "test_add_through_helper"]
    scale = next(e for e in entries if e.qualname == "scale_kernel")
    assert [d.kind for d in scale.drivers] == ["main", "signature"]


def test_statuses_come_from_what_the_repository_did(measured: dict) -> None:
    k = _by_name(measured)
    assert k["add_kernel"]["status"] == "matches"
    assert k["negate_kernel"]["status"] == "matches"
    assert k["scale_kernel"]["status"] == "matches"          # its __main__ block compares
    assert k["scale_kernel"]["driver"].startswith("main:")
    assert k["typo_kernel"]["status"] == "error"
    assert k["typo_kernel"]["code"] == "APK144"
    assert k["typo_kernel"]["where"] == "pkg/kern.py:23"
    assert "nl.frobnicate" in k["typo_kernel"]["detail"]
    assert k["untested_kernel"]["status"] == "no inputs"
    assert k["raising_kernel"]["status"] == "raises"
    assert k["raising_kernel"]["where"] == "pkg/kern.py:34"
    # the expected refusal inside pytest.raises does not count; the wrong reference does
    assert k["refused_kernel"]["status"] == "mismatch"
    assert k["refused_kernel"]["where"] == "tests/test_kern.py:39"
    assert measured["total"] == 7
    assert measured["counts"]["matches"] == 3


def test_table_and_counts_as_printed(repo: Path) -> None:
    lone = repo.parent / "lone"
    (lone / "k").mkdir(parents=True)
    (lone / "k" / "one.py").write_text(textwrap.dedent(KERNELS).split("@nki.jit\ndef scale")[0]
                                       + textwrap.dedent('''
        if __name__ == "__main__":
            import numpy as np
            x = np.ones((128, 4), np.float32)
            np.testing.assert_array_equal(add_kernel(x, x), x + x)
        '''))
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(lone)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["kernel", "status", "code", "where", "detail"]
    assert lines[1].split()[:2] == ["k/one.py::add_kernel", "matches"]
    assert lines[-1] == "1 kernel entry point: 1 matches (100% match, 100% run)"
    # --jsonl: each verdict as measured, then the counts
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(lone), "--jsonl"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    kernel, end = [json.loads(line) for line in done.stdout.splitlines()]
    assert (kernel["kernel"], kernel["status"]) == ("k/one.py::add_kernel", "matches")
    assert end == {"root": str(lone.resolve()), "counts": {**end["counts"], "matches": 1},
                   "total": 1}


def test_a_kernel_that_does_not_end_is_a_timeout(tmp_path: Path) -> None:
    (tmp_path / "spin.py").write_text(textwrap.dedent('''
        import nki


        @nki.jit
        def spin_kernel(a):
            while True:
                pass


        if __name__ == "__main__":
            import numpy as np
            spin_kernel(np.ones((128, 4), np.float32))
        '''))
    kernel = _corpus_json(tmp_path, "3")
    assert (kernel["status"], kernel["detail"]) == ("timeout", "no end within 3 s of CPU time")



def test_the_limit_is_the_kernels_from_its_call(tmp_path: Path) -> None:
    # nki-library's attention_cte tests spend minutes of CPU generating their parameter sweep
    # at import, before any test runs: that is the harness's cost, not the kernel's
    (tmp_path / "kern.py").write_text(kernel_module(
        hbm_kernel("twice_kernel", "nl.multiply(nl.load(a), 2.0)")))
    sweep = """
        import time

        import numpy as np

        from kern import twice_kernel

        began = time.process_time()
        while time.process_time() - began < {seconds}:  # a sweep's generation
            pass


        def test_twice():
            x = np.ones((4, 4), np.float32)
            np.testing.assert_allclose(twice_kernel(x), 2 * x)
        """
    (tmp_path / "test_kern.py").write_text(textwrap.dedent(sweep.format(seconds=4)))
    got = _corpus_json(tmp_path, "2")
    assert got["status"] == "matches", got
    assert got["cpu_seconds"] > 4, got
    # what comes before the call has its own limit, five times the kernel's
    (tmp_path / "test_kern.py").write_text(textwrap.dedent(sweep.format(seconds="1e9")))
    got = _corpus_json(tmp_path, "1")
    assert (got["status"], got["detail"]) == \
        ("timeout", "its driver did not call the kernel within 5 s of CPU time"), got



def test_the_drivers_reference_after_the_kernel_returned_has_time_of_its_own(
        tmp_path: Path) -> None:
    # nki-library's cross-entropy backward test computes its torch reference after the kernel
    # returned: the kernel's limit is not the reference's
    (tmp_path / "kern.py").write_text(kernel_module(
        hbm_kernel("twice_kernel", "nl.multiply(nl.load(a), 2.0)")))
    (tmp_path / "test_kern.py").write_text(textwrap.dedent("""
        import time

        import numpy as np

        from kern import twice_kernel


        def test_twice():
            x = np.ones((4, 4), np.float32)
            got = twice_kernel(x)
            began = time.process_time()
            while time.process_time() - began < 4:  # a slow reference
                pass
            np.testing.assert_allclose(got, 2 * x)
        """))
    got = _corpus_json(tmp_path, "2")
    assert got["status"] == "matches", got
    assert got["cpu_seconds"] > 4, got

def _corpus_json(folder: Path, timeout: str) -> dict:
    """The one kernel's row of `apdsl corpus FOLDER --json --timeout TIMEOUT`."""
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(folder), "--json",
                           "--timeout", timeout], capture_output=True, text=True, timeout=300)
    kernel, = json.loads(done.stdout)["kernels"]
    return kernel

def test_time_running_out_before_the_kernel_is_reached_says_what_stopped_the_tests(
        tmp_path: Path) -> None:
    # the first test stops at another kernel's refusal, the second spins before it reaches
    # the kernel: a timeout, naming the first test's stop
    (tmp_path / "kern.py").write_text(kernel_module(
        hbm_kernel("odd_kernel", "nl.frobnicate(nl.load(a))"),
        hbm_kernel("twice_kernel", "nl.multiply(nl.load(a), 2.0)")))
    (tmp_path / "test_kern.py").write_text(textwrap.dedent('''
        import numpy as np

        from kern import odd_kernel, twice_kernel


        def test_odd_then_twice():
            odd_kernel(np.ones((4, 4), np.float32))
            twice_kernel(np.ones((4, 4), np.float32))


        def test_spin_then_twice():
            while True:
                pass
            twice_kernel(np.ones((4, 4), np.float32))
        '''))
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--json",
                           "--timeout", "2"], capture_output=True, text=True, timeout=300)
    got = {k["kernel"]: k for k in json.loads(done.stdout)["kernels"]}
    twice = got["kern.py::twice_kernel"]
    assert twice["status"] == "timeout", twice
    assert twice["detail"].startswith("its driver did not call the kernel within 10 s of CPU "
                                      "time; 1 test(s) of "
                                      "pytest:test_kern.py stopped before reaching it, the "
                                      "first at APK144"), twice


def test_the_time_limit_counts_cpu_time_and_a_waiting_worker_ends_too(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from apdsl.surfaces.corpus import run
    out = str(tmp_path / "verdict.json")
    # a worker that computes: stopped once it has used its allowance of CPU time, which a
    # loaded machine stretches in wall clock but not in CPU seconds (at a load of 15 a
    # spinning process gets under a tenth of a core: the wall-clock bound is put out of reach)
    monkeypatch.setattr(run, "WALL_FACTOR", 1000)
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            start_new_session=True)
    late, used = run._run_limited(spin, 0.2, out)  # before the call: five times the limit
    assert late == "its driver did not call the kernel within 1 s of CPU time" and used >= 1.0
    run.touch(run.marker(out, "started"))  # the kernel's call: its limit from here
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            start_new_session=True)
    late, used = run._run_limited(spin, 1.0, out)
    assert late == "no end within 1 s of CPU time" and 1.0 <= used < 2.0
    run.touch(run.marker(out, "returned"))  # after the return: five times the limit again
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            start_new_session=True)
    late, used = run._run_limited(spin, 0.2, out)
    assert late == "no end within 1 s of CPU time after the kernel returned" and used >= 1.0
    # a worker that waits (a deadlocked harness): stopped by the wall clock
    monkeypatch.setattr(run, "WALL_FACTOR", 2)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)
    late, used = run._run_limited(sleeper, 1.0, str(tmp_path / "other.json"))
    assert late.startswith("no end within 10 s of wall clock") and used < 1.0
    # one that ends: its own account of its CPU time
    quick = subprocess.Popen([sys.executable, "-c", "sum(range(10**6))"],
                             start_new_session=True)
    late, used = run._run_limited(quick, 60.0, out)
    assert late == "" and quick.returncode == 0 and 0.0 < used < 60.0


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "is not one" in done.stderr
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--json",
                           "--jsonl"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not allowed with argument" in done.stderr, done.stderr


def test_an_exception_raised_in_apdsl_is_a_crash(tmp_path: Path) -> None:
    code = compile("def f():\n    raise TypeError('bad operand')\n", f"{PACKAGE}/x.py", "exec")
    space: dict = {}
    exec(code, space)
    try:
        space["f"]()
    except TypeError as e:
        v = classify(e, str(tmp_path))
    assert (v.status, v.code, v.where) == ("crash", "TypeError", "apdsl/x.py:2")
    missing = ModuleNotFoundError("No module named 'neuronxcc.nki.foo'", name="neuronxcc.nki.foo")
    assert classify(missing, str(tmp_path)).status == "crash"
    # a package the repository needs and this environment lacks: neither apdsl's nor the
    # kernel's fault
    other = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert classify(other, str(tmp_path)).status == "environment"


def test_a_driver_that_only_prints_gives_way_to_one_that_compares(tmp_path: Path) -> None:
    # the SDK's fused_mamba: the kernels' own file prints its results, mamba_torch.py compares
    printing = '\n\nif __name__ == "__main__":\n    import numpy as np\n' \
        '    print(twice_kernel(np.ones((4, 4), np.float32)))\n'
    (tmp_path / "kern.py").write_text(kernel_module(
        hbm_kernel("twice_kernel", "nl.multiply(nl.load(a), 2.0)"), after=printing))
    (tmp_path / "check.py").write_text(textwrap.dedent("""
        import numpy as np

        from kern import twice_kernel

        if __name__ == "__main__":
            x = np.arange(16, dtype=np.float32).reshape(4, 4)
            print(np.allclose(twice_kernel(x), {expected}))
        """))
    for expected, status in (("2 * x", "matches"), ("3 * x", "mismatch")):
        (tmp_path / "check.py").write_text(
            (tmp_path / "check.py").read_text().replace("{expected}", expected))
        got = _corpus_json(tmp_path, "60")
        assert (got["status"], got["driver"]) == (status, "main:check.py"), got
        (tmp_path / "check.py").write_text(
            (tmp_path / "check.py").read_text().replace(expected, "{expected}"))
    # with nothing else to run it, the printing script's run stands
    (tmp_path / "check.py").unlink()
    got = _corpus_json(tmp_path, "60")
    assert (got["status"], got["driver"]) == ("runs", "main:kern.py"), got


def test_kernel_option_measures_only_the_entries_named(repo: Path) -> None:
    """`-k TEXT` keeps the entry points whose FILE::NAME contains TEXT (repeatable); the rest
    are not run, and the verdicts of those kept are the whole run's."""
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(repo), "--json",
                           "-k", "::add_kernel", "--kernel", "typo"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    k = _by_name(doc)
    assert sorted(k) == ["add_kernel", "typo_kernel"]
    assert doc["total"] == 2
    assert k["add_kernel"]["status"] == "matches"
    assert k["typo_kernel"]["code"] == "APK144"
    # nothing matches: a command-line error (exit 2), nothing measured
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(repo), "-k", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "no kernel entry point under" in done.stderr and "'nope'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_stop_the_test_expected_is_the_kernels_verdict_not_no_inputs(tmp_path: Path) -> None:
    """A kernel whose only tests expect it to fail (an xfail mark, as the SDK's indirect
    dma_transpose test has, or pytest.raises) was called and stopped at apdsl's diagnostic:
    that stop is its row, saying the test expected it, not "no inputs: does not call it"."""
    (tmp_path / "kern.py").write_text(kernel_module(
        hbm_kernel("marked_kernel", "nl.load(a)"), hbm_kernel("raised_kernel", "nl.load(a)")))
    (tmp_path / "test_kern.py").write_text(textwrap.dedent('''
        import numpy as np
        import pytest

        from kern import marked_kernel, raised_kernel


        @pytest.mark.xfail(reason="fails on the authors' simulator too")
        def test_marked():
            marked_kernel(np.ones((200, 4), np.float32))   # 200 partitions: refused


        def test_raised():
            with pytest.raises(Exception):
                raised_kernel(np.ones((200, 4), np.float32))
        '''))
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--json",
                           "--timeout", "60"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    k = _by_name(json.loads(done.stdout))
    loads = [n for n, line in enumerate((tmp_path / "kern.py").read_text().splitlines(), 1)
             if "nl.load(a)" in line]
    for name, line in zip(("marked_kernel", "raised_kernel"), loads, strict=True):
        row = k[name]
        assert (row["status"], row["where"]) == ("error", f"kern.py:{line}"), row
        assert row["code"].startswith("APK"), row
        assert "its test expected the kernel to fail" in row["detail"], row
        assert row["driver"] == "pytest:test_kern.py", row
