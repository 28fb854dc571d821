"""Plans of compute instructions called again on the same operands (`apdsl.runtime.nki.tile_plans`):
a planned call computes what the general path computes and what NumPy computes (float32 math
cast to dst, GpSimd's exact int32 arithmetic, bit-vector operators on the bits), and every
check that can fail on a later call still fails there with its code: a freed storage, an
unwritten source, another target, tracing and check mode, the PSUM accumulation state, a
repeating destination."""

from __future__ import annotations

import gc
import weakref

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.runtime.core.execute import forget_all, write_view
from apdsl.runtime.instructions import nc_matmul, tensor_tensor
from apdsl.runtime.plans import table
from apdsl.runtime.plans.table import kept
from apdsl.runtime.table.operators import OPERATORS
from apdsl.tensor.dtypes import DTYPES, cast_array
from apdsl.tensor.view import from_numpy, ndarray

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
      "int32": np.int32}
F32 = np.float32

# NumPy's meaning of each operator on float32 values (compare and logical operators give 1.0
# where true, else 0.0), written here independently of apdsl's operator table
FLOAT_ORACLE = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
    "equal": lambda a, b: (a == b).astype(F32), "not_equal": lambda a, b: (a != b).astype(F32),
    "greater": lambda a, b: (a > b).astype(F32), "less": lambda a, b: (a < b).astype(F32),
    "greater_equal": lambda a, b: (a >= b).astype(F32),
    "less_equal": lambda a, b: (a <= b).astype(F32),
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(F32),
    "logical_or": lambda a, b: ((a != 0) | (b != 0)).astype(F32),
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)).astype(F32),
}
# GpSimd's exact int32 arithmetic and the bit-vector operators, on int64 / the bits
INT_ORACLE = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "maximum": np.maximum, "minimum": np.minimum,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
BITVEC = ("bitwise_and", "bitwise_or", "bitwise_xor")
DTYPE_NAMES = ("float32", "bfloat16", "float16", "int32")



@pytest.fixture(autouse=True)
def _no_plans_kept_before():
    """Each test starts with an empty plan table (it is keyed by value: another test's views
    of equal value would share their plans)."""
    table.PLANS.clear()


def as_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """`values` (float32) as a tile of `dtype` holds them (SPEC 4's cast)."""
    return cast_array(np.asarray(values, F32), DTYPES[dtype])


