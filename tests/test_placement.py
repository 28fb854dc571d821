"""`nl.ndarray(shape, dtype, buffer, name='', address=(partition_offset, free_offset))`: on-chip
tensors at an explicit partition and byte offset (the NKI reference and migration guide), with
the bounds and PSUM bank rule the docs state, refusals where they are silent, and tensors placed
over the same bytes sharing them: a write through one is what the others hold there, checked
against a model of the physical bytes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, note, settings
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


def test_a_later_placement_shares_the_bytes():
    src = """\
kernel k(x: f32[128, 64] @ hbm, y: f32[128, 64] @ hbm) -> f32[128, 64] @ shared_hbm:
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(a, x)
    b = nl.ndarray((ROWS, 64), nl.float32, buffer=nl.sbuf, address=(PART, 128))
    nisa.dma_copy(b, y[0:ROWS, :])
    nisa.dma_copy(out, a)
    return out
"""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((2, 128, 64), dtype=np.float32)
    # b's bytes 128..383 of each partition are a's 128..255 (a's columns 32..63): what b
    # wrote there is what a holds, as on hardware
    want = x.copy()
    want[:, 32:] = y[:, :32]
    got = _run(src.replace("ROWS", "128").replace("PART", "0"), inputs={"x": x, "y": y})
    np.testing.assert_array_equal(got.value.numpy(), want)
    # check mode: a is written everywhere it is read
    assert Program(src.replace("ROWS", "128").replace("PART", "0"), "place.apk").check() == []
    # the same bytes on other partitions only: b on partitions 64..127 changes those rows
    want = x.copy()
    want[64:, 32:] = y[:64, :32]
    got = _run(src.replace("ROWS", "64").replace("PART", "64"), inputs={"x": x, "y": y})
    np.testing.assert_array_equal(got.value.numpy(), want)


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
    every step no tensor without an address shares a byte of a partition with another live
    tensor (placed ones share theirs with each other), everything lies in the buffer,
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
            # the placed tensors (those it overlaps share their bytes with it) and this one
            keep = [(p.address // UNIT, p.nbytes // 128 // UNIT) for p in placed]
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
        spans = [(x.address, x.address + x.nbytes // 128, isinstance(x, PlacedStorage))
                 for x in live]
        # placed tensors may share bytes (two names for them); a tensor without an address
        # shares a byte with no other live tensor
        assert not any(lo < hi2 and lo2 < hi for i, (lo, hi, placed_i) in enumerate(spans)
                       for j, (lo2, hi2, placed_j) in enumerate(spans)
                       if i != j and not (placed_i and placed_j)), spans
        assert max(hi for _, hi, _ in spans) <= cap
        assert s.address == at * UNIT


def test_nl_ndarray_takes_the_reference_parameters():
    src = """\
kernel k() -> f32[4, 4] @ shared_hbm:
    t = nl.ndarray((4, 4), nl.float32, nl.sbuf, "named")
    assert t.name == "named"
    u = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 64))
    v = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 80))
    nisa.memset(u, 1.0)
    nisa.memset(v, 2.0)
    w = ndarray((4, 4), nl.float32, nl.sbuf, address=(0, 64))
    nisa.memset(w, 3.0)
    out = nl.ndarray((4, 4), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, u)
    return out
