"""The synchronisation checker's fast paths (apdsl.runtime.sync): an instruction's operand facts
kept per operand views (a plan), accesses kept as plain records, events validated cheaply.
Whatever the fast path, the checker reports what it reported with every plan made afresh: the
same race, at both lines, the same deadlock and double set."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code
from test_pipes_oracle import _tensors, programs, run_program

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime import sync
from apdsl.semantics.program import Program

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

# A load (MTE2) and a move to L0A (MTE1) in a loop, ping-ponged by events; on the last trip
# the move's wait is left out (`skip`), when every instruction's plan is already kept.
LOOP = """\
kernel k(A: f16[16, 16] @ gm) -> f16[16, 16] @ gm:
    C = ndarray((16, 16), f16, gm)
    a1 = ndarray((16, 16), f16, l1, "NZ")
    a0 = ndarray((16, 16), f16, l0a, "ZZ")
    set_flag("MTE1_MTE2", 0)
    for k in range(4):
        wait_flag("MTE1_MTE2", 0)
        dma_copy(a1, A)
        set_flag("MTE2_MTE1", 0)
        if k != SKIP:
            wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, a1)
        set_flag("MTE1_MTE2", 0)
    wait_flag("MTE1_MTE2", 0)
    return A
"""
LINES = LOOP.splitlines()
LOAD = LINES.index("        dma_copy(a1, A)") + 1
MOVE = LINES.index("        dma_copy(a0, a1)") + 1
SET = LINES.index('        set_flag("MTE2_MTE1", 0)') + 1


def run_loop(skip: int, source: str = LOOP):
    a = np.ones((16, 16), np.float16)
    return Program(source.replace("SKIP", str(skip)), "loop.apk").run("k", {"A": a})


def error_of(fn):
    try:
        fn()
    except ApdslError as e:
        return e
    return None


def test_the_loop_runs_clean_with_every_wait():
    assert run_loop(-1).warnings == []


@pytest.mark.parametrize("skip", [0, 3])
def test_a_race_on_views_whose_plan_is_kept_is_reported_at_both_lines(skip):
    made = []
    real = sync.plan_of

    def counting(op, operands):
        made.append(op)
        return real(op, operands)

    sync.plan_of = counting
    try:
        e = error_of(lambda: run_loop(skip))
    finally:
        sync.plan_of = real
    assert e is not None and e.code == "APK570", e
    assert "read-after-write" in str(e) and "on pipe MTE1 reads a1" in str(e)
    assert e.span.line == MOVE  # the move that reads too early ...
    assert e.labels and e.labels[0].span.line == LOAD  # ... and the load it races with
    assert "written here on pipe MTE2" in e.labels[0].message
    # the help names the set whose wait is missing, with its line
    assert f'wait_flag("MTE2_MTE1", 0) before dma_copy (line {MOVE})' in e.help
    assert f"(line {SET})" in e.help
    if skip == 3:  # by the last trip both copies' plans were kept: no plan made in it
        assert made.count("dma_copy") <= 2 * 2  # (at most once per copy and checker run)


def test_a_write_after_read_on_kept_plans_is_reported_at_both_lines():
    # the load's wait for the move is left out on the last trip: the load overwrites a1 while
    # the move of the trip before may still read it
    source = LOOP.replace('        wait_flag("MTE1_MTE2", 0)\n        dma_copy(a1, A)',
                          '        if k != SKIP:\n            wait_flag("MTE1_MTE2", 0)\n'
                          '        dma_copy(a1, A)')
    source = source.replace('        if k != SKIP:\n            wait_flag("MTE2_MTE1", 0)',
                            '        wait_flag("MTE2_MTE1", 0)')
    lines = source.splitlines()
    e = error_of(lambda: run_loop(3, source))
    assert e is not None and e.code == "APK570", e
    assert "write-after-read" in str(e)
    assert e.span.line == lines.index("        dma_copy(a1, A)") + 1
    assert e.labels[0].span.line == lines.index("        dma_copy(a0, a1)") + 1


def test_a_missing_set_and_a_double_set_in_a_loop():
    # the last trip waits for id 1, which nothing sets: a deadlock
    e = error_of(lambda: run_loop(-1, LOOP.replace('wait_flag("MTE2_MTE1", 0)',
                                                   'wait_flag("MTE2_MTE1", k // 3)')))
    assert e is not None and e.code == "APK575", e
    assert 'wait_flag("MTE2_MTE1", 1)' in str(e)
    # only the first trip waits (a barrier orders the copies): the third trip's set finds the
    # second trip's still set, and labels it (the same line, one trip before)
    e = error_of(lambda: run_loop(-1, LOOP.replace(
        '        if k != SKIP:\n            wait_flag("MTE2_MTE1", 0)\n',
        '        if k == 0:\n            wait_flag("MTE2_MTE1", 0)\n'
        '        pipe_barrier("ALL")\n')))
    assert e is not None and e.code == "APK574", e
    assert e.span.line == SET and e.labels[0].span.line == SET
    assert "set here, not waited for since" in e.labels[0].message


def test_events_refused_on_the_fast_path_as_before():
    with apdsl.pipes():
        apdsl.set_flag("MTE2_MTE1", np.int64(1))  # a NumPy integer id: the general path
        apdsl.wait_flag("MTE2_MTE1", 1)
        with raises_code("APK573"):
            apdsl.set_flag("MTE2_MTE1", True)  # a bool is not an id
        with raises_code("APK573"):
            apdsl.set_flag("MTE2_MTE1", 8)
        with raises_code("APK573"):
            apdsl.wait_flag("MTE2_MTE1", -1)
        with raises_code("APK572"):
            apdsl.set_flag("MTE2_MTEX", 0)
        with raises_code("APK572"):
            apdsl.wait_flag(["MTE2_MTE1"], 0)
        apdsl.set_flag("M_FIX", 7)
        with raises_code("APK574"):
            apdsl.set_flag("M_FIX", 7)
        apdsl.wait_flag("M_FIX", 7)
        with raises_code("APK575"):
            apdsl.wait_flag("M_FIX", 7)


def _outcome(names, events, t):
    """What the checker says of the oracle's program on tensors `t`: None, or the error's
    code, message, help and pipes."""
    try:
        run_program(names, events, t)
    except ApdslError as e:
        return e.code, str(e), e.help, dict(e.facts)
    return None


@settings(max_examples=150, deadline=None)
@given(programs())
def test_kept_plans_give_the_verdict_of_plans_made_afresh(program):
    names, events = program
    with apdsl.options(init_check=False):
        t = _tensors()
        real = sync.plan_of
        made = []

        def fresh(op, operands):
            made.append(op)
            sync.PLANS.clear()
            return real(op, operands)

        sync.plan_of = fresh
        try:
            # every plan made afresh: PLANS is emptied before each instruction's plan
            sync.PLANS.clear()
            cold = _outcome(names, events, t)
        finally:
            sync.plan_of = real
        _outcome(names, events, t)  # keeps a plan per instruction and views
        made.clear()
        sync.plan_of = lambda op, operands: (made.append(op), real(op, operands))[1]
        try:
            warm = _outcome(names, events, t)
        finally:
            sync.plan_of = real
    assert not made  # the second run found every plan kept
    assert warm == cold


def test_a_plan_keeps_no_view_alive_and_goes_with_its_views():
    with apdsl.pipes():
        g = apdsl.from_numpy(np.ones((16, 16), np.float16), "gm")
        a1 = apdsl.ndarray((16, 16), "float16", "l1", "NZ")
        apdsl.dma_copy(a1, g)
        keys = [k for k in sync.PLANS if id(a1) in k]
        assert keys
        storage = weakref.ref(a1.storage)
        del a1
        gc.collect()
        assert storage() is None
        assert not any(k in sync.PLANS for k in keys)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 60), max_size=40), st.lists(st.integers(0, 60), max_size=40))
def test_common_bytes_is_the_intersection_of_two_byte_sets(a, b):
    """The race checker's byte intersection (two sorted unique arrays) against NumPy's."""
    from apdsl.runtime.sync.sync_facts import common_bytes
    x, y = np.unique(np.array(a, np.int64)), np.unique(np.array(b, np.int64))
    np.testing.assert_array_equal(common_bytes(x, y), np.intersect1d(x, y))
