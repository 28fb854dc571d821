"""Ascend data formats: registry, storage shapes, formats as layouts and `convert`.

Oracles are the seed 003 formulas (pad, reshape, transpose) written out again here with NumPy,
independently of the module's declarative description.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl.catalogue import formats as catalogue
from apdsl.errors import ApdslNameError, FormatError
from apdsl.tensor import formats as F

WIDTHS = {  # dtype name -> C0 of SPEC section 5
    "int4": 64, "int8": 32, "float16": 16, "bfloat16": 16, "float32": 8,
}
ALL_DTYPES = list(WIDTHS) + ["float8_e4m3fn", "float8_e5m2", "uint8", "int16", "int32"]
NP = {"int4": ml_dtypes.int4, "bfloat16": ml_dtypes.bfloat16,
      "float8_e4m3": ml_dtypes.float8_e4m3,
      "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}

MATRIX = ["ND", "ND_ALIGN", "COLUMN_MAJOR", "NZ", "ZZ", "ZN"]
CONV4 = ["NCHW", "NHWC", "HWCN", "NC1HWC0", "FRACTAL_Z"]
CONV5 = ["NDHWC", "NCDHW", "NDC1HWC0", "FRACTAL_Z_3D"]
# the plain format whose array *is* the logical array of each format
TWIN = {**{f: "ND" for f in MATRIX}, "NCHW": "NCHW", "NHWC": "NHWC", "HWCN": "HWCN",
        "NC1HWC0": "NCHW", "FRACTAL_Z": "NCHW", "NDHWC": "NDHWC", "NCDHW": "NCDHW",
        "NDC1HWC0": "NDHWC", "FRACTAL_Z_3D": "NDHWC"}
LOGICAL_AXES = {"NCHW": "NCHW", "NHWC": "NHWC", "HWCN": "HWCN", "NC1HWC0": "NCHW",
                "FRACTAL_Z": "NCHW", "NDHWC": "NDHWC", "NCDHW": "NCDHW",
                "NDC1HWC0": "NDHWC", "FRACTAL_Z_3D": "NDHWC"}


def npdtype(name: str) -> np.dtype:
    return np.dtype(NP.get(name, name))


def random_data(shape, name: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = {"int4": (-8, 8), "int8": (-128, 128), "uint8": (0, 256),
              "float8_e4m3fn": (-200, 200), "float8_e5m2": (-200, 200), "float8_e4m3": (-200, 200),
              "bfloat16": (-250, 250)}.get(name, (-30000, 30000))
    values = rng.integers(lo, hi, size=shape)
    # avoid 0 so that a value landing in padding (or padding leaking out) is visible
    values[values == 0] = 1
    return values.astype(npdtype(name))


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit-exact equality, with NumPy's element diff on failure."""
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    bits = f"u{got.itemsize}"
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(bits),
                                  np.ascontiguousarray(want).view(bits))


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------- seed formulas

def pad_to(x: np.ndarray, axis: int, multiple: int) -> np.ndarray:
    pads = [[0, 0]] * x.ndim
    pads[axis] = [0, (multiple - x.shape[axis] % multiple) % multiple]
    return np.pad(x, pads)


