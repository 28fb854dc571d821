"""The profile's cost model and schedule make sense (SPEC section 14): directions and
invariants, not absolute numbers.  Dependencies are checked against an independent oracle: a
pairwise scan of the slots' byte footprints."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import EXPECTED_TO_FAIL

import apdsl
from apdsl.profile import costs, profile
from apdsl.profile.schedule import footprint
from apdsl.runtime.table import outputs
from apdsl.semantics.program import Program

ROOT = Path(__file__).resolve().parent.parent
# (an example that shows an error on purpose has no complete run to schedule)
EXAMPLES = [p for p in sorted((ROOT / "examples").glob("*.apk")) if p.name not in EXPECTED_TO_FAIL]


def _dma_kernel(rows: int, cols: int, step: int = 1) -> str:
    return f"""
kernel copy(A: f32[{rows}, {cols * step}] @ hbm) -> f32[{rows}, {cols}] @ sbuf:
    t = ndarray(({rows}, {cols}), f32, sbuf)
    dma_copy(t, A[:, ::{step}])
    return t
"""


def test_doubling_the_bytes_of_a_dma_only_kernel_roughly_doubles_its_time():
    for rows, cols in ((128, 2048), (128, 8192), (64, 4096)):
        small = profile(_dma_kernel(rows, cols)).total_ns
        large = profile(_dma_kernel(rows, 2 * cols)).total_ns
        assert 1.5 < large / small <= 2.0, (rows, cols, small, large)
    # doubling the partitions doubles the descriptors, spread over more DMA engines: faster
    # per byte, never slower
    a, b = profile(_dma_kernel(64, 4096)).total_ns, profile(_dma_kernel(128, 4096)).total_ns
    assert a <= b <= 2 * a


def test_doubling_the_bytes_on_ascend_roughly_doubles_the_time():
    def k(n: int) -> str:
        return f"""
kernel load(A: f16[64, {n}] @ gm) -> f16[64, {n}] @ ub:
    t = ndarray((64, {n}), f16, ub)
    dma_copy(t, A)
    return t
