"""The trace keeps compact rows (`apdsl.runtime.core.trace.Trace`): plain tuples the garbage
collector stops walking, read as `Record`s only when something reads them, with the same
records, `lower` output and profile as the instructions recorded."""

from __future__ import annotations

import gc

import numpy as np

import apdsl
from apdsl.profile import profile, profile_run
from apdsl.semantics.program import Program

# a double-buffered Ascend loop: events, checked instructions, an argument (accumulate=)
ASCEND = """\
kernel k(A: f16[64, 64] @ gm, B: f16[64, 64] @ gm) -> f32[64, 64] @ gm:
    C = ndarray((64, 64), f32, gm)
    a1 = ndarray((64, 64), f16, l1, "NZ")
    b1 = ndarray((64, 64), f16, l1, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    a0 = ndarray((64, 64), f16, l0a, "ZZ")
    b0 = ndarray((64, 64), f16, l0b, "ZN")
    c0 = ndarray((64, 64), f32, l0c, "NZ")
    for i in range(3):
        dma_copy(a0, a1)
        dma_copy(b0, b1)
        set_flag("MTE1_M", 0)
        wait_flag("MTE1_M", 0)
        mmad(c0, a0, b0, accumulate=i > 0)
        set_flag("M_MTE1", 0)
        wait_flag("M_MTE1", 0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    dma_copy(C, c0)
    return C
"""

NKI = """\
kernel k(A: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    t = ndarray((128, 512), f32, sbuf)
    out = ndarray((128, 512), f32, hbm)
    for i in range(4):
        dma_copy(t, A)
        tensor_scalar(t, t, nl.multiply, 2.0, engine=nki.isa.vector_engine)
        dma_copy(out, t)
    return out
"""


def _traced(source: str):
    return Program(source, "k.apk").run(trace=True)


def test_the_trace_rows_are_left_alone_by_the_garbage_collector():
    for source in (ASCEND, NKI):
        trace = _traced(source).trace
        gc.collect()  # (a tuple is left alone once its elements are: a second pass for those
        gc.collect()  # whose elements were younger)
        assert len(trace.rows) > 10
        assert [row for row in trace.rows if gc.is_tracked(row)] == []


def test_records_are_made_from_the_rows_as_recorded():
    trace = _traced(ASCEND).trace
    records = trace.records
    assert trace.records is records  # made once
    assert len(records) == len(trace.rows) == len(trace)
    ops = [r.op for r in records]
    assert ops.count("mmad") == 3 and ops.count("set_flag") == 8
    mm = [r for r in records if r.op == "mmad"]
    # the first mmad says nothing of accumulate (its default); the later ones show it
    assert [r.arguments for r in mm] == [None, {"accumulate": True}, {"accumulate": True}]
    assert [r.order.seq for r in mm] == [1, 2, 3] and {r.order.pipe for r in mm} == {"M"}
    assert len({id(r.order.sync) for r in mm}) == 1
    waits = [r for r in records if r.op == "wait_flag"]
    assert waits[0].event == ("MTE2_MTE1", 0) and waits[0].engine == "MTE1"
    assert all(r.operands == {} and r.pieces == () for r in waits)
    # executions of one instruction on the same views share their lowered operands
    loads = [r for r in records if r.op == "dma_copy" and r.location[1] == 13]
    assert len(loads) == 3 and all(r.operands is loads[0].operands for r in loads)
    assert loads[0].operands["dst"][0].buffer == "l0a"


def test_records_read_while_tracing_equal_records_read_at_the_end():
    """Reading `records` part-way (an instruction's record made before its arguments were
    attached) gives the same records as reading them once at the end."""
    from apdsl.runtime.core import trace as tracemod
    seen = []
    real = tracemod.Trace.attach

    def reading(self, start, fn, args, kwargs):
        seen.append(len(self.records))  # made before the call's arguments are attached
        real(self, start, fn, args, kwargs)

    tracemod.Trace.attach = reading
    try:
        early = _traced(ASCEND).trace
    finally:
        tracemod.Trace.attach = real
    late = _traced(ASCEND).trace
    assert seen and [r.to_json() for r in early.records] == [r.to_json() for r in late.records]
    assert [r.arguments for r in early.records] == [r.arguments for r in late.records]


def test_a_hint_kept_by_the_record_is_not_repeated_in_its_arguments():
    trace = _traced(NKI).trace
    scalar = [r for r in trace.records if r.op == "tensor_scalar"]
    assert len(scalar) == 4
    for r in scalar:
        assert r.hints == {"engine": "vector"}
        assert "engine" not in (r.arguments or {})
        assert r.arguments["op0"] == "nl.multiply" and r.arguments["operand0"] == 2.0


def test_the_profile_from_the_rows_schedules_every_piece_in_order():
    result = _traced(ASCEND)
    p = profile_run(result)
    pieces = [(i, k) for i, r in enumerate(result.trace.records) if r.event is None
              for k in range(len(r.pieces) or 1)]
    assert [(s.record, s.piece[0]) for s in p.slots] == pieces
    assert [s.index for s in p.slots] == list(range(len(pieces)))
    # the events order the pipes: every mmad starts after the copies into L0 before it end
    for s in p.slots:
        if s.op == "mmad":
            before = [o for o in p.slots[:s.index] if o.track == "MTE1"]
            assert s.start >= max(o.end for o in before)
    assert p._records == result.trace.records


def test_the_profile_of_a_run_without_instructions_is_empty():
    p = profile("kernel k(A: f32[4, 4] @ hbm) -> f32[4, 4] @ hbm:\n    return A\n")
    assert p.slots == [] and p.total_ns == 0.0


def test_outputs_are_unchanged_by_a_trace_read_twice():
    a = np.random.default_rng(3).standard_normal((128, 512)).astype(np.float32)
    result = Program(NKI, "k.apk").run(None, {"A": a}, trace=True)
    first = [r.to_json() for r in result.trace.records]
    assert [r.to_json() for r in result.trace.records] == first
    np.testing.assert_array_equal(result.value.numpy(), 2 * a)  # traced, it still computes
    assert apdsl.profile(NKI).total_ns == profile_run(result).total_ns


def test_the_profile_slots_made_from_the_schedule_rows_are_its_critical_path_objects():
    p = profile_run(_traced(ASCEND))
    path = p.critical_path
    assert path and all(s is p.slots[s.index] for s in path)
    assert p.total_ns == max(s.end for s in p.slots) == path[-1].end
    busy = {}
    for s in p.slots:
        busy[s.track] = busy.get(s.track, 0.0) + (s.end - s.start)
    assert {t: v for t, v in p.busy_ns.items() if v} == busy
    for a, b in zip(path, path[1:]):
        assert b.pred == a.index and b.start >= a.end
    gc.collect()
    gc.collect()
    rows = p._table.rows
    assert rows and [r for r in rows if gc.is_tracked(r)] == []