"""
    # the bare ndarray takes address= too: u (bytes 64-79) and v (80-95) are apart, w is u's
    np.testing.assert_array_equal(_run(src).value.numpy(), np.full((4, 4), 3.0, np.float32))


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


DTYPES = {"float32": np.float32, "int8": np.int8, "bfloat16": None}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(DTYPES)), st.integers(0, 3),
                          st.integers(1, 4), st.integers(1, 12), st.integers(0, 48)),
                min_size=2, max_size=5),
       st.randoms(use_true_random=False), st.lists(st.integers(0, 4), max_size=3),
       st.booleans())
def test_tensors_placed_over_the_same_bytes_hold_what_hardware_holds(tensors, rnd, masked,
                                                                    ring):
    """Tensors placed at overlapping (partition, byte) addresses, all made first (`ring`: a
    ring of tiles) or each just before its write (placed over bytes already holding data),
    written whole in a random order, then some float32 ones again through a predicate
    (tensor_copy_predicated: only the chosen elements change), then each read back: every
    tensor holds what a model of the physical bytes holds there."""
    import ml_dtypes

    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl
    specs = []
    for name, p0, rows, cols, f in tensors:
        npd = np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(DTYPES[name])
        specs.append((name, npd, p0 * 16, rows * 8, cols, f * 8))  # f: aligned for every dtype
    order = list(range(len(specs)))
    rnd.shuffle(order)
    again = [m % len(specs) for m in masked if specs[m % len(specs)][0] == "float32"]
    rng = np.random.default_rng(len(specs))
    data = [rng.integers(-100, 100, (r, c)).astype(npd) for _, npd, _, r, c, _ in specs]
    redo = [rng.integers(-100, 100, specs[i][3:5]).astype(np.float32) for i in again]
    picks = [(rng.random(specs[i][3:5]) < 0.5).astype(np.uint8) for i in again]

    phys = np.zeros((128, 1024), np.uint8)

    def put(i, values, where=None):
        _, npd, p0, rows, cols, f0 = specs[i]
        w = npd.itemsize
        view = phys[p0:p0 + rows, f0:f0 + cols * w].view(npd)
        if where is None:
            view[...] = values
        else:
            view[where.astype(bool)] = values[where.astype(bool)]

    for i in order:
        put(i, data[i])
    for i, v, m in zip(again, redo, picks):
        put(i, v, m)
    # (the same values a tile's own write would leave prove nothing: pick a case where the
    # bytes a tile holds at the end were written through another)
    hidden = any(not np.array_equal(phys[p0:p0 + r, f0:f0 + c * npd.itemsize].view(npd),
                                    data[i]) for i, (_, npd, p0, r, c, f0) in enumerate(specs))
    want = [phys[p0:p0 + r, f0:f0 + c * npd.itemsize].view(npd).copy()
            for _, npd, p0, r, c, f0 in specs]

    @nki.jit
    def kernel(*arrays):
        n, k = len(specs), len(again)
        inputs, redo_in, picks_in = arrays[:n], arrays[n:n + k], arrays[n + k:]
        def make(i):
            name, _, p0, r, c, f0 = specs[i]
            return nl.ndarray((r, c), dtype=name, buffer=nl.sbuf, address=(p0, f0))
        tiles = [make(i) if ring else None for i in range(len(specs))]
        for i in order:
            if tiles[i] is None:
                tiles[i] = make(i)
            nisa.dma_copy(dst=tiles[i], src=inputs[i])
        for i, v, m in zip(again, redo_in, picks_in):
            src = nl.ndarray(v.shape, dtype=nl.float32, buffer=nl.sbuf)
            pred = nl.ndarray(m.shape, dtype=nl.uint8, buffer=nl.sbuf)
            nisa.dma_copy(dst=src, src=v)
            nisa.dma_copy(dst=pred, src=m)
            nisa.tensor_copy_predicated(dst=tiles[i], src=src, predicate=pred)
        outs = []
        for t, (name, _, _, r, c, _) in zip(tiles, specs):
            o = nl.ndarray((r, c), dtype=name, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=o, src=t)
            outs.append(o)
        return tuple(outs)

    got = kernel(*data, *redo, *picks)
    note(f"a tile's bytes came through another: {hidden}")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).view(np.uint8), w.view(np.uint8))


def test_a_predicated_write_through_one_name_changes_only_the_chosen_bytes_of_the_other():
    # b is placed over a after a was written, and never written whole: the elements the
    # predicate leaves alone are not b's to give (their bytes are a's data), so a keeps them
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(x, y, m):
        a = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf, address=(0, 512))
        nisa.dma_copy(dst=a, src=x)
        b = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf, address=(0, 512))
        src = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        pred = nl.ndarray((32, 16), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=y)
        nisa.dma_copy(dst=pred, src=m)
        nisa.tensor_copy_predicated(dst=b, src=src, predicate=pred)
        out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out

    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((2, 32, 16), dtype=np.float32)
    m = (rng.random((32, 16)) < 0.3).astype(np.uint8)
    np.testing.assert_array_equal(kernel(x, y, m), np.where(m.astype(bool), y, x))


def test_int4_elements_written_through_an_overlapping_tile_change_only_their_nibbles():
    # b's bytes 2.. are a's bytes 2..: b's columns 0..2 are a's columns 4..6, and column 2
    # of b is the low nibble of a byte whose high nibble (a's column 7) b does not write
    import ml_dtypes

    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(x, y):
        a = nl.ndarray((4, 8), dtype=nl.int4, buffer=nl.sbuf, address=(0, 0))
        nisa.dma_copy(dst=a, src=x)
        b = nl.ndarray((4, 8), dtype=nl.int4, buffer=nl.sbuf, address=(0, 2))
        nisa.dma_copy(dst=b[:, 0:3], src=y[:, 0:3])
        out = nl.ndarray((4, 8), dtype=nl.int4, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out

    x = np.arange(32, dtype=np.int8).reshape(4, 8) % 7
    y = -(np.arange(32, dtype=np.int8).reshape(4, 8) % 5) - 1
    want = x.copy()
    want[:, 4:7] = y[:, 0:3]
    got = kernel(x.astype(ml_dtypes.int4), y.astype(ml_dtypes.int4))
    np.testing.assert_array_equal(np.asarray(got).astype(np.int8), want)


@pytest.mark.parametrize("plans", [True, False])
def test_a_matmul_accumulating_in_place_reaches_the_psum_tile_placed_over_it(plans):
    # the second nc_matmul adds into acc's PSUM bytes (in place, on the fast path): alias,
    # placed at the same address, holds the sum too
    src = """\
kernel k(a: f32[128, 64] @ hbm, b: f32[128, 32] @ hbm) -> f32[64, 32] @ shared_hbm:
    out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
    x = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(x, a)
    y = nl.ndarray((128, 32), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(y, b)
    acc = nl.ndarray((64, 32), nl.float32, buffer=nl.psum, address=(0, 2048))
    alias = nl.ndarray((64, 32), nl.float32, buffer=nl.psum, address=(0, 2048))
    nisa.nc_matmul(acc, x, y)
    nisa.nc_matmul(acc, x, y)
    r = nl.ndarray((64, 32), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(r, alias)
    nisa.dma_copy(out, r)
    return out
"""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((128, 64), dtype=np.float32)
    b = rng.standard_normal((128, 32), dtype=np.float32)
    with apdsl.options(plans=plans):
        got = _run(src, inputs={"a": a, "b": b}).value.numpy()
    np.testing.assert_allclose(got, 2 * (a.T.astype(np.float64) @ b), rtol=1e-4, atol=1e-4)