"""
    a, b = profile(k(512)).total_ns, profile(k(1024)).total_ns
    assert 1.7 < b / a <= 2.0


def test_a_strided_column_dma_is_slower_per_byte_than_a_contiguous_one():
    contiguous = profile(_dma_kernel(128, 1024))
    strided = profile(_dma_kernel(128, 1024, step=2))
    (c,), (s,) = contiguous.slots, strided.slots
    assert c.cost.bytes == s.cost.bytes == 128 * 1024 * 4
    assert s.cost.run_bytes == 4 and c.cost.run_bytes == 4096
    assert s.cost.descriptors == 128 * 1024 and c.cost.descriptors == 128
    assert strided.total_ns > 2 * contiguous.total_ns
    (d,) = strided.dmas()
    assert d["short"] and d["run_bytes"] == 4
    assert not contiguous.dmas()[0]["short"]


def _pipeline(double: bool, n: int = 8) -> str:
    """Load a tile, copy it on chip (4 times: compute as long as the DMAs), store it: with a tile per iteration (double-buffered:
    the next load need not wait for this iteration's copy) or one tile for all iterations."""
    decl_in = "        t = ndarray((128, 512), f32, sbuf)\n" if double else ""
    decl_out = "" if double else "    t = ndarray((128, 512), f32, sbuf)\n"
    return f"""
kernel pipe(A: f32[{n * 128}, 512] @ hbm) -> f32[{n * 128}, 512] @ hbm:
    out = ndarray(({n * 128}, 512), f32, hbm)
{decl_out}    for i in range({n}):
{decl_in}        u = ndarray((128, 512), f32, sbuf)
        dma_copy(t, A[i * 128:(i + 1) * 128, :])
        for k in range(4):
            tensor_copy(u, t)
        dma_copy(out[i * 128:(i + 1) * 128, :], u)
    return out
"""


def test_a_double_buffered_kernel_is_faster_than_a_serialised_one():
    double = profile(_pipeline(True))
    single = profile(_pipeline(False))
    serial = Program(_pipeline(True)).run(trace=True)
    from apdsl.profile import profile_run
    serialised = profile_run(serial, serial_order=True)
    assert double.total_ns < single.total_ns < serialised.total_ns + 1e-6
    # serialised: the total is the sum of all durations
    assert serialised.total_ns == pytest.approx(sum(s.end - s.start for s in serialised.slots))
    # double-buffered: loads overlap each other and the copies
    loads = [s for s in double.slots if s.op == "dma_copy" and s.operands["dst"].tensor == "t"]
    assert any(b.start < a.end for a, b in zip(loads, loads[1:]))


def _check_invariants(p) -> None:
    slots = p.slots
    for track, busy in p.busy_ns.items():
        assert 0 <= busy <= p.total_ns + 1e-6, track
    by_track = {}
    for s in slots:
        assert s.end >= s.start >= 0
        by_track.setdefault(s.track, []).append(s)
    for track, ss in by_track.items():
        ss.sort(key=lambda s: s.start)
        for a, b in zip(ss, ss[1:]):
            assert b.start >= a.end - 1e-9, (track, a, b)
    # every conflicting pair (overlapping bytes of one storage, one of them a write) is ordered
    if len(slots) <= 300:
        keyed = []
        for s in slots:
            keyed.append([((s.operands[r].buffer, _storage(p, s, r)), footprint(ap), r in outputs(s.op))
                          for r, ap in s.operands.items()])
        for j, b in enumerate(slots):
            for i in range(j):
                a = slots[i]
                for ka, fa, wa in keyed[i]:
                    for kb, fb, wb in keyed[j]:
                        if ka == kb and (wa or wb) and fa[0] < fb[1] and fb[0] < fa[1] and \
                                fa[2] < fb[3] and fb[2] < fa[3]:
                            assert b.start >= a.end - 1e-9, (a, b)


def _storage(p, slot, role):
    return p._records[slot.record].storages[role]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_examples_schedule_consistently(path, capsys):
    program = Program.from_path(str(path))
    result = program.run(trace=True)
    from apdsl.profile import profile_run
    p = profile_run(result)
    _check_invariants(p)
    # one slot per lowered instruction (the objects `apdsl lower --json` prints; events take
    # no slot)
    assert len(p.slots) == sum(len(r.to_json()) for r in result.trace.records
                               if r.event is None)
    assert p.total_ns > 0
    json.dumps(p.to_json())


def test_every_number_of_the_cost_table_names_its_source():
    for target in ("trn1", "trn2", "trn3", "ascend-a2"):
        for key, f in costs.table(target).items():
            assert f.source and f.value > 0, (target, key)
            assert f.unit
    # the 512-byte rule has no public Neuron source: the table says so
    assert costs.table("trn2")["dma_min_run"].assumed
    assert "no public Neuron source" in costs.table("trn2")["dma_min_run"].source


def test_ascend_gemm_overlaps_its_pipes_and_the_cube_dominates():
    p = profile(str(ROOT / "examples" / "ascend_gemm.apk"))
    assert p.target == "ascend-a2"
    tracks = {s.track for s in p.slots}
    assert {"MTE2", "MTE1", "M", "FIX"} <= tracks
    assert p.total_ns < sum(p.busy_ns.values())  # pipes overlap
    _check_invariants(p)


def test_profile_is_callable_as_the_module_and_from_apdsl():
    src = _dma_kernel(128, 64)
    a = apdsl.profile(src)
    import apdsl.profile as mod
    b = mod(src)
    assert a.total_ns == b.total_ns > 0
    assert a.to_json()["estimate"] is True


def test_inputs_are_used(tmp_path):
    src = _dma_kernel(16, 64)
    p = profile(src, inputs={"A": np.ones((16, 64), np.float32)})
    assert len(p.slots) == 1


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_path_time_equals_the_total():
    p = profile(_pipeline(True, 4))
    assert p.path_summary()["time_ns"] == pytest.approx(p.total_ns)
    assert p.critical_path[-1].end == p.total_ns


REQUIRED_X = {"name", "ph", "ts", "dur", "pid", "tid"}  # trace-event format, complete events
REQUIRED_M = {"name", "ph", "pid", "tid", "args"}


def _validate_trace(doc: dict) -> list[dict]:
    assert isinstance(doc["traceEvents"], list)
    names = {}
    slices = []
    flows: dict[int, list[dict]] = {}
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("X", "M", "s", "f")
        if ev["ph"] in ("s", "f"):  # an event's arrow: a start and a finish with one id
            flows.setdefault(ev["id"], []).append(ev)
        elif ev["ph"] == "M":
            assert REQUIRED_M <= set(ev)
            if ev["name"] == "thread_name":
                names[ev["tid"]] = ev["args"]["name"]
        else:
            assert REQUIRED_X <= set(ev)
            assert isinstance(ev["ts"], (int, float)) and ev["dur"] >= 0
            slices.append(ev)
    for ev in slices:  # every slice is on a named track
        assert ev["tid"] in names
    by = {}
    for ev in slices:
        by.setdefault(ev["tid"], []).append(ev)
    for tid, evs in by.items():  # slices on one track never overlap
        evs.sort(key=lambda e: e["ts"])
        for a, b in zip(evs, evs[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-6, names[tid]
    for pair in flows.values():  # each arrow points forward in time, between named tracks
        s, f = sorted(pair, key=lambda e: e["ph"] == "f")
        assert (s["ph"], f["ph"]) == ("s", "f") and s["ts"] <= f["ts"] + 1e-9
        assert s["tid"] in names and f["tid"] in names
        assert s["cat"] != "event" or s["tid"] != f["tid"]  # an event joins two pipes
        # Perfetto binds a flow event to the slice enclosing its time on its thread: the start
        # lies inside a slice, just before its end; the finish inside one, just after its start
        assert any(x["tid"] == s["tid"] and x["ts"] < s["ts"] < x["ts"] + x["dur"]
                   and x["ts"] + x["dur"] - s["ts"] <= 1e-3 + 1e-9 for x in slices)
        assert any(x["tid"] == f["tid"] and x["ts"] < f["ts"] < x["ts"] + x["dur"]
                   and f["ts"] - x["ts"] <= 1e-3 + 1e-9 for x in slices)
    doc["_flows"] = flows
    return slices


def test_cli_profile_trace_and_json(tmp_path):
    out = tmp_path / "t.json"
    src = str(ROOT / "examples" / "ascend_gemm.apk")
    r = _cli("profile", src, "--trace", str(out))
    assert r.returncode == 0, r.stderr
    assert "estimate" in r.stdout and "critical path" in r.stdout and "MTE2" in r.stdout
    doc = json.loads(out.read_text())
    slices = _validate_trace(doc)
    lowered = _cli("lower", src, "--json")
    assert lowered.returncode == 0
    # one slice per lowered instruction (events are instants, not slices)
    assert len(slices) == sum("event" not in json.loads(x) for x in lowered.stdout.splitlines())
    tracks = {ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "thread_name"}
    assert {"MTE2", "MTE1", "M", "FIX"} <= tracks
    assert len(doc["_flows"]) > 50  # the GEMM's events, drawn as arrows
    assert all(ev["name"].split()[1].startswith("<stdlib>/gemm.apk:") for ev in slices)
    assert all("dst" in ev["args"] for ev in slices)
    j = _cli("profile", src, "--json")
    assert j.returncode == 0, j.stderr
    (line,) = j.stdout.splitlines()  # one JSON object, nothing else on stdout
    obj = json.loads(line)
    assert obj["estimate"] is True and obj["target"] == "ascend-a2"
    assert obj["total_ns"] == pytest.approx(doc["otherData"]["total_ns"])
    assert set(obj) >= {"engines", "critical_path", "top", "dmas"}
    for e in obj["engines"].values():
        assert e["busy_ns"] <= obj["total_ns"] + 1e-6


def test_cli_profile_usage_and_file_errors(tmp_path):
    r = _cli("profile", str(tmp_path / "missing.apk"))
    assert r.returncode == 1 and "APK601" in r.stderr and "Traceback" not in r.stderr
    f = tmp_path / "k.apk"
    f.write_text(_dma_kernel(16, 64))
    r = _cli("profile", str(f), "nosuch")
    assert r.returncode == 2
    r = _cli("profile", str(f), "--target", "ascend-a2")
    assert r.returncode == 2
    (tmp_path / "d").mkdir()
    r = _cli("profile", str(f), "--trace", str(tmp_path / "d"))
    assert r.returncode == 1 and "error[APK" in r.stderr and "Traceback" not in r.stderr
    r = _cli("profile", str(f), "--target", "trn1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["target"] == "trn1"
    np.save(tmp_path / "a.npy", np.zeros((16, 64), np.float32))
    r = _cli("profile", str(f), "-i", f"A={tmp_path / 'a.npy'}", "--max-steps", "1000")
    assert r.returncode == 0, r.stderr


def test_engine_hints_place_instructions():
    src = """
kernel k(A: f32[128, 512] @ hbm) -> f32[128, 512] @ sbuf:
    t = ndarray((128, 512), f32, sbuf)
    u = ndarray((128, 512), f32, sbuf)
    dma_copy(t, A)
    tensor_copy(u, t, engine=nisa.engine.gpsimd)
    memset(t, 0, engine=nisa.engine.gpsimd)
    tensor_copy(t, u)
    return u
"""
    p = profile(src)
    assert [s.track for s in p.slots[1:]] == ["GpSimd", "GpSimd", "Vector"]


def test_text_timeline_rows_are_the_busy_tracks():
    p = profile(_pipeline(True, 4))
    rows = p.timeline(width=40)
    assert rows[0].startswith("estimated timeline")
    tracks = [r.split("|")[0].strip() for r in rows[1:]]
    assert set(tracks) == {t for t, b in p.busy_ns.items() if b > 0}
    assert all(len(r.split("|")[1]) == 40 and "#" in r for r in rows[1:])
    assert "estimated timeline" in p.text()
    assert "estimated timeline" not in profile(_pipeline(True, 60)).text()  # > 200 slots


def test_hardware_dge_has_its_own_fixed_cost():
    def k(mode: str) -> str:
        return f"""
kernel k(A: f32[128, 512] @ hbm) -> f32[128, 512] @ sbuf:
    t = ndarray((128, 512), f32, sbuf)
    dma_copy(t, A, dge_mode=nisa.dge_mode.{mode})
    return t
"""
    table = costs.table("trn2")
    hw, sw = profile(k("hwdge")).slots[0], profile(k("swdge")).slots[0]
    assert hw.cost.fixed_ns == table["dma_fixed_hwdge"].value == 600
    assert sw.cost.fixed_ns == table["dma_fixed"].value
    assert sw.cost.ns - hw.cost.ns == sw.cost.fixed_ns - hw.cost.fixed_ns  # only the fixed part
    assert "DGE" in table["dma_fixed_hwdge"].source and "dma_fixed_hwdge" not in costs.table("trn1")


def test_profile_of_a_python_file_that_launches_no_kernel_is_empty_not_a_traceback(tmp_path):
    path = tmp_path / "helpers.py"
    path.write_text("import numpy as np\n\n\ndef helper(x):\n    return np.asarray(x)\n",
                    encoding="utf-8")
    for extra in ([], ["--json"]):
        r = subprocess.run([sys.executable, "-m", "apdsl", "profile", str(path), *extra],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        if extra:
            out = json.loads(r.stdout)
            assert out["instructions"] == 0 and out["total_ns"] == 0 and out["estimate"]
        else:
            assert "0.000 us for 0 instructions" in r.stdout
