"""The rest of the Ascend cube path (SPEC 17): Fixpipe with ReLU and quantisation and NZ -> ND,
the unit flag, atomic add on GM writes (across cores too), the bias table and LoadData 3D
(img2col).  Oracles: NumPy formulas written here from the AscendC pages (the quantisation
parameter's bit fields, the convolution by direct summation), and the race checker's verdicts
on programs with and without the ordering each feature gives."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program


def run(text, inputs=None, grid=()):
    d = Path(tempfile.mkdtemp())
    (d / "k.apk").write_text(text)
    return Program.from_path(str(d / "k.apk")).run(None, inputs or {}, grid=grid).value


def code_of(text, inputs=None, grid=()):
    with pytest.raises(ApdslError) as e:
        run(text, inputs, grid)
    return e.value.code


# one (M, K) @ (K, N) product into L0C, ordered by events; {out} is the instruction that
# drains L0C (the caller's Fixpipe); dtypes as given
MM = """\
kernel k(A: {ta}[M, K] @ gm, B: {ta}[K, N] @ gm{extra}) -> {tc}[M, N] @ gm:
    C = ndarray((M, N), {tc}, gm{cfmt})
    a1 = ndarray((M, K), {ta}, l1, "NZ")
    b1 = ndarray((K, N), {ta}, l1, "NZ")
    a0 = ndarray((M, K), {ta}, l0a, "ZZ")
    b0 = ndarray((K, N), {ta}, l0b, "ZN")
    c0 = ndarray((M, N), {tacc}, l0c, "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    dma_copy(a0, a1)
    dma_copy(b0, b1)
    set_flag("MTE1_M", 0)
    wait_flag("MTE1_M", 0)
{body}
    return C
"""

EVENTS = """\
    mmad(c0, a0, b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
"""


def mm(body, ta="f16", tc="f16", tacc="f32", m=32, k=32, n=48, extra="", cfmt=""):
    return (MM.format(ta=ta, tc=tc, tacc=tacc, body=body, extra=extra, cfmt=cfmt)
            .replace("M, N", f"{m}, {n}").replace("M, K", f"{m}, {k}")
            .replace("K, N", f"{k}, {n}"))


def m1_of(scale):
    """The multiplier the hardware uses: the float32's top 19 bits (1, 8, 10)."""
    bits = struct.unpack("<I", struct.pack("<f", scale))[0] & 0xFFFFE000
    return np.float32(struct.unpack("<f", struct.pack("<I", bits))[0])


def param(scale, signed=True):
    return struct.unpack("<I", struct.pack("<f", scale))[0] | ((1 << 46) if signed else 0)


RNG = np.random.default_rng(7)
A16 = RNG.standard_normal((32, 32)).astype(np.float16)
B16 = RNG.standard_normal((32, 48)).astype(np.float16)
P16 = A16.astype(np.float32) @ B16.astype(np.float32)
A8 = RNG.integers(-8, 8, (32, 32)).astype(np.int8)
B8 = RNG.integers(-8, 8, (32, 48)).astype(np.int8)
P8 = A8.astype(np.int32) @ B8.astype(np.int32)


@pytest.mark.parametrize("relu", [False, True])
def test_fixpipe_f322f16_with_and_without_relu(relu):
    body = EVENTS + ("    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                     f"asc.QuantModes.F322F16, relu_en={relu}))")
    got = run(mm(body), {"A": A16, "B": B16}).numpy()
    want = (np.maximum(P16, 0) if relu else P16).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_fixpipe_nz_config_writes_fractals():
    body = EVENTS + ("    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 32, "
                     "asc.QuantModes.NoQuant), asc.FixpipeConfig.cfg_nz())")
    got = run(mm(body, tc="f32", cfmt=', "NZ"'), {"A": A16, "B": B16}).numpy()
    np.testing.assert_allclose(got, P16, rtol=1e-6)


def test_fixpipe_row_major_config_refuses_nz_dst():
    body = EVENTS + ("    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                     "asc.QuantModes.NoQuant))")
    assert code_of(mm(body, tc="f32", cfmt=', "NZ"'), {"A": A16, "B": B16}) == "APK511"