def oracle(fmt: str, x: np.ndarray, c0: int) -> np.ndarray:
    """Storage of `x` (in the format's own logical axes) by the seed's formula text."""
    if fmt in ("ND", "NCHW", "NHWC", "HWCN", "NDHWC", "NCDHW"):
        return x.copy()
    if fmt == "ND_ALIGN":
        return pad_to(x, -1, c0)
    if fmt == "COLUMN_MAJOR":
        return np.ascontiguousarray(np.swapaxes(x, -1, -2))
    *b, r, c = x.shape
    if fmt == "NZ":  # (..., M, N) -> (..., M1, M0, N1, N0) -> (..., N1, M1, M0, N0)
        y = pad_to(pad_to(x, -2, 16), -1, c0).reshape(*b, cdiv(r, 16), 16, cdiv(c, c0), c0)
        return np.ascontiguousarray(np.moveaxis(y, -2, -4))
    if fmt == "ZZ":  # (..., M1, M0, K1, K0) -> (..., M1, K1, M0, K0)
        y = pad_to(pad_to(x, -2, 16), -1, c0).reshape(*b, cdiv(r, 16), 16, cdiv(c, c0), c0)
        return np.ascontiguousarray(np.swapaxes(y, -3, -2))
    if fmt == "ZN":  # (..., K1, K0, N1, N0) -> (..., K1, N1, N0, K0)
        y = pad_to(pad_to(x, -2, c0), -1, 16).reshape(*b, cdiv(r, c0), c0, cdiv(c, 16), 16)
        return np.ascontiguousarray(np.moveaxis(y, -3, -1))
    if fmt == "NC1HWC0":  # NCHW: reshape [N, C1, C0, H, W] transpose [0, 1, 3, 4, 2]
        n, c, h, w = x.shape
        return np.ascontiguousarray(
            pad_to(x, 1, c0).reshape(n, cdiv(c, c0), c0, h, w).transpose(0, 1, 3, 4, 2))
    if fmt == "FRACTAL_Z":
        return fractal_z_from_nchw(x, c0)
    if fmt == "NDC1HWC0":  # NDHWC cut along C into C1 pieces of C0: (N, D, C1, H, W, C0)
        n, d, h, w, c = x.shape
        return np.ascontiguousarray(
            pad_to(x, 4, c0).reshape(n, d, h, w, cdiv(c, c0), c0).transpose(0, 1, 4, 2, 3, 5))
    if fmt == "FRACTAL_Z_3D":
        return fractal_z_3d(x, c0)
    raise AssertionError(fmt)


def fractal_z_from_nchw(x: np.ndarray, c0: int) -> np.ndarray:
    n, c, h, w = x.shape
    n0, n1, c1 = 16, cdiv(n, 16), cdiv(c, c0)
    y = np.pad(x, [[0, (n0 - n % n0) % n0], [0, (c0 - c % c0) % c0], [0, 0], [0, 0]])
    return np.ascontiguousarray(
        y.reshape(n1, n0, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3).reshape(c1 * h * w, n1, n0,
                                                                             c0))


def fractal_z_from_hwcn(x: np.ndarray, c0: int) -> np.ndarray:
    h, w, c, n = x.shape
    n0, n1, c1 = 16, cdiv(n, 16), cdiv(c, c0)
    y = np.pad(x, [[0, 0], [0, 0], [0, (c0 - c % c0) % c0], [0, (n0 - n % n0) % n0]])
    return np.ascontiguousarray(
        y.reshape(h, w, c1, c0, n1, n0).transpose(2, 0, 1, 4, 5, 3).reshape(c1 * h * w, n1, n0,
                                                                             c0))


def fractal_z_3d(x: np.ndarray, c0: int) -> np.ndarray:
    n, d, h, w, c = x.shape
    n1, c1 = cdiv(n, 16), cdiv(c, c0)
    y = np.pad(x, [[0, n1 * 16 - n], [0, 0], [0, 0], [0, 0], [0, c1 * c0 - c]])
    y = y.reshape(n1, 16, d, h, w, c1, c0).transpose(2, 5, 3, 4, 0, 1, 6)
    return np.ascontiguousarray(y.reshape(d * c1 * h * w, n1, 16, c0))


# logical shapes with tails for every C0 (int4's 64 included) and a batch dimension
MATRIX_SHAPES = [(37, 70), (2, 20, 28), (16, 64)]
NCHW_SHAPES = [(18, 70, 3, 2), (16, 16, 1, 1)]
NDHWC_SHAPES = [(18, 2, 3, 2, 70)]


def own_shape(fmt: str, canonical_shape: tuple[int, ...]) -> tuple[int, ...]:
    """A canonical (NCHW or NDHWC) shape permuted into `fmt`'s own logical axes."""
    if fmt in MATRIX:
        return canonical_shape
    base = "NCHW" if len(canonical_shape) == 4 else "NDHWC"
    return tuple(canonical_shape[base.index(a)] for a in LOGICAL_AXES[fmt])


def cases():
    for dt in WIDTHS:
        for fmt in MATRIX:
            for s in MATRIX_SHAPES:
                yield fmt, dt, s
        for fmt in CONV4:
            for s in NCHW_SHAPES:
                yield fmt, dt, own_shape(fmt, s)
        for fmt in CONV5:
            for s in NDHWC_SHAPES:
                yield fmt, dt, own_shape(fmt, s)


CASES = list(cases())


# ---------------------------------------------------------------------------- registry