def oracle(name: str, a: np.ndarray, b: np.ndarray, dst: str) -> np.ndarray:
    """What tensor_tensor writes for the stored values `a` and `b` (their own dtypes)."""
    ints = {a.dtype.kind, b.dtype.kind} == {"i"} and dst == "int32"
    if name in BITVEC:
        return INT_ORACLE[name](a, b).astype(np.int32)
    if ints:  # every tile int32: GpSimd, exact
        return INT_ORACLE[name](a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
    with np.errstate(all="ignore"):
        return as_dtype(FLOAT_ORACLE[name](a.astype(F32), b.astype(F32)), dst)


def same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@st.composite
def cases(draw):
    ints = draw(st.booleans())
    if ints:  # int32 everywhere: GpSimd's exact arithmetic or the bits
        name = draw(st.sampled_from(sorted(INT_ORACLE)))
        dts = ("int32", "int32", "int32")
    else:
        name = draw(st.sampled_from(sorted(FLOAT_ORACLE)))
        dts = tuple(draw(st.sampled_from(DTYPE_NAMES)) for _ in range(3))
        if dts == ("int32",) * 3:
            dts = ("float32", "int32", "int32")  # (all int32 is the other branch)
    parts, free = draw(st.integers(1, 128)), draw(st.integers(1, 40))
    bufs = draw(st.sampled_from([("sbuf", "sbuf", "sbuf"), ("sbuf", "psum", "sbuf"),
                                 ("psum", "sbuf", "psum"), ("sbuf", "sbuf", "psum")]))
    if ints and name not in BITVEC:
        bufs = ("sbuf", "sbuf", "sbuf")  # GpSimd (exact) cannot access PSUM
    return name, dts, bufs, parts, free, draw(st.integers(0, 2**31 - 1))


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "int32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    v = rng.uniform(-4, 4, shape).astype(F32)
    v[rng.random(shape) < 0.2] = 0.0  # zeros for the logical operators
    return as_dtype(v, dtype)


@settings(max_examples=80, deadline=None)
@given(cases())
def test_a_planned_tensor_tensor_is_the_general_path_and_numpy(case):
    name, (dt_d, dt1, dt2), (b_d, b1, b2), parts, free, seed = case
    rng = np.random.default_rng(seed)
    shape = (parts, free)
    d = ndarray(shape, dt_d, b_d)
    x, y = ndarray(shape, dt1, b1), ndarray(shape, dt2, b2)
    op = OPERATORS[name]
    for _ in range(4):  # 0: general, plan made; 1, 2, 3: the plan
        a, b = values(rng, shape, dt1), values(rng, shape, dt2)
        write_view(x, a)
        write_view(y, b)
        tensor_tensor(d, x, y, op)
        fresh = ndarray(shape, dt_d, b_d)  # a view used once: a plan of an equal view, if any
        tensor_tensor(fresh, x, y, op)
        want = oracle(name, a, b, dt_d)
        same(d.numpy(), want)
        same(fresh.numpy(), want)
        assert kept("tensor_tensor", d)


def test_float32_strided_operands_take_the_direct_ufunc():
    a = np.arange(32, dtype=F32).reshape(4, 8)
    x, y = from_numpy(a, "sbuf"), from_numpy(a[::-1].copy(), "sbuf")
    d, h = ndarray((4, 8), "float32", "sbuf"), ndarray((4, 8), "bfloat16", "sbuf")
    for _ in range(3):
        tensor_tensor(d, x, y, OPERATORS["subtract"])
        tensor_tensor(h, x, y, OPERATORS["subtract"])
    (plan,) = kept("tensor_tensor", d)
    (cast_plan,) = kept("tensor_tensor", h)
    assert plan.ufunc is np.subtract and cast_plan.ufunc is None  # bf16 dst: the cast path
    np.testing.assert_array_equal(d.numpy(), a - a[::-1])
    np.testing.assert_array_equal(h.numpy().astype(F32), as_dtype(a - a[::-1], "bfloat16")
                                  .astype(F32))


def planned(dtype: str = "float32", buffers: tuple[str, str, str] = ("sbuf",) * 3,
            shape: tuple[int, int] = (4, 8), name: str = "add"):
    """dst, data1, data2 and the operator, after the calls that leave a plan for them."""
    d = ndarray(shape, dtype, buffers[0])
    x = from_numpy(np.ones(shape, F32), buffers[1], dtype=dtype)
    y = from_numpy(np.full(shape, 2.0, F32), buffers[2], dtype=dtype)
    op = OPERATORS[name]
    tensor_tensor(d, x, y, op)
    tensor_tensor(d, x, y, op)
    assert kept("tensor_tensor", d)
    return d, x, y, op


def test_a_freed_storage_still_refuses_on_the_planned_path():
    for role in range(3):
        views = planned()
        views[role].storage.free()
        with raises_code("APK408"):
            tensor_tensor(*views)


def test_an_unwritten_source_is_still_init_checked_on_every_call():
    for dtype in ("float32", "bfloat16"):
        d, x, y, op = planned(dtype)
        forget_all(y.storage)  # its bytes are not data any more
        with apdsl.options(init_check="strict"), raises_code("APK404"):
            tensor_tensor(d, x, y, op)
        with apdsl.options(init_check=False):
            tensor_tensor(d, x, y, op)  # reads the unwritten elements as they are
        np.testing.assert_array_equal(d.numpy().astype(F32), np.full((4, 8), 3.0, F32))


def test_another_target_checks_again():
    with apdsl.target("trn3"):
        d, x, y, op = planned(name="abs_max")  # trn3 only
        tensor_tensor(d, x, y, op)
    with raises_code("APK352"):
        tensor_tensor(d, x, y, op)
    # partitions 16..31: any start on trn2, a quadrant start (0, 32, 64, 96) on trn1
    t = ndarray((64, 8), "float32", "sbuf")
    apdsl.memset(t, 1.0)
    part = t[16:32, :]
    d = ndarray((16, 8), "float32", "sbuf")
    for _ in range(3):
        tensor_tensor(d, part, part, OPERATORS["add"])
    with apdsl.target("trn1"), raises_code("APK343"):
        tensor_tensor(d, part, part, OPERATORS["add"])


def test_tracing_and_check_mode_take_the_general_path():
    d, x, y, op = planned()
    with trace.tracing() as tr:
        tensor_tensor(d, x, y, op)
        tensor_tensor(d, x, y, op)
    assert [r.op for r in tr] == ["tensor_tensor", "tensor_tensor"]
    assert set(tr.records[0].operands) == {"dst", "data1", "data2"}
    write_view(x, np.full((4, 8), 5.0, F32))
    with apdsl.options(execute=False):
        tensor_tensor(d, x, y, op)  # check mode moves no data
    np.testing.assert_array_equal(d.numpy(), np.full((4, 8), 3.0, F32))
    tensor_tensor(d, x, y, op)
    np.testing.assert_array_equal(d.numpy(), np.full((4, 8), 7.0, F32))


def test_the_psum_accumulation_state_is_kept_on_the_planned_path():
    st_, mv = (from_numpy(np.ones((4, 4), F32), "sbuf") for _ in range(2))
    # a PSUM source read by tensor_tensor is fresh again: the next matmul overwrites it
    d, x, y, op = planned(buffers=("sbuf", "psum", "sbuf"), shape=(4, 4))
    nc_matmul(x, st_, mv)  # x = 4 everywhere, accumulating
    tensor_tensor(d, x, y, op)  # planned: reads x
    np.testing.assert_array_equal(d.numpy(), np.full((4, 4), 6.0, F32))
    nc_matmul(x, st_, mv)
    np.testing.assert_array_equal(x.numpy(), np.full((4, 4), 4.0, F32))  # not 8
    # a PSUM destination written by tensor_tensor after a matmul cannot be accumulated onto
    d, x, y, op = planned(buffers=("psum", "sbuf", "sbuf"), shape=(4, 4))
    nc_matmul(d, st_, mv)
    tensor_tensor(d, x, y, op)
    with raises_code("APK332"):
        nc_matmul(d, st_, mv, accumulate=True)


def test_a_repeating_destination_is_refused_on_every_call():
    t = ndarray((4, 8), "float32", "sbuf")
    d = t.ap([[8, 4], [0, 8]])  # every element of a row the same storage element
    x = from_numpy(np.ones((4, 8), F32), "sbuf")
    for _ in range(3):
        with raises_code("APK405"):
            tensor_tensor(d, x, x, OPERATORS["add"])


def test_in_place_operands_on_the_planned_path():
    a = np.arange(32, dtype=F32).reshape(4, 8)
    x, y = from_numpy(a, "sbuf"), from_numpy(np.ones((4, 8), F32), "sbuf")
    for _ in range(4):
        tensor_tensor(x, x, y, OPERATORS["add"])
    np.testing.assert_array_equal(x.numpy(), a + 4)


def test_the_plan_table_is_bounded_and_keeps_no_view(monkeypatch):
    monkeypatch.setattr(table, "LIMIT", 8)
    d = ndarray((4, 8), "float32", "sbuf")
    apdsl.memset(d, 0.0)
    srcs = [from_numpy(np.full((4, 8), k, F32), "sbuf") for k in range(3 * table.LIMIT)]
    for s in srcs:
        tensor_tensor(d, s, s, OPERATORS["add"])
        assert len(table.PLANS) <= table.LIMIT
    np.testing.assert_array_equal(d.numpy(), np.full((4, 8), 2 * (len(srcs) - 1), F32))
    gone = weakref.ref(d)
    storage = weakref.ref(d.storage)
    del d
    gc.collect()
    assert gone() is None and storage() is None  # a plan keeps no view, no storage


# -- nc_matmul: the facts checked once per view, the PSUM state read without counting ---------

def test_the_psum_bank_rule_is_checked_again_on_each_target():
    a = from_numpy(np.ones((16, 8), F32), "sbuf")
    b = from_numpy(np.ones((16, 512), F32), "sbuf")
    c = ndarray((8, 1024), "float32", "psum")
    across = c[:, 256:768]  # crosses the 2 KiB bank boundary of trn1/trn2
    with apdsl.target("trn3"):  # no such rule on trn3
        nc_matmul(across, a, b)
        nc_matmul(across, a, b)
    for _ in range(2):  # a failing view is not remembered as passing
        with raises_code("APK316"):
            nc_matmul(across, a, b)
    within = ndarray((8, 1024), "float32", "psum")[:, 512:1024]  # the second bank exactly
    for _ in range(3):
        nc_matmul(within, a, b)
    np.testing.assert_array_equal(within.numpy(), np.full((8, 512), 48.0, F32))
    with apdsl.target("trn1"):
        nc_matmul(within, a, b, accumulate=False)
        with raises_code("APK316"):
            nc_matmul(across, a, b)


def _whole_tile_state(dst, st_, mv, state):
    """Leave every byte of `dst` (4 x 4 f32 PSUM) in one accumulation state."""
    from apdsl.runtime.copies import memset, tensor_copy
    if state in ("accumulating", "read after matmul", "written after matmul"):
        nc_matmul(dst, st_, mv, accumulate=False)
    if state == "read after matmul":
        tensor_copy(ndarray((4, 4), "float32", "sbuf"), dst)
    elif state in ("written after matmul", "written, no matmul"):
        memset(dst, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["new", "accumulating", "read after matmul", "written after matmul",
                        "written, no matmul"]),
       st.sampled_from([None, True, False]), st.sampled_from(["trn1", "trn2", "trn3"]))
