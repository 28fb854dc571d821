"""`tensor_copy_predicated`, `affine_select`, `range_select`, `select_reduce`,
`tensor_tensor_scan` (SPEC 11): values against the isa docstrings' NumPy models, the Vector
Engine accumulators across instructions, every refusal, and `lower` showing every operand."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import lower_header, raises_code

import apdsl
from apdsl.runtime.instructions import (
    affine_select,
    range_select,
    select_reduce,
    tensor_copy_predicated,
    tensor_tensor_scan,
)
from apdsl.runtime.table.operators import OPERATORS
from apdsl.tensor.dtypes import DTYPES, cast_array
from apdsl.tensor.view import from_numpy, ndarray

op = OPERATORS.__getitem__
FP32_MIN = np.finfo(np.float32).min
FLOATS = ("float32", "float16", "bfloat16")


def tile(values, dtype="float32", buffer="sbuf"):
    return from_numpy(np.asarray(values), buffer, dtype=dtype)


def held(values, dtype):
    """What a tile of `dtype` holds for `values` (SPEC 4's cast), as float32."""
    return cast_array(np.asarray(values, np.float32), DTYPES[dtype]).astype(np.float32)


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                  np.asarray(want).astype(np.float64))


# -- tensor_copy_predicated ----------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.sampled_from(FLOATS + ("int32", "uint8")), st.sampled_from(("uint8", "uint16",
                                                                         "uint32")),
       st.booleans(), st.booleans(), st.integers(1, 64), st.integers(1, 16),
       st.integers(0, 2**31 - 1))
def test_copy_predicated_copies_where_true(dtype, pdt, reverse, scalar, parts, free, seed):
    rng = np.random.default_rng(seed)
    old = rng.integers(0, 100, (parts, free)).astype(np.float32)
    src = rng.integers(0, 100, (parts, free)).astype(np.float32)
    pred = rng.integers(0, 3, (parts, free))
    d = tile(old, dtype)
    tensor_copy_predicated(d, 7.0 if scalar else tile(src, dtype), tile(pred, pdt, "psum"),
                           reverse_pred=reverse)
    take = (pred != 0) != reverse
    same(d.numpy(), np.where(take, 7.0 if scalar else held(src, dtype), held(old, dtype)))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_bool_predicate_is_a_uint8_one(reverse):
    # NKI's dtype table: "boolean stored as uint8" (nl.bool_ or numpy.bool), so both selection
    # instructions that take a uint8 predicate take a bool one (a NumPy comparison's result)
    rng = np.random.default_rng(3)
    pred = rng.integers(0, 2, (8, 16)).astype(bool)
    src, old = rng.standard_normal((2, 8, 16)).astype(np.float32)
    d = tile(old)
    tensor_copy_predicated(d, tile(src), from_numpy(pred, "sbuf"), reverse_pred=reverse)
    same(d.numpy(), np.where(pred != reverse, src, old))
    d, r = ndarray((8, 16), "float32", "sbuf"), ndarray((8, 1), "float32", "sbuf")
    select_reduce(d, from_numpy(pred, "sbuf"), tile(src), -1.5, reduce_res=r,
                  reduce_cmd="reset_reduce", reverse_pred=reverse)
    want = np.where(pred != reverse, src, np.float32(-1.5))
    same(d.numpy(), want)
    same(r.numpy(), want.max(axis=1, keepdims=True))


def test_copy_predicated_leaves_unwritten_elements_unwritten():
    d = ndarray((2, 2), "float32", "sbuf")
    tensor_copy_predicated(d, tile(np.full((2, 2), 3.0)),
                           tile(np.array([[1, 0], [0, 1]]), "uint8"))
    assert d.storage.mask.reshape(-1).tolist() == [True, False, False, True]
    with raises_code("APK404"):
        d.numpy()
    assert d[0:1, 0:1].numpy().tolist() == [[3.0]]


def test_copy_predicated_is_bit_exact():
    bits = np.array([[0x7FC00001, 0x00000001]], np.uint32).view(np.float32)  # NaN payload
    d = tile(np.zeros((1, 2)))
    tensor_copy_predicated(d, from_numpy(bits, "sbuf"), tile(np.ones((1, 2)), "uint8"))
    assert d.numpy().view(np.uint32).tolist() == [[0x7FC00001, 1]]


