"""The calibrated cost model (SPEC section 14): what each part of it does, that no estimate
exceeds a physical limit, and the calibration rows that are quick enough for the suite.

The oracles: the documented figures themselves (the cost table's peaks and rates), the
kernels' results against NumPy, and relations that hold whatever the numbers (a free [P, 1]
operand costs nothing; a contiguous copy is not slower than the same bytes in rows)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from math import prod
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.profile import costs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_calibration  # noqa: E402


def _profile(source: str, target: str = "trn2", **inputs):
    with apdsl.target(target):
        return apdsl.profile(source, inputs=inputs or None)


def _one(source: str, op: str, target: str = "trn2"):
    (slot,) = [s for s in _profile(source, target).slots if s.op == op]
    return slot.end - slot.start


# -- the parts of the model -------------------------------------------------------------------

ACT = """\
kernel k(X: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    x: f32[128, 512] @ sbuf
    s: f32[128, 1] @ sbuf
    y: f32[128, 512] @ sbuf
    dma_copy(dst=x, src=X)
    dma_copy(dst=s, src=X[:, 0:1])
    {call}
    out = ndarray((128, 512), f32, hbm)
    dma_copy(dst=out, src=y)
    return out
"""


def test_a_p1_scale_or_operand_is_free():
    """ScalarE reads scale and bias for free; tensor_scalar's [P, 1] operand is one value a
    partition (ARCH1): neither is charged the free size of dst."""
    plain = _one(ACT.format(call="nisa.activation(dst=y, op=nl.exp, data=x, scale=2.0)"),
                 "activation")
    scaled = _one(ACT.format(call="nisa.activation(dst=y, op=nl.exp, data=x, scale=s, bias=s)"),
                  "activation")
    assert scaled == pytest.approx(plain)
    imm = _one(ACT.format(call="nisa.tensor_scalar(dst=y, data=x, op0=nl.add, operand0=1.0)"),
               "tensor_scalar")
    col = _one(ACT.format(call="nisa.tensor_scalar(dst=y, data=x, op0=nl.add, operand0=s)"),
               "tensor_scalar")
    assert col == pytest.approx(imm)
    two = _one(ACT.format(call="nisa.tensor_tensor(dst=y, data1=x, data2=x, op=nl.add)"),
               "tensor_tensor")
    assert two == pytest.approx(2 * imm)  # two streamed inputs: 2N (ARCH1)


COPY = """\
kernel k(X: f32[2048, 128] @ hbm) -> f32[2048, {n}] @ hbm:
    out = ndarray((2048, 128), f32, hbm)
    dma_copy(dst=out{dst}, src=X{src})
    return out{dst}
"""


def test_a_contiguous_hbm_copy_is_not_slower_than_the_same_bytes_in_rows():
    """One contiguous 1 MiB run is cut into descriptors the 16 engines share; the same bytes as
    2,048 rows of 512 B take the same engines.  (It was 16x slower: one descriptor, one
    engine.)"""
    whole = _one(COPY.format(n=128, dst="", src=""), "dma_copy")
    rows = _one(COPY.format(n=128, dst="[:, 0:128]", src="[:, 0:128]"), "dma_copy")
    # the result is the part written (returning `out` whole would be APK180: half unwritten)
    strided = _one(COPY.format(n=64, dst="[:, 0:64]", src="[:, 0:64]"), "dma_copy")
    assert whole <= rows * 1.01
    assert strided > whole / 2  # half the bytes in 256 B rows: not cheaper per byte


MODES = """\
kernel k(X: {dt}[128, 1024] @ hbm) -> {dt}[128, 512] @ hbm:
    x: {dt}[128, 1024] @ sbuf
    y: {dt}[128, 512] @ sbuf
    dma_copy(dst=x, src=X)
    tensor_copy(dst=y, src=x[:, {cols}], engine="vector")
    out = ndarray((128, 512), {dt}, hbm)
    dma_copy(dst=out, src=y)
    return out
"""


def test_the_vector_engine_performance_modes():
    """ARCH2: on trn2 a bf16 SBUF -> SBUF tensor_copy, innermost dimension contiguous, runs 4x
    the v2 rate, 2x when not contiguous; fp32 and trn1 have no mode."""
    def t(dt, cols="0:512", target="trn2"):
        return _one(MODES.format(dt=dt, cols=cols), "tensor_copy", target)
    fp32, bf16 = t("f32"), t("bf16")
    assert fp32 == pytest.approx(4 * bf16)
    assert t("bf16", "0:1024:2") == pytest.approx(fp32 / 2)
    assert t("bf16", target="trn1") == pytest.approx(t("f32", target="trn1"))


TWO_INPUTS = """\
kernel k(X: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    x: f32[128, 512] @ sbuf
    y: f32[128, 512] @ sbuf
    p: f32[128, 512] @ psum
    z: f32[128, 512] @ sbuf
    dma_copy(dst=x, src=X)
    tensor_copy(dst=p, src=x)
    tensor_copy(dst=y, src=x)
    nisa.tensor_tensor(dst=z, data1=x, data2={second}, op=nl.multiply)
    out = ndarray((128, 512), f32, hbm)
    dma_copy(dst=out, src=z)
    return out
"""


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_two_inputs_from_one_memory_take_twice_as_long_as_from_two(target):
    """ISA (tensor_tensor's estimated cost): fp32 with both inputs in SBUF max(MIN_II, 2N)
    Vector cycles; with one in PSUM and the other in SBUF max(MIN_II, N)."""
    cycle = 1 / costs.table(target)["vector_clock"].value
    # (the copy before it on the Vector engine writes y, which neither reads: not dependent)
    both = _one(TWO_INPUTS.format(second="x"), "tensor_tensor", target)
    mixed = _one(TWO_INPUTS.format(second="p"), "tensor_tensor", target)
    assert both == pytest.approx(2 * 512 * cycle)
    assert mixed == pytest.approx(512 * cycle)


ONE_INPUT = """\
kernel k(X: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    x: f32[128, 512] @ sbuf
    y: f32[128, 512] @ sbuf
    r: f32[128, 1] @ sbuf
    dma_copy(dst=x, src=X)
    {call}
    out = ndarray((128, 512), f32, hbm)
    dma_copy(dst=out, src=y)
    return out
"""


def test_the_isa_cost_tables_per_instruction():
    """ISA: reciprocal max(MIN_II, 8N) Vector cycles, tensor_scalar max(MIN_II, N);
    activation_reduce max(MIN_II, N) + MIN_II Scalar cycles, activation max(MIN_II, N)."""
    f = costs.table("trn1")
    vec, act = 1 / f["vector_clock"].value, 1 / f["scalar_clock"].value

    def t(call, op):
        return _one(ONE_INPUT.format(call=call), op, "trn1")
    assert t("nisa.reciprocal(dst=y, data=x)", "reciprocal") == pytest.approx(8 * 512 * vec)
    assert t("nisa.tensor_scalar(dst=y, data=x, op0=nl.multiply, operand0=2.0)",
             "tensor_scalar") == pytest.approx(512 * vec)
    assert t("nisa.activation(dst=y, op=nl.exp, data=x)", "activation") == \
        pytest.approx(512 * act)
    assert t("nisa.activation_reduce(dst=y, op=nl.exp, data=x, reduce_op=nl.add, "
             "reduce_res=r)", "activation_reduce") == pytest.approx((512 + 64) * act)


MATMUL = """\
kernel k(X: bf16[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    a: bf16[128, 512] @ sbuf
    p: f32[128, 512] @ psum
    o: f32[128, 512] @ sbuf
    dma_copy(dst=a, src=X)
    memset(dst=p, value=0.0)
    nc_matmul(dst=p[0:{st}, 0:{mv}], stationary=a[:, 0:{st}], moving=a[:, 0:{mv}])
    tensor_copy(dst=o, src=p)
    out = ndarray((128, 512), f32, hbm)
    dma_copy(dst=out, src=o)
    return out
"""


@pytest.mark.parametrize("st, mv, cycles", [(128, 512, 512), (128, 16, 64), (32, 16, 32),
                                            (16, 8, 16), (32, 48, 48)])
def test_a_matmul_costs_its_moving_columns_above_the_stationary_floor(st, mv, cycles):
    """ISA nc_matmul: max(min(64, N_stationary), N_moving) Tensor Engine cycles (bf16)."""
    clock = costs.table("trn1")["tensor_clock"].value
    assert _one(MATMUL.format(st=st, mv=mv), "nc_matmul", "trn1") == pytest.approx(cycles / clock)


CHAIN = """\
kernel k(X: f32[128, 8] @ hbm) -> f32[128, 8] @ hbm:
    t: f32[128, 8] @ sbuf
    dma_copy(dst=t, src=X)
{body}
    out = ndarray((128, 8), f32, hbm)
    dma_copy(dst=out, src=t)
    return out
"""


def _ii(body: str) -> float:
    acts = [s for s in _profile(CHAIN.format(body=body), "trn1").slots
            if s.op == "activation"]
    return (acts[-1].start - acts[1].start) / (len(acts) - 2)  # from the second: steady


def test_small_and_dependent_instructions_pay_their_overheads():
    """ARCH1/PERF: ~100 cycles for a tiny free size, ~100 more when each instruction reads the
    output of the one before it: 64 + 100 + 100 = 264 ScalarE cycles, the guide's 189 ns."""
    f = costs.table("trn1")
    cycle = 1 / f["scalar_clock"].value
    chain = "\n".join("    nisa.activation(dst=t[:, 0:1], op=nl.exp, data=t[:, 0:1])"
                      for _ in range(16))
    assert _ii(chain) == pytest.approx(264 * cycle)
    # each reads a column the one before it did not write: no dependent overhead
    independent = "\n".join(f"    nisa.activation(dst=t[:, {(i % 4) + 4}:{(i % 4) + 5}], "
                            f"op=nl.exp, data=t[:, {i % 4}:{i % 4 + 1}])" for i in range(16))
    assert _ii(independent) == pytest.approx(164 * cycle)


# -- no estimate exceeds a peak ---------------------------------------------------------------

_HEAD = """\
kernel k(X: bf16[1024, 1024] @ hbm) -> bf16[1024, 1024] @ hbm:
    OUT = ndarray((1024, 1024), bf16, hbm)
    a: bf16[128, 1024] @ sbuf
    b: bf16[128, 1024] @ sbuf
    P: f32[128, 512] @ psum
    dma_copy(dst=a, src=X[0:128, :])
    dma_copy(dst=b, src=X[128:256, :])
    memset(dst=P, value=0.0)
    dma_copy(dst=OUT, src=X)
"""


@st.composite
def _step(draw) -> str:
    kind = draw(st.sampled_from(["load", "load", "store", "hbm", "mm", "mm", "evict", "vec"]))
    t = draw(st.sampled_from("ab"))
    w = draw(st.sampled_from([1, 64, 512, 1024]))
    r = draw(st.sampled_from([0, 128, 512, 896]))
    p = draw(st.sampled_from([4, 32, 128]))
    if kind == "load":
        return f"dma_copy(dst={t}[0:{p}, 0:{w}], src=X[{r}:{r + p}, 0:{w}])"
    if kind == "store":
        return f"dma_copy(dst=OUT[{r}:{r + p}, 0:{w}], src={t}[0:{p}, 0:{w}])"
    if kind == "hbm":
        n = draw(st.sampled_from([1, 16, 128]))
        return f"dma_copy(dst=OUT[{r}:{r + n}, :], src=X[{r}:{r + n}, :])"
    if kind == "mm":
        n = draw(st.sampled_from([64, 512]))
        return (f"nc_matmul(dst=P[:, 0:{n}], stationary=a[:, 0:128], moving=b[:, 0:{n}], "
                "accumulate=False)")
    if kind == "evict":
        return f"tensor_copy(dst={t}[:, 0:512], src=P)"
    return f"nisa.tensor_tensor(dst={t}[:, 0:{w}], data1=a[:, 0:{w}], data2=b[:, 0:{w}], op=nl.add)"


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["trn1", "trn2", "trn3"]), st.lists(_step(), min_size=1, max_size=12))
def test_no_estimate_exceeds_a_peak(target, steps):
    source = _HEAD + "".join(f"    {s}\n" for s in steps) + "    return OUT\n"
    p = _profile(source, target)
    f = costs.table(target)
    engine_rate = f["dma_engine_bandwidth"].value  # bytes/ns
    matmul_peak = 2 * 128 * 128 * f["tensor_clock"].value  # FLOP/ns, bf16
    shared = f["hbm_bandwidth"].value
    ends = []
    for s in p.slots:
        dur = s.end - s.start
        if s.cost.descriptors:  # a DMA: its engines' rate at most, after its fixed latency
            assert s.cost.bytes <= s.cost.dma_engines * engine_rate * (dur - s.cost.fixed_ns) \
                * (1 + 1e-9) + 1e-6, (source, s)
            ends.append((s.end, s.cost.shared_bytes))
        if s.cost.flops:
            assert s.cost.flops <= matmul_peak * dur * (1 + 1e-9), (source, s)
    # the shared HBM bandwidth: the transfers done by any time moved at most what it carries
    done = 0.0
    for end, nbytes in sorted(ends):
        done += nbytes
        assert done <= shared * end * (1 + 1e-9) + 1e-6, (source, end)
    r = p.rates()
    assert 0 <= r["mfu"] <= 1 and 0 <= r["mbu"] <= 1


# -- what the report shows -------------------------------------------------------------------

DEPS = """\
kernel k(X: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    x: f32[128, 512] @ sbuf
    y: f32[128, 512] @ sbuf
    dma_copy(dst=x, src=X)
    nisa.activation(dst=y, op=nl.exp, data=x)
    out = ndarray((128, 512), f32, hbm)
    dma_copy(dst=out, src=y)
    return out
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})


def test_the_trace_draws_data_dependencies_inside_their_slices(tmp_path):
    """NKI data dependencies are flow arrows; each end lies strictly inside its slice, where
    Perfetto binds it (a start at a slice's very end binds to nothing)."""
    src = tmp_path / "k.apk"
    src.write_text(DEPS)
    out = tmp_path / "t.json"
    r = _cli("profile", str(src), "--trace", str(out))
    assert r.returncode == 0, r.stderr
    ev = json.loads(out.read_text())["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    flows: dict[int, list] = {}
    for e in ev:
        if e["ph"] in ("s", "f"):
            flows.setdefault(e["id"], []).append(e)
    assert len(flows) == 2  # load -> activation -> store
    for pair in flows.values():
        s, f = sorted(pair, key=lambda e: e["ph"] == "f")
        src_slice, = [x for x in slices if x["tid"] == s["tid"] and
                      x["ts"] < s["ts"] < x["ts"] + x["dur"]]
        dst_slice, = [x for x in slices if x["tid"] == f["tid"] and
                      x["ts"] < f["ts"] < x["ts"] + x["dur"]]
        assert src_slice["ts"] + src_slice["dur"] <= dst_slice["ts"] + 1e-9
    names = [x["name"].split()[0] for x in sorted(slices, key=lambda x: x["ts"])]
    assert names == ["dma_copy", "activation", "dma_copy"]


def test_json_lists_every_instruction_and_the_rates(tmp_path):
    src = tmp_path / "k.apk"
    src.write_text(DEPS)
    r = _cli("profile", str(src), "--json", "--target", "trn1")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(i["op"], i["track"]) for i in doc["scheduled"]] == [
        ("dma_copy", "DMA q0"), ("activation", "Scalar"), ("dma_copy", "DMA q1")]
    assert all(i["end_ns"] > i["start_ns"] >= 0 for i in doc["scheduled"])
    assert doc["scheduled"][0]["bytes"] == 128 * 512 * 4
    rates = doc["rates"]
    assert rates["bytes"] == 2 * 128 * 512 * 4 and rates["flops"] == 0
    assert rates["mbu"] == pytest.approx(rates["bytes"] / (doc["total_ns"] * 1e-9) / 272e9)
    text = _cli("profile", str(src), "--target", "trn1").stdout
    assert "MFU" in text and "MBU" in text and "% of the DMA engines' aggregate 272 GB/s" in text


# -- calibration (SPEC 14) -------------------------------------------------------------------

def test_the_quick_calibration_rows_are_in_band():
    """The DMA overview's example and the performance guide's chain (the matmul and CATLASS rows
    take minutes: `python bench/bench_calibration.py`)."""
    assert 0.8 <= bench_calibration._dma() / 1.416e-6 <= 1.25
    assert 0.8 <= bench_calibration._chain() / 189e-9 <= 1.25


@pytest.mark.parametrize("kernel", ["tiled", "hoisted", "blocked", "optimised"])
def test_the_calibration_kernels_compute_the_matmul(kernel):
    """The benchmark's kernels are real: at a small size each runs and matches NumPy."""
    rng = np.random.default_rng(3)
    k, m, n = (1024, 2048, 1024) if kernel == "optimised" else (256, 256, 1024)
    a = rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    p = bench_calibration.profile_nki(kernel, {"lhsT": a, "rhs": b}, "trn1", dry=False)
    assert p.total_ns > 0
    from apdsl.nki.program import PyProgram
    with apdsl.target("trn1"):
        got = PyProgram(str(ROOT / "bench" / "calibration_kernels.py")).run(
            kernel, {"lhsT": a, "rhs": b}).value.numpy().astype(np.float32)
    want = a.astype(np.float32).T @ b.astype(np.float32)
    assert np.abs(got - want).max() <= 0.01 * np.abs(want).max()


def test_a_dma_bound_matmul_moves_its_bytes_at_the_shared_bandwidth():
    """The tiled step is DMA-bound: its HBM traffic over its time is the fitted bandwidth."""
    z = bench_calibration._placeholder
    p = bench_calibration.profile_nki(
        "tiled", {"lhsT": z((2048, 256), ml_dtypes.bfloat16),
                  "rhs": z((2048, 2048), ml_dtypes.bfloat16)}, "trn1", dry=True)
    rate = p.rates()["bytes_per_s"] / 1e9
    assert 0.9 * 105 <= rate <= 105 * (1 + 1e-9)


GM_LOADS = """\
kernel loads(A: f16[20, 128, 1024] @ gm) -> f16[20, 128, 1024] @ gm:
    if asc.ascend_is_aic():
        b = asc.get_block_idx()
        t = ndarray((128, 1024), f16, l1)
        dma_copy(t, A[b, :, :])
        asc.set_flag("MTE2_MTE1", 0)
        asc.wait_flag("MTE2_MTE1", 0)
    return A  # loads only: the result is the input (a kernel's result must be written)
"""


def test_ascend_cores_share_the_chip_gm_bandwidth(tmp_path):
    """Each core's MTE2 alone moves at its own rate; twenty at once share the chip's GM
    (CBOT: ~1.8 TB/s), never more."""
    src = tmp_path / "gm.apk"
    src.write_text(GM_LOADS)
    f = costs.table("ascend-a2")
    rates = {}
    for grid in (1, 20):
        r = _cli("profile", str(src), "--grid", str(grid), "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        rates[grid] = doc["rates"]["bytes_per_s"]
        assert doc["rates"]["bytes"] == grid * 128 * 1024 * 2
    one_core = f["gm_bytes_per_cycle"].value * f["clock"].value * 1e9
    assert rates[1] <= one_core * (1 + 1e-9)
    assert rates[20] <= f["gm_bandwidth"].value * 1e9 * (1 + 1e-9)
    assert rates[20] > 0.95 * f["gm_bandwidth"].value * 1e9  # 20 x 230 GB/s would be more


# -- Ascend: GM runs and cores sharing GM -----------------------------------------------------

def _launch(source: str, kernel: str, cores: int):
    """The profile of `kernel` launched on `cores` cores (as `apdsl profile --grid`)."""
    from apdsl.profile import profile_run
    from apdsl.semantics.program import Program
    from apdsl.tensor.machine import current
    from apdsl.tensor.targets import set_target
    machine = current().child()
    with machine.active():
        set_target("ascend-a2")
        return profile_run(Program(source, "<test>").run(kernel, trace=True, grid=(cores,)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(0, 3)), min_size=1, max_size=3),
       st.randoms(use_true_random=False))
def test_a_gm_run_is_the_storage_run_whatever_order_the_copy_visits(dims, rnd):
    """The run of an operand is the contiguous stretch of storage it reads, not of its visiting
    order (MTE2 reformats on chip): brute force over the offsets of a sub-block of a row-major
    array, its dimensions visited in a random order."""
    from apdsl.profile.model import storage_run_elements
    from apdsl.tensor.lowering import AccessPattern
    counts = [c for c, _ in dims]
    full = [c + extra for c, extra in dims]  # the array's extents: the block is cut from it
    strides = [prod(full[i + 1:]) for i in range(len(full))]
    order = list(range(len(dims)))
    rnd.shuffle(order)
    pattern = [[strides[i], counts[i]] for i in order]
    ap = AccessPattern("t", "gm", "float16", "ND", 0, pattern)
    offsets = sorted({sum(s * k for (s, _), k in zip(pattern, idx))
                      for idx in itertools.product(*(range(c) for _, c in pattern))})
    runs, run = [], 1
    for a, b in zip(offsets, offsets[1:]):
        if b == a + 1:
            run += 1
        else:
            runs.append(run)
            run = 1
    runs.append(run)
    assert set(runs) == {storage_run_elements(ap)}


COLUMN_LOAD = """\
kernel k(B: f16[{shape}] @ gm{fmt}) -> f16[{shape}] @ gm:
    t = ndarray(({tile}), f16, l1, "{l1}")
    dma_copy(t, B[{view}])
    return B
"""


def test_a_column_major_matrix_is_read_in_columns():
    """CATLASS reads a ColumnMajor B [K, N] into L1 (nZ) one column of K at a time: the same
    runs, and the same time, as a row-major [N, K] matrix into zN.  (It was costed as 2-byte
    runs: a descriptor per element, 100x too slow.)"""
    def load(shape: str, fmt: str, tile: str, l1: str, view: str):
        src = COLUMN_LOAD.format(shape=shape, fmt=fmt, tile=tile, l1=l1, view=view)
        (slot,) = [s for s in apdsl.profile(src).slots if s.op == "dma_copy"]
        return slot
    # a [256, 64] tile of B [512, 64], and a [64, 256] tile of a row-major [64, 512]
    column = load("512, 64", " as COLUMN_MAJOR", "256, 64", "ZN", "0:256, :")
    rows = load("64, 512", "", "64, 256", "NZ", ":, 0:256")
    assert column.cost.run_bytes == rows.cost.run_bytes == 256 * 2
    assert column.end - column.start == pytest.approx(rows.end - rows.start)


GM_STREAMS = """\
kernel loads(A: f16[20, 8, 128, 256] @ gm) -> f16[20, 8, 128, 256] @ gm:
    if asc.ascend_is_aic():
        b = asc.get_block_idx()
        t = ndarray((128, 256), f16, l1)
        for i in range(8):
            dma_copy(t, A[b, i, :, :])
        asc.set_flag("MTE2_MTE1", 0)
        asc.wait_flag("MTE2_MTE1", 0)
    return A
"""


def test_cores_loading_at_once_share_gm_evenly():
    """Twenty cores streaming at once each get a share of the chip's GM as they ask: they
    finish together, at the chip's bandwidth (the interpreter runs core 0 to its end first;
    scheduled in that order, core 0 took GM at its full rate and core 19 waited for all)."""
    p = _launch(GM_STREAMS, "loads", 20)
    f = costs.table("ascend-a2")
    ends = {}
    for s in p.slots:
        ends[s.track] = max(ends.get(s.track, 0.0), s.end)
    assert len(ends) == 20
    chip = 20 * 8 * 128 * 256 * 2 / f["gm_bandwidth"].value  # ns at the chip's GM bandwidth
    alone = 8 * 128 * 256 * 2 / (f["gm_bytes_per_cycle"].value * f["clock"].value)
    assert chip > 2 * alone  # (the test's premise: GM, not a core's rate, is the limit)
    assert max(ends.values()) == pytest.approx(chip)
    # served in turn, a load of each core a round: they end within one round of each other
    one_round = 20 * 128 * 256 * 2 / f["gm_bandwidth"].value
    assert max(ends.values()) - min(ends.values()) <= one_round * (1 + 1e-9)


def test_the_catlass_calibration_rows_are_in_band():
    """SPEC 14's CATLASS rows, at their published size on 20 cores (about 3 s each)."""
    assert 0.8 <= bench_calibration._catlass("case1_128x256", 20) / 72.5e-6 <= 1.25
    assert 0.8 <= bench_calibration._catlass("case1_256x128", 20) / 48.6e-6 <= 1.25


def test_a_repeated_gm_read_keeps_its_runs():
    from apdsl.profile.model import storage_run_elements
    from apdsl.tensor.lowering import AccessPattern
    ap = AccessPattern("t", "gm", "float16", "ND", 0, [[0, 4], [1024, 8], [1, 256]])
    assert storage_run_elements(ap) == 256


# -- validation kernels (not fitted to) -------------------------------------------------------

def _selective_scan(delta, u, A, B, C):
    """The fused Mamba tutorial's recurrence, step by step in float64."""
    batch, channels, seq = delta.shape
    out = np.zeros((batch, channels, seq))
    for b in range(batch):
        for s in range(A.shape[1]):
            h = np.zeros(channels)
            for t in range(seq):
                h = np.exp(delta[b, :, t] * A[:, s]) * h + delta[b, :, t] * u[b, :, t] * B[b, s, t]
                out[b, :, t] += C[b, s, t] * h
    return out


@pytest.mark.parametrize("kernel", ["mamba_v1", "mamba_v2", "mamba_v2_hoisted", "mamba_v3",
                                    "mamba_v3_hoisted"])
def test_the_mamba_validation_kernels_compute_the_selective_scan(kernel):
    from apdsl.nki.program import PyProgram
    rng = np.random.default_rng(5)
    # (v3 cuts seq_len in tiles of 512: two of them carry the scan from one to the next)
    batch, channels, seq, states = 2, 256, 1024 if "v3" in kernel else 48, 3
    ins = {"delta": rng.uniform(0, 0.5, (batch, channels, seq)),
           "u": rng.standard_normal((batch, channels, seq)),
           "A": -rng.uniform(0.1, 1.0, (channels, states)),
           "B": rng.standard_normal((batch, states, seq)),
           "C": rng.standard_normal((batch, states, seq))}
    ins = {k: v.astype(np.float32) for k, v in ins.items()}
    with apdsl.target("trn1"):
        got = PyProgram(str(ROOT / "bench" / "calibration_kernels.py")).run(
            kernel, ins).value.numpy()
    want = _selective_scan(*(ins[k].astype(np.float64) for k in ("delta", "u", "A", "B", "C")))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


FAST = """\
kernel k(X: {dt}[128, 1024] @ hbm) -> {dt}[128, 512] @ hbm:
    x: {dt}[128, 1024] @ sbuf
    y: {dt}[128, 512] @ sbuf
    z: {dt}[128, 512] @ sbuf
    r: {dt}[128, 1] @ sbuf
    dma_copy(dst=x, src=X)
    dma_copy(dst=y, src=X[:, 0:512])
    dma_copy(dst=z, src=X[:, 512:1024])
    {call}
    out = ndarray((128, 512), {dt}, hbm)
    dma_copy(dst=out, src=z)
    return out
"""


@pytest.mark.parametrize("dt, call, op, cycles", [
    # tensor_tensor: N for bf16 add/multiply/subtract, both inputs in SBUF with stride 1
    ("bf16", "nisa.tensor_tensor(dst=z, data1=x[:, 0:512], data2=y, op=nl.add)", None, 512),
    ("bf16", "nisa.tensor_tensor(dst=z, data1=x[:, 0:512], data2=y, op=nl.subtract)", None,
     512),
    ("bf16", "nisa.tensor_tensor(dst=z, data1=x[:, 0:512], data2=y, op=nl.maximum)", None,
     1024),
    ("bf16", "nisa.tensor_tensor(dst=z, data1=x[:, 0:1024:2], data2=y, op=nl.add)", None,
     1024),
    ("f32", "nisa.tensor_tensor(dst=z, data1=x[:, 0:512], data2=y, op=nl.add)", None, 1024),
    # scalar_tensor_tensor: N for bf16 subtract then multiply with N even
    ("bf16", "nisa.scalar_tensor_tensor(dst=z, data=y, op0=nl.subtract, operand0=1.0, "
     "op1=nl.multiply, operand1=x[:, 0:512])", None, 512),
    ("bf16", "nisa.scalar_tensor_tensor(dst=z, data=y, op0=nl.add, operand0=1.0, "
     "op1=nl.multiply, operand1=x[:, 0:512])", None, 1024),
    ("f32", "nisa.scalar_tensor_tensor(dst=z, data=y, op0=nl.subtract, operand0=1.0, "
     "op1=nl.multiply, operand1=x[:, 0:512])", None, 1024),
    # tensor_reduce: N/2 for bf16 add or maximum
    ("bf16", "nisa.tensor_reduce(dst=r, op=nl.add, data=x, axis=1)", None, 512),
    ("bf16", "nisa.tensor_reduce(dst=r, op=nl.maximum, data=x, axis=1)", None, 512),
    ("bf16", "nisa.tensor_reduce(dst=r, op=nl.multiply, data=x, axis=1)", None, 1024),
    ("f32", "nisa.tensor_reduce(dst=r, op=nl.add, data=x, axis=1)", None, 1024),
    # memset: N/2 for a zero fill of bf16, else N
    ("bf16", "nisa.memset(dst=x, value=0.0)", "memset", 512),
    ("bf16", "nisa.memset(dst=x, value=1.0)", "memset", 1024),
    ("f32", "nisa.memset(dst=x, value=0.0)", "memset", 1024),
])
def test_the_isa_fast_rows_for_bf16(dt, call, op, cycles):
    """ISA at 1db4d74e (each instruction's "Estimated instruction cost", ARCH1's exceptions to
    its N / 2N rule) on trn1: the cycles of each row, on a [128, 1024]-wide kernel."""
    name = op or call.split("(")[0].split(".")[-1]
    vec = 1 / costs.table("trn1")["vector_clock"].value
    assert _one(FAST.format(dt=dt, call=call), name, "trn1") == pytest.approx(cycles * vec)


@pytest.mark.parametrize("op, cycles", [("nl.add", 512), ("nl.maximum", 512)])
def test_the_fast_row_and_the_trn2_mode_do_not_add(op, cycles):
    """trn2: the performance mode lifts a bf16 tensor_tensor with both inputs in SBUF 2x over
    the v2 rule (ARCH2), the ISA's row makes add/multiply/subtract N: either gives N, both
    together are not taken as N/2."""
    vec = 1 / costs.table("trn2")["vector_clock"].value
    call = f"nisa.tensor_tensor(dst=z, data1=x[:, 0:512], data2=y, op={op})"
    assert _one(FAST.format(dt="bf16", call=call), "tensor_tensor", "trn2") == \
        pytest.approx(cycles * vec)
