"""`nl.ndarray(shape, dtype, buffer, name='', address=(partition_offset, free_offset))`: on-chip
tensors at an explicit partition and byte offset (the NKI reference and migration guide), with
the bounds and PSUM bank rule the docs state, refusals where they are silent, and a later
placement taking the bytes of an earlier tensor (which may then no longer be used)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.semantics.program import Program
from apdsl.tensor.placement import PlacedStorage


def _run(src: str, kernel: str = "k", inputs=None):
    return Program(src, "place.apk").run(kernel, inputs)


ROUND_TRIP = """\
kernel k(a: f32[128, 64] @ hbm, b: f32[64, 32] @ hbm) -> f32[128, 32] @ shared_hbm:
    out = nl.ndarray((128, 32), nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf, address=(0, 1024))
    nisa.dma_copy(x, a.rearrange("m k -> k m"))
    y = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf, address=(64, 1024))
    nisa.dma_copy(y, b)
    acc = nl.ndarray((128, 32), nl.float32, buffer=nl.psum, address=(0, 3 * 2048))
    nisa.nc_matmul(acc, x, y)
    r = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf, address=(0, 4096))
    nisa.tensor_copy(r, acc)
    nisa.dma_copy(out, r)
    return out
"""


def test_placed_tensors_compute_as_numpy():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64), dtype=np.float32)
    b = rng.standard_normal((64, 32), dtype=np.float32)
    # y sits on partitions 64-127 (its own lanes), beside x's bytes on partitions 0-63
    src = ROUND_TRIP.replace("y = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf, "
                             "address=(64, 1024))",
                             "y = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf, "
                             "address=(0, 2048))")
    r = _run(src, inputs={"a": a, "b": b})
    np.testing.assert_allclose(r.value.numpy(), a @ b, rtol=1e-5, atol=1e-4)


def test_partition_offset_is_physical_for_the_start_partition_rule():
    # on trn1 a 64-partition operand starts at partition 0 or 64 (architecture guide)
    src = """\
kernel k(a: f32[64, 8] @ hbm) -> f32[64, 8] @ shared_hbm:
    out = nl.ndarray((64, 8), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 8), nl.float32, buffer=nl.sbuf, address=(P, 0))
    nisa.dma_copy(t, a)
    u = nl.ndarray((64, 8), nl.float32, buffer=nl.sbuf, address=(0, 64))
    nisa.tensor_copy(u, t)
    nisa.dma_copy(out, u)
    return out
"""
    a = np.arange(512, dtype=np.float32).reshape(64, 8)
    with apdsl.target("trn1"):
        with raises_code("APK343") as err:
            _run(src.replace("(P, 0)", "(32, 0)"), inputs={"a": a})
        assert "starting at partition 32" in err.value.message
        np.testing.assert_array_equal(_run(src.replace("(P, 0)", "(64, 0)"),
                                           inputs={"a": a}).value.numpy(), a)
    # trn2's guide states no start-partition rule
    np.testing.assert_array_equal(_run(src.replace("(P, 0)", "(32, 0)"),
                                       inputs={"a": a}).value.numpy(), a)


BAD = [
    ("nl.sbuf, address=(0, 1026)", "APK164", "not a whole number of float32"),
    ("nl.psum, address=(0, 1024)", "APK164", "beginning of a bank"),
    ("nl.sbuf, address=(65, 0)", "APK163", "end at partition 192"),
    ("nl.sbuf, address=(0, 229124)", "APK163", "end at byte 229379"),  # trn2: 224 KiB
    ("nl.psum, address=(0, 16384)", "APK163", "a psum partition has 16384 bytes"),
    ("nl.sbuf, address=(0, -4)", "APK162", "non-negative ints"),
    ("nl.sbuf, address=(0,)", "APK162", "pair"),
    ("nl.sbuf, address=(0, 8.0)", "APK162", "pair"),
    ("nl.sbuf, address=[True, 0]", "APK162", "pair"),
    ("nl.shared_hbm, address=(0, 0)", "APK161", "shared_hbm has no (partition, free)"),
    ("nl.hbm, address=(0, 0)", "APK161", "has no (partition, free)"),
]


@pytest.mark.parametrize("args, code, text", BAD)
def test_address_refusals_point_at_the_address(args, code, text):
    src = f"kernel k():\n    t = nl.ndarray((128, 64), nl.float32, buffer={args})\n"
    with raises_code(code) as err:
        _run(src)
    assert text in err.value.message
    col = src.splitlines()[1].index("address=") + 1
    assert (err.value.span.line, err.value.span.column) == (2, col)
    # check mode finds the same, at the same place
    errors = Program(src, "place.apk").check()
    assert [(e.code, e.span.line, e.span.column) for e in errors] == [(code, 2, col)]


def test_a_later_placement_takes_the_bytes():
    src = """\
kernel k(x: f32[128, 64] @ hbm) -> f32[128, 64] @ shared_hbm:
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(a, x)
    b = nl.ndarray((ROWS, 64), nl.float32, buffer=nl.sbuf, address=(PART, 128))
    nisa.dma_copy(out, a)
    return out