def test_copy_predicated_refusals():
    d, s = tile(np.zeros((4, 8))), tile(np.ones((4, 8)), buffer="psum")
    pp = tile(np.ones((4, 8)), "uint8", "psum")
    with raises_code("APK353"):
        tensor_copy_predicated(d, s, pp)
    with raises_code("APK360"):
        tensor_copy_predicated(d, tile(np.ones((4, 8)), "bfloat16"), tile(np.ones((4, 8)),
                                                                           "uint8"))
    with raises_code("APK461"):
        tensor_copy_predicated(d, 1.0, tile(np.ones((4, 8)), "int8"))
    with raises_code("APK460"):
        tensor_copy_predicated(d, 1.0, tile(np.ones((4, 4)), "uint8"))
    with raises_code("APK359"):
        tensor_copy_predicated(d, "1", pp)
    with raises_code("APK348"):
        tensor_copy_predicated(d, 1.0, pp, engine="gpsimd")


# -- affine_select -------------------------------------------------------------------------------

def _affine_loop(parts, pattern, cm, offset, cmp, on_true, false):
    """The docstring's pseudo-code, element by element."""
    steps = [s for s, _ in pattern] + [0] * (4 - len(pattern))
    nums = [n for _, n in pattern] + [1] * (4 - len(pattern))
    out = np.empty((parts, int(np.prod(nums))), np.float32)
    for c in range(parts):
        k = 0
        for w in range(nums[0]):
            for z in range(nums[1]):
                for y in range(nums[2]):
                    for x in range(nums[3]):
                        a = offset + c * cm + w * steps[0] + z * steps[1] + y * steps[2] + \
                            x * steps[3]
                        out[c, k] = on_true[c, k] if cmp(a, 0) else false
                        k += 1
    return out


CMPS = {"equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b,
        "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b,
        "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(CMPS)), st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 4)),
                                               min_size=1, max_size=4),
       st.integers(-3, 3), st.integers(-10, 10), st.integers(1, 16),
       st.sampled_from(FLOATS), st.sampled_from(FLOATS))