def test_accumulation_from_a_uniform_psum_state_follows_spec_section_4(state, accumulate, tgt):
    with apdsl.target(tgt):
        st_, mv = from_numpy(np.ones((4, 4), F32), "sbuf"), from_numpy(np.ones((4, 4), F32),
                                                                        "sbuf")
        dst = ndarray((4, 4), "float32", "psum")
        _whole_tile_state(dst, st_, mv, state)
        before = {"new": 0.0, "written, no matmul": 1.0, "written after matmul": 1.0}.get(
            state, 4.0)
        # SPEC section 4: None adds onto an accumulation only; True needs a matmul's data,
        # not overwritten by another instruction on trn1/trn2
        if accumulate is None:
            want = before + 4 if state == "accumulating" else 4.0
        elif accumulate:
            if state in ("new", "written, no matmul"):
                with raises_code("APK331"):
                    nc_matmul(dst, st_, mv, accumulate=True)
                return
            if state == "written after matmul" and tgt != "trn3":
                with raises_code("APK332"):
                    nc_matmul(dst, st_, mv, accumulate=True)
                return
            want = before + 4
        else:
            want = 4.0
        nc_matmul(dst, st_, mv, accumulate=accumulate)
        np.testing.assert_array_equal(dst.numpy(), np.full((4, 4), want, F32))