@pytest.mark.parametrize("scale", [0.5, 0.0371, 3.3])
@pytest.mark.parametrize("relu", [False, True])
def test_fixpipe_deqf16_scalar(scale, relu):
    body = EVENTS + (f"    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                     f"asc.QuantModes.DEQF16, {param(scale, False)}, relu_en={relu}))")
    got = run(mm(body, ta="i8", tacc="i32"), {"A": A8, "B": B8}).numpy()
    x = P8.astype(np.float32)
    want = np.where(x >= 0, x * m1_of(scale), x * (0 if relu else m1_of(scale)))
    np.testing.assert_array_equal(got, want.astype(np.float32).astype(np.float16))


@pytest.mark.parametrize("dst,signed", [("i8", True), ("u8", False)])
@pytest.mark.parametrize("relu", [False, True])
def test_fixpipe_req8_per_channel(dst, signed, relu):
    scales = np.linspace(0.01, 0.9, 48).astype(np.float32)
    words = np.array([param(float(s), signed) for s in scales], dtype=np.int64)
    body = EVENTS + """\
    q1 = ndarray((48,), i64, l1)
    dma_copy(q1, Q)
    set_flag("MTE2_FIX", 0)
    wait_flag("MTE2_FIX", 0)
""" + (f"    asc.fixpipe(C, c0, q1, asc.FixpipeParamsV220(48, 32, 32, 48, "
       f"asc.QuantModes.VREQ8, relu_en={relu}))")
    got = run(mm(body, ta="i8", tacc="i32", tc=dst, extra=", Q: i64[48] @ gm"),
              {"A": A8, "B": B8, "Q": words}).numpy()
    x = P8.astype(np.float32)
    m1 = np.array([m1_of(float(s)) for s in scales], np.float32)
    y = np.where(x >= 0, x * m1, x * (0 if relu else m1)).astype(np.float32)
    q = np.clip(np.round(y), -256, 255)
    lo, hi = (-128, 127) if signed else (0, 255)
    np.testing.assert_array_equal(got, np.clip(q, lo, hi).astype(got.dtype))


def test_fixpipe_sign_bit_must_match_dst():
    body = EVENTS + (f"    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                     f"asc.QuantModes.REQ8, {param(0.5, False)}))")
    assert code_of(mm(body, ta="i8", tacc="i32", tc="i8"), {"A": A8, "B": B8}) == "APK512"


def test_fixpipe_quant_f32_to_int8():
    body = EVENTS + (f"    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                     f"asc.QuantModes.QF322B8_PRE, {param(4.0)}))")
    got = run(mm(body, tc="i8"), {"A": A16, "B": B16}).numpy()
    want = np.clip(np.clip(np.round(P16 * np.float32(4.0)), -256, 255), -128, 127)
    np.testing.assert_array_equal(got, want.astype(np.int8))


def test_fixpipe_mode_must_fit_dtypes_and_strides_the_views():
    bad_mode = EVENTS + ("    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, "
                         "asc.QuantModes.DEQF16))")
    assert code_of(mm(bad_mode), {"A": A16, "B": B16}) == "APK512"
    bad_stride = EVENTS + ("    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 16, 48, "
                           "asc.QuantModes.F322F16))")
    assert code_of(mm(bad_stride), {"A": A16, "B": B16}) == "APK511"


UNIT = """\
    mmad(c0, a0, b0, unit_flag={mf})
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, asc.QuantModes.F322F16,
                                             unit_flag={ff}))"""


def test_unit_flag_orders_mmad_and_fixpipe():
    got = run(mm(UNIT.format(mf=3, ff=3)), {"A": A16, "B": B16}).numpy()
    np.testing.assert_array_equal(got, P16.astype(np.float16))


@pytest.mark.parametrize("mf,ff,code", [(2, 3, "APK513"), (0, 0, "APK570"), (3, 0, "APK570"),
                                        (1, 3, "APK513")])
def test_unit_flag_missing_is_a_deadlock_or_race(mf, ff, code):
    assert code_of(mm(UNIT.format(mf=mf, ff=ff)), {"A": A16, "B": B16}) == code


