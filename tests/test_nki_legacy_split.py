"""A legacy kernel's operand needing more free access-pattern entries than the hardware has
(APK304): the legacy compiler issued the instruction once per position of its outer free
dimensions, and apdsl issues the same pieces, each checked, lowered and costed as an
instruction of its own.  The current API keeps the refusal.  The kernels are written for these
tests; NumPy's fancy indexing is the oracle for results, and the current API's hand-split form
of the same kernel the oracle for `lower`."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import lowered_rows

LEGACY = """\
from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def k(a):
    n = {n}
    out = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i_p, dx, hx, wx, dy, hy, wy = nl.mgrid[0:128, 0:2, 0:2, 0:2, 0:n, 0:n, 0:n]
    r = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.sbuf)
    r[i_p, dx, hx, wx, dy, hy, wy] = {scale} * t[i_p, dy + dx, hy + hx, wy + wx] + \\
        t[i_p, dy + 1 - dx, hy + hx, wy]
    nl.store(out, r)
    return out
"""

# the current API's form of the same kernel, split by hand over (dx, hx) as the legacy compiler
# split it: the same instructions on the same access patterns
CURRENT = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a):
    n = {n}
    m = n + 1
    out = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, m, m, m), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    s = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.sbuf)
    u = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.sbuf)
    free = m * m * m
    for dx in range(2):
        for hx in range(2):
            nisa.tensor_scalar(dst=s[:, dx:dx + 1, hx:hx + 1],
                               data=t.ap([[free, 128], [1, 2], [m * m, n], [m, n], [1, n]],
                                         offset=dx * m * m + hx * m),
                               op0=nl.multiply, operand0={scale}, reverse0=True)
    for dx in range(2):
        for hx in range(2):
            nisa.tensor_tensor(dst=u[:, dx:dx + 1, hx:hx + 1], data1=s[:, dx:dx + 1, hx:hx + 1],
                               data2=t.ap([[free, 128], [0, 2], [m * m, n], [m, n], [1, n]],
                                          offset=(1 - dx) * m * m + hx * m),
                               op=nl.add)
    r = nl.ndarray((128, 2, 2, 2, n, n, n), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=u)
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def _oracle(a: np.ndarray, n: int, scale: float) -> np.ndarray:
    p, dx, hx, wx, dy, hy, wy = np.ogrid[0:128, 0:2, 0:2, 0:2, 0:n, 0:n, 0:n]
    return np.float32(scale) * a[p, dy + dx, hy + hx, wy + wx] + a[p, dy + 1 - dx, hy + hx, wy]


def _apdsl(folder, source: str, command: str, *extra: str) -> subprocess.CompletedProcess:
    (folder / "kern.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "apdsl", command, "kern.py", "-i", "a=a.npy",
                           *extra], cwd=folder, capture_output=True, text=True)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(n=st.integers(1, 3), scale=st.sampled_from([3.0, -0.5]))
def test_six_entry_operands_run_as_the_legacy_compilers_pieces(tmp_path_factory, n, scale):
    folder = tmp_path_factory.mktemp("split")
    a = np.random.default_rng(n).standard_normal((128, n + 1, n + 1, n + 1)).astype(np.float32)
    np.save(folder / "a.npy", a)
    proc = _apdsl(folder, LEGACY.format(n=n, scale=scale), "run", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(folder / "out.npy"), _oracle(a, n, scale))


def test_the_pieces_are_the_current_forms_hand_split(tmp_path):
    """`lower` of the legacy kernel is the current API's kernel split by hand: four
    tensor_scalar and four tensor_tensor pieces over (dx, hx), each operand within four free
    entries, and the same results."""
    a = np.random.default_rng(3).standard_normal((128, 3, 3, 3)).astype(np.float32)
    legacy = lowered_rows(tmp_path, LEGACY.format(n=2, scale=3.0), {"a": a})
    current = lowered_rows(tmp_path, CURRENT.format(n=2, scale=3.0), {"a": a})
    assert legacy == current
    assert [r["op"] for r in legacy] == ["dma_copy"] + ["tensor_scalar"] * 4 + \
        ["tensor_tensor"] * 4 + ["tensor_copy", "dma_copy"]
    for row in legacy:
        for operand in row["operands"].values():
            assert len(operand["pattern"]) - (operand["buffer"] == "sbuf") <= 4
    np.save(tmp_path / "a.npy", a)
    proc = _apdsl(tmp_path, CURRENT.format(n=2, scale=3.0), "run", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), _oracle(a, 2, 3.0))


def test_the_pieces_cost_what_the_current_forms_hand_split_costs(tmp_path):
    a = np.random.default_rng(4).standard_normal((128, 3, 3, 3)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    got = []
    for source in (LEGACY, CURRENT):
        proc = _apdsl(tmp_path, source.format(n=2, scale=3.0), "profile", "--json")
        assert proc.returncode == 0, proc.stderr
        got.append(json.loads(proc.stdout)["total_ns"])
    assert got[0] == got[1] > 0


def test_the_current_api_keeps_the_refusal(tmp_path):
    source = CURRENT.format(n=2, scale=3.0).replace(
        "    for dx in range(2):\n        for hx in range(2):\n            nisa.tensor_scalar(",
        "    for dx in range(1):\n        for hx in range(1):\n            nisa.tensor_scalar(", 1
    ).replace("dst=s[:, dx:dx + 1, hx:hx + 1],\n                               data=t.ap([[free, "
              "128], [1, 2],", "dst=s,\n                               data=t.ap([[free, 128], "
              "[m * m, 2], [m, 2], [1, 2],")
    assert "[m * m, 2], [m, 2], [1, 2]" in source
    np.save(tmp_path / "a.npy", np.zeros((128, 3, 3, 3), np.float32))
    proc = _apdsl(tmp_path, source, "run")
    assert proc.returncode == 1
    assert "kern.py:18:13: error[APK304]: tensor_scalar: data t needs 6 free access-pattern " \
        "entries; trn2 allows 4" in proc.stderr, proc.stderr


@pytest.mark.parametrize("body, reason", [
    # dst and src are one tile seen two ways: a piece would read what an earlier one wrote
    ("r[i_p, dx, hx, wx, dy, hy, wy] = nisa.tensor_copy(r[i_p, wy, hy, dy, wx, hx, dx])",
     "dst shares src's memory through another view"),
    # a reduction over the free axes is no element-wise instruction
    ("s = nisa.tensor_reduce(nl.add, r[i_p, wy, hy, dy, wx, hx, dx], axis=[1, 2, 3, 4, 5, 6])",
     "tensor_reduce does not compute dst element by element"),
])
def test_a_legacy_instruction_apdsl_does_not_split_keeps_the_refusal_and_says_why(
        tmp_path, body, reason):
    source = f"""\
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def k(a):
    r = nl.zeros((128, 2, 2, 2, 2, 2, 2), dtype=nl.float32, buffer=nl.sbuf)
    i_p, dx, hx, wx, dy, hy, wy = nl.mgrid[0:128, 0:2, 0:2, 0:2, 0:2, 0:2, 0:2]
    {body}
    return a
"""
    np.save(tmp_path / "a.npy", np.zeros((128, 4), np.float32))
    proc = _apdsl(tmp_path, source, "run")
    assert proc.returncode == 1, proc.stderr
    assert "error[APK304]" in proc.stderr and "kern.py:10:" in proc.stderr, proc.stderr
    assert f"apdsl splits an instruction as the legacy compiler did, but not this one: " \
        f"{reason}" in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr


def test_check_mode_splits_as_run_does(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((128, 3, 3, 3), np.float32))
    proc = _apdsl(tmp_path, LEGACY.format(n=2, scale=3.0), "check")
    assert proc.returncode == 0, proc.stderr