# -- nc_matmul's products: the same float32 sums as NumPy, nothing carried between calls ------

MM_DTYPES = ("float32", "bfloat16", "float16", "float8_e4m3", "tfloat32")


def _engine_values(x: np.ndarray, dtype: str) -> np.ndarray:
    """`x` (float32) stored as `dtype` and read by the tensor engine, in float32 (NumPy and
    ml_dtypes' casts; tfloat32 keeps 10 mantissa bits, rounded to nearest even)."""
    if dtype == "tfloat32":
        bits = x.astype(F32).view(np.uint32).astype(np.uint64)
        lsb = (bits >> 13) & 1
        return ((bits + 0x0FFF + lsb) & 0xFFFFE000).astype(np.uint32).view(F32)
    np_dt = {"float32": F32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
             "float8_e4m3": ml_dtypes.float8_e4m3}[dtype]
    return x.astype(np_dt).astype(F32)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MM_DTYPES), st.lists(st.tuples(st.integers(1, 128), st.integers(1, 16),
                                                       st.integers(1, 64)),
                                             min_size=1, max_size=4),
       st.integers(1, 3), st.sampled_from(["plain", "strided", "pieces"]),
       st.integers(0, 2**31 - 1))
def test_matmuls_are_numpys_float32_sums(dtype, shapes, steps, layout, seed):
    """Several (K, M, N) into views of one PSUM storage, each accumulated over `steps`
    matmuls (added into PSUM by BLAS where it can): bit-equal to NumPy's float32
    `x.T @ y` summed in the same order, operands plain, strided or in pieces."""
    rng = np.random.default_rng(seed)
    psum_tile = ndarray((16, 512), "float32", "psum")
    col = 0
    for k, m, n in shapes:
        if col + n > 512:
            break
        dst = psum_tile[:m, col:col + n]
        want = np.zeros((m, n), F32)
        for step in range(steps):
            x = rng.uniform(-2, 2, (k, m)).astype(F32)
            y = rng.uniform(-2, 2, (k, n)).astype(F32)
            st_, mv = _operand(x, dtype, layout), _operand(y, dtype, layout)
            nc_matmul(dst, st_, mv)
            prod = _engine_values(x, dtype).T @ _engine_values(y, dtype)
            want = prod if step == 0 else want + prod
            np.testing.assert_array_equal(dst.numpy(), want)
        col += n


