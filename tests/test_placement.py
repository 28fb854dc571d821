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


def test_a_placed_tensor_moves_the_automatic_one_it_lands_on():
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))
        b = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        # an automatic tensor keeps clear of a placed one
        assert (a.storage.address, b.storage.address) == (0, 256)
        assert isinstance(a.storage, PlacedStorage) and a.storage.partition == 0
        nisa.dma_copy(b, x)
        # c takes b's bytes: apdsl's own choice for b moves, b keeps its data
        c = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 256))
        assert not (c.storage.address < b.storage.address + 256 <= b.storage.address + 512
                    and b.storage.address < 512), b.storage.address
        assert b.storage.address >= 512 or b.storage.address + 256 <= 0
        nisa.memset(c, 2.0)
        nisa.tensor_tensor(a, b, c, op=nl.multiply)
        nisa.dma_copy(out, a)
        return out

    x = np.random.default_rng(5).standard_normal((128, 64), dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)


def test_a_hand_managed_stack_beside_automatic_tensors():
    """nki-library's pattern: a stack of placed tiles growing from byte 0 in a loop while an
    automatic tile (allocated when the stack was low) stays live across it."""
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 4 * 32), nl.float32, buffer=nl.shared_hbm)
        scale = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)  # automatic: byte 0
        nisa.memset(scale, 3.0)
        for i in range(4):
            t = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf, address=(0, i * 128))
            nisa.dma_copy(t, x[:, i * 32:(i + 1) * 32])
            nisa.tensor_tensor(t, t, scale, op=nl.multiply)
            # never on the bytes of a placed tile that is still live
            assert scale.storage.address >= (i + 1) * 128
            nisa.dma_copy(out[:, i * 32:(i + 1) * 32], t)
        return out

    x = np.random.default_rng(6).standard_normal((128, 128), dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * 3)


def test_psum_tiles_move_by_the_rules_of_their_own_places():
    """An automatic PSUM tile moved off a placed bank stays inside one bank; a larger one keeps
    its offset within a bank, so a matmul into its second bank still fits one bank."""
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((128, 1024), nl.float32, buffer=nl.shared_hbm)
        big = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)  # banks 0 and 1
        small = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)  # bank 2
        assert (big.storage.address, small.storage.address) == (0, 4096)
        at = nl.ndarray((128, 512), nl.float32, buffer=nl.psum, address=(0, 2048))
        hold = nl.ndarray((128, 512), nl.float32, buffer=nl.psum, address=(0, 4096))
        assert big.storage.address % 2048 == 0 and big.storage.address >= 6144
        s = small.storage.address
        assert s // 2048 == (s + 511) // 2048 and not 2048 <= s < 6144
        at_sb = nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf)
        b_sb = nl.ndarray((64, 1024), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(at_sb, a)
        nisa.dma_copy(b_sb, b)
        nisa.nc_matmul(big[:, 0:512], at_sb, b_sb[:, 0:512])
        nisa.nc_matmul(big[:, 512:1024], at_sb, b_sb[:, 512:1024])
        r = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(r, big)
        nisa.dma_copy(out, r)
        del at, hold
        return out

    rng = np.random.default_rng(7)
    a = rng.standard_normal((64, 128), dtype=np.float32)
    b = rng.standard_normal((64, 1024), dtype=np.float32)
    np.testing.assert_allclose(kernel(a, b), a.T @ b, rtol=1e-5, atol=1e-4)


def test_no_room_for_the_automatic_tensors_is_refused_with_the_shortfall():
    # trn2: 224 KiB a partition.  128 KiB without an address, then 128 KiB placed over it
    src = """\
kernel k():
    a = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((128, 32768), nl.float32, buffer=nl.sbuf, address=(0, 0))
"""
    with raises_code("APK165") as err:
        _run(src)
    assert err.value.span.line == 3
    assert "131072 bytes a partition and those without an address 131072 more, 32768 past " \
        "the 229376" in err.value.message
    # enough bytes in all, but the placed tensors cut them into runs too short
    frag = """\
kernel k():
    a = nl.ndarray((128, 25600), nl.float32, buffer=nl.sbuf)
    p = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf, address=(0, 65536))
    q = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf, address=(0, 163840))
"""
    with raises_code("APK165") as err:
        _run(frag)
    assert err.value.span.line == 4
    assert "free runs of at most 97280 bytes" in err.value.message
    assert "needs 102400" in err.value.message
    # ... and with room, all three live side by side
    _run(frag.replace("25600", "16384"))


def test_a_placed_tensor_on_other_partitions_leaves_an_automatic_one_in_place():
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel():
        a = nl.ndarray((64, 64), nl.float32, buffer=nl.sbuf)
        before = a.storage.address
        nl.ndarray((64, 64), nl.float32, buffer=nl.sbuf, address=(64, before))
        assert a.storage.address == before

    kernel()


def _fits(gaps: list[int], sizes: list[int]) -> bool:
    """Brute force: can items of `sizes` be packed into free runs of `gaps` bytes?"""
    import itertools
    for choice in itertools.product(range(len(gaps)), repeat=len(sizes)):
        used = [0] * len(gaps)
        for g, n in zip(choice, sizes):
            used[g] += n
        if all(u <= g for u, g in zip(used, gaps)):
            return True
    return not sizes


UNIT = 8192  # bytes a partition; trn2 SBUF is 28 units


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["auto", "placed", "free"]), st.integers(1, 9),
                          st.integers(0, 27), st.integers(0, 99)), min_size=1, max_size=12))
def test_mixed_placement_against_brute_force(steps):
    """Random allocations with and without an address and frees, on the storage layer: after
    every step no two live tensors share a byte of a partition, everything lies in the buffer,
    and a refusal (APK165) comes only when no packing of the tensors without an address
    around the placed ones exists (brute force)."""
    from apdsl.errors import ApdslError
    from apdsl.tensor.dtypes import dtype
    from apdsl.tensor.storage import Storage
    f32 = dtype("float32")
    cap = 28 * UNIT
    live: list[Storage] = []
    for kind, units, at, pick in steps:
        shape = (128, units * UNIT // 4)
        if kind == "free":
            if live:
                live.pop(pick % len(live)).free()
            continue
        if kind == "auto":
            try:
                live.append(Storage(shape, f32, "sbuf"))
            except ApdslError as e:
                assert e.code == "APK302"
            continue
        if at + units > 28:
            continue
        placed = [s for s in live if isinstance(s, PlacedStorage)]
        try:
            s = PlacedStorage(shape, f32, "sbuf", (0, at * UNIT))
        except ApdslError as e:
            assert e.code == "APK165"
            # the placed tensors that stay (those it overlaps would be taken) and this one
            keep = [(p.address // UNIT, p.nbytes // 128 // UNIT) for p in placed
                    if not (p.address // UNIT < at + units and at < (p.address + p.nbytes // 128) // UNIT)]
            busy = sorted(keep + [(at, units)])
            gaps, pos = [], 0
            for start, n in busy:
                gaps.append(max(0, start - pos))
                pos = max(pos, start + n)
            gaps.append(28 - pos)
            autos = [x.nbytes // 128 // UNIT for x in live if not isinstance(x, PlacedStorage)]
            assert not _fits(gaps, autos), (gaps, autos)
            continue
        live = [x for x in live if not x.freed] + [s]
        spans = sorted((x.address, x.address + x.nbytes // 128) for x in live)
        assert all(hi <= lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:])), spans
        assert spans[-1][1] <= cap
        assert s.address == at * UNIT
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
