"""A launch script that checks each kernel of a module in turn through one helper gives every
kernel its own inputs and comparison, even when an earlier kernel stops (SPEC 19): the kernels
here are written for this test; the script's comparison is the oracle."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus.script_calls import without_other_kernels

KERNELS = kernel_module(
    hbm_kernel("double_kernel", "nl.multiply(nl.load(a), 2.0)"),
    hbm_kernel("odd_kernel", "nl.frobnicate(nl.load(a))"),
    hbm_kernel("twice_kernel", "nl.add(t, t)", first='assert a.shape[0] % 64 == 0, "rows in 64s"',
               body=("t = nl.load(a)",)))

SCRIPT = '''
import numpy as np

from kern import double_kernel, odd_kernel, twice_kernel

if __name__ == "__main__":
    x = np.linspace(-1, 1, 64 * 8, dtype=np.float32).reshape(64, 8)

    def check(kernel):
        np.testing.assert_allclose(kernel(x), 2 * x)

    check(double_kernel)
    check(odd_kernel)
    check(twice_kernel)
'''


def test_each_kernel_the_script_checks_gets_the_scripts_inputs(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(textwrap.dedent(KERNELS))
    (tmp_path / "run_all.py").write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = {k["kernel"].split("::")[-1]: k for k in json.loads(done.stdout)["kernels"]}
    assert got["double_kernel"]["status"] == "matches"
    assert (got["odd_kernel"]["status"], got["odd_kernel"]["code"]) == ("error", "APK144")
    # checked after the kernel that stops: before, it had no inputs (its signature's assumed
    # 128 rows pass its assert, but nothing compares a made-up run)
    assert got["twice_kernel"]["status"] == "matches", got["twice_kernel"]
    assert got["twice_kernel"]["driver"] == "main:run_all.py"


def test_a_script_that_does_not_pass_the_kernel_runs_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(textwrap.dedent(KERNELS))
    script = tmp_path / "run_one.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("    check(twice_kernel)\n", ""))
    assert without_other_kernels(str(script), str(tmp_path / "kern.py"), "twice_kernel") is None
    code = without_other_kernels(str(script), str(tmp_path / "kern.py"), "double_kernel")
    assert code is not None and code.co_filename == str(script.resolve())
