"""A copy that would convert into or out of a packed MX dtype is refused (APK960): each element
of float8_e4m3fn_x4 / float8_e5m2_x4 / float4_e2m1fn_x4 holds four values, so converting it as
one number through float32 would be a wrong answer.  Same-dtype copies move the bits."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import apdsl
from apdsl import from_numpy, ndarray
from apdsl.errors import ApdslError
from apdsl.tensor.dtypes import cast_array, dtype

PACKED = ("float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4")


def _code(fn) -> str:
    with pytest.raises(ApdslError) as e:
        fn()
    return e.value.code


@pytest.mark.parametrize("packed", PACKED)
@pytest.mark.parametrize("other", ["float32", "bfloat16", "uint8", "int32", "float8_e4m3fn"])
def test_dma_copy_into_and_out_of_packed_is_refused(packed, other):
    with apdsl.target("trn3"):
        q = ndarray((4, 8), packed, "sbuf")
        apdsl.memset(q, 0)
        o = ndarray((4, 8), other, "sbuf")
        apdsl.memset(o, 1)
        h = ndarray((4, 8), other, "hbm")
        assert _code(lambda: apdsl.dma_copy(q, o)) == "APK960"
        assert _code(lambda: apdsl.dma_copy(h, q)) == "APK960"
        assert _code(lambda: apdsl.tensor_copy(o, q)) == "APK960"
        assert _code(lambda: apdsl.tensor_copy(q, o)) == "APK960"


def test_between_two_packed_dtypes_is_refused():
    with apdsl.target("trn3"):
        a = ndarray((4, 8), "float8_e4m3fn_x4", "sbuf")
        apdsl.memset(a, 0)
        b = ndarray((4, 8), "float8_e5m2_x4", "sbuf")
        assert _code(lambda: apdsl.tensor_copy(b, a)) == "APK960"


@pytest.mark.parametrize("packed", PACKED)
def test_same_dtype_copies_move_the_bits(packed):
    with apdsl.target("trn3"):
        bits = np.random.default_rng(1).integers(0, 2 ** dtype(packed).bits, (4, 8),
                                                 dtype=np.uint64).astype(dtype(packed).np)
        h = from_numpy(bits.view(np.uint8).reshape(4, -1), "hbm").view(packed)
        s = ndarray((4, 8), packed, "sbuf")
        apdsl.dma_copy(s, h)
        t = ndarray((4, 8), packed, "sbuf")
        apdsl.tensor_copy(t, s)
        back = ndarray((4, 8), packed, "hbm")
        apdsl.dma_copy(back, t)
        assert np.array_equal(back.numpy().view(np.uint8), bits.view(np.uint8))


@pytest.mark.parametrize("packed", PACKED)
def test_memset_zero_is_all_bits_zero_and_others_refused(packed):
    with apdsl.target("trn3"):
        q = ndarray((4, 8), packed, "sbuf")
        apdsl.memset(q, 0)
        assert not q.numpy().view(np.uint8).any()
        assert _code(lambda: apdsl.memset(q, 1.0)) == "APK960"
        assert _code(lambda: apdsl.memset(q, -0.0)) == "APK960"
        assert _code(lambda: apdsl.memset(q, 3)) == "APK960"


@pytest.mark.parametrize("packed", PACKED)
def test_cast_array_refuses_numbers_and_passes_bits(packed):
    d = dtype(packed)
    assert _code(lambda: cast_array(np.ones(3, np.float32), d)) == "APK960"
    assert _code(lambda: cast_array(np.ones(3, np.int64), d)) == "APK960"
    assert _code(lambda: cast_array(7, d)) == "APK960"
    bits = np.array([1, 2, 0xFFFF], d.np)
    assert cast_array(bits, d) is bits


@pytest.mark.parametrize("packed", PACKED)
def test_compute_instructions_refuse_packed_operands(packed):
    with apdsl.target("trn3"):
        q = ndarray((4, 8), packed, "sbuf")
        apdsl.memset(q, 0)
        f = ndarray((4, 8), "float32", "sbuf")
        i = ndarray((4, 8), "int32", "sbuf")
        ps = ndarray((8, 8), "float32", "psum")
        assert _code(lambda: apdsl.tensor_tensor(f, q, q, apdsl.nki.language.add)) == "APK461"
        assert _code(lambda: apdsl.tensor_tensor(q, f, f, apdsl.nki.language.add)) in (
            "APK461", "APK404")
        assert _code(lambda: apdsl.iota(q, [[1, 8]])) == "APK960"
        assert _code(lambda: apdsl.nc_matmul(ps, q, q)) == "APK333"
        assert _code(lambda: apdsl.activation(f, apdsl.nki.language.exp, q)) == "APK461"
        del i


def test_python_kernel_refusal_is_located(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(
        "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
        "@nki.jit(platform_target='trn3')\ndef k(a):\n"
        "    q = nl.ndarray((128, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=q, src=a)\n"
        "    o = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    return o\n")
    np.save(tmp_path / "a.npy", np.ones((128, 4), np.float32))
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(src), "-i",
                        f"a={tmp_path / 'a.npy'}", "--target", "trn3"],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "APK960" in r.stderr and "k.py:7" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
