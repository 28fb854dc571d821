"""The AscendC vector instructions on UB (`asc.add`, ...): each against NumPy in the count
form, the mask form against an independent lane-by-lane model of the AscendC addressing
(Hypothesis over masks, repeats and strides), each form against the other, and the rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.ascend.vector.params import BinaryRepeatParams, UnaryRepeatParams
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.table import TABLE, implementation

NP = {"float16": np.float16, "float32": np.float32, "int16": np.int16, "int32": np.int32,
      "uint16": np.uint16, "uint32": np.uint32}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum, "bitwise_and": np.bitwise_and,
          "bitwise_or": np.bitwise_or}
UNARY = {"exp": np.exp, "ln": np.log, "abs": np.abs, "sqrt": np.sqrt,
         "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "reciprocal": lambda x: np.float32(1) / x,
         "relu": lambda x: np.maximum(x, 0), "bitwise_not": np.invert}
SCALAR = {"adds": np.add, "muls": np.multiply, "maxs": np.maximum, "mins": np.minimum,
          "leaky_relu": lambda x, s: np.where(x >= 0, x, x * s)}


def ub(values: np.ndarray) -> apdsl.Tensor:
    t = apdsl.ndarray(values.shape, str(values.dtype), "ub")
    write_view(t, values)
    return t


def dtypes(op: str) -> tuple[str, ...]:
    return TABLE[f"asc.{op}"].operand("dst").dtypes


def sample(dtype: str, n: int, rng: np.random.Generator, positive: bool = False) -> np.ndarray:
    if dtype.startswith("float"):
        x = rng.uniform(0.25 if positive else -4, 4, n)
        return x.astype(NP[dtype])
    lo = 1 if positive else (0 if dtype.startswith("u") else -100)
    return rng.integers(lo, 100, n).astype(NP[dtype])


def expect(fn, dtype: str, *xs: np.ndarray) -> np.ndarray:
    """The documented arithmetic: float32 math cast to the dtype, integers exact."""
    if dtype.startswith("float"):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(x.astype(np.float32) for x in xs))).astype(NP[dtype])
    return np.asarray(fn(*xs)).astype(NP[dtype])


POSITIVE = {"ln", "sqrt", "rsqrt", "reciprocal", "div"}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_count_form_against_numpy(op):
    rng = np.random.default_rng(1)
    for dtype in dtypes(op):
        a, b = sample(dtype, 200, rng), sample(dtype, 200, rng, positive=op in POSITIVE)
        d = ub(np.zeros(256, NP[dtype]))
        implementation(f"asc.{op}")(d, ub(a), ub(b), 200)
        got = d.numpy()
        np.testing.assert_array_equal(got[:200], expect(BINARY[op], dtype, a, b), err_msg=dtype)
        assert not got[200:].any()  # past count: untouched


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_count_form_against_numpy(op):
    rng = np.random.default_rng(2)
    for dtype in dtypes(op):
        a = sample(dtype, 96, rng, positive=op in POSITIVE)
        d = ub(np.zeros(96, NP[dtype]))
        implementation(f"asc.{op}")(d, ub(a), 96)
        np.testing.assert_array_equal(d.numpy(), expect(UNARY[op], dtype, a), err_msg=dtype)


@pytest.mark.parametrize("op", sorted(SCALAR))
def test_scalar_count_form_against_numpy(op):
    rng = np.random.default_rng(3)
    for dtype in dtypes(op):
        a = sample(dtype, 64, rng)
        s = 0.3 if dtype.startswith("float") else 7
        d = ub(np.zeros(64, NP[dtype]))
        implementation(f"asc.{op}")(d, ub(a), s, 64)
        sv = np.asarray(s).astype(NP[dtype])  # the scalar is cast to the operand dtype first
        np.testing.assert_array_equal(d.numpy(), expect(SCALAR[op], dtype, a, sv),
                                      err_msg=dtype)


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "uint32"])
def test_shifts_against_numpy(dtype):
    rng = np.random.default_rng(4)
    info = np.iinfo(NP[dtype])
    a = rng.integers(info.min, info.max, 64, endpoint=True).astype(NP[dtype])
    bits = info.bits
    for s in (0, 1, 5, bits):
        d = ub(np.zeros(64, NP[dtype]))
        implementation("asc.shift_left")(d, ub(a), s, 64)
        want = (a.astype(np.int64) << s) & ((1 << bits) - 1)
        np.testing.assert_array_equal(d.numpy().view(f"uint{bits}"), want.astype(f"uint{bits}"))
        implementation("asc.shift_right")(d, ub(a), s, 64)
        # arithmetic for signed (Python's >> on negative ints), logical for unsigned
        np.testing.assert_array_equal(d.numpy(), (a.astype(np.int64) >> s).astype(NP[dtype]))


def test_axpy_and_mul_add_dst_against_numpy():
    rng = np.random.default_rng(5)
    for src_dt, dst_dt in (("float16", "float16"), ("float32", "float32"),
                           ("float16", "float32")):
        a, b = sample(src_dt, 64, rng), sample(src_dt, 64, rng)
        c = sample(dst_dt, 64, rng)
        d = ub(c.copy())
        implementation("asc.axpy")(d, ub(a), 0.5, 64)
        want = (a.astype(np.float32) * np.float32(0.5) + c.astype(np.float32)).astype(dst_dt)
        np.testing.assert_array_equal(d.numpy(), want)
        d = ub(c.copy())
        implementation("asc.mul_add_dst")(d, ub(a), ub(b), 64)
        want = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32))
        np.testing.assert_array_equal(d.numpy(), want.astype(dst_dt))


# -- the mask form against a lane-by-lane model ---------------------------------------------

def lane_offsets(lanes, repeats, blk, rep, per_block):
    """The AscendC addressing, written out as the docs draw it: repeat r, lane k."""
    out = []
    for r in range(repeats):
        row = []
        for k in lanes:
            row.append(r * rep * per_block + (k // per_block) * blk * per_block + k % per_block)
        out.append(row)
    return np.asarray(out, dtype=np.int64)


def active_lanes(mask, lanes):
    if isinstance(mask, list):
        bits = mask[0] | (mask[1] << 64)
        return [i for i in range(lanes) if bits >> i & 1]
    return list(range(mask))


@st.composite
def mask_cases(draw):
    dtype = draw(st.sampled_from(["float16", "float32", "int16", "int32"]))
    lanes = 256 // np.dtype(NP[dtype]).itemsize
    if draw(st.booleans()):
        mask = draw(st.integers(1, lanes))
    else:
        low = draw(st.integers(1, 2**64 - 1))
        high = draw(st.integers(0, 2**64 - 1))  # (past 64 lanes: ignored, as on hardware)
        mask = [low, high]
    repeats = draw(st.integers(1, 4))
    strides = {r: (draw(st.integers(1 if r == "dst" else 0, 3)), draw(st.integers(0, 20)))
               for r in ("dst", "src0", "src1")}
    op = draw(st.sampled_from(["add", "sub", "mul", "max", "min"]))
    return dtype, mask, repeats, strides, op


@settings(max_examples=60, deadline=None)
@given(mask_cases())
def test_binary_mask_form_against_the_lane_model(case):
    dtype, mask, repeats, strides, op = case
    lanes = 256 // np.dtype(NP[dtype]).itemsize
    per_block = lanes // 8
    act = active_lanes(mask, lanes)
    offs = {r: lane_offsets(act, repeats, b, s, per_block) for r, (b, s) in strides.items()}
    if np.unique(offs["dst"]).size != offs["dst"].size:
        return  # dst written twice: refused (APK553), tested below
    size = {r: int(o.max()) + 1 for r, o in offs.items()}
    rng = np.random.default_rng(len(act) + repeats)
    a, b = sample(dtype, size["src0"], rng), sample(dtype, size["src1"], rng)
    before = sample(dtype, size["dst"], rng)
    d = ub(before.copy())
    params = BinaryRepeatParams(strides["dst"][0], strides["src0"][0], strides["src1"][0],
                                strides["dst"][1], strides["src0"][1], strides["src1"][1])
    implementation(f"asc.{op}")(d, ub(a), ub(b), mask, repeats, params)
    want = before.copy()
    want[offs["dst"]] = expect(BINARY[op], dtype, a[offs["src0"]], b[offs["src1"]])
    np.testing.assert_array_equal(d.numpy(), want)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["exp", "abs", "relu"]), st.sampled_from(["float16", "float32"]),
       st.integers(1, 6), st.integers(1, 4))
def test_unary_mask_form_equals_the_count_form(op, dtype, repeats, tail):
    """Full repeats with the default strides, then a count mask for the tail: the same
    elements as one count-form call over them."""
    lanes = 256 // np.dtype(NP[dtype]).itemsize
    n = repeats * lanes + tail
    rng = np.random.default_rng(repeats)
    a = sample(dtype, n, rng)
    x = ub(a)
    d1, d2 = ub(np.zeros(n, NP[dtype])), ub(np.zeros(n, NP[dtype]))
    fn = implementation(f"asc.{op}")
    fn(d1, x, n)
    fn(d2, x, lanes, repeats, UnaryRepeatParams())
    fn(d2[repeats * lanes:], x[repeats * lanes:], tail, 1, UnaryRepeatParams())  # the tail
    np.testing.assert_array_equal(d1.numpy(), d2.numpy())


def test_in_place_is_allowed_and_partial_overlap_is_not():
    x = ub(np.arange(128, dtype=np.float32))
    implementation("asc.adds")(x, x, 1.0, 128)
    np.testing.assert_array_equal(x.numpy(), np.arange(1, 129, dtype=np.float32))
    with pytest.raises(ApdslError) as e:
        implementation("asc.adds")(x[8:72], x[0:64], 1.0, 64)
    assert e.value.code == "APK553"
    with pytest.raises(ApdslError) as e:  # dst repeat stride 0 with two repeats
        implementation("asc.adds")(x, x, 1.0, 64, 2, UnaryRepeatParams(1, 1, 0, 8))
    assert e.value.code == "APK553"


@pytest.mark.parametrize("call,code", [
    (lambda x, y: implementation("asc.exp")(y, x, 65, 1, UnaryRepeatParams()), "APK550"),
    (lambda x, y: implementation("asc.exp")(y, x, 64, 256, UnaryRepeatParams()), "APK550"),
    # float32 has 64 lanes: the high word selects none of them, so no lane at all
    (lambda x, y: implementation("asc.exp")(y, x, [0, 1], 1, UnaryRepeatParams()), "APK550"),
    (lambda x, y: implementation("asc.exp")(y, x, 64, 1, BinaryRepeatParams()), "APK550"),
    (lambda x, y: implementation("asc.exp")(y, x, 64, 1, UnaryRepeatParams(0, 1, 8, 8)),
     "APK550"),
    (lambda x, y: implementation("asc.exp")(y, x, 129), "APK552"),
    (lambda x, y: implementation("asc.exp")(y, x, 64, 3, UnaryRepeatParams()), "APK552"),
    (lambda x, y: implementation("asc.ln")(y, x, 128), "APK555"),
    (lambda x, y: implementation("asc.exp")(y[1:], x[1:], 8), "APK524"),
    (lambda x, y: implementation("asc.shift_left")(y, x, 1, 8), "APK461"),
    (lambda x, y: implementation("asc.exp")(apdsl.ndarray((1, 128), "float32", "sbuf"), x, 8),
     "APK462"),
])
def test_rules(call, code):
    x = ub(np.linspace(-1, 1, 128).astype(np.float32))
    y = ub(np.zeros(128, np.float32))
    with pytest.raises(ApdslError) as e:
        call(x, y)
    assert e.value.code == code, e.value


def test_integer_overflow_is_refused_and_dtypes_must_match():
    x = ub(np.full(16, 30000, np.int16))
    with pytest.raises(ApdslError) as e:
        implementation("asc.add")(x, x, x, 16)
    assert e.value.code == "APK554"
    with pytest.raises(ApdslError) as e:
        implementation("asc.add")(ub(np.zeros(16, np.float32)), x, x, 16)
    assert e.value.code == "APK556"


def test_a_noncontiguous_operand_is_refused():
    x = ub(np.zeros((8, 64), np.float32))
    with pytest.raises(ApdslError) as e:
        implementation("asc.exp")(x[:, 0:8], x[:, 0:8], 64)
    assert e.value.code == "APK551"


def test_duplicate_both_forms():
    d = ub(np.zeros(256, np.float16))
    implementation("asc.duplicate")(d, 1.5, 100)
    assert (d.numpy()[:100] == 1.5).all() and not d.numpy()[100:].any()
    d = ub(np.zeros(256, np.float16))
    implementation("asc.duplicate")(d, 2.0, 32, 2, 2, 8)  # 2 blocks, every other, 2 repeats
    want = np.zeros(256, np.float16)
    for r in range(2):
        for blk in range(2):  # lane k of repeat r: r * 8 * 16 + (k // 16) * 2 * 16 + k % 16
            start = r * 128 + blk * 32
            want[start:start + 16] = 2.0
    np.testing.assert_array_equal(d.numpy(), want)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["exp", "abs", "relu", "adds", "muls", "maxs", "leaky_relu"]),
       st.sampled_from(["float16", "float32"]), st.integers(1, 3), st.data())
def test_one_input_mask_form_against_the_lane_model(op, dtype, repeats, data):
    lanes = 256 // np.dtype(NP[dtype]).itemsize
    per_block = lanes // 8
    mask = data.draw(st.one_of(st.integers(1, lanes),
                               st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=2)
                               .map(lambda w: w if lanes > 64 else [w[0] or 1, 0])))
    act = active_lanes(mask, lanes)
    if not act:
        return
    strides = {r: (data.draw(st.integers(1 if r == "dst" else 0, 3)),
                   data.draw(st.integers(0, 24))) for r in ("dst", "src")}
    offs = {r: lane_offsets(act, repeats, b, s, per_block) for r, (b, s) in strides.items()}
    if np.unique(offs["dst"]).size != offs["dst"].size:
        return
    rng = np.random.default_rng(repeats + len(act))
    a = sample(dtype, int(offs["src"].max()) + 1, rng)
    before = sample(dtype, int(offs["dst"].max()) + 1, rng)
    d = ub(before.copy())
    params = UnaryRepeatParams(strides["dst"][0], strides["src"][0], strides["dst"][1],
                               strides["src"][1])
    fn = implementation(f"asc.{op}")
    want = before.copy()
    if op in SCALAR:
        fn(d, ub(a), 0.75, mask, repeats, params)
        s = np.asarray(0.75).astype(NP[dtype])
        want[offs["dst"]] = expect(SCALAR[op], dtype, a[offs["src"]], s)
    else:
        fn(d, ub(a), mask, repeats, params)
        want[offs["dst"]] = expect(UNARY[op], dtype, a[offs["src"]])
    np.testing.assert_array_equal(d.numpy(), want)


def test_overlap_is_judged_in_bytes_across_dtypes():
    x = ub(np.zeros(128, np.float32))
    halves = x.view("float16")  # the same bytes as 256 halves
    implementation("asc.duplicate")(halves, 1.0, 256)
    with pytest.raises(ApdslError) as e:  # half src -> float dst over the same bytes
        implementation("asc.axpy")(x[0:64], halves[64:128], 2.0, 64)
    assert e.value.code == "APK553"
    implementation("asc.axpy")(x[0:64], halves[128:192], 2.0, 64)  # disjoint bytes: fine


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_full_two_word_mask_on_32_bit_data_runs_its_64_lanes(dtype):
    # pyasc's vadd_bits passes [2**64 - 1, 2**64 - 1] for 32-bit data: the high word has no
    # lanes there (the mask AscendC's ResetMask leaves for every dtype is that one)
    rng = np.random.default_rng(3)
    a, b = sample(dtype, 64, rng), sample(dtype, 64, rng)
    d = ub(np.zeros(64, NP[dtype]))
    full = 2**64 - 1
    implementation("asc.add")(d, ub(a), ub(b), [full, full], 1, BinaryRepeatParams())
    np.testing.assert_array_equal(d.numpy(), expect(BINARY["add"], dtype, a, b))
