"""Launch on logical NeuronCores for `.apk` kernels (SPEC section 11): `apdsl run FILE.apk
--grid N` (and lower, profile) runs the kernel once per program id in id order, the programs
sharing their inputs and their shared-HBM outputs, as the Python frontend's `kernel[n]` does."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from apdsl.semantics.program import Program

SPMD = """\
@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows = a.shape[0] // nl.num_programs(0)
    start = nl.program_id(0) * rows
    x = nl.load(a[start:start + rows, :])
    y = nl.load(b[start:start + rows, :])
    nl.store(out[start:start + rows, :], nl.add(x, y))
    return out
"""


def _inputs():
    rng = np.random.default_rng(7)
    return {"a": rng.standard_normal((256, 64), dtype=np.float32),
            "b": rng.standard_normal((256, 64), dtype=np.float32)}


def test_each_program_does_its_share_and_the_outputs_are_shared():
    x = _inputs()
    two = Program(SPMD, "spmd.apk").run("add", x, trace=True, grid=(2,))
    np.testing.assert_array_equal(two.value.numpy(), x["a"] + x["b"])
    # each program loads its 128 rows, program 0 first
    loads = [r for r in two.trace.records if r.op == "dma_copy" and r.location[1] == 6]
    assert [r.operands["src"][0].offset for r in loads] == [0, 128 * 64]
    # one program would need 256-row tiles: more partitions than a tile has
    with pytest.raises(Exception) as info:
        Program(SPMD, "spmd.apk").run("add", x)
    assert getattr(info.value, "code", None) == "APK152"


def test_a_program_allocating_other_shared_outputs_is_an_error():
    src = SPMD.replace("out = nl.ndarray(a.shape,",
                       "out = nl.ndarray((a.shape[0] + nl.program_id(0), a.shape[1]),")
    with pytest.raises(Exception) as info:
        Program(src, "spmd.apk").run("add", _inputs(), grid=(2,))
    assert getattr(info.value, "code", None) == "APK145"


def test_cli_grid_for_an_apk_file(tmp_path):
    f = tmp_path / "spmd.apk"
    f.write_text(SPMD)
    x = _inputs()
    for k, v in x.items():
        np.save(tmp_path / f"{k}.npy", v)
    base = [sys.executable, "-m", "apdsl"]
    ins = ["-i", f"a={tmp_path / 'a.npy'}", "-i", f"b={tmp_path / 'b.npy'}"]
    r = subprocess.run(base + ["run", str(f), *ins, "--grid", "2", "-o", str(tmp_path / "o.npy")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), x["a"] + x["b"])
    low = subprocess.run(base + ["lower", str(f), *ins, "--grid", "2"], capture_output=True,
                         text=True)
    assert low.returncode == 0 and low.stdout.count("dma_copy") == 6
    prof = subprocess.run(base + ["profile", str(f), *ins, "--grid", "2", "--json"],
                          capture_output=True, text=True)
    assert prof.returncode == 0, prof.stderr
    assert json.loads(prof.stdout)["instructions"] == 8  # 2 programs x (2 loads, add, store)
    bad = subprocess.run(base + ["run", str(f), *ins, "--grid", "3"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "1 or 2 logical NeuronCores" in bad.stderr
    assert "Traceback" not in bad.stderr