def test_affine_select_follows_the_pseudo_code(cmp, pattern, cm, offset, parts, src_dt, dst_dt):
    free = int(np.prod([n for _, n in pattern]))
    x = np.arange(parts * free, dtype=np.float32).reshape(parts, free) / 4
    d = ndarray((parts, 2, free // 2) if free % 2 == 0 else (parts, free), dst_dt, "sbuf")
    affine_select(d, [list(p) for p in pattern], cm, tile(x, src_dt), -9984.0, op(cmp),
                  offset=offset)
    want = _affine_loop(parts, pattern, cm, offset, CMPS[cmp], held(x, src_dt), -9984.0)
    same(d.numpy().reshape(parts, free), held(want, dst_dt))


def test_affine_select_causal_mask_default_equal_and_int_bits():
    x = tile(np.array([[2**30 + 1, 5], [7, 2**30 + 3]], np.int32), "int32")
    d = ndarray((2, 2), "int32", "sbuf")
    affine_select(d, [[-1, 2]], 1, x, -1.0)  # default cmp_op: equal -> the diagonal
    assert d.numpy().tolist() == [[2**30 + 1, -1], [-1, 2**30 + 3]]  # moved as they are


def test_affine_select_refusals():
    x, d = tile(np.ones((4, 8))), ndarray((4, 8), "float32", "sbuf")
    with raises_code("APK309"):
        affine_select(ndarray((4, 8), "float32", "psum"), [[1, 8]], 0, x, 0.0)
    with raises_code("APK309"):
        affine_select(d, [[1, 8]], 0, tile(np.ones((4, 8)), buffer="psum"), 0.0)
    with raises_code("APK366"):
        affine_select(d, [[1, 4]], 0, x, 0.0)
    with raises_code("APK366"):
        affine_select(d, [[1, 2]] * 3 + [[1, 1], [1, 1]], 0, x, 0.0)
    with raises_code("APK351"):
        affine_select(d, [[1, 8]], 0, x, 0.0, op("add"))
    with raises_code("APK359"):
        affine_select(d, [[1, 8]], 0, x, None)
    with raises_code("APK420"):
        affine_select(d, [1, 8], 0, x, 0.0)
    with raises_code("APK348"):
        affine_select(d, [[1, 8]], 0, x, 0.0, engine="vector")


# -- range_select --------------------------------------------------------------------------------

RANGE_CMPS = ("equal", "less", "less_equal", "greater", "greater_equal")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(RANGE_CMPS), st.sampled_from(RANGE_CMPS), st.integers(1, 32),
       st.integers(1, 24), st.integers(-8, 8), st.sampled_from(FLOATS), st.sampled_from(FLOATS),
       st.integers(0, 2**31 - 1))
def test_range_select_follows_the_numpy_model(c0, c1, parts, free, start, src_dt, dst_dt, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((parts, free)).astype(np.float32)
    b0 = rng.integers(-4, 20, (parts, 1)).astype(np.float32)
    b1 = rng.integers(-4, 20, (parts, 1)).astype(np.float32)
    d = ndarray((parts, free), dst_dt, "sbuf")
    r = ndarray((parts, 1), "float32", "sbuf")
    range_select(d, tile(x, src_dt), op(c0), op(c1), tile(b0), tile(b1), reduce_res=r,
                 range_start=start)
    # the docstring's model
    indices = np.zeros((parts, free), np.float32)
    indices[:] = start + np.arange(free)
    mask = CMPS[c0](indices, b0) & CMPS[c1](indices, b1)
    out = np.where(mask, held(x, src_dt), FP32_MIN)
    same(d.numpy(), held(out, dst_dt))
    same(r.numpy(), np.max(out, axis=1, keepdims=True))


def test_range_select_fill_becomes_minus_inf_in_bf16():
    d = ndarray((1, 2), "bfloat16", "sbuf")
    range_select(d, tile(np.ones((1, 2))), op("less"), op("less"), tile([[1.0]]),
                 tile([[1.0]]))
    assert d.numpy().astype(np.float32).tolist() == [[1.0, -np.inf]]


def test_range_select_accumulates_across_instructions():
    r = ndarray((2, 1), "float32", "sbuf")
    lo, hi = tile([[0.0], [0.0]]), tile([[9.0], [9.0]])
    d = ndarray((2, 3), "float32", "sbuf")
    ge, lt = op("greater_equal"), op("less")
    range_select(d, tile([[1.0, 5.0, 2.0], [0.0, 0.0, 0.0]]), ge, lt, lo, hi)
    range_select(d, tile([[3.0, 4.0, 0.0], [1.0, 8.0, 0.0]]), ge, lt, lo, hi,
                 reduce_cmd="reduce", reduce_res=r)
    assert r.numpy().tolist() == [[5.0], [8.0]]
    range_select(d, tile([[3.0, 4.0, 0.0], [1.0, 2.0, 0.0]]), ge, lt, lo, hi,
                 reduce_cmd="reset_reduce", reduce_res=r)
    assert r.numpy().tolist() == [[4.0], [2.0]]


def test_range_select_refusals():
    x, d = tile(np.ones((2, 4))), ndarray((2, 4), "float32", "sbuf")
    b = tile(np.ones((2, 1)))
    lt = op("less")
    with apdsl.target("trn1"):
        with raises_code("APK367"):
            range_select(ndarray((2, 4), "float32", "sbuf"), tile(np.ones((2, 4))), lt, lt,
                         tile(np.ones((2, 1))), tile(np.ones((2, 1))))
    with raises_code("APK368"):
        range_select(d, x, lt, lt, b, b, on_false_value=0.0)
    with raises_code("APK369"):
        range_select(d, x, lt, lt, b, b, range_start=2**24)
    with raises_code("APK351"):
        range_select(d, x, op("not_equal"), lt, b, b)
    with raises_code("APK351"):
        range_select(d, x, lt, lt, b, b, reduce_op=op("add"))
    with raises_code("APK461"):
        range_select(d, tile(np.ones((2, 4)), "int32"), lt, lt, b, b)
    with raises_code("APK461"):
        range_select(d, x, lt, lt, tile(np.ones((2, 1)), "bfloat16"), b)
    with raises_code("APK460"):
        range_select(d, x, lt, lt, tile(np.ones((2, 2))), b)
    with raises_code("APK464"):
        range_select(d, x, lt, lt, b, b, reduce_cmd="load_reduce")
    with raises_code("APK464"):
        range_select(d, x, lt, lt, b, b, reduce_cmd="idle", reduce_res=ndarray(
            (2, 1), "float32", "sbuf"))
    with raises_code("APK464"):
        range_select(d, x, lt, lt, b, b, reduce_cmd="sometimes")


# -- select_reduce -------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.sampled_from(("int8", "uint8", "int16", "uint16")), st.booleans(), st.booleans(),
       st.sampled_from(FLOATS + ("int8",)), st.sampled_from(FLOATS), st.integers(1, 32),
       st.integers(1, 16), st.integers(0, 2**31 - 1))
def test_select_reduce_follows_the_numpy_model(pdt, reverse, col, src_dt, dst_dt, parts, free,
                                               seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, (parts, free)).astype(np.float32)
    pred = rng.integers(0, 2, (parts, free))
    f = rng.integers(-9, 9, (parts, 1)).astype(np.float32)
    d = ndarray((parts, free), dst_dt, "sbuf")
    r = ndarray((parts, 1), "float32", "sbuf")
    select_reduce(d, tile(pred, pdt), tile(x, src_dt, "psum"), tile(f) if col else -1.5,
                  reduce_res=r, reduce_cmd="reset_reduce", reverse_pred=reverse)
    p = (pred != 0) != reverse
    result = np.where(p, held(x, src_dt), f if col else np.float32(-1.5))
    same(d.numpy(), held(result, dst_dt))
    same(r.numpy(), np.max(result, axis=1, keepdims=True))


def test_select_reduce_idle_leaves_the_accumulators_unknown():
    d = ndarray((1, 2), "float32", "sbuf")
    m, x = tile([[1, 1]], "uint8"), tile([[1.0, 2.0]])
    r = ndarray((1, 1), "float32", "sbuf")
    select_reduce(d, m, x, 0.0, reduce_cmd="reset_reduce")
    select_reduce(d, m, x, 0.0, reduce_cmd="reduce", reduce_res=r)
    assert r.numpy().tolist() == [[2.0]]
    select_reduce(d, m, x, 0.0)  # idle (the default): may modify the accumulators
    with raises_code("APK465"):
        select_reduce(d, m, x, 0.0, reduce_cmd="reduce", reduce_res=r)


def test_each_program_run_has_its_own_accumulators():
    src = """\
d: f32[1, 2] @ sbuf
m: u8[1, 2] @ sbuf = 1
x: f32[1, 2] @ sbuf = 2.0
r: f32[1, 1] @ sbuf
nisa.select_reduce(d, m, x, 0.0, reduce_cmd=REDUCE, reduce_res=r)
"""
    apdsl.run(src.replace("REDUCE", "'reset_reduce'"))
    with raises_code("APK465"):  # a fresh device: nothing was reset on it
        apdsl.run(src.replace("REDUCE", "'reduce'"))


def test_select_reduce_refusals():
    d, x = ndarray((2, 4), "float32", "sbuf"), tile(np.ones((2, 4)))
    m = tile(np.ones((2, 4)), "uint8")
    with raises_code("APK353"):
        select_reduce(d, tile(np.ones((2, 4)), "uint8", "psum"), tile(np.ones((2, 4)),
                                                                      buffer="psum"), 0.0)
    with raises_code("APK461"):
        select_reduce(d, tile(np.ones((2, 4)), "uint32"), x, 0.0)
    with raises_code("APK461"):
        select_reduce(d, m, tile(np.ones((2, 4)), "int32"), 0.0)
    with raises_code("APK461"):
        select_reduce(d, m, x, 0.0, reduce_cmd="reset_reduce",
                      reduce_res=ndarray((2, 1), "int32", "sbuf"))
    with raises_code("APK460"):
        select_reduce(d, m, x, tile(np.ones((2, 2))))
    with raises_code("APK351"):
        select_reduce(d, m, x, 0.0, reduce_op=op("minimum"))
    with raises_code("APK359"):
        select_reduce(d, m, x, None)


# -- tensor_tensor_scan --------------------------------------------------------------------------

SCAN_OPS = ("add", "subtract", "multiply", "maximum", "minimum")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(SCAN_OPS), st.sampled_from(SCAN_OPS), st.booleans(), st.booleans(),
       st.booleans(), st.sampled_from(FLOATS), st.integers(1, 16), st.integers(1, 12),
       st.integers(0, 2**31 - 1))