def test_unit_flag_accumulation_then_reuse():
    # two K halves accumulated (2 then 3), drained with 3; then L0C is written again (2, 3)
    body = """\
    mmad(c0, a0[:, 0:16], b0[0:16, :], unit_flag=2)
    mmad(c0, a0[:, 16:32], b0[16:32, :], accumulate=True, unit_flag=3)
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, asc.QuantModes.F322F16,
                                             unit_flag=3))
    mmad(c0, a0, b0, unit_flag=3)
    asc.fixpipe(D, c0, asc.FixpipeParamsV220(48, 32, 32, 48, asc.QuantModes.F322F16,
                                             unit_flag=3))
    set_flag("FIX_MTE2", 0)
    wait_flag("FIX_MTE2", 0)"""
    text = mm(body).replace("    C = ndarray((32, 48), f16, gm)",
                            "    C = ndarray((32, 48), f16, gm)\n    D = ndarray((32, 48), f16, "
                            "gm)").replace("return C", "return D")
    got = run(text, {"A": A16, "B": B16}).numpy()
    np.testing.assert_array_equal(got, P16.astype(np.float16))


# every core adds its tile into the same GM block under atomic add
ATOMIC = """\
kernel k(X: f32[4, 64] @ gm) -> f32[64] @ gm:
    Y = ndarray((64,), f32, gm)
    if asc.get_block_idx() == 0:
        z = ndarray((64,), f32, ub)
        asc.duplicate(z, 0.0, 64)
        set_flag("V_MTE3", 1)
        wait_flag("V_MTE3", 1)
        asc.data_copy(Y, z, 64)
    asc.sync_all()
    x = ndarray((64,), f32, ub)
    asc.data_copy(x, X[asc.get_block_idx(), :], 64)
    set_flag("MTE2_MTE3", 0)
    wait_flag("MTE2_MTE3", 0)
    asc.set_atomic_add(f32)
    asc.data_copy(Y, x, 64)
    asc.set_atomic_none()
    return Y
"""