def test_registry_holds_every_format_of_the_spec_table():
    assert set(F.FORMATS) == set(MATRIX + CONV4 + CONV5)
    for name, fmt in F.FORMATS.items():
        assert F.canonical(name) == name and F.lookup(name) is fmt
        assert F.lookup(fmt) is fmt


@pytest.mark.parametrize("alias,name", [
    ("FRACTAL_NZ", "NZ"), ("zN", "NZ"), ("FRACTAL_ZZ", "ZZ"), ("zZ", "ZZ"), ("FRACTAL_ZN", "ZN"),
    ("nZ", "ZN"), ("ROW_MAJOR", "ND"), ("nd", "ND"), ("row_major", "ND"), ("fractal_nz", "NZ"),
    ("Fractal_Zn", "ZN"), ("zz", "ZZ"), ("ZZ", "ZZ"), ("nc1hwc0", "NC1HWC0"), ("ZN", "ZN"),
    ("NZ", "NZ"), ("fractal_z_3d", "FRACTAL_Z_3D"),
])
def test_aliases_and_case(alias, name):
    assert F.canonical(alias) == name


@pytest.mark.parametrize("spelling", ["zn", "nz", "Nz", "Zn"])
def test_case_folding_that_could_mean_nz_or_zn_is_refused(spelling):
    with pytest.raises(FormatError) as e:
        F.canonical(spelling)
    assert e.value.code == "APK502"
    assert "NZ" in e.value.help and "ZN" in e.value.help


def test_unknown_format_suggests_close_names():
    with pytest.raises(FormatError) as e:
        F.canonical("NQ")
    assert e.value.code == "APK501" and "NZ" in e.value.help and "'NQ'" in e.value.message
    with pytest.raises(FormatError) as e:
        F.canonical("FRACTALNZ")
    assert "FRACTAL_NZ" in e.value.help
    with pytest.raises(FormatError) as e:
        F.canonical("XYZW")
    assert "FRACTAL_Z_3D" in e.value.help  # nothing close: list them all
    with pytest.raises(FormatError) as e:
        F.canonical(3)
    assert e.value.code == "APK501"


def test_logical_axes_of_conv_formats():
    for fmt, axes in LOGICAL_AXES.items():
        assert "".join(F.lookup(fmt).axes) == axes
    assert F.lookup("ND").axes is None
    assert F.lookup("ZZ").axes == ("M", "K") and F.lookup("ZN").axes == ("K", "N")
    assert all(F.lookup(f).batched for f in MATRIX if f != "ND")


@pytest.mark.parametrize("fmt,buffers", [
    ("ND", "sbuf psum hbm gm l1 l0a l0b l0c ub"), ("NCHW", "gm l1 l0a l0b l0c ub"),
    ("ND_ALIGN", "gm ub l1"), ("COLUMN_MAJOR", "gm ub l1"), ("NZ", "gm ub l1 l0c"),
    ("ZZ", "gm l1 l0a"), ("ZN", "gm l1 l0b"), ("NC1HWC0", "gm ub l1"), ("FRACTAL_Z", "gm l1 l0b"),
    ("NDC1HWC0", "gm ub l1"), ("FRACTAL_Z_3D", "gm l1 l0b"),
])
def test_buffers_accepting_each_format(fmt, buffers):
    for b in F.ALL_BUFFERS:
        assert F.accepts(fmt, b) == (b in buffers.split() or (fmt == "ND")), (fmt, b)
    assert F.accepts(fmt, buffers.split()[0].upper())


def test_check_buffer_refuses_with_the_accepted_buffers():
    F.check_buffer("ZZ", "l0a")
    with pytest.raises(FormatError) as e:
        F.check_buffer("NZ", "l0a")
    assert e.value.code == "APK510"
    assert "l0c" in e.value.notes[0] and "NZ" in e.value.message and "l0a" in e.value.message


# ---------------------------------------------------------------------------- C0 and shapes

@pytest.mark.parametrize("name,c0", list(WIDTHS.items()) + [
    ("float8_e5m2", 32), ("uint16", 16), ("int32", 8), ("f16", 16), ("bf16", 16)])
def test_c0_is_32_bytes_of_the_dtype(name, c0):
    assert F.c0_for(name) == c0
    full = {"f16": "float16", "bf16": "bfloat16"}.get(name, name)
    assert F.c0_for(npdtype(full)) == c0  # a NumPy dtype works as well as a name
    assert F.c0_for(name, 16) == 16


