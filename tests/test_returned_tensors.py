"""A kernel may return any tensor it can name, including one declared in its body: the returned
tensor outlives the block that declared it (SPEC section 4, Memory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from support import raises_code

import apdsl

TRANSPOSE = """\
kernel transpose(a: f32[4, 8] @ hbm) -> f32[8, 4] @ hbm:
    r: f32[8, 4] @ hbm
    dma_copy(r, a.permute((1, 0)))
    return r
"""

# Declared in a loop body and in a helper, returned as a tuple from two levels down.
NESTED = """\
def halves(a):
    for i in range(2):
        lo: f32[2, 8] @ hbm
        hi: f32[2, 8] @ hbm
        scratch: f32[4, 8] @ hbm
        dma_copy(scratch, a)
        if i == 1:
            dma_copy(lo, scratch[0:2])
            dma_copy(hi, scratch[2:4])
            return (hi, lo)

kernel swap(a: f32[4, 8] @ hbm):
    hi, lo = halves(a)
    return (hi, lo)
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=120)


def test_run_and_output_of_a_tensor_declared_in_the_kernel(tmp_path):
    (tmp_path / "t.apk").write_text(TRANSPOSE)
    a = np.arange(32, dtype=np.float32).reshape(4, 8) / 4
    np.save(tmp_path / "a.npy", a)
    r = cli("run", "t.apk", "-i", "a=a.npy", "-o", "out.npy", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "not readable" not in r.stdout and r.stderr == ""
    assert "transpose -> float32[8, 4] @ hbm" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), a.T)
    c = cli("check", "t.apk", cwd=tmp_path)
    assert c.returncode == 0 and "ok" in c.stdout, c.stderr


def test_python_api_returns_the_declared_tensor():
    a = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_array_equal(apdsl.run(TRANSPOSE, inputs={"a": a}), a.T)


def test_tuple_declared_in_a_nested_block_of_a_helper(tmp_path):
    from apdsl.semantics.program import Program
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    hi, lo = Program(NESTED).run("swap", {"a": a}).value
    np.testing.assert_array_equal(hi.numpy(), a[2:4])
    np.testing.assert_array_equal(lo.numpy(), a[0:2])
    assert apdsl.check(NESTED) == []
    (tmp_path / "n.apk").write_text(NESTED)
    r = cli("run", "n.apk", cwd=tmp_path)
    assert r.returncode == 0 and "not readable" not in r.stdout, r.stdout + r.stderr


def test_what_is_not_returned_is_still_freed():
    """Only the returned storage survives: a view of a scratch tensor the block declared is
    still refused once the block is over."""
    source = """\
def pair(a):
    keep: f32[4, 8] @ hbm
    scratch: f32[4, 8] @ hbm
    dma_copy(keep, a)
    dma_copy(scratch, a)
    return (keep, scratch[0:1])

kernel k(a: f32[4, 8] @ hbm) -> f32[1, 8] @ hbm:
    keep, view = pair(a)
    out: f32[1, 8] @ hbm
    dma_copy(out, keep[0:1])
    return view
"""
    # both survive: `view` is a view of returned storage too
    a = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(apdsl.run(source, inputs={"a": a}), a[0:1])
    freed = source.replace("return (keep, scratch[0:1])", "other = scratch[0:1]\n"
                           "    return keep").replace("keep, view = pair(a)",
                                                      "keep = pair(a)\n    view = keep[0:1]")
    np.testing.assert_array_equal(apdsl.run(freed, inputs={"a": a}), a[0:1])


def test_returned_onchip_tiles_give_their_capacity_back():
    """A helper returning a big SBUF tile, called in a loop: each tile's capacity returns when
    nothing refers to it any more (five 200 KiB-a-partition tiles do not fit at once)."""
    source = """\
def tile(v):
    t: f32[128, 51200] @ sbuf
    memset(t, v)
    return t

kernel k() -> f32[128, 4] @ hbm:
    out: f32[128, 4] @ hbm
    for i in range(5):
        dma_copy(out, tile(i)[:, 0:4])
    return out
"""
    np.testing.assert_array_equal(apdsl.run(source), np.full((128, 4), 4, np.float32))


def test_a_returned_view_of_a_freed_outer_block_is_still_an_error():
    source = """\
kernel k() -> f32[4, 8] @ hbm:
    out: f32[4, 8] @ hbm
    for i in range(1):
        t: f32[4, 8] @ hbm = 1.0
        v = t
    dma_copy(out, v)
    return out
"""
    with raises_code("APK408"):
        apdsl.run(source)


def test_returning_an_unwritten_tensor_is_an_error_not_a_summary(tmp_path):
    """`run` prints a few of the result's values; a result nothing wrote has none to print: the
    kernel's result was never written (APK180, exit 1, at its return)."""
    path = tmp_path / "k.apk"
    path.write_text("kernel k(a: f32[4, 8] @ hbm):\n    r: f32[4, 8] @ hbm\n    return r\n")
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(path)], capture_output=True,
                       text=True, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "k.apk:3:5: error[APK180]: the kernel's result `r` was never written" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