def _operand(x: np.ndarray, dtype: str, layout: str):
    """An SBUF operand holding `x` (k, w): a whole tile, every other column of a wider one,
    or a view in pieces (not one access pattern)."""
    k, w = x.shape
    if layout == "plain":
        return from_numpy(x, "sbuf", dtype=dtype)
    if layout == "strided":
        wide = np.zeros((k, 2 * w), F32)
        wide[:, ::2] = x
        return from_numpy(wide, "sbuf", dtype=dtype)[:, ::2]
    # pieces: w columns from column 1 of the merged (a b) columns of a (k, a, 3)[:, :, 1:3]
    # view, which cross the a boundaries (resolved as several strided pieces)
    a = w + 1
    t = ndarray((k, a, 3), dtype, "sbuf")
    full = np.zeros((k, a, 3), F32)
    flat = full[:, :, 1:3].reshape(k, 2 * a)
    flat[:, 1:1 + w] = x
    full[:, :, 1:3] = flat.reshape(k, a, 2)
    write_view(t, full)
    return t[:, :, 1:3].rearrange("p a b -> p (a b)")[:, 1:1 + w]


def test_a_later_matmul_does_not_change_an_earlier_result():
    psum_tile = ndarray((4, 16), "float32", "psum")
    x = from_numpy(np.ones((8, 4), F32), "sbuf")
    y1 = from_numpy(np.full((8, 8), 2.0, F32), "sbuf")
    y2 = from_numpy(np.full((8, 8), 3.0, F32), "sbuf")
    nc_matmul(psum_tile[:, :8], x, y1)
    nc_matmul(psum_tile[:, 8:], x, y2)  # the same shapes, other values
    np.testing.assert_array_equal(psum_tile[:, :8].numpy(), np.full((4, 8), 16.0, F32))
    np.testing.assert_array_equal(psum_tile[:, 8:].numpy(), np.full((4, 8), 24.0, F32))
    with apdsl.options(init_check="strict"), raises_code("APK404"):  # an unwritten input is still refused
        nc_matmul(psum_tile[:, :8], x, ndarray((8, 8), "float32", "sbuf"))


# -- nc_matmul plans: a loop's new-but-alike operand tiles checked once per dst view ------------

def _loop_tiles(k=8, m=4, n=8, value=1.0, dtype="bfloat16"):
    """Fresh SBUF operand tiles, as a tile loop allocates them (shared row-major layouts)."""
    st_ = from_numpy(np.full((k, m), value, F32), "sbuf", dtype=dtype)
    mv = from_numpy(np.full((k, n), 2.0, F32), "sbuf", dtype=dtype)
    return st_, mv


def test_a_matmul_loop_into_one_view_uses_its_plan_and_sums_like_numpy():
    dst = ndarray((4, 8), "float32", "psum")
    for step in range(5):
        nc_matmul(dst, *_loop_tiles(value=float(step + 1)))
        assert kept("nc_matmul", dst)
        np.testing.assert_array_equal(dst.numpy(), np.full((4, 8), 16.0 * sum(
            range(1, step + 2)), F32))
    with trace.tracing() as tr:
        nc_matmul(dst, *_loop_tiles())
    assert [r.op for r in tr] == ["nc_matmul"]  # tracing: the full path, recorded
    with apdsl.target("trn1"):
        other = ndarray((4, 8), "float32", "psum")
        for _ in range(2):
            nc_matmul(other, *_loop_tiles())
        assert not kept("nc_matmul", other, "trn1")  # trn1's start-partition rule: every call