@pytest.mark.parametrize("bad", [0, -16, 2.5, "16", True])
def test_bad_c0(bad):
    with pytest.raises(FormatError) as e:
        F.c0_for("float16", bad)
    assert e.value.code == "APK506"


def test_unknown_dtype_is_a_dtype_error():
    with pytest.raises(ApdslNameError):
        F.c0_for("float13")


def spec_storage(fmt: str, shape: tuple[int, ...], c0: int) -> tuple[int, ...]:
    """SPEC section 5's storage column, written out."""
    if fmt in ("ND", "NCHW", "NHWC", "HWCN", "NDHWC", "NCDHW"):
        return shape
    if fmt in ("NC1HWC0", "FRACTAL_Z"):
        n, c, h, w = shape
        return ((n, cdiv(c, c0), h, w, c0) if fmt == "NC1HWC0"
                else (cdiv(c, c0) * h * w, cdiv(n, 16), 16, c0))
    if fmt in ("NDC1HWC0", "FRACTAL_Z_3D"):
        n, d, h, w, c = shape
        return ((n, d, cdiv(c, c0), h, w, c0) if fmt == "NDC1HWC0"
                else (d * cdiv(c, c0) * h * w, cdiv(n, 16), 16, c0))
    *b, m, n = shape
    return tuple(b) + {
        "ND_ALIGN": (m, cdiv(n, c0) * c0), "COLUMN_MAJOR": (n, m),
        "NZ": (cdiv(n, c0), cdiv(m, 16), 16, c0), "ZZ": (cdiv(m, 16), cdiv(n, c0), 16, c0),
        "ZN": (cdiv(m, c0), cdiv(n, 16), 16, c0)}[fmt]


@pytest.mark.parametrize("fmt,dt,shape", CASES)
def test_storage_shape_follows_the_spec_table(fmt, dt, shape):
    c0 = WIDTHS[dt]
    assert F.storage_shape(fmt, shape, dt) == spec_storage(fmt, shape, c0)
    assert F.storage_shape(fmt, shape, "int8", c0=c0) == spec_storage(fmt, shape, c0)


def test_seed_fractal_z_3d_shape_and_l0c_nz():
    assert F.storage_shape("FRACTAL_Z_3D", (48, 2, 2, 2, 32), "float16") == (16, 3, 16, 16)
    assert F.storage_shape("FRACTAL_Z", (32, 32, 2, 2), "float16") == (8, 2, 16, 16)
    # L0C: 16 x 16 fractals whatever the accumulator dtype
    assert F.storage_shape("NZ", (32, 48), "float32", c0=16) == (3, 2, 16, 16)
    assert F.storage_shape("NZ", (32, 48), "float32") == (6, 2, 16, 8)


def test_padded_and_block_shapes():
    assert F.padded_shape("NZ", (3, 20, 28), "float16") == (3, 32, 32)
    assert F.padded_shape("ZN", (20, 28), "int8") == (32, 32)
    assert F.padded_shape("ND_ALIGN", (5, 9), "int32") == (5, 16)
    assert F.padded_shape("FRACTAL_Z", (18, 20, 3, 3), "float32") == (32, 24, 3, 3)
    assert F.block_shape("ZN", 3, "int8") == (1, 32, 16)
    assert F.block_shape("NC1HWC0", 4, "float16") == (1, 16, 1, 1)
    assert F.block_shape("ND", 2, "float16") == (1, 1)


# ---------------------------------------------------------------------------- seed examples

def test_seed_nd_to_nz_example():
    data = np.arange(20 * 28)
    tensor_a = (data * np.ones(20 * 28, dtype="float16")).astype("float16").reshape(20, 28)
    # the seed's pseudocode, verbatim in substance
    n0 = 16
    n1 = (28 + n0 - 1) // n0
    pad_n = n1 * n0 - 28
    m0 = 16
    m1 = (20 + m0 - 1) // m0
    pad_m = m1 * m0 - 20
    tensor_b = np.pad(tensor_a, [[0, pad_m], [0, pad_n]])
    tensor_b = tensor_b.reshape((m1, m0, n1, n0)).transpose((2, 0, 1, 3))
    got = F.convert(tensor_a, "ND", "NZ")
    assert got.shape == (2, 2, 16, 16)
    for idx in np.ndindex(*got.shape):
        assert got[idx] == tensor_b[idx], idx
    # the seed's printout: first fractal row 0..15, second N1 block starts at 16
    assert list(got[0, 0, 0]) == list(range(16)) and got[1, 0, 0, 0] == 16
    assert got[0, 1, 4, 0] == 0 and got[1, 0, 0, 12] == 0  # padding rows and columns


