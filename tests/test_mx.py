"""quantize_mx and nc_matmul_mx (NKI isa docstrings, MXFP deep dive) against an independent model
of the OCP MX formats written here: element encoders and decoders on exact fractions (no
ml_dtypes), both block-scale rules (the docstring's doubled scale, neuronx-cc's
`--enable-mx-alternative-emax` and its default since SDK 2.31; the OCP rule with saturation,
`apdsl.options(mx_alternative_emax=False)`), the quadrant-spread scale layout.  Bit patterns are
compared, not tolerances: zero groups, the largest value of a group (never saturating under the
doubled scale, saturating under the OCP one), subnormal elements, round-half-to-even ties, NaN
scales."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl import from_numpy, ndarray
from apdsl.errors import ApdslError

# element formats: (exponent bits, mantissa bits, bias, Emax of the quantize_mx docstring)
FORMATS = {"float8_e4m3fn_x4": (4, 3, 7, 8), "float8_e5m2_x4": (5, 2, 15, 15),
           "float4_e2m1fn_x4": (2, 1, 1, 2)}
WIDTH = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 8, "float4_e2m1fn_x4": 4}


# -- the independent model ---------------------------------------------------------------------

def encode(x: Fraction, negative: bool, fmt: str) -> int:
    """The element code nearest `x` (ties to even), sign bit from `negative`; finite only."""
    e_bits, m_bits, bias, _ = FORMATS[fmt]
    sign = int(negative) << (e_bits + m_bits)
    a = abs(x)
    if a == 0:
        return sign
    e = math.floor(math.log2(a))  # then exactly (a float log2 may be one off)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    emin = 1 - bias
    e = max(e, emin)
    q = a / Fraction(2) ** (e - m_bits)
    n = math.floor(q)
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n == 2 ** (m_bits + 1):
        e, n = e + 1, 2 ** m_bits
    if n < 2 ** m_bits:  # subnormal
        return sign | n
    field = e + bias
    assert field < 2 ** e_bits, "the model is for values the format holds"
    return sign | (field << m_bits) | (n - 2 ** m_bits)


def decode(code: int, fmt: str) -> float:
    e_bits, m_bits, bias, _ = FORMATS[fmt]
    negative = code >> (e_bits + m_bits) & 1
    field = (code >> m_bits) & (2 ** e_bits - 1)
    man = code & (2 ** m_bits - 1)
    if fmt == "float8_e5m2_x4" and field == 31:
        return math.nan if man else (-math.inf if negative else math.inf)
    if fmt == "float8_e4m3fn_x4" and field == 15 and man == 7:
        return math.nan
    value = (man * 2.0 ** (1 - bias - m_bits) if field == 0 else
             (1 + man / 2 ** m_bits) * 2.0 ** (field - bias))
    return -value if negative else value


# the largest finite value of each element type, exactly
LARGEST = {"float8_e4m3fn_x4": Fraction(448), "float8_e5m2_x4": Fraction(57344),
           "float4_e2m1fn_x4": Fraction(6)}


def model_quantize(x: np.ndarray, fmt: str, alternative: bool = True
                   ) -> tuple[np.ndarray, np.ndarray]:
    """quantize_mx on float values [P, F]: packed words [P, F/4] (uint32) and the scale byte of
    each group [P/8, F/4].  `alternative`: the docstring's scale, 2**(floor(log2 amax) - (Emax -
    1)); else the OCP sample algorithm's, 2**(floor(log2 amax) - Emax), quotients clamped to the
    largest finite value."""
    p, f = x.shape
    emax = FORMATS[fmt][3] - (1 if alternative else 0)
    words = np.zeros((p, f // 4), np.uint64)
    scales = np.zeros((p // 8, f // 4), np.uint8)
    for g in range(p // 8):
        for c in range(f // 4):
            block = x[8 * g:8 * g + 8, 4 * c:4 * c + 4]
            amax = max(abs(Fraction(float(v))) for v in block.ravel())
            if amax == 0:
                exp = -127
            else:
                exp = math.floor(math.log2(amax))
                while Fraction(2) ** exp > amax:
                    exp -= 1
                while Fraction(2) ** (exp + 1) <= amax:
                    exp += 1
                exp -= emax
            scales[g, c] = exp + 127
            for r in range(8):
                word = 0
                for k in range(4):
                    v = float(block[r, k])
                    q = min(abs(Fraction(v)) / Fraction(2) ** exp, LARGEST[fmt])
                    code = encode(q, math.copysign(1, v) < 0, fmt)
                    word |= code << (WIDTH[fmt] * k)
                words[8 * g + r, c] = word
    return words.astype(np.uint32), scales


def model_matmul(st_words, mv_words, st_scale, mv_scale, st_fmt, mv_fmt) -> np.ndarray:
    """Dequantize both sides by the decoders above and contract over partitions and the four
    values of an element; the sum in float64 (exact for the tests' inputs), then float32."""
    def values(words, scale, fmt):
        k, n = words.shape
        out = np.zeros((k, n, 4))
        for i in range(k):
            for j in range(n):
                s = math.nan if scale[i // 8, j] == 255 else 2.0 ** (int(scale[i // 8, j]) - 127)
                for q in range(4):
                    code = (int(words[i, j]) >> (WIDTH[fmt] * q)) & (2 ** WIDTH[fmt] - 1)
                    out[i, j, q] = decode(code, fmt) * s
        return out
    a, b = values(st_words, st_scale, st_fmt), values(mv_words, mv_scale, mv_fmt)
    return np.einsum("kmq,knq->mn", a, b).astype(np.float32)


def spread(scales: np.ndarray, parts: int) -> np.ndarray:
    """Scales [P/8, F] as the hardware layout holds them: group g at 32 * (g // 4) + g % 4."""
    out = np.zeros((parts if parts > 32 else parts // 8, scales.shape[1]), np.uint8)
    for g in range(scales.shape[0]):
        out[32 * (g // 4) + g % 4] = scales[g]
    return out


# -- helpers -------------------------------------------------------------------------------------

def _code(fn) -> str:
    with pytest.raises(ApdslError) as e:
        fn()
    return e.value.code


def _run_quantize(x: np.ndarray, fmt: str, src_dtype: str = "bfloat16",
                  scale_dtype: str = "uint8", alternative: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    p, f = x.shape
    with apdsl.target("trn3"), apdsl.options(mx_alternative_emax=alternative):
        src = from_numpy(x.astype(getattr(ml_dtypes, src_dtype, None) or np.float16), "sbuf")
        dst = ndarray((p, f // 4), fmt, "sbuf")
        scale = ndarray((p if p > 32 else p // 8, f // 4), scale_dtype, "sbuf")
        apdsl.memset(scale, 0) if scale_dtype == "uint8" else None
        apdsl.quantize_mx(dst, src, scale)
        with apdsl.options(init_check=False):  # (the rows no group uses stay unwritten)
            return dst.numpy(), scale.numpy().view(np.uint8)


def _bf16_values(rng: np.random.Generator, shape, spread_exp: int) -> np.ndarray:
    mag = np.ldexp(rng.uniform(1, 2, shape), rng.integers(-spread_exp, spread_exp + 1, shape))
    x = (mag * rng.choice([-1, 1], shape)).astype(ml_dtypes.bfloat16)
    return x.astype(np.float32)


# -- quantize_mx ---------------------------------------------------------------------------------

def test_quantize_leaves_exactly_the_groups_of_unwritten_data_unwritten():
    # rows 0..7 (one group of partitions) loaded, 8..31 not: each group's scale and values
    # depend on its own 32 values only, so rows 0..7 of dst and scale row 0 are written and
    # equal a fully loaded quantization's; the groups of rows 8.. hold garbage (unwritten)
    x = _bf16_values(np.random.default_rng(5), (32, 8), 6)
    want_q, want_s = _run_quantize(x, "float8_e4m3fn_x4")
    with apdsl.target("trn3"):
        src = ndarray((32, 8), "bfloat16", "sbuf")
        apdsl.dma_copy(src[0:8, :], from_numpy(x[0:8].astype(ml_dtypes.bfloat16)))
        dst = ndarray((32, 2), "float8_e4m3fn_x4", "sbuf")
        scale = ndarray((4, 2), "uint8", "sbuf")
        apdsl.quantize_mx(dst, src, scale)
        np.testing.assert_array_equal(dst[0:8, :].numpy().view(np.uint32),
                                      want_q[0:8].view(np.uint32))
        np.testing.assert_array_equal(scale[0:1, :].numpy(), want_s[0:1])
        for view in (dst[8:9, :], scale[1:2, :]):
            with pytest.raises(ApdslError) as e:
                view.numpy()
            assert e.value.code == "APK412" and "[8, 0] was never written when quantize_mx" \
                in e.value.message, e.value.message


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([32, 64, 96, 128]), st.sampled_from([4, 8, 32]),
       st.sampled_from(["float8_e4m3fn_x4", "float8_e5m2_x4"]), st.integers(0, 12),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_quantize_matches_the_model_bit_for_bit(parts, free, fmt, spread_exp, alternative, seed):
    x = _bf16_values(np.random.default_rng(seed), (parts, free), spread_exp)
    words, scales = _run_quantize(x, fmt, alternative=alternative)
    want_words, want_scales = model_quantize(x, fmt, alternative)
    np.testing.assert_array_equal(words, want_words)
    np.testing.assert_array_equal(scales, spread(want_scales, parts))


def test_zero_groups_get_the_smallest_scale_and_zero_codes():
    x = np.zeros((32, 8), np.float32)
    x[:8, 4:] = 1.5  # one group not zero
    words, scales = _run_quantize(x, "float8_e4m3fn_x4")
    assert scales[0, 0] == 0 and scales[1, 0] == 0  # 2**-127, the e8m0 minimum
    assert (words[:, 0] == 0).all()
    assert scales[0, 1] == 127 - 7 and words[0, 1] == 0x74747474  # 1.5 / 2**-7 = 192


@pytest.mark.parametrize("fmt,top", [("float8_e4m3fn_x4", 0x78), ("float8_e5m2_x4", 0x78)])
def test_the_largest_value_never_saturates(fmt, top):
    # amax just below a power of two rounds up to 2**Emax, which both formats hold: the
    # docstring's scale is twice the OCP sample's, so nothing reaches the largest finite value
    # (448 / 57344) by saturation
    x = np.full((32, 4), 0.5, np.float32)
    x[0, 0] = float(np.float32(ml_dtypes.bfloat16(1.9921875)))  # 0x3FFF in bfloat16
    words, _ = _run_quantize(x, fmt)
    assert int(words[0, 0]) & 0xFF == top
    want, _ = model_quantize(x, fmt)
    np.testing.assert_array_equal(words, want)


@pytest.mark.parametrize("fmt,top", [("float8_e4m3fn_x4", 0x7E), ("float8_e5m2_x4", 0x7B)])
def test_the_ocp_rule_saturates_the_largest_value(fmt, top):
    # under the OCP scale 1.9921875 becomes 510 * 2**(Emax - 8): past the largest finite value
    # (448 = 0x7E in e4m3fn, 57344 = 0x7B in e5m2), so it is clamped there, not rounded up
    x = np.full((32, 4), 0.5, np.float32)
    x[0, 0] = float(np.float32(ml_dtypes.bfloat16(1.9921875)))
    x[1, 1] = -x[0, 0]
    words, scales = _run_quantize(x, fmt, alternative=False)
    assert int(words[0, 0]) & 0xFF == top and (int(words[1, 0]) >> 8) & 0xFF == 0x80 | top
    assert scales[0, 0] == 127 - FORMATS[fmt][3]
    want_words, want_scales = model_quantize(x, fmt, alternative=False)
    np.testing.assert_array_equal(words, want_words)
    np.testing.assert_array_equal(scales, spread(want_scales, 32))


def test_the_two_rules_differ_by_one_scale_step():
    # the same data: the doubled scale's byte is one more than the OCP one's in every group but
    # an all-zero one (both 0), and each value it holds is half the OCP one unless the OCP
    # quotient saturated or the halved one falls below the element type's normal range
    rng = np.random.default_rng(9)
    x = _bf16_values(rng, (64, 16), 2)
    x[8:16, 4:8] = 0.0
    alt_words, alt_scales = _run_quantize(x, "float8_e4m3fn_x4")
    ocp_words, ocp_scales = _run_quantize(x, "float8_e4m3fn_x4", alternative=False)
    groups = mx_rows(64)
    diff = alt_scales[groups].astype(int) - ocp_scales[groups].astype(int)
    assert diff[1, 1] == 0 and alt_scales[1, 1] == 0
    assert (np.delete(diff.ravel(), 1 * 4 + 1) == 1).all()
    assert not np.array_equal(alt_words, ocp_words)


def mx_rows(parts: int) -> list[int]:
    return [32 * (g // 4) + g % 4 for g in range(parts // 8)]


def test_the_option_defaults_to_the_alternative_emax_and_is_restored():
    assert apdsl.options().__enter__().mx_alternative_emax is True
    with apdsl.options(mx_alternative_emax=False) as o:
        assert o.mx_alternative_emax is False
    assert apdsl.options().__enter__().mx_alternative_emax is True
    assert _code(lambda: apdsl.options(mx_alternative_emax="ocp")) == "APK421"


def test_subnormal_elements_and_ties_round_to_even():
    # amax 1.0: e4m3fn scale 2**-7, so 2**-16 is 2**-9 (the smallest subnormal), 3 * 2**-18
    # is 0.75 of it (rounds up to it) and 2**-17 is half of it (a tie: rounds to zero, even)
    x = np.zeros((32, 4), np.float32)
    x[0, :] = [1.0, 2.0 ** -16, 3 * 2.0 ** -18, 2.0 ** -17]
    x[1, :] = [-(2.0 ** -16), -(2.0 ** -17), 2.0 ** -15 * 1.5, 0.0]
    words, scales = _run_quantize(x, "float8_e4m3fn_x4")
    assert scales[0, 0] == 120
    codes = [(int(words[0, 0]) >> (8 * k)) & 0xFF for k in range(4)]
    assert codes == [0x70, 0x01, 0x01, 0x00]  # 128, min subnormal x2, 0
    codes = [(int(words[1, 0]) >> (8 * k)) & 0xFF for k in range(4)]
    assert codes == [0x81, 0x80, 0x03, 0x00]  # -min sub, -0 (tie to even), 1.5 * 2**-8
    np.testing.assert_array_equal(words, model_quantize(x, "float8_e4m3fn_x4")[0])


def test_float16_sources_and_e8m0_scales():
    rng = np.random.default_rng(3)
    x = np.ldexp(rng.uniform(-2, 2, (64, 16)), rng.integers(-20, 10, (64, 16)))
    x = x.astype(np.float16).astype(np.float32)  # float16 subnormals among them
    words, scales = _run_quantize(x, "float8_e5m2_x4", "float16", "float8_e8m0fnu")
    want_words, want_scales = model_quantize(x, "float8_e5m2_x4")
    np.testing.assert_array_equal(words, want_words)
    got = spread(want_scales, 64)
    for g in range(8):
        row = 32 * (g // 4) + g % 4
        np.testing.assert_array_equal(scales[row], got[row])


def test_scales_of_two_tensors_share_one_tile_at_offsets():
    rng = np.random.default_rng(7)
    a, b = _bf16_values(rng, (128, 16), 4), _bf16_values(rng, (128, 32), 4)
    with apdsl.target("trn3"):
        tile = ndarray((128, 8), "uint8", "sbuf")
        apdsl.memset(tile, 0)
        qa, qb = ndarray((128, 4), "float8_e4m3fn_x4", "sbuf"), ndarray(
            (128, 8), "float8_e4m3fn_x4", "sbuf")
        apdsl.quantize_mx(qa, from_numpy(a.astype(ml_dtypes.bfloat16), "sbuf"), tile[0:, :4])
        apdsl.quantize_mx(qb, from_numpy(b.astype(ml_dtypes.bfloat16), "sbuf"), tile[4:, :])
        got = tile.numpy()
    sa, sb = model_quantize(a, "float8_e4m3fn_x4")[1], model_quantize(b, "float8_e4m3fn_x4")[1]
    for g in range(16):
        row = 32 * (g // 4) + g % 4
        np.testing.assert_array_equal(got[row, :4], sa[g])
        np.testing.assert_array_equal(got[row + 4, :], sb[g])
    assert not got[8:32].any()  # nothing else written


def test_quantize_refusals():
    with apdsl.target("trn3"):
        src = from_numpy(np.ones((64, 8), ml_dtypes.bfloat16), "sbuf")
        q = ndarray((64, 2), "float8_e4m3fn_x4", "sbuf")
        s = ndarray((64, 2), "uint8", "sbuf")
        assert _code(lambda: apdsl.quantize_mx(q, src, s[16:, :])) == "APK962"  # offset 16
        assert _code(lambda: apdsl.quantize_mx(q, src, ndarray((8, 2), "uint8", "sbuf"))) \
            == "APK962"  # 64 partitions need the spread layout
        assert _code(lambda: apdsl.quantize_mx(ndarray((64, 4), "float8_e4m3fn_x4", "sbuf"),
                                               src, s)) == "APK961"
        f4 = ndarray((64, 2), "float4_e2m1fn_x4", "sbuf")
        assert _code(lambda: apdsl.quantize_mx(f4, src, s)) == "APK461"  # no FP4 output
        f32 = from_numpy(np.ones((64, 8), np.float32), "sbuf")
        assert _code(lambda: apdsl.quantize_mx(q, f32, s)) == "APK461"
        odd = from_numpy(np.ones((48, 8), ml_dtypes.bfloat16), "sbuf")
        assert _code(lambda: apdsl.quantize_mx(ndarray((48, 2), "float8_e4m3fn_x4", "sbuf"),
                                               odd, s)) == "APK961"
        bad = np.ones((64, 8), ml_dtypes.bfloat16)
        bad[9, 3] = np.inf
        assert _code(lambda: apdsl.quantize_mx(q, from_numpy(bad, "sbuf"), s)) == "APK963"
        tiny = np.full((64, 8), 2.0 ** -125, np.float32).astype(ml_dtypes.bfloat16)
        assert _code(lambda: apdsl.quantize_mx(q, from_numpy(tiny, "sbuf"), s)) == "APK963"
    with apdsl.target("trn2"):
        src = from_numpy(np.ones((32, 8), ml_dtypes.bfloat16), "sbuf")
        assert _code(lambda: apdsl.quantize_mx(ndarray((32, 2), "float8_e4m3fn_x4", "sbuf"),
                                               src, ndarray((4, 2), "uint8", "sbuf"))) == "APK961"


# -- nc_matmul_mx --------------------------------------------------------------------------------

def _codes_for(fmt: str, rng: np.random.Generator, shape) -> np.ndarray:
    """Random finite element codes whose exponents keep every sum exact in float64."""
    e_bits, m_bits, bias, _ = FORMATS[fmt]
    field = rng.integers(max(0, bias - 4), min(2 ** e_bits - 1, bias + 4), shape)
    if fmt == "float4_e2m1fn_x4":
        field = rng.integers(0, 4, shape)
    man = rng.integers(0, 2 ** m_bits, shape)
    if fmt == "float8_e4m3fn_x4":
        man = np.where(field == 15, np.minimum(man, 6), man)
    sign = rng.integers(0, 2, shape)
    return (sign << (e_bits + m_bits)) | (field << m_bits) | man


def _words(fmt: str, rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    codes = _codes_for(fmt, rng, (k, n, 4))
    w = sum(codes[..., q].astype(np.uint64) << (WIDTH[fmt] * q) for q in range(4))
    return w.astype(np.uint16 if WIDTH[fmt] == 4 else np.uint32)


def _mx_tile(words: np.ndarray, fmt: str) -> apdsl.Tensor:
    return from_numpy(words.view(np.uint8).reshape(words.shape[0], -1), "sbuf").view(fmt)


def _scale_tile(scales: np.ndarray, parts: int, dtype: str = "uint8") -> apdsl.Tensor:
    return from_numpy(spread(scales, parts), "sbuf").view(dtype)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([32, 64, 128]), st.sampled_from([2, 8, 64]), st.sampled_from([1, 16, 100]),
       st.sampled_from(list(FORMATS)), st.sampled_from(list(FORMATS)),
       st.sampled_from(["float32", "bfloat16"]), st.integers(0, 2**31 - 1))
def test_matmul_matches_the_model_bit_for_bit(k, m, n, st_fmt, mv_fmt, out, seed):
    rng = np.random.default_rng(seed)
    sw, mw = _words(st_fmt, rng, k, m), _words(mv_fmt, rng, k, n)
    ss = rng.integers(124, 131, (k // 8, m)).astype(np.uint8)
    ms = rng.integers(124, 131, (k // 8, n)).astype(np.uint8)
    with apdsl.target("trn3"):
        d = ndarray((m, n), out, "psum")
        apdsl.nc_matmul_mx(d, _mx_tile(sw, st_fmt), _mx_tile(mw, mv_fmt), _scale_tile(ss, k),
                           _scale_tile(ms, k, "float8_e8m0fnu"))
        got = d.numpy()
    want = model_matmul(sw, mw, ss, ms, st_fmt, mv_fmt)
    if out == "bfloat16":
        want = want.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got.view(np.uint16 if out == "bfloat16" else np.uint32),
                                  want.view(np.uint16 if out == "bfloat16" else np.uint32))


def test_matmul_nan_scale_and_accumulation():
    rng = np.random.default_rng(5)
    fmt = "float8_e4m3fn_x4"
    sw, mw = _words(fmt, rng, 32, 4), _words(fmt, rng, 32, 6)
    ss = np.full((4, 4), 127, np.uint8)
    ms = np.full((4, 6), 127, np.uint8)
    ms[2, 3] = 255  # NaN: every product with that group is NaN
    with apdsl.target("trn3"):
        d = ndarray((4, 6), "float32", "psum")
        args = (_mx_tile(sw, fmt), _mx_tile(mw, fmt), _scale_tile(ss, 32), _scale_tile(ms, 32))
        apdsl.nc_matmul_mx(d, *args)
        once = d.numpy().copy()
        apdsl.nc_matmul_mx(d, *args)  # accumulate=None: onto the matmul's own result
        twice = d.numpy()
    want = model_matmul(sw, mw, ss, ms, fmt, fmt)
    np.testing.assert_array_equal(once, want)
    assert np.isnan(once[:, 3]).all() and not np.isnan(np.delete(once, 3, axis=1)).any()
    np.testing.assert_array_equal(twice, want + want)


def test_quantize_then_matmul_as_the_deep_dive_does():
    rng = np.random.default_rng(11)
    a, b = _bf16_values(rng, (64, 128), 3), _bf16_values(rng, (64, 64), 3)
    with apdsl.target("trn3"):
        qa, qb = ndarray((64, 32), "float8_e4m3fn_x4", "sbuf"), ndarray(
            (64, 16), "float8_e5m2_x4", "sbuf")
        sa, sb = ndarray((64, 32), "uint8", "sbuf"), ndarray((64, 16), "uint8", "sbuf")
        apdsl.quantize_mx(qa, from_numpy(a.astype(ml_dtypes.bfloat16), "sbuf"), sa)
        apdsl.quantize_mx(qb, from_numpy(b.astype(ml_dtypes.bfloat16), "sbuf"), sb)
        d = ndarray((32, 16), "float32", "psum")
        apdsl.nc_matmul_mx(d, qa, qb, sa, sb)
        got = d.numpy()
    wa, xa = model_quantize(a, "float8_e4m3fn_x4")
    wb, xb = model_quantize(b, "float8_e5m2_x4")
    want = model_matmul(wa, wb, xa, xb, "float8_e4m3fn_x4", "float8_e5m2_x4")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # (sums not all exact here)
    # and close to the unquantized product, as MX promises
    exact = np.einsum("kmq,knq->mn", a.reshape(64, 32, 4), b.reshape(64, 16, 4))
    assert np.abs(got - exact).max() < 0.1 * np.abs(exact).max()


def test_matmul_refusals_and_row_tiling():
    fmt = "float8_e4m3fn_x4"
    rng = np.random.default_rng(2)
    with apdsl.target("trn3"):
        s32 = _mx_tile(_words(fmt, rng, 32, 4), fmt)
        sc = _scale_tile(np.full((4, 4), 127, np.uint8), 32)
        d = ndarray((4, 4), "float32", "psum")
        apdsl.nc_matmul_mx(d, s32, s32, sc, sc, tile_position=(32, 0), tile_size=(32, 128))
        assert _code(lambda: apdsl.nc_matmul_mx(d, s32, s32, sc, sc, tile_position=(0, 32),
                                                tile_size=(32, 32))) == "APK964"
        odd = _mx_tile(_words(fmt, rng, 32, 3), fmt)
        assert _code(lambda: apdsl.nc_matmul_mx(ndarray((3, 3), "float32", "psum"), odd, odd,
                                                _scale_tile(np.zeros((4, 3), np.uint8), 32),
                                                _scale_tile(np.zeros((4, 3), np.uint8), 32))
                     ) == "APK964"
        big = _mx_tile(_words(fmt, rng, 64, 4), fmt)
        assert _code(lambda: apdsl.nc_matmul_mx(d, big, big, sc, sc)) == "APK962"
        wide = ndarray((32, 4097), fmt, "sbuf")
        assert _code(lambda: apdsl.nc_matmul_mx(
            ndarray((4, 4097), "float32", "psum"), s32, wide, sc,
            ndarray((4, 4097), "uint8", "sbuf"))) in ("APK314", "APK302")
        f8 = from_numpy(np.ones((32, 4), np.float32), "sbuf")
        assert _code(lambda: apdsl.nc_matmul_mx(d, f8, s32, sc, sc)) == "APK461"
    with apdsl.target("trn2"):
        s = from_numpy(np.zeros((32, 16), np.uint8), "sbuf").view(fmt)
        sc2 = from_numpy(np.zeros((4, 4), np.uint8), "sbuf")
        assert _code(lambda: apdsl.nc_matmul_mx(ndarray((4, 4), "float32", "psum"), s, s, sc2,
                                                sc2)) == "APK961"


KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit(platform_target="trn3")
def mx_matmul(st_hbm, mv_hbm):
    # st_hbm [128, 128] bf16 and mv_hbm [128, 256] bf16, already in the interleaved layout
    st = nl.ndarray(st_hbm.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    mv = nl.ndarray(mv_hbm.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=st_hbm)
    nisa.dma_copy(dst=mv, src=mv_hbm)
    qs = nl.ndarray((128, 32), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    qm = nl.ndarray((128, 64), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    scales = nl.ndarray((128, 64), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=qs, src=st, dst_scale=scales[0:, :32])
    nisa.quantize_mx(dst=qm, src=mv, dst_scale=scales[4:, :])
    out = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=out, stationary=qs, moving=qm,
                      stationary_scale=scales[0:, :32], moving_scale=scales[4:, :])
    res = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=out)
    o = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=res)
    return o
'''


def test_a_python_kernel_quantizes_and_multiplies_through_the_cli(tmp_path):
    import subprocess
    import sys
    rng = np.random.default_rng(4)
    a, b = _bf16_values(rng, (128, 128), 2), _bf16_values(rng, (128, 256), 2)
    (tmp_path / "k.py").write_text(KERNEL)
    np.save(tmp_path / "a.npy", a)  # float32 holding bfloat16 values: the kernel casts exactly
    np.save(tmp_path / "b.npy", b)
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(tmp_path / "k.py"), "-i",
                        f"st_hbm={tmp_path / 'a.npy'}", "-i", f"mv_hbm={tmp_path / 'b.npy'}",
                        "-o", str(tmp_path / "o.npy"), "--target", "trn3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "o.npy")
    wa, xa = model_quantize(a, "float8_e4m3fn_x4")
    wb, xb = model_quantize(b, "float8_e4m3fn_x4")
    want = model_matmul(wa, wb, xa, xb, "float8_e4m3fn_x4", "float8_e4m3fn_x4")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


SCALES_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scales_of(x_hbm):
    x = nl.ndarray((32, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=x_hbm)
    q = nl.ndarray((32, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    s = nl.ndarray((4, 2), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=x, dst_scale=s)
    out = nl.ndarray((4, 2), dtype=nl.uint8, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out
'''


@pytest.mark.parametrize("flag,alternative", [([], True), (["--no-mx-alternative-emax"], False)])
def test_the_command_line_picks_the_block_scale(tmp_path, flag, alternative):
    import subprocess
    import sys
    x = _bf16_values(np.random.default_rng(12), (32, 8), 6)
    (tmp_path / "k.py").write_text(SCALES_KERNEL)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(tmp_path / "k.py"), "-i",
                        f"x_hbm={tmp_path / 'x.npy'}", "-o", str(tmp_path / "o.npy"),
                        "--target", "trn3", *flag], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"),
                                  model_quantize(x, "float8_e4m3fn_x4", alternative)[1])