def test_the_planned_matmul_still_refuses_what_can_change():
    dst = ndarray((4, 8), "float32", "psum")
    nc_matmul(dst, *_loop_tiles())
    st_, mv = _loop_tiles()
    unwritten = ndarray((8, 8), "bfloat16", "sbuf")
    with apdsl.options(init_check="strict"), raises_code("APK404"):
        nc_matmul(dst, st_, unwritten)
    mv.storage.free()
    with raises_code("APK408"):
        nc_matmul(dst, st_, mv)
    from apdsl.runtime.copies import memset
    memset(dst, 0.0)  # another instruction wrote dst after the matmul
    with raises_code("APK332"):
        nc_matmul(dst, *_loop_tiles(), accumulate=True)
    fresh = ndarray((4, 8), "float32", "psum")
    for _ in range(2):
        with raises_code("APK331"):  # no matmul ever wrote it
            nc_matmul(fresh, *_loop_tiles(), accumulate=True)
    with apdsl.target("trn3"):
        b16 = ndarray((4, 8), "bfloat16", "psum")  # bfloat16 results need trn3
        for _ in range(2):
            nc_matmul(b16, *_loop_tiles())
    with raises_code("APK315"):
        nc_matmul(b16, *_loop_tiles())
    with raises_code("APK333"):  # another dtype is another key: checked
        nc_matmul(dst, *_loop_tiles(dtype="int32"))
    with raises_code("APK420"):  # a flag of the wrong type is never planned
        nc_matmul(dst, *_loop_tiles(), is_transpose=1)
    with raises_code("APK318"):  # other layouts are another key: checked
        nc_matmul(dst, _loop_tiles()[0], _loop_tiles(k=6)[1])
    with raises_code("APK317"):
        nc_matmul(dst, _loop_tiles(dtype="float32")[0], _loop_tiles()[1])
    with raises_code("APK309"):
        nc_matmul(dst, _loop_tiles()[0], from_numpy(np.ones((8, 8), F32), "hbm"))
    with apdsl.options(execute=False):
        nc_matmul(dst, *_loop_tiles())  # check mode moves no data
    np.testing.assert_array_equal(dst.numpy(), np.zeros((4, 8), F32))


def test_a_planned_destination_still_refuses_other_operands():
    """A plan stands only for its own operands, operator and hints: with a plan on `d`, each
    static rule still refuses other arguments with its code."""
    import pytest as _pytest

    from apdsl.errors import ApdslError
    d, x, y, op = planned()
    wrong = {
        "APK460": lambda: tensor_tensor(d, x, ndarray((4, 4), "float32", "sbuf"), op),
        "APK353": lambda: tensor_tensor(d, from_numpy(np.ones((4, 8), F32), "psum"),
                                        from_numpy(np.ones((4, 8), F32), "psum"), op),
        "APK354": lambda: tensor_tensor(d, x, y, OPERATORS["bitwise_and"]),
        "APK356": lambda: tensor_tensor(d, x, from_numpy(np.ones((4, 8), F32), "psum"),
                                        OPERATORS["power"]),
        "APK309": lambda: tensor_tensor(d, x, from_numpy(np.ones((4, 8), F32), "hbm"), op),
        "APK351": lambda: tensor_tensor(d, x, y, OPERATORS["exp"]),
        "APK350": lambda: tensor_tensor(d, x, y, "add"),
        "APK348": lambda: tensor_tensor(d, x, y, op, engine="tensor"),
        "APK347": lambda: tensor_tensor(d, x, y, op, engine="warp"),
        "APK420": lambda: tensor_tensor(d, x, np.ones((4, 8), F32), op),
    }
    for code, call in wrong.items():
        with _pytest.raises(ApdslError) as e:
            call()
        assert e.value.code == code, (code, e.value.message)
    tensor_tensor(d, x, y, op)  # and the plan still serves its own call
    np.testing.assert_array_equal(d.numpy(), np.full((4, 8), 3.0, F32))