def test_seed_hwcn_and_nchw_to_fractal_z():
    hwcn = random_data((2, 2, 32, 32), "float16")
    got = F.convert(hwcn, "HWCN", "FRACTAL_Z")
    assert got.shape == (8, 2, 16, 16)
    assert_same(got, fractal_z_from_hwcn(hwcn, 16))
    nchw = np.ascontiguousarray(hwcn.transpose(3, 2, 0, 1))
    assert_same(F.convert(nchw, "NCHW", "FRACTAL_Z"), fractal_z_from_nchw(nchw, 16))
    # one weight tensor, either source layout, the same FRACTAL_Z
    assert_same(F.convert(nchw, "NCHW", "FRACTAL_Z"), got)


def test_seed_ndhwc_to_fractal_z_3d():
    x = random_data((48, 2, 2, 2, 32), "float16")
    got = F.convert(x, "NDHWC", "FRACTAL_Z_3D")
    assert got.shape == (16, 3, 16, 16)
    assert_same(got, fractal_z_3d(x, 16))


@pytest.mark.parametrize("dt", list(WIDTHS))
def test_seed_nhwc_and_nchw_to_nc1hwc0(dt):
    c0 = WIDTHS[dt]
    n, c, h, w = 2, 3 * c0, 4, 5  # the seed formulas assume C = C1 * C0
    nhwc = random_data((n, h, w, c), dt)
    want = nhwc.reshape(n, h, w, c // c0, c0).transpose(0, 3, 1, 2, 4)
    assert_same(F.convert(nhwc, "NHWC", "NC1HWC0"), want)
    nchw = np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
    want = nchw.reshape(n, c // c0, c0, h, w).transpose(0, 1, 3, 4, 2)
    assert_same(F.convert(nchw, "NCHW", "NC1HWC0"), want)


# ---------------------------------------------------------------------------- every format

@pytest.mark.parametrize("fmt,dt,shape", CASES)
def test_every_format_matches_its_formula_and_converts_back(fmt, dt, shape):
    x = random_data(shape, dt)
    c0 = WIDTHS[dt]
    got = F.convert(x, TWIN[fmt], fmt)
    assert_same(got, oracle(fmt, x, c0))
    assert_same(F.convert(got, fmt, TWIN[fmt], shape=shape), x)


@pytest.mark.parametrize("fmt,dt,shape", CASES)
def test_dim_modes_address_the_converted_storage(fmt, dt, shape):
    x = random_data(shape, dt)
    storage = F.convert(x, TWIN[fmt], fmt)
    modes = F.dim_modes(fmt, shape, dt)
    assert len(modes) == len(shape)
    # the mixed-radix offset rule, written independently of the module
    coords = np.indices(shape).reshape(len(shape), -1)
    offs = np.zeros(coords.shape[1], dtype=np.int64)
    for d, dim in enumerate(modes):
        rest = coords[d].astype(np.int64)
        for i, (count, stride) in enumerate(dim):
            digit = rest if i == len(dim) - 1 else rest % count
            offs += digit * stride
            rest = rest // count
    offs = offs.reshape(shape)
    assert_same(storage.ravel()[offs], x)
    assert np.unique(offs).size == offs.size  # one element per coordinate
    np.testing.assert_array_equal(F.offsets(modes, shape), offs)
    # everything else in storage is padding, and padding is zero
    hole = np.ones(storage.size, dtype=bool)
    hole[offs.ravel()] = False
    assert not np.any(storage.ravel()[hole].astype(np.float32))
    for dim, n in zip(modes, shape):
        if len(dim) == 1:
            assert dim[0][0] == n  # a plain dimension is (size, stride)


@pytest.mark.parametrize("fmt,dt,shape", CASES)
def test_stored_layout_places_every_element_as_the_seed_formula(fmt, dt, shape):
    """`stored` (the one place a format becomes a layout) against the seed formulas: writing
    the logical array through its layout's offsets gives the formula's storage, padding zero."""
    x = random_data(shape, dt)
    c0 = WIDTHS[dt]
    want = oracle(fmt, x, c0)
    placed = F.stored(fmt, shape, dt)
    assert placed.c0 == c0 and placed.elements == want.size
    assert placed.padded == F.padded_shape(fmt, shape, dt)
    out = np.zeros(placed.elements, dtype=x.dtype)
    out[placed.layout().offsets().ravel()] = x.ravel()
    assert_same(out.reshape(want.shape), want)
    shifted = placed.layout(offset=5).offsets()
    np.testing.assert_array_equal(shifted, placed.layout().offsets() + 5)


def test_stored_in_a_buffer_uses_its_c0_and_refuses_a_foreign_buffer():
    """NZ in L0C is 16 x 16 fractals whatever the dtype; an explicit c0 wins; a buffer that
    cannot hold the format is refused (APK510) before any layout is made."""
    assert F.stored("NZ", (32, 32), "float32", "l0c").storage == (2, 2, 16, 16)
    assert F.stored("NZ", (32, 32), "float32", "l1").storage == (4, 2, 16, 8)
    assert F.stored("zN", (32, 32), "float16", "gm", c0=32).storage == (1, 2, 16, 32)
    with pytest.raises(FormatError) as e:
        F.stored("NZ", (32, 32), "float16", "l0a")
    assert e.value.code == "APK510"


def test_dim_modes_of_the_brief_nz_example():
    r, c = 20, 28
    assert F.dim_modes("NZ", (r, c), "float16") == (
        ((16, 16), (2, 256)), ((16, 1), (2, 32 * 16)))
    assert F.dim_modes("ND", (r, c), "float16") == (((20, 28),), ((28, 1),))
    assert F.dim_modes("COLUMN_MAJOR", (r, c), "float16") == (((20, 1),), ((28, 20),))
    assert F.dim_modes("ND_ALIGN", (r, c), "float32") == (((20, 32),), ((28, 1),))


# ---------------------------------------------------------------------------- conversions

def test_nz_to_nd_without_shape_keeps_padding():
    x = random_data((20, 28), "float16")
    padded = F.convert(F.convert(x, "ND", "NZ"), "NZ", "ND")
    assert padded.shape == (32, 32)
    assert_same(padded[:20, :28], x)
    assert not padded[20:].any() and not padded[:, 28:].any()


def test_fractal_to_fractal_and_conv_permutations():
    x = random_data((3, 37, 70), "int8")
    zn = F.convert(F.convert(x, "ND", "NZ"), "NZ", "ZN", shape=x.shape)
    assert_same(zn, oracle("ZN", x, 32))
    nchw = random_data((18, 20, 3, 5), "bfloat16")
    hwcn = F.convert(nchw, "NCHW", "HWCN")
    assert_same(hwcn, np.ascontiguousarray(nchw.transpose(2, 3, 1, 0)))
    frz = F.convert(F.convert(nchw, "NCHW", "NC1HWC0"), "NC1HWC0", "FRACTAL_Z",
                    shape=nchw.shape)
    assert_same(frz, fractal_z_from_nchw(nchw, 16))
    nhwc = F.convert(frz, "FRACTAL_Z", "NHWC", shape=nchw.shape)
    assert_same(nhwc, np.ascontiguousarray(nchw.transpose(0, 2, 3, 1)))
    ndhwc = random_data((18, 2, 3, 2, 20), "float32")
    assert_same(F.convert(ndhwc, "NDHWC", "NCDHW"),
                np.ascontiguousarray(ndhwc.transpose(0, 4, 1, 2, 3)))


def test_non_contiguous_input_and_float64():
    base = random_data((40, 70), "float32")
    view = base[::2, ::-3]  # a strided view converts like its copy
    assert_same(F.convert(view, "ND", "NZ"), oracle("NZ", np.ascontiguousarray(view), 8))
    wide = base.astype(np.float64)  # no apdsl name, C0 from its width (4)
    assert F.convert(wide, "ND", "NZ").shape == (18, 3, 16, 4)


@pytest.mark.parametrize("dt", ALL_DTYPES + ["float8_e4m3", "int64", "uint32"])
def test_every_dtype_converts(dt):
    x = random_data((2, 37, 21), dt)
    c0 = F.c0_for(dt)
    for fmt in ("NZ", "ZZ", "ZN", "ND_ALIGN", "COLUMN_MAJOR"):
        got = F.convert(x[:, ::-1], "ND", fmt)  # a strided source as well
        assert_same(got, oracle(fmt, np.ascontiguousarray(x[:, ::-1]), c0))
        assert_same(F.convert(got, fmt, "ND", shape=x.shape), x[:, ::-1])


def test_l0c_nz_needs_its_c0():
    x = random_data((32, 48), "float32")
    l0c = F.convert(x, "ND", "NZ", c0=16)
    assert l0c.shape == (3, 2, 16, 16)
    assert_same(l0c, oracle("NZ", x, 16))
    assert_same(F.convert(l0c, "NZ", "ND", c0=16), x)
    with pytest.raises(FormatError) as e:
        F.convert(l0c, "NZ", "ND")
    assert e.value.code == "APK507" and "c0=" in e.value.help


def test_zero_sized_and_rank_one_nd():
    assert F.convert(np.zeros((0, 5), np.float16), "ND", "NZ").shape == (1, 0, 16, 16)
    v = random_data((7,), "int8")
    assert_same(F.convert(v, "ND", "ND"), v)


def test_logical_shape_of_storage():
    assert F.logical_shape("NZ", (3, 2, 2, 16, 16), "float16") == (3, 32, 32)
    assert F.logical_shape("ZN", (2, 3, 16, 32), "int8") == (64, 48)
    assert F.logical_shape("NC1HWC0", (2, 3, 4, 5, 8), "float32") == (2, 24, 4, 5)
    assert F.logical_shape("COLUMN_MAJOR", (3, 5), "float32") == (5, 3)


# ---------------------------------------------------------------------------- round trips

@st.composite
def conversion(draw):
    family = draw(st.sampled_from([MATRIX, CONV4, CONV5]))
    src, dst = draw(st.sampled_from(family)), draw(st.sampled_from(family))
    dt = draw(st.sampled_from(ALL_DTYPES))
    size = st.integers(1, 40)
    if family is MATRIX:
        batch = draw(st.lists(st.integers(1, 3), max_size=2))
        canon = (*batch, draw(size), draw(size))
    else:
        rank = 4 if family is CONV4 else 5
        small = [draw(st.integers(1, 3)) for _ in range(rank - 2)]
        n, c = draw(size), draw(st.integers(1, 70))
        canon = (n, c, *small) if rank == 4 else (n, small[0], small[1], small[2], c)
    c0 = draw(st.sampled_from([None, None, 16]))
    return src, dst, dt, canon, c0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversion(), st.integers(0, 2**16))
def test_round_trips_through_any_pair(case, seed):
    src, dst, dt, canon, c0 = case
    shape_s, shape_d = own_shape(src, canon), own_shape(dst, canon)
    x = random_data(shape_s, dt, seed)
    a = F.convert(x, TWIN[src], src, c0=c0)
    b = F.convert(a, src, dst, shape=shape_s, c0=c0)
    assert b.shape == F.storage_shape(dst, shape_d, dt, c0)
    # the destination holds the same logical tensor as converting the logical tensor directly
    direct = F.convert(F.convert(x, TWIN[src], TWIN[dst], shape=shape_s, c0=c0),
                       TWIN[dst], dst, c0=c0)
    assert_same(b, direct)
    assert_same(F.convert(b, dst, TWIN[src], shape=shape_d, c0=c0), x)


# ---------------------------------------------------------------------------- errors

def test_cross_family_conversion_is_refused():
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros((2, 16, 4, 4), np.float16), "ND", "NC1HWC0")
    assert e.value.code == "APK503"
    assert "ND" in e.value.message and "NC1HWC0" in e.value.message and e.value.help
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros((2, 16, 4, 4, 4), np.float16), "NDHWC", "NCHW")
    assert e.value.code == "APK503" and "(N, D, H, W, C)" in " ".join(e.value.notes)


