"""Written state is kept per byte (per nibble for int4): an element is written only when all of
its bytes are (SPEC section 4, Memory)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core.options import options


def f32_tile(buffer: str = "sbuf") -> apdsl.Tensor:
    return apdsl.ndarray((4, 8), "float32", buffer)


def test_one_byte_of_each_float32_through_uint8_is_not_a_write():
    t = f32_tile()
    src = apdsl.from_numpy(np.full((4, 8), 7, np.uint8), "sbuf")
    apdsl.dma_copy(t.view("uint8").ap([[32, 4], [4, 8]]), src)  # byte 0 of every element
    with raises_code("APK404") as err:
        t.numpy()
    assert "when only 1 of its 4 bytes was written" in err.value.message
    assert err.value.facts["coord"] == (0, 0)


def test_bfloat16_half_through_ap_dtype_is_not_a_write():
    t = f32_tile("hbm")
    half = apdsl.from_numpy(np.ones((4, 8), np.float32), "hbm", dtype="bfloat16")
    apdsl.dma_copy(t.ap([[16, 4], [2, 8]], dtype="bfloat16"), half)  # low halves only
    with raises_code("APK404") as err:
        t.numpy()
    assert "2 of its 4 bytes were written" in err.value.message
    out = apdsl.ndarray((4, 8), "float32", "hbm")
    with raises_code("APK404"):  # an instruction reading it fails the same way
        apdsl.dma_copy(out, t)
    # the other halves complete every element: the float32 is then the two halves' bits
    apdsl.dma_copy(t.ap([[16, 4], [2, 8]], offset=1, dtype="bfloat16"), half)
    bits = np.asarray(half.numpy()).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(t.numpy().view(np.uint32), bits | (bits << 16))


def test_bfloat16_half_through_view_is_not_a_write():
    t = f32_tile()
    half = apdsl.from_numpy(np.full((4, 8), 2.0, np.float32), "sbuf", dtype="bfloat16")
    # view(bfloat16) is (4, 16); the odd columns are the high halves
    apdsl.tensor_copy(t.view("bfloat16").ap([[16, 4], [2, 8]], offset=1), half)
    with raises_code("APK404"):
        t.numpy()
    # reading just what was written is fine
    np.testing.assert_array_equal(
        t.view("bfloat16").ap([[16, 4], [2, 8]], offset=1).numpy().astype(np.float32), 2.0)


def test_the_error_names_the_first_partly_written_element_and_the_allocation(tmp_path):
    path = tmp_path / "partial.apk"
    path.write_text(
        "t: f32[4, 8] @ sbuf\n"
        "src: u8[4, 32] @ sbuf = 7\n"
        "dma_copy(t.view(u8), src)\n"  # every byte: written
        "u: f32[4, 8] @ sbuf\n"
        "dma_copy(u.view(u8)[0:3], src[0:3])\n"
        "dma_copy(u.view(u8)[3:4, 0:31], src[3:4, 0:31])\n"
        "o: f32[4, 8] @ sbuf\n"
        "tensor_copy(o, t)\n"
        "tensor_copy(o, u)\n")
    from apdsl.semantics.program import Program
    with apdsl.options(init_check="strict"), raises_code("APK404") as err:
        Program.from_path(str(path)).run()
    e = err.value
    assert e.facts["tensor"] == "u"
    assert e.facts["coord"] == (3, 7)  # the last byte of row 3's last element is missing
    assert "3 of its 4 bytes were written" in e.message
    assert e.span.line == 9
    assert [(lab.span.line, lab.message) for lab in e.labels] == [(4, "allocated here")]
    with options(init_check=False):  # with the check off it runs to the end
        Program.from_path(str(path)).run()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=32, max_size=32),
       st.sampled_from(["uint8", "int8"]))
def test_an_element_is_written_exactly_when_all_its_bytes_are(written, dtype):
    """Write an arbitrary subset of the 32 bytes of a float32[8] through a byte view, one
    instruction per byte; every element read alone is readable iff its 4 bytes are."""
    data = np.arange(1, 33, dtype=np.uint8)
    t = apdsl.ndarray((1, 8), "float32", "sbuf")
    src = apdsl.from_numpy(data.reshape(1, 32).view(np.dtype(dtype)), "sbuf")
    b = t.view(dtype)
    for i, w in enumerate(written):
        if w:
            apdsl.tensor_copy(b[:, i:i + 1], src[:, i:i + 1])
    full = np.array(written).reshape(8, 4).all(axis=1)
    for j in range(8):
        if full[j]:
            expect = data[4 * j:4 * j + 4].view(np.float32)[0]
            assert t[:, j:j + 1].numpy().reshape(()) == expect
        else:
            with raises_code("APK404"):
                t[:, j:j + 1].numpy()
    if full.all():
        np.testing.assert_array_equal(t.numpy().reshape(-1), data.view(np.float32))
        assert t.storage.all_written  # collapsed to the flag
    else:
        with raises_code("APK404"):
            t.numpy()


def test_int4_nibbles_are_tracked_one_by_one():
    """The int4 rule: written state is per nibble, so one nibble written leaves its byte
    unwritten as a byte (uint8 read: error) while that nibble itself reads back, and the
    other nibble of the byte stays unwritten."""
    t = apdsl.ndarray((2, 8), "uint8", "sbuf")
    v = t.view("int4")  # (2, 16): low nibble first
    lows = np.arange(16, dtype=np.int8).reshape(2, 8) % 7 - 3
    src = apdsl.from_numpy(lows, "sbuf", dtype="int4")
    apdsl.tensor_copy(v.ap([[16, 2], [2, 8]]), src)  # the low nibbles
    np.testing.assert_array_equal(v.ap([[16, 2], [2, 8]]).numpy(), lows)
    with raises_code("APK404") as err:
        t.numpy()
    assert "1 of its 2 nibbles was written" in err.value.message
    with raises_code("APK404") as err:
        v.numpy()
    assert err.value.facts["coord"] == (0, 1)  # the first high nibble
    highs = (lows + 5) % 8
    apdsl.tensor_copy(v.ap([[16, 2], [2, 8]], offset=1), apdsl.from_numpy(highs, "sbuf",
                                                                        dtype="int4"))
    expect = (lows.astype(np.uint8) & 0x0F) | (highs.astype(np.uint8) << 4)
    np.testing.assert_array_equal(t.numpy(), expect)


def test_int4_storage_counts_nibbles():
    t = apdsl.ndarray((1, 8), "int4", "sbuf")
    apdsl.memset(t[:, 0:3], 5)
    np.testing.assert_array_equal(t[:, 0:3].numpy(), 5)
    with raises_code("APK404") as err:
        t.numpy()
    assert err.value.facts["coord"] == (0, 3)
    with raises_code("APK404"):  # the byte holding nibbles 2 and 3 is half written
        t.view("uint8").numpy()


def test_whole_writes_still_collapse_to_a_flag():
    t = f32_tile()
    apdsl.memset(t.view("uint8"), 1)
    assert t.storage.all_written and t.storage._mask is None
    u = f32_tile()
    apdsl.memset(u[0:2], 1.0)
    apdsl.memset(u[2:4], 2.0)
    assert u.storage.all_written and u.storage._mask is None
    assert u.storage.unit_bits == 32  # no narrower write: the record stayed per element


@pytest.mark.parametrize("view", ["uint8", "bfloat16"])
def test_reading_through_a_narrow_view_of_float32_data(view):
    """Reading is exact without any refinement: a byte of a written float32 is written."""
    t = f32_tile()
    apdsl.memset(t[0:2], 1.5)
    narrow = t.view(view)
    expect = np.full((2, 8), 1.5, np.float32).view(narrow.dtype.np)
    np.testing.assert_array_equal(narrow[0:2].numpy(), expect)
    with raises_code("APK404"):
        narrow[2:3].numpy()


# -- a model of the bytes, against any sequence of writes through views of any width ----------

WIDTHS = {"int4": 4, "uint8": 8, "bfloat16": 16, "float32": 32}


def _model_values(raw: np.ndarray, dtype: str, start: int, n: int) -> np.ndarray:
    if dtype == "int4":
        nib = np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1).astype(np.int8)
        return np.where(nib > 7, nib - 16, nib)[start:start + n]
    np_dtype = apdsl.bfloat16.np if dtype == "bfloat16" else np.dtype(dtype)
    return raw.view(np_dtype)[start:start + n]


ops = st.tuples(st.sampled_from(sorted(WIDTHS)), st.integers(0, 127), st.integers(1, 128),
                st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(ops, min_size=1, max_size=6), st.sampled_from(sorted(WIDTHS)),
       st.integers(0, 127), st.integers(1, 128))
def test_mixed_width_writes_against_a_nibble_model(writes, rdtype, rstart, rcount):
    """64 bytes of float32 storage written through int4, uint8, bfloat16 and float32 views in
    any order and alignment: an element reads back exactly when every nibble under it was
    written, and then has the bytes the model says."""
    t = apdsl.ndarray((1, 16), "float32", "sbuf")
    raw = np.zeros(64, np.uint8)
    written = np.zeros(128, bool)  # per nibble
    for dtype, start, count, seed in writes:
        bits = WIDTHS[dtype]
        total = 512 // bits
        start %= total
        count = min(count, total - start)
        rng = np.random.default_rng(seed)
        if dtype == "int4":
            values = rng.integers(-8, 8, count).astype(np.int8)
        else:
            values = rng.integers(0, 256, count * bits // 8).astype(np.uint8).view(
                apdsl.bfloat16.np if dtype == "bfloat16" else np.dtype(dtype))
            if dtype != "uint8":
                values = np.where(np.isfinite(values.astype(np.float32)), values,
                                  values.dtype.type(1))  # finite: compare by value below
        src = apdsl.from_numpy(values.reshape(1, count), "sbuf", dtype=dtype)
        view = t.view(dtype) if dtype != "float32" else t
        apdsl.tensor_copy(view[:, start:start + count], src)
        # the model
        lo, hi = start * bits // 4, (start + count) * bits // 4
        written[lo:hi] = True
        if dtype == "int4":
            nib = np.stack([raw & 0x0F, raw >> 4], axis=1).reshape(-1)
            nib[lo:hi] = values.astype(np.uint8) & 0x0F
            raw = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
        else:
            raw[lo // 2:hi // 2] = np.ascontiguousarray(values).view(np.uint8)
    bits = WIDTHS[rdtype]
    total = 512 // bits
    rstart %= total
    rcount = min(rcount, total - rstart)
    view = (t.view(rdtype) if rdtype != "float32" else t)[:, rstart:rstart + rcount]
    lo, hi = rstart * bits // 4, (rstart + rcount) * bits // 4
    if written[lo:hi].all():
        got = view.numpy().reshape(-1)
        want = _model_values(raw, rdtype, rstart, rcount)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8) if rdtype != "int4"
                                      else got, np.asarray(want).view(np.uint8)
                                      if rdtype != "int4" else want)
    else:
        with raises_code("APK404") as err:
            view.numpy()
        first = int(np.argmin(written[lo:hi].reshape(rcount, -1).all(axis=1)))
        assert err.value.facts["coord"] == (0, first)


HALVES = """\
kernel k(h: bf16[4, 8] @ hbm) -> f32[4, 8] @ hbm:
    r: f32[4, 8] @ hbm
    dma_copy(r.ap([[16, 4], [2, 8]], dtype=bf16), h)
{second}    return r
"""


def test_cli_half_written_result_is_refused_and_whole_one_written(tmp_path):
    import os
    import subprocess
    import sys

    def run(source: str) -> subprocess.CompletedProcess:
        (tmp_path / "h.apk").write_text(source)
        return subprocess.run([sys.executable, "-m", "apdsl", "run", "h.apk", "-i", "h=h.npy",
                               "-o", "out.npy"], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    h = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    np.save(tmp_path / "h.npy", h)
    r = run(HALVES.format(second=""))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "h.apk:4:5: error[APK180]: the kernel's result `r` is only partly written" \
        in r.stderr  # at the return, each element half written
    assert "32 of its 32 elements were never written, the first at r[0, 0]" in r.stderr
    assert "only when all its bytes are" in r.stderr
    assert "2 |     r: f32[4, 8] @ hbm" in r.stderr and "allocated here" in r.stderr
    assert not (tmp_path / "out.npy").exists()
    r = run(HALVES.format(second="    dma_copy(r.ap([[16, 4], [2, 8]], offset=1, dtype=bf16), "
                                 "h)\n"))
    assert r.returncode == 0, r.stderr
    bits = h.astype(apdsl.bfloat16.np).view(np.uint16).astype(np.uint32)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy").view(np.uint32),
                                  bits | (bits << 16))


def test_moving_stored_bytes_keeps_partial_state_byte_for_byte():
    """A move of stored bytes with their written state (LoadData, SPEC section 4) keeps a
    half-written float32 half written: writing the other half at the destination completes
    it, and the untouched elements stay unwritten."""
    from apdsl.runtime.core import execute as ex
    src = apdsl.ndarray((1, 8), "float32", "sbuf")
    lo = apdsl.from_numpy(np.full((1, 8), 3.0, np.float32), "sbuf", dtype="bfloat16")
    apdsl.tensor_copy(src.view("bfloat16").ap([[16, 1], [2, 8]]), lo)  # low halves
    apdsl.memset(src[:, 0:2], 1.0)  # elements 0 and 1 whole
    dst = apdsl.ndarray((1, 8), "float32", "sbuf")
    d, s = ex.resolve(dst, "move", "dst"), ex.resolve(src, "move", "src")
    d.write(s.read())  # the raw bytes (no init check), as LoadData moves them
    ex.copy_written(d, s)
    np.testing.assert_array_equal(dst[:, 0:2].numpy(), 1.0)
    with raises_code("APK404") as err:
        dst.numpy()
    assert err.value.facts["coord"] == (0, 2) and "2 of its 4 bytes" in err.value.message
    hi = apdsl.from_numpy(np.full((1, 6), 3.0, np.float32), "sbuf", dtype="bfloat16")
    apdsl.tensor_copy(dst.view("bfloat16").ap([[16, 1], [2, 6]], offset=5), hi)
    expect = np.uint32(np.float32(3.0).astype(apdsl.bfloat16.np).view(np.uint16)) * 0x10001
    np.testing.assert_array_equal(dst[:, 2:8].numpy().view(np.uint32), expect)
    assert dst.storage.all_written
