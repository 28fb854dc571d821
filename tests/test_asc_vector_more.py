"""asc.cast, brcb, compare, select and the reductions against NumPy (integer-valued floats
where a sum's order would otherwise matter), both forms, each form against the other."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.ascend.vector.ops_more import CASTS
from apdsl.runtime.ascend.vector.params import (
    CMPMODE,
    BinaryRepeatParams,
    BrcbRepeatParams,
    ReduceOrder,
    RoundMode,
    SelMode,
    UnaryRepeatParams,
)
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.table import implementation as op


def ub(values):
    t = apdsl.ndarray(values.shape, str(values.dtype), "ub")
    write_view(t, values)
    return t


def np_dtype(name):
    return apdsl.ndarray((1,), name, "gm").dtype.np


ROUND = {"CAST_RINT": np.rint, "CAST_NONE": np.rint, "CAST_FLOOR": np.floor,
         "CAST_CEIL": np.ceil, "CAST_TRUNC": np.trunc,
         "CAST_ROUND": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}


def _table(name):
    """Every finite value of a 16-bit float dtype, sorted (brute force)."""
    with np.errstate(invalid="ignore"):
        vals = np.arange(2**16, dtype=np.uint16).view(np_dtype(name)).astype(np.float64)
    return np.unique(vals[np.isfinite(vals)])


def neighbours(v, name):
    """The representable values of `name` just below and above each v (an oracle written
    apart from the implementation: a sorted table for 16-bit floats, nextafter for float32)."""
    if name == "float32":
        n = v.astype(np.float32)
        lo = np.where(n.astype(np.float64) <= v, n, np.nextafter(n, np.float32(-np.inf)))
        hi = np.where(n.astype(np.float64) >= v, n, np.nextafter(n, np.float32(np.inf)))
        return lo.astype(np.float64), hi.astype(np.float64)
    table = _table(name)
    lo = table[np.searchsorted(table, v, "right") - 1]
    hi = table[np.searchsorted(table, v, "left")]
    return lo, hi


def to_float(v, name, mode):
    lo, hi = neighbours(v, name)
    if mode in ("CAST_RINT", "CAST_NONE"):
        return v.astype(np.float32).astype(np_dtype(name)) if name == "bfloat16" else \
            v.astype(np_dtype(name))
    pick = {"CAST_FLOOR": lo, "CAST_CEIL": hi, "CAST_TRUNC": np.where(v >= 0, lo, hi)}.get(mode)
    if pick is None and mode == "CAST_ROUND":
        dl, dh = v - lo, hi - v
        pick = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(v >= 0, hi, lo)))
    if pick is None:  # CAST_ODD: exact stays, else the neighbour with an odd last bit
        bits = np.dtype(np_dtype(name)).itemsize * 8
        odd = (lo.astype(np_dtype(name)).view(f"uint{bits}") & 1).astype(bool)
        pick = np.where(lo == v, lo, np.where(odd, lo, hi))
    return pick.astype(np_dtype(name))


@pytest.mark.parametrize("pair", sorted(CASTS), ids=lambda p: f"{p[0]}-{p[1]}")
def test_cast_every_listed_pair_against_numpy(pair):
    src_dt, dst_dt = pair
    rng = np.random.default_rng(7)
    if src_dt.startswith(("float", "bfloat")):
        vals = rng.uniform(-100, 100, 64)
        # ties each mode decides, to integers and to half precision (1 + 2**-11)
        vals[:8] = [0.5, 1.5, -0.5, -2.5, 2.5, -1.5, 1 + 2**-11, -(1 + 3 * 2**-11)]
    else:
        info = np.iinfo(np_dtype(src_dt))
        vals = rng.integers(max(info.min, -1000), min(info.max, 1000), 64)
        if src_dt in ("int32", "int64"):
            vals[:3] = [2**24 + 1, -(2**24 + 3), 2**31 - 1]  # float32 must round these
    src = np.asarray(vals).astype(np_dtype(src_dt))
    for mode in CASTS[pair]:
        d = ub(np.zeros(64, np_dtype(dst_dt)))
        op("asc.cast")(d, ub(src), RoundMode[mode], 64)
        v = src.astype(np.float64)
        if not dst_dt.startswith(("float", "bfloat")) or src_dt == dst_dt:
            v = ROUND[mode](v)
            if dst_dt in ("int8", "uint8", "int16", "int32", "int64"):
                info = np.iinfo(np_dtype(dst_dt))
                v = np.clip(v, info.min, info.max)
            want = v.astype(np_dtype(dst_dt))
        else:
            want = to_float(v, dst_dt, mode)
        np.testing.assert_array_equal(d.numpy(), want, err_msg=mode)


def test_cast_mode_must_be_listed():
    with pytest.raises(ApdslError) as e:
        op("asc.cast")(ub(np.zeros(64, np.float32)), ub(np.zeros(64, np.float16)),
                       RoundMode.CAST_FLOOR, 64)
    assert e.value.code == "APK558"
    with pytest.raises(ApdslError) as e:
        op("asc.cast")(ub(np.zeros(64, np.int16)), ub(np.zeros(64, np.int8)),
                       RoundMode.CAST_NONE, 64)
    assert e.value.code == "APK556"


def test_cast_mask_form_uses_the_wider_dtype_lanes():
    src = np.arange(128, dtype=np.float16)
    d = ub(np.zeros(128, np.float32))
    # half -> float: 64 lanes a repeat; dst 8 blocks a repeat, src 4
    op("asc.cast")(d, ub(src), RoundMode.CAST_NONE, 64, 2, UnaryRepeatParams(1, 1, 8, 4))
    np.testing.assert_array_equal(d.numpy(), src.astype(np.float32))


def test_brcb():
    src = np.arange(16, dtype=np.float16)
    d = ub(np.zeros(256, np.float16))
    op("asc.brcb")(d, ub(src), 2, BrcbRepeatParams(1, 8))
    np.testing.assert_array_equal(d.numpy(), np.repeat(src, 16))


@pytest.mark.parametrize("mode", list(CMPMODE))
def test_compare_count_form_against_numpy(mode):
    rng = np.random.default_rng(8)
    a = rng.integers(0, 4, 128).astype(np.float16)
    b = rng.integers(0, 4, 128).astype(np.float16)
    d = ub(np.zeros(16, np.uint8))
    op("asc.compare")(d, ub(a), ub(b), mode, 128)
    fn = {"LT": np.less, "GT": np.greater, "EQ": np.equal, "LE": np.less_equal,
          "GE": np.greater_equal, "NE": np.not_equal}[str(mode)]
    np.testing.assert_array_equal(d.numpy(), np.packbits(fn(a, b), bitorder="little"))
    d2 = ub(np.zeros(16, np.uint8))
    op("asc.compare")(d2, ub(a), ub(b), mode, 128, 1, BinaryRepeatParams())  # one repeat
    np.testing.assert_array_equal(d2.numpy(), d.numpy())


def test_compare_needs_whole_repeats():
    x = ub(np.zeros(128, np.float32))
    with pytest.raises(ApdslError) as e:
        op("asc.compare")(ub(np.zeros(16, np.uint8)), x, x, CMPMODE.LT, 60)
    assert e.value.code == "APK559"


@pytest.mark.parametrize("mode", ["VSEL_TENSOR_TENSOR_MODE", "VSEL_TENSOR_SCALAR_MODE",
                                  "VSEL_CMPMASK_SPR"])
def test_select_modes_both_forms(mode):
    rng = np.random.default_rng(9)
    bits = rng.integers(0, 2, 256).astype(bool)
    mask = np.packbits(bits, bitorder="little")
    a = np.arange(128, dtype=np.float32)
    b = -np.arange(128, dtype=np.float32)
    scalar = mode == "VSEL_TENSOR_SCALAR_MODE"
    other = -1.0 if scalar else ub(b)
    d = ub(np.zeros(128, np.float32))
    op("asc.select")(d, ub(mask), ub(a), other, SelMode[mode], 128)
    use = bits[:128] if mode != "VSEL_CMPMASK_SPR" else np.tile(bits[:64], 2)
    want = np.where(use, a, -1.0 if scalar else b)
    np.testing.assert_array_equal(d.numpy(), want)
    d2 = ub(np.zeros(128, np.float32))
    op("asc.select")(d2, ub(mask), ub(a), other if scalar else ub(b), SelMode[mode], 64, 2,
                     BinaryRepeatParams())
    np.testing.assert_array_equal(d2.numpy(), want)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["float16", "float32"]), st.integers(1, 4), st.data())
def test_whole_and_block_reductions_against_numpy(dtype, repeats, data):
    lanes = 128 if dtype == "float16" else 64
    mask = data.draw(st.integers(1, lanes))
    rng = np.random.default_rng(repeats * mask)
    x = rng.integers(-8, 8, repeats * lanes).astype(dtype)  # sums exact in either dtype
    grid = x.reshape(repeats, lanes).astype(np.float64)
    act = np.arange(lanes) < mask
    d = ub(np.zeros(64, dtype))
    op("asc.whole_reduce_sum")(d, ub(x), mask, repeats, 1, 1, 8)
    np.testing.assert_array_equal(d.numpy()[:repeats], np.where(act, grid, 0).sum(1))
    d = ub(np.zeros(64, dtype))
    op("asc.whole_reduce_max")(d, ub(x), mask, repeats, 1, 1, 8)
    got = d.numpy()[:2 * repeats].reshape(repeats, 2)
    v = np.where(act, grid, -np.inf)
    np.testing.assert_array_equal(got[:, 0], v.max(1))
    uint = np.uint16 if dtype == "float16" else np.uint32
    np.testing.assert_array_equal(got[:, 1].view(uint), v.argmax(1))
    d = ub(np.zeros(64, dtype))
    op("asc.whole_reduce_min")(d, ub(x), mask, repeats, 1, 1, 8,
                               ReduceOrder.ORDER_ONLY_VALUE)
    np.testing.assert_array_equal(d.numpy()[:repeats], np.where(act, grid, np.inf).min(1))
    d = ub(np.zeros(8 * repeats, dtype))
    op("asc.block_reduce_sum")(d, ub(x), repeats, lanes, 1, 1, 8)
    np.testing.assert_array_equal(d.numpy(), grid.reshape(repeats * 8, -1).sum(1))
    d = ub(np.zeros(lanes // 2 * repeats, dtype))
    op("asc.pair_reduce_sum")(d, ub(x), repeats, lanes, 1, 1, 8)
    np.testing.assert_array_equal(d.numpy(), grid.reshape(-1, 2).sum(1))


def test_half_sums_round_at_every_step_of_the_tree():
    x = np.zeros(128, np.float16)
    x[:4] = [2048, 1, 1, 0]
    d = ub(np.zeros(16, np.float16))
    op("asc.whole_reduce_sum")(d, ub(x), 128, 1, 1, 1, 8)
    # the tree: (2048 + 1) rounds to 2048 in half, (1 + 0) = 1, then 2048 + 1 -> 2048 again;
    # a float32 sum rounded once would be 2050
    assert d.numpy()[0] == 2048
    assert np.float16(x.astype(np.float32).sum()) == 2050


def test_reduce_over_the_operand_both_forms_and_index():
    rng = np.random.default_rng(11)
    x = rng.permutation(200).astype(np.float32)
    tmp = ub(np.zeros(64, np.float32))
    d = ub(np.zeros(8, np.float32))
    op("asc.reduce_max")(d, ub(x), tmp, 200, True)
    assert d.numpy()[0] == 199 and d.numpy()[1:2].view(np.uint32)[0] == int(np.argmax(x))
    op("asc.reduce_min")(d, ub(x), tmp, 200)
    assert d.numpy()[0] == 0
    op("asc.reduce_sum")(d, ub(x), tmp, 200)
    assert d.numpy()[0] == x.sum()
    # the mask form: three full repeats of 64 = the count form over 192
    op("asc.reduce_sum")(d, ub(x), tmp, 64, 3, 8)
    assert d.numpy()[0] == x[:192].sum()
    op("asc.reduce_max")(d, ub(x), tmp, 64, 3, 8, True)
    assert d.numpy()[0] == x[:192].max()
    assert d.numpy()[1:2].view(np.uint32)[0] == int(np.argmax(x[:192]))
    with pytest.raises(ApdslError) as e:  # the scratch is too small
        op("asc.reduce_max")(d, ub(x), ub(np.zeros(8, np.float32)), 200, True)
    assert e.value.code == "APK552"


def test_trans_data_to_5hd_is_nchw_to_nc1hwc0():
    """The AscendC sample's NCHW (2, 32, 16, 16) half -> NC1HWC0: 16 planes at a time, 16
    repeats across HW (src one block on, dst 16 blocks on)."""
    from apdsl.runtime.ascend.vector.params import TransDataTo5HDParams
    x = np.random.default_rng(12).standard_normal((2, 32, 16, 16)).astype(np.float16)
    src, dst = ub(x.ravel()), ub(np.zeros(x.size, np.float16))
    hw = 256
    for n in range(2):
        for c1 in range(2):
            base = (n * 32 + c1 * 16) * hw
            op("asc.trans_data_to_5hd")([dst[base + j * 16:] for j in range(16)],
                                        [src[base + i * hw:] for i in range(16)],
                                        TransDataTo5HDParams(False, False, 16, 16, 1))
    np.testing.assert_array_equal(dst.numpy(),
                                  x.reshape(2, 2, 16, 16, 16).transpose(0, 1, 3, 4, 2).ravel())


def test_trans_data_to_5hd_one_repeat_starts_one_stride_on():
    from apdsl.runtime.ascend.vector.params import TransDataTo5HDParams
    m = np.arange(512, dtype=np.int16)
    src, dst = ub(m), ub(np.zeros(512, np.int16))
    # repeat_times 1 with a src stride of 16 blocks: the page's note puts the one repeat at
    # the lists + one stride, so the second 16 x 16 matrix is transposed
    op("asc.trans_data_to_5hd")([dst[j * 16:] for j in range(16)],
                                [src[i * 16:] for i in range(16)],
                                TransDataTo5HDParams(False, False, 1, 0, 16))
    np.testing.assert_array_equal(dst.numpy()[:256].reshape(16, 16),
                                  m[256:].reshape(16, 16).T)
    with pytest.raises(ApdslError) as e:
        f = ub(np.zeros(512, np.float32))
        op("asc.trans_data_to_5hd")([f[j * 8:] for j in range(16)],
                                    [f[256 + i * 8:] for i in range(16)],
                                    TransDataTo5HDParams())
    assert e.value.code == "APK560"