@pytest.mark.parametrize("fmt,shape", [
    ("NCHW", (16, 4, 4)), ("FRACTAL_Z_3D", (1, 2, 3, 4)), ("NZ", (16,)), ("ZN", ()),
    ("NDC1HWC0", (1, 2, 3, 4, 5, 6))])
def test_wrong_rank(fmt, shape):
    with pytest.raises(FormatError) as e:
        F.storage_shape(fmt, shape, "float16")
    assert e.value.code == "APK504" and fmt in e.value.message and str(shape) in e.value.message


def test_wrong_rank_in_convert_names_the_destination():
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros(5, np.float16), "ND", "NZ")
    assert e.value.code == "APK504" and "NZ" in e.value.message


@pytest.mark.parametrize("shape", [(20, -4), (2.5, 3), "ab", 7, (True, 3)])
def test_invalid_shape(shape):
    with pytest.raises(FormatError) as e:
        F.storage_shape("NZ", shape, "float16")
    assert e.value.code == "APK505"


def test_array_that_is_not_the_source_storage():
    with pytest.raises(FormatError) as e:  # float32 fractals are 16 x 8
        F.convert(np.zeros((2, 2, 16, 16), np.float32), "NZ", "ND")
    assert e.value.code == "APK507" and "(2, 2, 16, 16)" in e.value.message
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros((16, 16), np.float16), "NZ", "ND")
    assert e.value.code == "APK507"
    with pytest.raises(FormatError) as e:  # ND_ALIGN rows are whole multiples of C0
        F.convert(np.zeros((3, 20), np.float16), "ND_ALIGN", "ND")
    assert e.value.code == "APK507" and "(3, 32)" in e.value.message
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros((3, 4, 5), np.float16), "NCHW", "NHWC")
    assert e.value.code == "APK507"


