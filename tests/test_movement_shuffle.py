"""nc_stream_shuffle and local_gather against the NumPy golden models of the official NKI tests
(test_nki_isa_nc_stream_shuffle.py, test_nki_isa_local_gather.py), and their refusals."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.runtime.core.execute import resolve
from apdsl.runtime.instructions import dma_copy, local_gather, memset, nc_stream_shuffle
from apdsl.tensor import targets
from apdsl.tensor.view import from_numpy, ndarray

RNG = np.random.default_rng(17)


def sbuf(values: np.ndarray, buffer: str = "sbuf"):
    t = ndarray(values.shape, str(values.dtype) if values.dtype != np.float32 else "float32",
                "sbuf")
    dma_copy(t, from_numpy(values))
    if buffer == "psum":
        from apdsl.runtime.instructions import tensor_copy
        p = ndarray(values.shape, t.dtype.name, "psum")
        tensor_copy(p, t)
        return p
    return t


# -- nc_stream_shuffle ------------------------------------------------------------------------

def test_in_place_rotation_as_the_official_test():
    a = (RNG.random((32, 128)) * 100).astype(np.float32)
    t = sbuf(a)
    nc_stream_shuffle(src=t, dst=t, shuffle_mask=[(i - 1) % 32 for i in range(32)])
    want = a.copy()
    want[list(range(32))] = a[[(i - 1) % 32 for i in range(32)]]
    np.testing.assert_array_equal(t.numpy(), want)


def test_one_partition_broadcasts_to_a_quadrant():
    a = (RNG.random((1, 128)) * 100).astype(np.float32)
    b = ndarray((32, 128), "float32", "sbuf")
    nc_stream_shuffle(src=sbuf(a), dst=b, shuffle_mask=[0] * 32)
    np.testing.assert_array_equal(b.numpy(), np.repeat(a, 32, axis=0))


@given(mask=st.lists(st.one_of(st.integers(0, 31), st.just(255)), min_size=32, max_size=32),
       quadrants=st.integers(1, 4), dst_buf=st.sampled_from(["sbuf", "psum"]))
def test_each_quadrant_uses_the_same_mask(mask, quadrants, dst_buf):
    parts = 32 * quadrants
    a = RNG.integers(0, 1000, (parts, 4)).astype(np.float32)
    before = RNG.integers(0, 1000, (parts, 4)).astype(np.float32)
    b = sbuf(before, dst_buf)
    nc_stream_shuffle(b, sbuf(a), mask)
    want = before.copy()
    for j in range(quadrants):
        for i, m in enumerate(mask):
            if m != 255:
                want[j * 32 + i] = a[j * 32 + m]
    np.testing.assert_array_equal(b.numpy(), want)


def test_a_kept_partition_may_stay_unwritten():
    a = sbuf(np.ones((32, 2), np.float32))
    b = ndarray((32, 2), "float32", "sbuf")
    nc_stream_shuffle(b, a, [255] + list(range(1, 32)))
    np.testing.assert_array_equal(b[1:32].numpy(), np.ones((31, 2), np.float32))
    with raises_code("APK404"):
        b.numpy()


def test_only_the_partitions_the_mask_names_are_read():
    # the nki-library pattern: partitions 0 and 16 hold data, the others nothing; the mask
    # moves 16 to 0 and keeps the rest, in place: what lands on 0 is written, and the unwritten
    # partitions it never read (1..15, 17..31) leave the moved data clean
    a = RNG.integers(0, 1000, (32, 3)).astype(np.float32)
    t = ndarray((32, 3), "float32", "sbuf")
    dma_copy(t[0:1], from_numpy(a[0:1]))
    dma_copy(t[16:17], from_numpy(a[16:17]))
    nc_stream_shuffle(t, t, [16] + [255] * 31)
    np.testing.assert_array_equal(t[0:1].numpy(), a[16:17])
    np.testing.assert_array_equal(t[16:17].numpy(), a[16:17])


def test_a_partition_moved_from_unwritten_data_is_unwritten_row_for_row():
    # dst row i comes from src row mask[i]: rows taken from unwritten src rows are unwritten
    # (an error where they reach the host, naming the src row), the others are not
    a = RNG.integers(0, 1000, (32, 3)).astype(np.float32)
    src = ndarray((32, 3), "float32", "sbuf")
    dma_copy(src[0:8], from_numpy(a[0:8]))
    b = ndarray((32, 3), "float32", "sbuf")
    nc_stream_shuffle(b, src, [(i + 4) % 32 for i in range(32)])
    np.testing.assert_array_equal(b[0:4].numpy(), a[4:8])
    with raises_code("APK412") as e:
        b[4:5].numpy()
    assert "[8, 0] was never written when nc_stream_shuffle" in e.value.message


def test_stream_shuffle_refusals():
    a = sbuf(np.ones((64, 8), np.float32))
    with raises_code("APK399"):
        nc_stream_shuffle(ndarray((32, 8), "float32", "sbuf"), a[0:32], [0] * 31)
    with raises_code("APK399"):
        nc_stream_shuffle(ndarray((32, 8), "float32", "sbuf"), a[0:32], [32] + [0] * 31)
    with raises_code("APK399"):  # a one-partition source cannot feed the second quadrant
        nc_stream_shuffle(ndarray((64, 8), "float32", "sbuf"), a[0:1], [0] * 32)
    with raises_code("APK485"):
        nc_stream_shuffle(ndarray((64, 8), "float32", "sbuf")[16:48], a[0:32], list(range(32)))
    with raises_code("APK485"):  # 64 active partitions start at 0 or 64
        nc_stream_shuffle(ndarray((128, 8), "float32", "sbuf")[32:96], a, list(range(32)))
    with raises_code("APK486"):
        nc_stream_shuffle(ndarray((64, 4), "float32", "sbuf"), a, list(range(32)))
    with raises_code("APK393"):
        nc_stream_shuffle(ndarray((64, 8), "float16", "sbuf"), a, list(range(32)))
    with raises_code("APK309"):
        nc_stream_shuffle(ndarray((64, 8), "float32", "hbm"), a, list(range(32)))
    b = ndarray((128, 8), "float32", "sbuf")
    memset(b, 0.0)
    with targets.target("trn3"):  # the start rule is the docstring's, on every target
        with raises_code("APK485"):
            nc_stream_shuffle(b[32:96], b[32:96], list(range(32)))


# -- local_gather -----------------------------------------------------------------------------

def official_model(src: np.ndarray, index: np.ndarray, n: int, valid: int) -> np.ndarray:
    """The NumPy semantics of test_nki_isa_local_gather.py: `index` holds chunk numbers, the
    hardware is fed `index * n`, and each core takes chunks of its own partitions."""
    parts = src.shape[0]
    chunks = src.reshape(parts, -1, n)
    out = np.ndarray((parts, valid, n), src.dtype)
    for core in range(parts // 16):
        lo, hi = core * 16, (core + 1) * 16
        idx = index[lo:hi].flatten(order="F")[:valid]
        out[lo:hi] = np.take(chunks[lo:hi], idx, axis=1)
    return out


def test_local_gather_as_the_official_test():
    src = (RNG.random((128, 512, 4)) * 100).astype(np.float32)
    index = np.tile(RNG.integers(0, 512, (16, 4)).astype(np.uint16), (8, 1))
    out = ndarray((128, 4, 16, 4), "float32", "sbuf")
    local_gather(out, sbuf(src), sbuf(index * 4), num_elem_per_idx=4, num_valid_indices=64)
    want = official_model(src.reshape(128, -1), index, 4, 64).reshape(128, 4, 16, 4)
    np.testing.assert_array_equal(out.numpy(), want)


@given(cores=st.integers(1, 8), n=st.sampled_from([1, 2, 4, 8, 16, 32]),
       cols=st.integers(1, 4), chunks=st.integers(1, 16), data=st.data())
def test_local_gather_property(cores, n, cols, chunks, data):
    parts = 16 * cores
    valid = data.draw(st.integers(1, 16 * cols))
    src = RNG.integers(-500, 500, (parts, chunks * n)).astype(np.int16)
    index = RNG.integers(0, chunks, (parts, cols)).astype(np.uint16)
    out = ndarray((parts, valid * n), "int16", "sbuf")
    local_gather(out, sbuf(src), sbuf(index * n), num_elem_per_idx=n, num_valid_indices=valid)
    np.testing.assert_array_equal(out.numpy(),
                                  official_model(src, index, n, valid).reshape(parts, -1))


def test_local_gather_default_uses_every_index():
    src = RNG.integers(0, 100, (16, 8)).astype(np.float32)
    index = RNG.integers(0, 8, (16, 2)).astype(np.uint16)
    out = ndarray((16, 32), "float32", "sbuf")
    local_gather(out, sbuf(src), sbuf(index))
    np.testing.assert_array_equal(out.numpy(), official_model(src, index, 1, 32).reshape(16, 32))


def unwritten(t) -> np.ndarray:
    """The runtime's unwritten elements of view `t` (logical shape)."""
    ok = resolve(t, "test", "view").written()
    return np.zeros(t.shape, bool) if ok is True else ~np.asarray(ok)