"""
    x = np.ones((128, 64), np.float32)
    # b's bytes 128..383 of partitions 0.. overlap a's 0..255: a is gone
    with raises_code("APK166") as err:
        _run(src.replace("ROWS", "128").replace("PART", "0"), inputs={"x": x})
    assert err.value.span.line == 6
    assert "whose bytes b took: b was placed at address (0, 128) at line 5" in \
        err.value.message
    # the same bytes on other partitions (a: 0-127 is all of them; make a 64 rows) do not
    two = src.replace("(128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))",
                      "(64, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))") \
        .replace("nisa.dma_copy(a, x)", "nisa.dma_copy(a, x[0:64, :])") \
        .replace("nisa.dma_copy(out, a)", "nisa.dma_copy(out[0:64, :], a)\n"
                 "    nisa.dma_copy(out[64:128, :], x[64:128, :])")
    r = _run(two.replace("ROWS", "64").replace("PART", "64"), inputs={"x": x})
    np.testing.assert_array_equal(r.value.numpy(), x)
    # ... and a write through the superseded tensor is refused too
    with raises_code("APK166"):
        _run(src.replace("ROWS", "128").replace("PART", "0")
             .replace("nisa.dma_copy(out, a)", "nisa.dma_copy(a, x)"), inputs={"x": x})


def test_placement_in_a_loop_reuses_the_address():
    # each iteration's tiles are freed when it ends; the next ones take the same bytes
    src = """\
kernel k(a: f32[512, 64] @ hbm) -> f32[512, 64] @ shared_hbm:
    out = nl.ndarray((512, 64), nl.float32, buffer=nl.shared_hbm)
    for i in range(4):
        t = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))
        p = nl.ndarray((128, 64), nl.float32, buffer=nl.psum, address=(0, 2 * 2048))
        nisa.dma_copy(t, a[i * 128:(i + 1) * 128, :])
        nisa.tensor_copy(p, t)
        nisa.activation(t, op=nl.exp, data=p)
        nisa.dma_copy(out[i * 128:(i + 1) * 128, :], t)
    return out
"""
    a = np.random.default_rng(1).standard_normal((512, 64), dtype=np.float32)
    np.testing.assert_allclose(_run(src, inputs={"a": a}).value.numpy(), np.exp(a),
                               rtol=1e-6)


def test_automatic_and_explicit_placement():
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel():
        a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))
        b = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        assert (a.storage.address, b.storage.address) == (0, 256)
        assert isinstance(a.storage, PlacedStorage) and a.storage.partition == 0
        nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 256))

    # an automatic tensor keeps clear of a placed one; a placed one over it is refused
    with raises_code("APK165") as err:
        kernel()
    assert err.value.span.line == kernel.fn.__code__.co_firstlineno + 6


def test_nl_ndarray_takes_the_reference_parameters():
    src = """\
kernel k():
    t = nl.ndarray((4, 4), nl.float32, nl.sbuf, "named")
    assert t.name == "named"
    u = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 64))
    v = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 80))
    nisa.memset(u, 1.0)
    nisa.memset(v, 2.0)
    w = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 64))
    nisa.memset(u, 1.0)
"""
    # the bare ndarray takes address= too: u (bytes 64-79) and v (80-95) are apart, w takes u's
    with raises_code("APK166") as err:
        _run(src)
    assert err.value.span.line == 9 and "whose bytes w took" in err.value.message


def test_python_frontend_reallocates_at_the_same_address():
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for i in range(2):
            # the previous iteration's tiles are still referenced when these are placed
            t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
            p = nl.ndarray((128, 64), nl.float32, buffer=nl.psum, address=(0, 0))
            nisa.dma_copy(t, a[i * 128:(i + 1) * 128, :])
            nisa.tensor_copy(p, t)
            u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 256))
            nisa.tensor_copy(u, p)
            nisa.dma_copy(out[i * 128:(i + 1) * 128, :], u)
        return out

    a = np.random.default_rng(2).standard_normal((256, 64), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a)


@settings(max_examples=60, deadline=None)
@given(p0=st.integers(0, 130),
       f0=st.one_of(st.integers(0, 230_000), st.integers(0, 8).map(lambda k: k * 2048),
                    st.integers(0, 2000).map(lambda k: k * 4)),
       parts=st.integers(1, 128),
       cols=st.integers(1, 64), psum=st.booleans())
def test_placement_rules_against_the_formula(p0, f0, parts, cols, psum):
    """Placed, or refused with the code the rules give (trn2: 128 partitions, SBUF 224 KiB,
    PSUM 16 KiB a partition in 2 KiB banks); a placed tensor keeps what is written to it."""
    buf, cap = ("psum", 16 * 1024) if psum else ("sbuf", 224 * 1024)
    size = cols * 4
    if p0 + parts > 128 or f0 + size > cap:
        want = "APK163"
    elif (psum and f0 % 2048) or f0 % 4:
        want = "APK164"
    else:
        want = None
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(values):
        t = nl.ndarray((parts, cols), nl.float32, buffer=buf, address=(p0, f0))
        assert isinstance(t.storage, PlacedStorage)
        assert (t.storage.partition, t.storage.address) == (p0, f0)
        out = nl.ndarray((parts, cols), nl.float32, buffer=nl.shared_hbm)
        s = nl.ndarray((parts, cols), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(s, values)
        nisa.tensor_copy(t, s)
        nisa.tensor_copy(s, t)
        nisa.dma_copy(out, s)
        return out

    values = np.arange(parts * cols, dtype=np.float32).reshape(parts, cols)
    with apdsl.target("trn2"):
        if want:
            with raises_code(want):
                kernel(values)
            return
        np.testing.assert_array_equal(kernel(values), values)


def test_cli_address_error(tmp_path):
    f = tmp_path / "bad.apk"
    f.write_text("kernel k():\n    p = nl.ndarray((128, 128), nl.float32, buffer=nl.psum, "
                 "address=(0, 1024))\n")
    for cmd in ("run", "check"):
        r = subprocess.run([sys.executable, "-m", "apdsl", cmd, str(f)], capture_output=True,
                           text=True)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        col = f.read_text().splitlines()[1].index("address=") + 1
        assert f"{f}:2:{col}: error[APK164]" in r.stderr
        assert "multiple of the bank size, 2048 bytes" in r.stderr
