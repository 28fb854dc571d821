"""Microscaling dtypes (NKI docs, MXFP deep dive): float8 x4 packs four values in 32 bits,
float4 x4 four in 16 bits; float8_e8m0fnu is the shared power-of-two scale."""

import subprocess
import sys

import ml_dtypes
import numpy as np

import apdsl
from apdsl.tensor.dtypes import dtype


def test_packed_widths_and_storage():
    assert dtype("float8_e4m3fn_x4").bits == 32 and dtype("float8_e5m2_x4").bits == 32
    assert dtype("float4_e2m1fn_x4").bits == 16
    assert dtype("float8_e8m0fnu").np == np.dtype(ml_dtypes.float8_e8m0fnu)
    # NumPy's unsigned types still map to the unsigned dtypes, not the packed ones
    assert dtype(np.uint32).name == "uint32" and dtype(np.uint16).name == "uint16"


def test_views_rescale_the_last_dimension_by_bytes():
    t = apdsl.ndarray((128, 512), "uint8", "sbuf")
    assert t.view("float8_e4m3fn_x4").shape == (128, 128)
    assert t.view("float4_e2m1fn_x4").shape == (128, 256)
    assert t.view("float8_e4m3fn_x4").view("uint8").shape == (128, 512)


def test_scale_dtype_is_a_power_of_two():
    # e8m0: value = 2**(bits - 127); 127 is 1.0
    bits = np.array([127, 128, 120], np.uint8)
    assert list(bits.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)) == [1.0, 2.0, 2.0 ** -7]


def test_kernel_names_resolve(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import nki\nimport nki.language as nl\n"
        "@nki.jit\ndef k(a):\n"
        "    t = nl.ndarray((128, 512), dtype=nl.uint8, buffer=nl.sbuf)\n"
        "    q = t.view(nl.float8_e4m3fn_x4)\n"
        "    s = nl.ndarray((128, 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)\n"
        "    assert q.shape == (128, 128) and q.dtype == nl.float8_e4m3fn_x4\n"
        "    assert nl.float4_e2m1fn_x4 != nl.float8_e4m3fn_x4\n"
        "    o = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    nl.store(o, nl.load(a))\n"
        "    return o\n")
    np.save(tmp_path / "a.npy", np.ones((128, 4), np.float32))
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(src), "-i",
                        f"a={tmp_path / 'a.npy'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_an_array_made_with_a_packed_dtype_reaches_a_kernel_as_it():
    """nki-library's tests make MX weights with `np.zeros(shape, dtype=nl.float4_e2m1fn_x4)`
    and fill them with packed bits: the kernel sees that dtype, not uint16, and the corpus
    stand-in's static_cast unpacks such an array."""
    import apdsl.nki as nki
    import apdsl.nki.language as nl
    from apdsl.surfaces.corpus.standins import neuron_dtypes

    a = np.zeros((2, 3), dtype=nl.float4_e2m1fn_x4)
    # e2m1 nibbles, first value lowest: 0010 = 1.0, 0111 = 6.0, 0000 = 0.0, 1010 = -1.0
    a[...] = 0x2 | 0x7 << 4 | 0x0 << 8 | 0xA << 12
    seen = []

    @nki.jit
    def k(x, y):
        seen.append((x.dtype, y.dtype))
        return x.shape

    k(a, np.zeros((2, 3), np.uint16))
    assert seen == [(nl.float4_e2m1fn_x4, nl.uint16)]
    values = neuron_dtypes().static_cast(a, np.float32)
    np.testing.assert_array_equal(values, np.tile([1.0, 6.0, 0.0, -1.0], (2, 3)))
