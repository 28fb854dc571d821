"""The profile's dependency graph (SPEC section 14): every output an instruction's table entry
declares (`dst`, and the second outputs `reduce_res`, `dst_idx`, ...) is a write, so a reader
of it never starts before the instruction that writes it has ended; and over random
programs, no instruction starts before a producer of any of its inputs has ended.

The oracle is independent of the scheduler: a brute-force scan of every earlier instruction
whose written elements (the exact element offsets of its lowered access patterns, not the
scheduler's byte intervals) meet the elements a later instruction reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.runtime.table import TABLE, outputs

ROOT = Path(__file__).resolve().parent.parent

# One working call of every NKI instruction of the table, on the tiles `_PROGRAM` declares:
# (instruction, statement, {output role: the view it writes}).  `x` (f32[16, 16]) and `ix`
# (u32[16, 16], 0..15 along each row) and `on` (u16[16, 16], ones) are loaded by DMAs before
# it (record 3 is the call; record 4 after the statement `SETUP` puts first).  rand2 exists
# from trn3 on: it runs there (`TARGETS`).
SAMPLES: list[tuple[str, str, dict[str, str]]] = [
    ("dma_copy", "dma_copy(dst=T, src=X)", {"dst": "T"}),
    ("tensor_scalar_reduce", "nisa.tensor_scalar_reduce(dst=T, data=x, op0=nl.multiply, "
     "operand0=2.0, reduce_op=nl.add, reduce_res=R)", {"dst": "T", "reduce_res": "R"}),
    ("tensor_scalar_cumulative", "nisa.tensor_scalar_cumulative(dst=T, src=x, "
     "op0=nl.multiply, op1=nl.add, imm0=2.0)", {"dst": "T"}),
    ("nonzero_with_count", "nisa.nonzero_with_count(dst=N, src=x)", {"dst": "N[0:1, :]"}),
    ("topk", "nisa.topk(val_dst=Y, idx_dst=U[:, 0:8], src=H[0:16, :], n=256)",
     {"val_dst": "Y[0:8, 0:1]", "idx_dst": "U[0:8, 0:1]"}),  # (K = 8: a snake of 8)
    ("sequence_bounds", "nisa.sequence_bounds(dst=V, segment_ids=I)", {"dst": "V"}),
    ("nc_n_gather", "nisa.nc_n_gather(dst=T, data=x, indices=ix)", {"dst": "T"}),
    ("dma_compute", "nisa.dma_compute(dst=T, srcs=[x, X], reduce_op=nl.add)", {"dst": "T"}),
    ("exponential", "nisa.exponential(dst=T, src=x, reduce_res=R, "
     "reduce_cmd=\"reset_reduce\")", {"dst": "T", "reduce_res": "R"}),
    ("activate2", "nisa.activate2(dst=T, op=nl.exp, data=x, imm0=2.0, imm1=0.5, "
     "op0=nl.multiply, op1=nl.add, reduce_op=nl.maximum, reduce_res=R, "
     "reduce_cmd=\"reset_reduce\")", {"dst": "T", "reduce_res": "R"}),
    ("tensor_copy", "tensor_copy(dst=T, src=x)", {"dst": "T"}),
    ("memset", "memset(dst=T, value=2.0)", {"dst": "T"}),
    ("iota", "iota(U, [[1, 16]], 0, 1)", {"dst": "U"}),
    ("nc_matmul", "nc_matmul(dst=P, stationary=x[:, 0:4], moving=x)", {"dst": "P"}),
    ("reciprocal", "nisa.reciprocal(dst=T, data=x)", {"dst": "T"}),
    ("tensor_tensor", "nisa.tensor_tensor(dst=T, data1=x, data2=x, op=nl.add)", {"dst": "T"}),
    ("tensor_scalar", "nisa.tensor_scalar(dst=T, data=x, op0=nl.multiply, "
     "operand0=x[:, 0:1])", {"dst": "T"}),
    ("scalar_tensor_tensor", "nisa.scalar_tensor_tensor(dst=T, data=x, op0=nl.add, "
     "operand0=1.5, op1=nl.multiply, operand1=x)", {"dst": "T"}),
    ("tensor_copy_predicated", "nisa.tensor_copy_predicated(dst=T, src=x, predicate=on)",
     {"dst": "T"}),
    ("affine_select", "nisa.affine_select(dst=T, pattern=[[-1, 16]], channel_multiplier=1, "
     "on_true_tile=x, on_false_value=-1.0)", {"dst": "T"}),
    ("range_select", "nisa.range_select(dst=T, on_true_tile=x, comp_op0=nl.greater_equal, "
     "comp_op1=nl.less, bound0=x[:, 0:1], bound1=x[:, 1:2], reduce_res=R, "
     "reduce_op=nl.maximum)", {"dst": "T", "reduce_res": "R"}),
    ("select_reduce", "nisa.select_reduce(dst=T, predicate=on, on_true=x, on_false=0.0, "
     "reduce_res=R, reduce_cmd=\"reset_reduce\", reduce_op=nl.maximum)",
     {"dst": "T", "reduce_res": "R"}),
    ("tensor_tensor_scan", "nisa.tensor_tensor_scan(dst=T, data0=x, data1=x, initial=0.5, "
     "op0=nl.multiply, op1=nl.add)", {"dst": "T"}),
    ("activation", "nisa.activation(dst=T, op=nl.exp, data=x, reduce_op=nl.add, "
     "reduce_res=R, reduce_cmd=\"reset_reduce\")", {"dst": "T", "reduce_res": "R"}),
    ("activation_reduce", "nisa.activation_reduce(dst=T, op=nl.exp, data=x, "
     "reduce_op=nl.add, reduce_res=R)", {"dst": "T", "reduce_res": "R"}),
    ("tensor_reduce", "nisa.tensor_reduce(dst=R, op=nl.add, data=x, axis=(1,))",
     {"dst": "R"}),
    ("tensor_partition_reduce", "nisa.tensor_partition_reduce(dst=T[0:1, :], op=nl.add, "
     "data=x)", {"dst": "T[0:1, :]"}),
    ("bn_stats", "nisa.bn_stats(dst=B, data=x)", {"dst": "B"}),
    ("bn_aggr", "nisa.bn_aggr(dst=T[:, 0:2], data=x[:, 0:6])", {"dst": "T[:, 0:2]"}),
    ("max8", "nisa.max8(dst=T[:, 0:8], src=x)", {"dst": "T[:, 0:8]"}),
    ("nc_find_index8", "nisa.nc_find_index8(dst=U[:, 0:8], data=x, vals=x[:, 0:8])",
     {"dst": "U[:, 0:8]"}),
    ("nc_match_replace8", "nisa.nc_match_replace8(dst=T, data=x, vals=x[:, 0:8], imm=-1.0, "
     "dst_idx=U[:, 0:8])", {"dst": "T", "dst_idx": "U[:, 0:8]"}),
    ("dropout", "nisa.dropout(dst=T, data=x, prob=0.5)", {"dst": "T"}),
    ("rng", "nisa.rng(dst=U)", {"dst": "U"}),
    ("rand2", "nisa.rand2(dst=T, min=0.0, max=1.0)", {"dst": "T"}),
    ("set_rng_seed", "nisa.set_rng_seed(src_seeds=ix[0:1, 0:1])", {}),
    ("rand_set_state", "nisa.rand_set_state(src_seeds=ix[:, 0:6])", {}),
    ("rand_get_state", "nisa.rand_get_state(dst=U[:, 0:6])", {"dst": "U[:, 0:6]"}),
    ("nc_transpose", "nisa.nc_transpose(dst=Q, data=x)", {"dst": "Q"}),
    ("dma_transpose", "nisa.dma_transpose(dst=W, src=X)", {"dst": "W"}),
    ("nc_stream_shuffle", "nisa.nc_stream_shuffle(dst=T, src=x, "
     "shuffle_mask=[(i + 1) % 4 for i in range(32)])", {"dst": "T"}),
    ("local_gather", "nisa.local_gather(dst=T, src_buffer=x, index=on[:, 0:1], num_elem_per_idx=1)",
     {"dst": "T"}),
    ("quantize_mx", "quantize_mx(dst=G, src=H, dst_scale=S)", {"dst": "G", "dst_scale": "S"}),
    ("nc_matmul_mx", "nc_matmul_mx(dst=M, stationary=Z, moving=Z, stationary_scale=E, "
     "moving_scale=E)", {"dst": "M"}),
    ("register_load", "register_load(register_alloc(0), ix[0:1, 0:1])", {}),
    ("register_store", "register_store(U[0:1, 0:1], register_alloc(7))",
     {"dst": "U[0:1, 0:1]"}),
]

TARGETS = {"rand2": "trn3", "exponential": "trn3", "activate2": "trn3", "quantize_mx": "trn3",
           "nc_matmul_mx": "trn3"}

# what a sample needs before it: a state to store
SETUP = {"rand_get_state": "nisa.rand_set_state(src_seeds=ix[:, 0:6])"}

_PROGRAM = """\
kernel k(X: f32[16, 16] @ hbm, IX: f32[16, 16] @ hbm, ON: f32[16, 16] @ hbm) -> f32[16, 16] @ sbuf:
    x: f32[16, 16] @ sbuf
    dma_copy(dst=x, src=X)
    ix: u32[16, 16] @ sbuf
    dma_copy(dst=ix, src=IX)
    on: u16[16, 16] @ sbuf
    dma_copy(dst=on, src=ON)
    T: f32[16, 16] @ sbuf
    R: f32[16, 1] @ sbuf
    U: u32[16, 16] @ sbuf
    B: f32[16, 6] @ sbuf
    W: f32[16, 16] @ sbuf
    P: f32[4, 16] @ psum
    Q: f32[16, 16] @ psum
    N: i32[16, 17] @ sbuf
    I: i32[1, 16] @ sbuf = 1
    V: f32[1, 32] @ sbuf
    H: bf16[32, 16] @ sbuf = 1.5
    G: float8_e4m3fn_x4[32, 4] @ sbuf
    S: u8[32, 4] @ sbuf = 0
    Z: float8_e5m2_x4[32, 4] @ sbuf = 0
    E: u8[4, 4] @ sbuf = 127
    M: f32[4, 4] @ psum
    Y: bf16[16, 8] @ sbuf
    {call}
{reads}    return x
"""

_INPUTS = {"X": np.linspace(0.5, 2.0, 256, dtype=np.float32).reshape(16, 16),
           "IX": np.tile(np.arange(16, dtype=np.float32), (16, 1)),
           "ON": np.ones((16, 16), np.float32)}


def _program(call: str, reads: list[tuple[str, str, str]]) -> str:
    """The sample `call`, then one tensor_copy per (view, dtype, engine) reading it back."""
    lines = ""
    for i, (view, dt, engine) in enumerate(reads):
        lines += (f"    c{i} = ndarray({view}.shape, {dt}, sbuf)\n"
                  f"    tensor_copy(dst=c{i}, src={view}, engine=\"{engine}\")\n")
    return _PROGRAM.format(call=call, reads=lines)


def _sample(op: str, call: str, reads: list[tuple[str, str, str]]) -> str:
    setup = SETUP.get(op)
    return _program(call if setup is None else f"{setup}\n    {call}", reads)


def test_the_samples_cover_every_nki_instruction_of_the_table():
    nki = {name for name, e in TABLE.items() if "nki" in e.engines or
           name.startswith("register_")}
    # collectives run only in a group of ranks: tests/test_ranks.py orders them in the profile
    ranks = {name for name, e in TABLE.items() if e.module == "nki.collectives"}
    assert {op for op, _, _ in SAMPLES} == nki - {"register_alloc", "register_move"} - ranks
    for op, _, written in SAMPLES:  # every declared output of every instruction is sampled
        assert set(written) == outputs(op), op


_DTYPE = {"T": "f32", "R": "f32", "U": "u32", "B": "f32", "W": "f32", "P": "f32", "Q": "f32",
          "N": "i32", "G": "float8_e4m3fn_x4", "S": "u8", "M": "f32", "V": "f32",
          "Y": "bf16"}


OUTPUT_CASES = [(op, call, role, view) for op, call, written in SAMPLES
                for role, view in written.items()]


@pytest.mark.parametrize("op,call,role,view", OUTPUT_CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in OUTPUT_CASES])
def test_every_output_of_every_instruction_orders_its_readers(op, call, role, view):
    # one reader of the output, on an engine other than the writer's (on the same engine,
    # program order alone would order them), so only the dependency can keep it waiting;
    # record 3 is the call (after the three loads and its setup)
    at = 3 + (op in SETUP)
    target = TARGETS.get(op, "trn2")
    with apdsl.target(target):
        first = apdsl.profile(_sample(op, call, []), inputs=_INPUTS)
    writers = [s for s in first.slots if s.record == at]
    assert writers and {s.op for s in writers} == {op}
    engine = next(e for e in ("vector", "scalar", "gpsimd")
                  if e.capitalize() != writers[0].track and not (e == "gpsimd" and
                                                                 view[0] in "PQ"))
    with apdsl.target(target):
        p = apdsl.profile(_sample(op, call, [(view, _DTYPE[view[0]], engine)]),
                          inputs=_INPUTS)
    writers = [s for s in p.slots if s.record == at]
    (reader,) = [s for s in p.slots if s.record == at + 1]
    assert reader.op == "tensor_copy" and reader.operands["src"].tensor == view[0]
    for w in writers:
        assert reader.start >= w.end - 1e-9, (op, role, w, reader)


# -- random programs -----------------------------------------------------------------------

_TILES = "ab"  # f32[8, 32] @ sbuf; `R` f32[8, 8] holds per-row scalars (in its first two columns), `U` u32[8, 16]
_RANDOM_HEAD = """\
kernel k(X: f32[8, 32] @ hbm) -> f32[8, 32] @ hbm:
    OUT = ndarray((8, 32), f32, hbm)
    a: f32[8, 32] @ sbuf
    b: f32[8, 32] @ sbuf
    c: f32[8, 32] @ sbuf
    d: f32[8, 32] @ sbuf
    R: f32[8, 8] @ sbuf
    U: u32[8, 16] @ sbuf
    dma_copy(dst=a, src=X)
    dma_copy(dst=b, src=X)
    dma_copy(dst=c, src=X)
    dma_copy(dst=d, src=X)
    dma_copy(dst=R, src=X[:, 0:8])
    iota(U, [[1, 16]], 0, 1)
    dma_copy(dst=OUT, src=X)