def test_shape_that_does_not_fit():
    nz = F.convert(random_data((20, 28), "float16"), "ND", "NZ")
    with pytest.raises(FormatError) as e:
        F.convert(nz, "NZ", "ND", shape=(40, 28))
    err = e.value
    assert err.code == "APK508"
    assert "(40, 28)" in err.message and "(2, 2, 16, 16)" in err.message
    assert "(2, 3, 16, 16)" in err.message and "NZ" in err.message
    with pytest.raises(FormatError) as e:  # plain sources must match exactly
        F.convert(np.zeros((32, 32), np.float16), "ND", "NZ", shape=(20, 28))
    assert e.value.code == "APK508"


def test_fractal_z_source_needs_shape():
    frz = F.convert(random_data((16, 32, 2, 2), "float16"), "NCHW", "FRACTAL_Z")
    for fmt in ("FRACTAL_Z", "FRACTAL_Z_3D"):
        with pytest.raises(FormatError) as e:
            F.convert(frz, fmt, "NCHW" if fmt == "FRACTAL_Z" else "NDHWC")
        assert e.value.code == "APK509" and "shape=" in e.value.help


def test_bad_c0_in_convert():
    with pytest.raises(FormatError) as e:
        F.convert(np.zeros((32, 32), np.float32), "ND", "NZ", c0=0)
    assert e.value.code == "APK506"