def test_scan_follows_the_docstring_loop(o0, o1, rev0, rev1, col, dt, parts, free, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (parts, free)).astype(np.float32)
    b = rng.uniform(-1, 1, (parts, free)).astype(np.float32)
    init = rng.uniform(-1, 1, (parts, 1)).astype(np.float32)
    d = ndarray((parts, free), dt, "sbuf")
    tensor_tensor_scan(d, tile(a), tile(b, buffer="psum"), tile(init) if col else 0.5, op(o0),
                       op(o1), reverse0=rev0, reverse1=rev1)
    f0, f1 = OPERATORS[o0].fn, OPERATORS[o1].fn

    def step(x, prev, y):
        t = f0(prev, x) if rev0 else f0(x, prev)
        return f1(y, t) if rev1 else f1(t, y)

    result = np.empty((parts, free), np.float32)
    prev = init[:, 0] if col else np.full(parts, 0.5, np.float32)
    for i in range(free):
        prev = step(a[:, i], prev, b[:, i])
        result[:, i] = prev
    same(d.numpy(), held(result, dt))


def test_scan_refusals():
    d, x = ndarray((2, 4), "float32", "sbuf"), tile(np.ones((2, 4)))
    px = tile(np.ones((2, 4)), buffer="psum")
    add = op("add")
    with raises_code("APK353"):
        tensor_tensor_scan(d, px, px, 0.0, add, add)
    with raises_code("APK351"):
        tensor_tensor_scan(d, x, x, 0.0, op("abs"), add)
    with raises_code("APK351"):
        tensor_tensor_scan(d, x, x, 0.0, add, op("bitwise_or"))
    with raises_code("APK359"):
        tensor_tensor_scan(d, x, x, "0", add, add)
    with raises_code("APK460"):
        tensor_tensor_scan(d, x, x, tile(np.ones((2, 4))), add, add)
    with raises_code("APK460"):
        tensor_tensor_scan(d, x, tile(np.ones((2, 5))), 0.0, add, add)


