"""Check mode forgets the known value of every output operand an instruction writes (`dst`,
`reduce_res`, `dst_idx`, ... as the table declares them, by keyword or by position), so a later
`host()` of it is unknown rather than stale; values nothing wrote stay known."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

from apdsl.runtime.table import TABLE, implementation
from apdsl.semantics.dryrun import written
from apdsl.tensor.view import ndarray

OUTPUTS = sorted(name for name, e in TABLE.items() if any(o.writes for o in e.operands))


@pytest.mark.parametrize("name", OUTPUTS)
def test_every_declared_output_counts_as_written(name):
    fn = implementation(name)
    params = [p.name for p in inspect.signature(fn).parameters.values()]
    roles = {o.role for o in TABLE[name].operands if o.writes}
    tensors = {p: ndarray((2, 2), "float32", "sbuf") for p in params}
    got = written(name, fn, (), tensors)  # by keyword
    assert {id(t) for t in got} == {id(tensors[r]) for r in roles}
    args = tuple(tensors[p] for p in params if p != "name")
    got = written(name, fn, args, {})  # by position
    assert {id(t) for t in got} == {id(tensors[r]) for r in roles}


def _check(tmp_path, source, **inputs):
    f = tmp_path / "k.apk"
    f.write_text(source)
    cmd = [sys.executable, "-m", "apdsl"]
    flags = []
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        flags += ["-i", f"{name}={tmp_path / f'{name}.npy'}"]
    env = {**os.environ, "NO_COLOR": "1"}
    run = subprocess.run([*cmd, "run", str(f), *flags], capture_output=True, text=True, env=env)
    check = subprocess.run([*cmd, "check", str(f), *flags], capture_output=True, text=True,
                           env=env)
    return run, check


REDUCE_RES = """\
kernel k(R: f32[4, 1] @ sbuf, X: f32[4, 8] @ hbm):
    x: f32[4, 8] @ sbuf
    dma_copy(dst=x, src=X)
    e: f32[4, 8] @ sbuf
    nisa.activation(dst=e, op=nl.exp, data=x, reduce_op=nl.add, reduce_cmd="reset_reduce",
                    reduce_res=R)
    assert host(R).min() > 1
"""

DST_IDX = """\
kernel k(I: u32[4, 8] @ sbuf, X: f32[4, 16] @ hbm):
    x: f32[4, 16] @ sbuf
    dma_copy(dst=x, src=X)
    vals: f32[4, 8] @ sbuf
    tensor_copy(vals, x[:, 0:8])
    d: f32[4, 16] @ sbuf
    nisa.nc_match_replace8(d, x, vals, -1.0, I)
    assert host(I).max() == 7
"""


@pytest.mark.parametrize("source,inputs", [
    (REDUCE_RES, {"R": np.zeros((4, 1), np.float32), "X": np.ones((4, 8), np.float32)}),
    (DST_IDX, {"I": np.zeros((4, 8), np.uint32),
               "X": np.arange(64, dtype=np.float32).reshape(4, 16)}),
], ids=["reduce_res", "dst_idx"])
def test_check_does_not_use_a_stale_value_of_an_output_other_than_dst(tmp_path, source, inputs):
    run, check = _check(tmp_path, source, **inputs)
    assert run.returncode == 0, run.stderr
    assert check.returncode == 0, check.stderr  # the input's old zeros are not its value


def test_a_value_nothing_wrote_stays_known(tmp_path):
    source = REDUCE_RES.replace("assert host(R).min() > 1", "assert host(X).max() == 2")
    run, check = _check(tmp_path, source, R=np.zeros((4, 1), np.float32),
                        X=np.ones((4, 8), np.float32))
    assert run.returncode == 1 and check.returncode == 1
    assert "APK901" in check.stderr and "k.apk:7:5" in check.stderr