@settings(max_examples=30, deadline=None)
@given(cores=st.integers(1, 4), n=st.sampled_from([1, 2, 4]), data=st.data())
def test_local_gather_moves_unwritten_lanes_element_for_element(cores, n, data):
    # only a box of the source is written: each output element is unwritten exactly when the
    # source element the official model takes it from is (a partition reads only its own)
    parts, chunks = 16 * cores, 4
    rows, cols = data.draw(st.integers(0, parts)), data.draw(st.integers(0, chunks))
    valid = data.draw(st.integers(1, 32))
    src = RNG.integers(-500, 500, (parts, chunks * n)).astype(np.int16)
    index = RNG.integers(0, chunks, (parts, 2)).astype(np.uint16)
    t = ndarray(src.shape, "int16", "sbuf")
    if rows and cols:
        dma_copy(t[0:rows, 0:cols * n], from_numpy(src[0:rows, 0:cols * n]))
    out = ndarray((parts, valid * n), "int16", "sbuf")
    local_gather(out, t, sbuf(index * n), num_elem_per_idx=n, num_valid_indices=valid)
    mask = np.ones(src.shape, bool)
    mask[0:rows, 0:cols * n] = False
    want = official_model(mask, index, n, valid).reshape(parts, -1)
    np.testing.assert_array_equal(unwritten(out), want)
    got = np.array([[out[p:p + 1, k:k + 1].numpy()[0, 0] if not want[p, k] else 0
                     for k in range(valid * n)] for p in range(parts)])
    np.testing.assert_array_equal(got, np.where(want, 0, official_model(
        src, index, n, valid).reshape(parts, -1)))