# -- the language and lower ----------------------------------------------------------------------

MASK = """\
kernel k(s: f32[128, 128] @ hbm) -> f32[128, 128] @ hbm:
    x: f32[128, 128] @ sbuf
    dma_copy(x, s)
    m: bf16[128, 128] @ sbuf
    nisa.affine_select(dst=m, pattern=[[-1, 128]], channel_multiplier=1, on_true_tile=x,
                       on_false_value=-9984.0, cmp_op=nl.greater_equal)
    p: u8[128, 128] @ sbuf
    nisa.tensor_scalar(p, m, nl.greater, 0.0)
    y: bf16[128, 128] @ sbuf
    memset(y, 0.0)
    nisa.tensor_copy_predicated(dst=y, src=m, predicate=p)
    c: f32[128, 128] @ sbuf
    z: f32[128, 128] @ sbuf
    memset(z, 0.0)
    nisa.tensor_tensor_scan(c, y, z, 0.0, nl.add, nl.add)
    r: f32[128, 1] @ sbuf
    nisa.select_reduce(dst=c, predicate=p, on_true=c, on_false=0.0, reduce_res=r,
                       reduce_cmd="reset_reduce")
    o: f32[128, 128] @ hbm
    dma_copy(o, c)
    return o
"""


def _mask_oracle(s):
    i = np.arange(128)
    m = np.where(i[:, None] - i[None, :] >= 0, s, -9984.0).astype(ml_dtypes.bfloat16)
    m32 = m.astype(np.float32)
    p = m32 > 0
    y = np.where(p, m32, 0.0).astype(np.float32)
    c = np.cumsum(y, axis=1, dtype=np.float32)  # sequential float32 sums
    return np.where(p, c, 0.0).astype(np.float32)