"""


@st.composite
def _statement(draw) -> str:
    """One instruction on random column windows of the tiles (few places, so writers and
    readers of one often meet); every value stays positive and finite (reciprocal's domain),
    and every read is of something written."""
    w = draw(st.sampled_from([8, 16]))

    def win(width: int = w) -> str:
        t = draw(st.sampled_from(_TILES))
        o = draw(st.sampled_from([0, 8, 16]))
        return f"{t}[:, {o}:{o + width}]"

    def col() -> str:
        j = draw(st.integers(0, 1))
        return f"R[:, {j}:{j + 1}]"

    kind = draw(st.sampled_from(["copy", "add", "act", "act", "reduce", "recip", "scale",
                                 "load", "store", "match", "match", "index"]))
    if kind == "copy":
        engine = draw(st.sampled_from(["vector", "scalar", "gpsimd"]))
        return f"tensor_copy(dst={win()}, src={win()}, engine=\"{engine}\")"
    if kind == "add":
        engine = draw(st.sampled_from(["vector", "gpsimd"]))
        return (f"nisa.tensor_tensor(dst={win()}, data1={win()}, data2={win()}, op=nl.add, "
                f"engine=\"{engine}\")")
    if kind == "act":
        return (f"nisa.activation(dst={win()}, op=nl.tanh, data={win()}, reduce_op=nl.add, "
                f"reduce_res={col()}, reduce_cmd=\"reset_reduce\")")
    if kind == "reduce":
        return f"nisa.tensor_reduce(dst={col()}, op=nl.add, data={win()}, axis=(1,))"
    if kind == "recip":
        return f"nisa.reciprocal(dst={win(1)}, data={col()})"
    if kind == "scale":
        engine = draw(st.sampled_from(["vector", "gpsimd"]))
        return (f"nisa.tensor_scalar(dst={win()}, data={win()}, op0=nl.add, operand0={col()}, "
                f"engine=\"{engine}\")")
    if kind == "load":
        o = draw(st.sampled_from([0, 8, 16]))
        return f"dma_copy(dst={win()}, src=X[:, {o}:{o + w}])"
    if kind == "store":
        o = draw(st.sampled_from([0, 8, 16]))
        return f"dma_copy(dst=OUT[:, {o}:{o + w}], src={win()})"
    k = draw(st.sampled_from([0, 8]))
    if kind == "match":  # its values are taken from its data: each is found
        t = draw(st.sampled_from(_TILES))
        o = draw(st.sampled_from([0, 8, 16]))
        return (f"nisa.nc_match_replace8(dst={win(16)}, data={t}[:, {o}:{o + 16}], "
                f"vals={t}[:, {o}:{o + 8}], imm=1.0, dst_idx=U[:, {k}:{k + 8}])")
    engine = draw(st.sampled_from(["scalar", "gpsimd"]))  # read the positions back
    return f"tensor_copy(dst={win(8)}, src=U[:, {k}:{k + 8}], engine=\"{engine}\")"


def _elements(ap) -> set[int]:
    """The storage elements an access pattern touches: offset + sum i_k * stride_k (SPEC 8),
    enumerated, not bounded."""
    idx = np.full((), int(ap.offset), np.int64)
    for k, (s, c) in enumerate(ap.pattern):
        shape = (int(c),) + (1,) * (len(ap.pattern) - k - 1)
        idx = idx + (np.arange(int(c), dtype=np.int64) * int(s)).reshape(shape)
    return set(idx.reshape(-1).tolist())


@settings(max_examples=60, deadline=None)
@given(st.lists(_statement(), min_size=1, max_size=10))
def test_no_instruction_starts_before_a_producer_of_its_inputs(statements):
    source = _RANDOM_HEAD + "".join(f"    {s}\n" for s in statements) + "    return OUT\n"
    x = np.linspace(0.5, 2.0, 256, dtype=np.float32).reshape(8, 32)
    p = apdsl.profile(source, inputs={"X": x})
    slots = p.slots
    # every access of every slot: (tensor, elements, written?)
    accesses = [[((ap.buffer, ap.tensor), _elements(ap), role in outputs(s.op))
                 for role, ap in s.operands.items()] for s in slots]
    for j, later in enumerate(slots):
        for i in range(j):
            earlier = slots[i]
            for key_a, el_a, w_a in accesses[i]:
                for key_b, el_b, w_b in accesses[j]:
                    # a read after a write (the producer of an input), and a write after a
                    # read or a write: the later one starts after the earlier one ends
                    if key_a == key_b and (w_a or w_b) and el_a & el_b:
                        assert later.start >= earlier.end - 1e-9, (source, earlier, later)


def test_softmax_reciprocal_waits_for_the_activation_writing_its_input(tmp_path):
    """The issue's case, as a user runs it: `apdsl profile examples/softmax.apk --trace`."""
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "apdsl", "profile",
                           str(ROOT / "examples" / "softmax.apk"), "--trace", str(out)],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    slices = {e["name"].rsplit(":", 1)[-1]: e for e in json.loads(out.read_text())["traceEvents"]
              if e["ph"] == "X"}
    act, recip = slices["20"], slices["23"]  # activation(reduce_res=total); reciprocal(total)
    assert act["name"].startswith("activation") and recip["name"].startswith("reciprocal")
    assert recip["ts"] >= act["ts"] + act["dur"] - 1e-9