# ---------------------------------------------------------------------------- catalogue

# the registry, plans and conversion (tensor/format_*.py) raise the format codes
RAISED = sorted(set(re.findall(r'code="(APK5\d\d)"', "".join(
    p.read_text(encoding="utf-8") for p in Path(F.__file__).parent.glob("format*.py")))))


def test_catalogue_covers_every_code_raised_and_only_our_range():
    codes = [e.code for e in catalogue.ENTRIES]
    assert len(codes) == len(set(codes))
    assert set(RAISED) <= set(codes)
    assert all("APK500" <= c <= "APK599" for c in codes)
    for e in catalogue.ENTRIES:
        assert e.title and len(e.explanation) > 40 and e.example


@pytest.mark.parametrize("entry", catalogue.ENTRIES, ids=lambda e: e.code)
def test_catalogue_examples_raise_their_code(entry):
    if entry.example.startswith("# python"):
        with pytest.raises(FormatError) as e:
            exec(compile(entry.example, entry.code, "exec"), {})
        assert e.value.code == entry.code
        return
    # .apk examples: a declaration `NAME: DTYPE[...] @ BUFFER as FORMAT`; check the facts
    m = re.fullmatch(r"\w+: \w+\[[\d, ]+\] @ (\w+) as (\w+)", entry.example.strip())
    assert m, entry.example
    buffer, fmt = m.groups()
    with pytest.raises(FormatError) as e:
        F.check_buffer(fmt, buffer)
    assert e.value.code == entry.code