def test_a_masked_running_sum_runs_in_apk():
    s = np.random.default_rng(3).uniform(-1, 1, (128, 128)).astype(np.float32)
    np.testing.assert_array_equal(apdsl.run(MASK, inputs={"s": s}), _mask_oracle(s))


@pytest.mark.parametrize("cmd", ["reset_reduce", 3, type("E", (), {"name": "reset_reduce"})()])
def test_reduce_cmd_is_a_name_an_enum_value_or_an_enum_member(cmd):
    r = ndarray((1, 1), "float32", "sbuf")
    select_reduce(ndarray((1, 2), "float32", "sbuf"), tile([[1, 0]], "uint8"),
                  tile([[4.0, 9.0]]), 0.0, reduce_res=r, reduce_cmd=cmd)
    assert r.numpy().tolist() == [[4.0]]


def test_lower_shows_every_operand(tmp_path):
    f = tmp_path / "k.apk"
    f.write_text(MASK)
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f)], capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()

    def roles(line_no, op_name, n):
        k = lower_header(lines, f"{f}:{line_no}  {op_name}")
        return [ln.split()[0] for ln in lines[k + 1:k + 1 + n]]

    assert roles(5, "affine_select", 2) == ["dst", "on_true_tile"]
    assert roles(11, "tensor_copy_predicated", 3) == ["dst", "src", "predicate"]
    assert roles(15, "tensor_tensor_scan", 3) == ["dst", "data0", "data1"]
    assert roles(17, "select_reduce", 4) == ["dst", "predicate", "on_true", "reduce_res"]


@pytest.mark.parametrize("instruction", ["range_select", "tensor_tensor_scan", "select_reduce"])
def test_check_finds_the_rules(instruction):
    programs = {
        "range_select": "a: f32[2, 4] @ sbuf = 1.0\nb: f32[2, 1] @ sbuf = 1.0\n"
                        "d: f32[2, 4] @ sbuf\n"
                        "range_select(d, a, nl.less, nl.less, b, b, on_false_value=0.0)\n",
        "tensor_tensor_scan": "a: f32[2, 4] @ psum = 1.0\nd: f32[2, 4] @ sbuf\n"
                              "tensor_tensor_scan(d, a, a, 0.0, nl.add, nl.add)\n",
        "select_reduce": "x: f32[2, 4] @ sbuf = 1.0\nm: u8[2, 4] @ sbuf = 1\n"
                         "d: f32[2, 4] @ sbuf\nr: f32[2, 1] @ sbuf\n"
                         "select_reduce(d, m, x, 0.0, reduce_cmd='reset_reduce')\n"
                         "select_reduce(d, m, x, 0.0)\n"
                         "select_reduce(d, m, x, 0.0, reduce_res=r, reduce_cmd='reduce')\n",
    }
    codes = {"range_select": "APK368", "tensor_tensor_scan": "APK353",
             "select_reduce": "APK465"}
    assert [e.code for e in apdsl.check(programs[instruction])] == [codes[instruction]]


def test_the_causal_mask_example_against_numpy():
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "causal_mask.apk"
    rng = np.random.default_rng(5)
    s, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    got = apdsl.run(path.read_text(), inputs={"S": s, "B": b})
    biased = s * np.float32(0.125) * np.float32(1.0) + b
    i = np.arange(128)
    masked = np.where(i[:, None] - i[None, :] >= 0, biased, np.float32(-9984.0))
    kept = np.where(masked > -9000.0, masked, np.float32(0.0)).astype(np.float32)
    want = np.cumsum(kept, axis=1, dtype=np.float32)  # sequential float32 adds
    np.testing.assert_array_equal(got, want)
