"""`nl.no_reorder()` and the legacy `nki.compiler.no_reorder()` loop directive: a kernel
computes the same with them (apdsl keeps program order anyway) and its profile is the same; a
dynamic loop inside a `no_reorder` block is refused as the reference says; `directives=` takes
nothing else.  Oracle: NumPy, and the same kernel without the control."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support import raises_code

import apdsl.nki as nki
import apdsl.nki.compiler as ncc
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl


def scaled_rows(a, ordered: bool):
    """Each 32-row block of `a` times (its block number + 1), block by block."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    loop = nl.sequential_range(4, directives=ncc.no_reorder()) if ordered else range(4)
    for i in loop:
        t = nl.ndarray((32, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 32:(i + 1) * 32, :])
        u = nl.ndarray((32, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=float(i + 1))
        nisa.dma_copy(dst=out[i * 32:(i + 1) * 32, :], src=u)
    return out


def want(a: np.ndarray) -> np.ndarray:
    return a * np.repeat(np.arange(1, 5, dtype=np.float32), 32)[:, None]


def test_the_legacy_loop_directive_runs_the_loop_in_order():
    a = np.random.default_rng(0).standard_normal((128, 16)).astype(np.float32)
    k = nki.jit(lambda a: scaled_rows(a, True))
    np.testing.assert_array_equal(k(a), want(a))


def test_a_no_reorder_block_computes_what_the_kernel_without_it_does():
    a = np.random.default_rng(1).standard_normal((128, 16)).astype(np.float32)

    @nki.jit
    def k(a):
        with nl.no_reorder():
            return scaled_rows(a, False)

    np.testing.assert_array_equal(k(a), want(a))


def test_a_dynamic_loop_inside_the_block_is_refused_and_allowed_after_it():
    seen = []

    @nki.jit
    def k(a):
        with nl.no_reorder():
            seen.extend(nl.sequential_range(2))  # a static loop is fine there
        seen.extend(nl.dynamic_range(3))  # the block has ended
        with nl.no_reorder():
            for _ in nl.dynamic_range(2):
                pass
        return a

    with raises_code("APK157") as e:
        k(np.zeros((4, 4), np.float32))
    assert seen == [0, 1, 0, 1, 2]
    assert "no_reorder" in e.value.message


@pytest.mark.parametrize("directive", ["2", "'no_reorder'", "ncc.multi_buffer"])
def test_directives_takes_no_reorder_only(directive):
    @nki.jit
    def k(a):
        for _ in nl.sequential_range(2, directives=eval(directive)):
            pass
        return a

    with raises_code("APK152"):
        k(np.zeros((4, 4), np.float32))


def test_the_profile_is_the_same_with_the_control(tmp_path: Path):
    """As a user runs it: `apdsl profile` of the kernel with the legacy directive and without
    prints the same estimate (apdsl schedules program order either way)."""
    body = textwrap.dedent('''
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl
        import neuronxcc.nki.isa as nisa
        import neuronxcc.nki.compiler as ncc

        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for i in LOOP:
                t = nl.load(a[i * 32:(i + 1) * 32, :])
                nl.store(out[i * 32:(i + 1) * 32, :], nl.exp(t))
            return out
        ''')
    np.save(tmp_path / "a.npy", np.zeros((128, 64), np.float32))
    printed = []
    for loop in ("nl.sequential_range(4, directives=ncc.no_reorder())", "range(4)"):
        (tmp_path / "k.py").write_text(body.replace("LOOP", loop))
        r = subprocess.run([sys.executable, "-m", "apdsl", "profile", "k.py", "-i", "a=a.npy"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        printed.append(r.stdout)
    assert "estimate" in printed[0] and printed[0] == printed[1]


def python_range(*args):
    """What Python's range gives for these arguments (`range(n, None, 1)` is not valid
    Python, but `nl.affine_range(n)` passes stop=None and step=1: that is `range(n)`)."""
    if args[1:] == (None, 1):
        return list(range(args[0]))
    try:
        return list(range(*args))
    except TypeError:
        return "TypeError"


@pytest.mark.parametrize("args", [(3,), (1, 7, 2), (5, 0, -1), (4, None, 1), (5, None, 2)])
def test_the_ranges_are_pythons_range(args):
    """With or without `directives=`, the values of `range(*args)`, or its TypeError."""
    seen = []

    @nki.jit
    def k(a):
        for name in ("affine_range", "sequential_range", "static_range"):
            for extra in ({}, {"directives": ncc.no_reorder()}):
                try:
                    seen.append(list(getattr(nl, name)(*args, **extra)))
                except TypeError:
                    seen.append("TypeError")
        return a

    k(np.zeros((2, 2), np.float32))
    assert seen == [python_range(*args)] * 6
