"""The race checker against a brute-force oracle (SPEC section 13).

A random tiny program (3-5 copies, memsets and mmads on the Ascend pipes, with random
set_flag/wait_flag pairs) runs under `apdsl.pipes()`.  The oracle knows nothing of vector
clocks: it enumerates every total order of the instructions that keeps each pipe's program
order and every event's edge (the source pipe's instructions before the set come before the
destination pipe's instructions after the wait), runs each order on an abstract memory of
half-tensor units, and compares its result with program order's.  The result of an order is
what each instruction read (which instruction last wrote each unit it reads) and each unit's
sequence of writers.  The checker must report a race exactly when some order gives a
different result.
"""

from __future__ import annotations

from itertools import permutations

from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.sync.pipes import HARD_EVENTS

# (pipe, units written, units read); a unit is (tensor, half): rows 0-15 or rows 16-31 of a
# 32-row tensor, the first and second half of its bytes in ND and in NZ/ZZ (one 16-row band of
# fractals each); a 16-row tensor's halves are its 8-row halves, always accessed together.
W = (0, 1)
MENU = {
    "gm_l1a": ("MTE2", [("l1a", h) for h in W], [("gA", h) for h in W]),
    "gc_l1a_top": ("MTE2", [("l1a", 0)], [("gC", 0)]),
    "gm_l1b": ("MTE2", [("l1b", h) for h in W], [("gB", h) for h in W]),
    "gc_l1b": ("MTE2", [("l1b", h) for h in W], [("gC", 0)]),
    "init_l1a": ("MTE1", [("l1a", h) for h in W], []),
    "l1a_l0a": ("MTE1", [("l0a", h) for h in W], [("l1a", h) for h in W]),
    "l1b_l0b": ("MTE1", [("l0b", h) for h in W], [("l1b", h) for h in W]),
    "mmad": ("M", [("l0c", h) for h in W], [("l0a", h) for h in W] + [("l0b", h) for h in W]),
    "fix_gc": ("FIX", [("gC", h) for h in W], [("l0c", h) for h in W]),
    "fix_gc_bottom": ("FIX", [("gC", 1)], [("l0c", 1)]),
}
NAMES = sorted(MENU)


def _tensors() -> dict:
    f16 = "float16"
    return {
        "gA": apdsl.ndarray((32, 16), f16, "gm"), "gB": apdsl.ndarray((16, 16), f16, "gm"),
        "gC": apdsl.ndarray((32, 16), f16, "gm"),
        "l1a": apdsl.ndarray((32, 16), f16, "l1", "NZ"),
        "l1b": apdsl.ndarray((16, 16), f16, "l1", "NZ"),
        "l0a": apdsl.ndarray((32, 16), f16, "l0a", "ZZ"),
        "l0b": apdsl.ndarray((16, 16), f16, "l0b", "ZN"),
        "l0c": apdsl.ndarray((32, 16), "float32", "l0c", "NZ"),
    }


def _execute(name: str, t: dict) -> None:
    top, bottom = slice(0, 16), slice(16, 32)
    if name == "gm_l1a":
        apdsl.dma_copy(t["l1a"], t["gA"])
    elif name == "gc_l1a_top":
        apdsl.dma_copy(t["l1a"][top, :], t["gC"][top, :])
    elif name == "gm_l1b":
        apdsl.dma_copy(t["l1b"], t["gB"])
    elif name == "gc_l1b":
        apdsl.dma_copy(t["l1b"], t["gC"][top, :])
    elif name == "init_l1a":
        apdsl.memset(t["l1a"], 0)
    elif name == "l1a_l0a":
        apdsl.dma_copy(t["l0a"], t["l1a"])
    elif name == "l1b_l0b":
        apdsl.dma_copy(t["l0b"], t["l1b"])
    elif name == "mmad":
        apdsl.mmad(t["l0c"], t["l0a"], t["l0b"])
    elif name == "fix_gc":
        apdsl.dma_copy(t["gC"], t["l0c"])
    else:
        apdsl.dma_copy(t["gC"][bottom, :], t["l0c"][bottom, :])


@st.composite
def programs(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=3, max_size=5))
    pipes = [MENU[n][0] for n in names]
    candidates = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))
                  if f"{pipes[i]}_{pipes[j]}" in HARD_EVENTS]
    events = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=4)
                  if candidates else st.just([]))
    return names, events


def _result(order: list[int], names: list[str]) -> tuple:
    history: dict = {}
    reads = {}
    for k in order:
        _, writes, rd = MENU[names[k]]
        reads[k] = tuple(history.get(u, ())[-1:] for u in rd)
        for u in writes:
            history.setdefault(u, []).append(k)
    return tuple(sorted(reads.items())), tuple(sorted((u, tuple(h)) for u, h in history.items()))


def _consistent(order: tuple[int, ...], names: list[str], events: list) -> bool:
    pos = {k: n for n, k in enumerate(order)}
    pipes = [MENU[n][0] for n in names]
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            if pipes[a] == pipes[b] and pos[a] > pos[b]:
                return False
    for i, j in events:
        src, dst = pipes[i], pipes[j]
        for a in range(i + 1):
            if pipes[a] != src:
                continue
            for b in range(j, len(names)):
                if pipes[b] == dst and pos[a] > pos[b]:
                    return False
    return True


def oracle_races(names: list[str], events: list) -> bool:
    n = len(names)
    reference = _result(list(range(n)), names)
    return any(_result(list(order), names) != reference
               for order in permutations(range(n)) if _consistent(order, names, events))


def run_program(names: list[str], events: list, t: dict) -> None:
    """The oracle's program on tensors `t`, under the sync checker: instruction k waits for
    each event (i, k) before it runs and sets each event (k, j) after."""
    pipes = [MENU[n][0] for n in names]
    ids = {e: k for k, e in enumerate(events)}  # a distinct id for each event pair
    with apdsl.pipes():
        for k, name in enumerate(names):
            for (i, j) in events:
                if j == k:
                    apdsl.wait_flag(f"{pipes[i]}_{pipes[j]}", ids[(i, j)])
            _execute(name, t)
            for (i, j) in events:
                if i == k:
                    apdsl.set_flag(f"{pipes[i]}_{pipes[j]}", ids[(i, j)])


def checker_races(names: list[str], events: list) -> bool:
    with apdsl.options(init_check=False):
        t = _tensors()
        try:
            run_program(names, events, t)
        except ApdslError as e:
            assert e.code == "APK570", e
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(programs())
def test_checker_reports_a_race_exactly_when_an_interleaving_differs(program):
    names, events = program
    assert checker_races(names, events) == oracle_races(names, events), (names, events)


def test_the_oracle_sees_both_answers():
    # an unsynchronised load then mmad races; the same with its events does not
    assert oracle_races(["gm_l1a", "l1a_l0a"], [])
    assert not oracle_races(["gm_l1a", "l1a_l0a"], [(0, 1)])
    assert checker_races(["gm_l1a", "l1a_l0a"], [])
    assert not checker_races(["gm_l1a", "l1a_l0a"], [(0, 1)])