def test_atomic_add_across_cores_sums_and_is_not_a_race():
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    got = run(ATOMIC, {"X": x}, grid=(4,)).numpy()
    np.testing.assert_allclose(got, x.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_plain_writes_of_the_same_bytes_from_cores_race():
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    text = ATOMIC.replace("    asc.set_atomic_add(f32)\n", "")
    assert code_of(text, {"X": x}, grid=(4,)) == "APK583"


def test_atomic_add_from_l0c_and_dtype_rule():
    body = EVENTS + """\
    asc.set_atomic_add(f32)
    dma_copy(C, c0)
    asc.set_atomic_none()"""
    text = mm(body, tc="f32", extra=", C0: f32[32, 48] @ gm").replace(
        "    C = ndarray((32, 48), f32, gm)", "    C = C0")
    base = RNG.standard_normal((32, 48)).astype(np.float32)
    got = run(text, {"A": A16, "B": B16, "C0": base}).numpy()
    np.testing.assert_allclose(got, base + P16, rtol=1e-5, atol=1e-5)
    assert code_of(text.replace("set_atomic_add(f32)", "set_atomic_add(f16)"),
                   {"A": A16, "B": B16, "C0": base}) == "APK515"


BIAS = """\
    q1 = ndarray((48,), f16, l1)
    bt0 = ndarray((48,), f32, bt)
    dma_copy(q1, Bias)
    set_flag("MTE2_MTE1", 1)
    wait_flag("MTE2_MTE1", 1)
    dma_copy(bt0, q1)
    set_flag("MTE1_M", 1)
    wait_flag("MTE1_M", 1)
    mmad(c0, a0, b0, bias=bt0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    asc.fixpipe(C, c0, asc.FixpipeParamsV220(48, 32, 32, 48, asc.QuantModes.NoQuant))"""


def test_mmad_with_the_bias_table():
    bias = RNG.standard_normal(48).astype(np.float16)
    got = run(mm(BIAS, tc="f32", extra=", Bias: f16[48] @ gm"),
              {"A": A16, "B": B16, "Bias": bias}).numpy()
    np.testing.assert_allclose(got, P16 + bias.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_bias_table_copy_needs_its_event():
    text = mm(BIAS.replace('    set_flag("MTE1_M", 1)\n    wait_flag("MTE1_M", 1)\n', ""),
              tc="f32", extra=", Bias: f16[48] @ gm")
    bias = np.ones(48, np.float16)
    assert code_of(text, {"A": A16, "B": B16, "Bias": bias}) == "APK570"


CONV = """\
kernel conv(X: f16[1, {C}, {H}, {W}] @ gm, Wt: f16[{KK}, {CO}] @ gm) -> f32[{HW}, {CO}] @ gm:
    Y = ndarray(({HW}, {CO}), f32, gm)
    x1 = ndarray((1, {C}, {H}, {W}), f16, l1, "NC1HWC0")
    w1 = ndarray(({KK}, {CO}), f16, l1, "NZ")
    a0 = ndarray(({HWR}, {KK}), f16, l0a, "ZZ")
    b0 = ndarray(({KK}, {CO}), f16, l0b, "ZN")
    c0 = ndarray(({HWR}, {CO}), f32, l0c, "NZ")
    dma_copy(x1, X)
    dma_copy(w1, Wt)
    set_flag("MTE2_MTE1", 0)
    wait_flag("MTE2_MTE1", 0)
    p = asc.LoadData3DParamsV2({PADS}, {H}, {W}, {C}, {KK}, {HWR}, 0, 0, {SW}, {SH}, {KW}, {KH},
                               {DW}, {DH}{EXTRA})
    asc.load_data(a0, x1, p)
    dma_copy(b0, w1)
    set_flag("MTE1_M", 0)
    wait_flag("MTE1_M", 0)
    mmad(c0[0:{HW}, :], a0[0:{HW}, :], b0)
    set_flag("M_FIX", 0)
    wait_flag("M_FIX", 0)
    dma_copy(Y, c0[0:{HW}, :])
    return Y
"""


def conv_reference(x, w, pads, stride, dil):
    """Direct convolution (cross-correlation) by summation: x (C, H, W), w (CO, C, KH, KW)."""
    left, right, top, bottom = pads
    c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.zeros((c, h + top + bottom, wd + left + right), np.float64)
    xp[:, top:top + h, left:left + wd] = x
    ho = (h + top + bottom - (kh - 1) * dil[0] - 1) // stride[0] + 1
    wo = (wd + left + right - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((ho, wo, co))
    for i in range(ho):
        for j in range(wo):
            for a in range(kh):
                for b in range(kw):
                    patch = xp[:, i * stride[0] + a * dil[0], j * stride[1] + b * dil[1]]
                    out[i, j] += w[:, :, a, b] @ patch
    return out.reshape(ho * wo, co)


@settings(max_examples=6, deadline=None)
@given(h=st.integers(3, 7), w=st.integers(3, 7), kh=st.integers(1, 3), kw=st.integers(1, 3),
       pads=st.tuples(*[st.integers(0, 2)] * 4), sh=st.integers(1, 2), sw=st.integers(1, 2),
       dh=st.integers(1, 2), dw=st.integers(1, 2), c1=st.integers(1, 2))
def test_load3d_conv_matches_direct_convolution(h, w, kh, kw, pads, sh, sw, dh, dw, c1):
    c, co = 16 * c1, 16
    ho = (h + pads[2] + pads[3] - (kh - 1) * dh - 1) // sh + 1
    wo = (w + pads[0] + pads[1] - (kw - 1) * dw - 1) // sw + 1
    if ho <= 0 or wo <= 0:
        return
    rng = np.random.default_rng(h * 100 + w)
    x = rng.standard_normal((1, c, h, w)).astype(np.float16)
    wt = rng.standard_normal((co, c, kh, kw)).astype(np.float16)
    # the weights as the (K, CO) matrix of img2col's column order (c1, kh, kw, c0)
    wm = wt.reshape(co, c1, 16, kh, kw).transpose(1, 3, 4, 2, 0).reshape(c1 * kh * kw * 16, co)
    hw = ho * wo
    text = CONV.format(HWR=-(-hw // 16) * 16, HW=hw, KK=wm.shape[0], CO=co, PADS=str(pads),
                       SW=sw, SH=sh, KW=kw, KH=kh, DW=dw, DH=dh, C=c, H=h, W=w, EXTRA="")
    got = run(text, {"X": x, "Wt": wm}).numpy()
    want = conv_reference(x[0].astype(np.float64), wt.astype(np.float64), pads, (sh, sw),
                          (dh, dw))
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_load3d_refuses_what_it_does_not_model():
    kw = dict(HWR=16, HW=16, KK=16, CO=16, PADS="(0, 0, 0, 0)", SW=1, SH=1, KW=1, KH=1, DW=1,
              DH=1, C=16, H=4, W=4, EXTRA="")
    x = np.ones((1, 16, 4, 4), np.float16)
    wm = np.ones((16, 16), np.float16)
    got = run(CONV.format(**kw), {"X": x, "Wt": wm}).numpy()
    np.testing.assert_array_equal(got, np.full((16, 16), 16.0))
    assert code_of(CONV.format(**{**kw, "EXTRA": ", True"}), {"X": x, "Wt": wm}) == "APK517"
    bad = CONV.format(**kw).replace("LoadData3DParamsV2((0, 0, 0, 0), 4, 4",
                                    "LoadData3DParamsV2((0, 0, 0, 0), 5, 4")
    assert code_of(bad, {"X": x, "Wt": wm}) == "APK516"


GEMM = """\
from gemm import gemm
kernel mm(A: {ta}[100, 70] @ gm, B: {ta}[70, 90] @ gm) -> {tc}[100, 90] @ gm:
    C = ndarray((100, 90), {tc}, gm)
    gemm(A, B, C, 64, 64, {tk}, {tk1})
    return C
"""


@pytest.mark.parametrize("ta,tc,tk", [("f16", "f16", 32), ("f16", "bf16", 32),
                                      ("f16", "f32", 32), ("bf16", "bf16", 32),
                                      ("i8", "i32", 32)])
def test_stdlib_gemm_produces_every_output_dtype(ta, tc, tk):
    rng = np.random.default_rng(3)
    if ta == "i8":
        a = rng.integers(-5, 5, (100, 70)).astype(np.int8)
        b = rng.integers(-5, 5, (70, 90)).astype(np.int8)
        got = run(GEMM.format(ta=ta, tc=tc, tk=tk, tk1=2 * tk), {"A": a, "B": b}).numpy()
        np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))
        return
    a = rng.standard_normal((100, 70)).astype(np.float32)
    b = rng.standard_normal((70, 90)).astype(np.float32)
    if ta == "f16":
        a, b = a.astype(np.float16), b.astype(np.float16)
    res = run(GEMM.format(ta=ta, tc=tc, tk=tk, tk1=2 * tk), {"A": a, "B": b})
    got = res.numpy().astype(np.float32)
    ref = a.astype(np.float32) @ b.astype(np.float32) if ta == "f16" else None
    if tc == "f16":  # the float32 sums in another order: at most one float16 step apart
        np.testing.assert_allclose(got, ref.astype(np.float16).astype(np.float32), rtol=1e-3,
                                   atol=1e-3)
        assert res.numpy().dtype == np.float16
    elif ref is not None:
        np.testing.assert_allclose(got, ref, rtol=1e-2 if tc == "bf16" else 1e-5, atol=1e-2)
    else:
        assert got.shape == (100, 90) and np.isfinite(got).all()


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ascend_conv_bias_relu.apk"


def _kernel_of_example():
    text = EXAMPLE.read_text()
    return text[:text.index("\nX: f16")]  # the kernel alone (seeded inputs)


@pytest.mark.parametrize("cut", ['    asc.set_flag("MTE2_MTE1", 0)\n',
                                 '    asc.wait_flag("MTE1_M", 0)\n',
                                 "bias=bt0, unit_flag=3)", "relu_en=True,\n"
                                 "                                unit_flag=3)"])
def test_example_without_one_of_its_orderings_is_a_race_or_deadlock(cut):
    text = _kernel_of_example()
    assert cut in text
    keep = {"bias=bt0, unit_flag=3)": "bias=bt0)",
            "relu_en=True,\n                                unit_flag=3)": "relu_en=True)"}
    mutated = text.replace(cut, keep.get(cut, ""))
    assert code_of(mutated) in ("APK570", "APK575", "APK513")