@nki.jit
def gather_affinities(affinities, expert_idx, stored):
    """nki-library's selective MoE shape: the [T, E] affinities fill the first T partitions of
    a 128-partition tile, each GpSimd core gathers with its indices, and only the `stored`
    first partitions of the result are stored."""
    tokens, experts = affinities.shape
    aff = nl.ndarray((128, experts), dtype=affinities.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=aff[0:tokens, 0:experts], src=affinities)  # partitions T.. never written
    idx = nl.ndarray((128, 16), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=expert_idx)
    got = nl.ndarray((128, 16, 16), dtype=affinities.dtype, buffer=nl.sbuf)
    nisa.memset(dst=got, value=0.0)
    nisa.local_gather(dst=got.ap([[256, 128], [1, 256]]), src_buffer=aff, index=idx,
                      num_elem_per_idx=1, num_valid_indices=256)
    out = nl.ndarray((stored, 256), dtype=affinities.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=got.ap([[256, stored], [1, 256]]))
    return out


def test_the_selective_moe_gather_of_loaded_tokens_runs_and_matches_numpy():
    tokens, experts = 5, 8
    aff = RNG.random((tokens, experts)).astype(np.float32)
    idx = RNG.integers(0, experts, (128, 16)).astype(np.uint16)
    full = np.zeros((128, experts), np.float32)
    full[:tokens] = aff
    want = official_model(full, idx, 1, 256).reshape(128, 256)[:tokens]
    np.testing.assert_array_equal(nki.simulate(gather_affinities)(aff, idx, tokens), want)
    with raises_code("APK412") as e:  # partition 5 gathers from its own unloaded lanes
        nki.simulate(gather_affinities)(aff, idx, tokens + 1)
    assert "[5, " in e.value.message and "never written when local_gather" in e.value.message


def test_local_gather_refusals():
    s = sbuf(np.ones((32, 64), np.float32))
    i = sbuf(np.zeros((32, 1), np.uint16))
    with raises_code("APK487"):
        local_gather(ndarray((8, 16), "float32", "sbuf"), s[0:8], i[0:8])
    with raises_code("APK487"):  # partitions differ
        local_gather(ndarray((32, 16), "float32", "sbuf"), s, i[0:16])
    with raises_code("APK487"):  # a core's 16 partitions cannot be split
        big = sbuf(np.ones((48, 64), np.float32))
        bi = sbuf(np.zeros((48, 1), np.uint16))
        local_gather(ndarray((16, 16), "float32", "sbuf"), big[8:24], bi[8:24])
    with raises_code("APK489"):
        local_gather(ndarray((32, 48), "float32", "sbuf"), s, i, num_elem_per_idx=3)
    with raises_code("APK489"):
        local_gather(ndarray((32, 17), "float32", "sbuf"), s, i, num_valid_indices=17)
    with raises_code("APK490"):
        local_gather(ndarray((32, 15), "float32", "sbuf"), s, i)
    with raises_code("APK461"):
        local_gather(ndarray((32, 16), "float32", "sbuf"), s,
                     sbuf(np.zeros((32, 1), np.int32)))
    with raises_code("APK393"):
        local_gather(ndarray((32, 16), "float16", "sbuf"), s, i)
    with raises_code("APK390"):  # GpSimd cannot access PSUM
        local_gather(ndarray((32, 16), "float32", "psum"), s, i)
    bad = sbuf(np.full((32, 1), 63, np.uint16))
    with raises_code("APK491"):  # 63 + 2 elements pass the partition's 64
        local_gather(ndarray((32, 32), "float32", "sbuf"), s, bad, num_elem_per_idx=2)
    with raises_code("APK491"):  # not a whole chunk
        local_gather(ndarray((32, 64), "float32", "sbuf"), s,
                     sbuf(np.full((32, 1), 2, np.uint16)), num_elem_per_idx=4)


def test_an_apk_mask_may_be_a_range(tmp_path):
    from apdsl.semantics.program import Program
    path = tmp_path / "s.apk"
    path.write_text("a: f32[32, 4] @ sbuf = 1.0\nb: f32[32, 4] @ sbuf\n"
                    "nc_stream_shuffle(b, a, range(32))\nassert equal(host(b), host(a))\n")
    program = Program.from_path(str(path))
    assert program.check() == []
    program.run(None)
