"""pyasc LocalTensors over some of the same bytes (`asc.LocalTensor(dtype, pos, addr, n)` at
overlapping addresses, of any dtypes) share those bytes, as on hardware: checked against a model
of the physical UB bytes; the race checker sees the bytes as one, so a write through one
LocalTensor and a read through another still race without an event between them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import apdsl
import apdsl.asc as asc

BLOCK = 32  # bytes: data_copy moves whole 32-byte blocks, LocalTensors start on one
UB_BLOCKS = 24  # the part of UB the model uses
DTYPES = {"float32": asc.float32, "float16": asc.float16, "int32": asc.int32,
          "int16": asc.int16, "int8": asc.int8, "uint8": asc.uint8}
SRC = 4 * UB_BLOCKS * BLOCK  # elements of each dtype's GM source (more than any copy needs)


def _sources(seed: int) -> dict[str, np.ndarray]:
    """GM inputs of each dtype (finite floats: their bytes are moved as they are)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in DTYPES:
        dt = np.dtype(name)
        if dt.kind == "f":
            out[name] = rng.standard_normal(SRC).astype(dt)
        else:
            info = np.iinfo(dt)
            out[name] = rng.integers(info.min, info.max, SRC, endpoint=True).astype(dt)
    return out


tensors = st.tuples(st.sampled_from(sorted(DTYPES)), st.integers(0, UB_BLOCKS - 1),
                    st.integers(1, 8))
# (tensor, first block in the tensor, blocks, where in the GM source, made just before)
writes = st.tuples(st.integers(0, 5), st.integers(0, 7), st.integers(1, 8), st.integers(0, 40))


@settings(max_examples=40, deadline=None)
@given(st.lists(tensors, min_size=2, max_size=5), st.lists(writes, min_size=1, max_size=8),
       st.lists(st.booleans(), min_size=5, max_size=5), st.integers(0, 2**16))
def test_overlapping_local_tensors_of_any_dtypes_share_their_bytes(made, plan, early, seed):
    made = [(d, a, min(n, UB_BLOCKS - a)) for d, a, n in made]
    plan = [(i % len(made), b, n, at) for i, b, n, at in plan]
    plan = [(i, b % made[i][2], min(n, made[i][2] - b % made[i][2]), at) for i, b, n, at in plan]
    note(f"tensors {made}; writes {plan}; made at the start {early}")
    src = _sources(seed)
    memory = np.zeros(UB_BLOCKS * BLOCK, np.uint8)  # the model: physical UB bytes
    written = np.zeros(UB_BLOCKS * BLOCK, bool)
    for i, b, n, at in plan:
        name, addr, _ = made[i]
        lo = (addr + b) * BLOCK
        width = np.dtype(name).itemsize
        memory[lo:lo + n * BLOCK] = src[name][at:at + n * BLOCK // width].view(np.uint8)
        written[lo:lo + n * BLOCK] = True
    # read back every run of whole written blocks of every tensor, each into its own GM place
    reads, cursor = [], dict.fromkeys(DTYPES, 0)
    for i, (name, addr, n) in enumerate(made):
        ok = written.reshape(UB_BLOCKS, BLOCK).all(axis=1)[addr:addr + n]
        b = 0
        while b < n:
            if not ok[b]:
                b += 1
                continue
            e = b
            while e < n and ok[e]:
                e += 1
            per = BLOCK // np.dtype(name).itemsize
            reads.append((i, b, e - b, cursor[name]))
            cursor[name] += (e - b) * per
            b = e
    outs = {name: np.zeros(max(cursor[name], 1), name) for name in DTYPES}

    @asc.jit
    def k(f32: asc.GlobalAddress, f16: asc.GlobalAddress, i32: asc.GlobalAddress,
          i16: asc.GlobalAddress, i8: asc.GlobalAddress, u8: asc.GlobalAddress,
          o_f32: asc.GlobalAddress, o_f16: asc.GlobalAddress, o_i32: asc.GlobalAddress,
          o_i16: asc.GlobalAddress, o_i8: asc.GlobalAddress, o_u8: asc.GlobalAddress):
        ins = dict(zip(["float32", "float16", "int32", "int16", "int8", "uint8"],
                       [f32, f16, i32, i16, i8, u8]))
        outs_ = dict(zip(["float32", "float16", "int32", "int16", "int8", "uint8"],
                         [o_f32, o_f16, o_i32, o_i16, o_i8, o_u8]))
        local = {}

        def tensor(i):
            if i not in local:
                name, addr, n = made[i]
                per = BLOCK // np.dtype(name).itemsize
                local[i] = asc.LocalTensor(DTYPES[name], asc.TPosition.VECCALC, addr * BLOCK,
                                           n * per)
            return local[i]

        for i in range(len(made)):
            if early[i]:
                tensor(i)
        for i, b, n, at in plan:
            name = made[i][0]
            per = BLOCK // np.dtype(name).itemsize
            g = asc.GlobalTensor()
            g.set_global_buffer(ins[name] + at, n * per)
            asc.data_copy(tensor(i)[b * per:], g, n * per)
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        for i, b, n, at in reads:
            name = made[i][0]
            per = BLOCK // np.dtype(name).itemsize
            g = asc.GlobalTensor()
            g.set_global_buffer(outs_[name] + at, n * per)
            asc.data_copy(g, tensor(i)[b * per:], n * per)
            asc.pipe_barrier(asc.PipeID.PIPE_ALL)

    k[1, None](*(src[n] for n in DTYPES), *(outs[n] for n in DTYPES))
    for i, b, n, at in reads:
        name, addr, _ = made[i]
        per = BLOCK // np.dtype(name).itemsize
        lo = (addr + b) * BLOCK
        got = outs[name][at:at + n * per].view(np.uint8)
        assert (got == memory[lo:lo + n * BLOCK]).all(), (i, b, n)


def _kernel(sync: bool, vector: bool = False):
    """x (float32) into UB through `a`, then out through `b`, an int16 LocalTensor over a's
    second half: by MTE2 and MTE3 (`sync`: with the event between them), or with a vector step
    on a's second half in between (`sync`: with the event from V to MTE3)."""
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress):
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x, 64)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 64)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 64)
        b = asc.LocalTensor(asc.int16, asc.TPosition.VECOUT, 128, 64)  # a[32:64]'s bytes
        asc.data_copy(a, xg, 64)
        if vector or sync:
            asc.set_flag(asc.HardEvent.MTE2_MTE3, 0)
        if vector:
            asc.set_flag(asc.HardEvent.MTE2_V, 0)
            asc.wait_flag(asc.HardEvent.MTE2_V, 0)
            asc.adds(a[32:], a[32:], 1.0, 32)  # written by V, read by MTE3 through b
            if sync:
                asc.set_flag(asc.HardEvent.V_MTE3, 0)
                asc.wait_flag(asc.HardEvent.V_MTE3, 0)
        if vector or sync:
            asc.wait_flag(asc.HardEvent.MTE2_MTE3, 0)
        asc.data_copy(zg, b, 64)
    return k


@pytest.mark.parametrize("vector", [False, True])
def test_a_write_through_one_local_tensor_is_read_through_another(vector):
    x = np.arange(64, dtype=np.float32)
    z = np.zeros(64, np.int16)
    _kernel(sync=True, vector=vector)[1, None](x, z)
    want = x[32:] + (1 if vector else 0)
    assert (z == want.view(np.int16)).all()


@pytest.mark.parametrize("vector", [False, True])
def test_a_race_through_two_local_tensors_over_the_same_bytes_is_reported(vector):
    k = _kernel(sync=False, vector=vector)
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.arange(64, dtype=np.float32), np.zeros(64, np.int16))
    err = e.value
    pipe = "V" if vector else "MTE2"
    assert err.code == "APK570"
    assert "on pipe MTE3 reads b @ ub bytes 0-127" in err.message
    assert f"on pipe {pipe} may still write them through a" in err.message
    first = k.fn.__code__.co_firstlineno
    assert err.span.line == first + 20  # the read through b
    assert err.labels[0].span.line == first + (14 if vector else 8)  # the write through a
    assert any("placed over some of the same bytes" in n for n in err.notes)
    assert f"{pipe}_MTE3" in err.help


def test_local_tensors_over_other_bytes_do_not_race():
    # b starts where a ends: MTE3 reading b needs no event after MTE2 wrote a
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress):
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x, 64)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 64)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 32)
        b = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 128, 32)
        asc.data_copy(b, xg[32:], 32)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy(a, xg, 32)
        asc.data_copy(zg, b, 32)

    x = np.arange(64, dtype=np.float32)
    z = np.zeros(64, np.float32)
    k[1, None](x, z)
    assert (z[:32] == x[32:]).all()


def test_bytes_no_local_tensor_wrote_are_unwritten_through_any():
    # b covers a's bytes and 32 more that nothing wrote: storing all of b reads them
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress):
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x, 8)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 16)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 8)
        asc.data_copy(a, xg, 8)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        b = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, 16)  # made after the write
        asc.data_copy(zg, b, 16)

    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.arange(8, dtype=np.float32), np.zeros(16, np.float32))
    assert e.value.code in ("APK404", "APK412") and "b" in e.value.message
    assert "[8]" in e.value.message  # the first element a did not write


def test_a_local_tensor_over_a_queue_buffer_apdsl_placed_is_refused():
    @asc.jit
    def k(x: asc.GlobalAddress):
        pipe = asc.TPipe()
        q = asc.TQue(asc.TPosition.VECIN, 1)
        pipe.init_buffer(q, 1, 256)
        asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 0, 64)

    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(8, np.float32))
    assert e.value.code == "APK664" and "init_buffer" in " ".join(e.value.notes)
    assert e.value.span.line == k.fn.__code__.co_firstlineno + 5


def test_bytes_computed_from_unwritten_data_are_unwritten_through_every_local_tensor():
    # b was written, then a (over b's bytes) is computed from c, which nothing wrote: b holds
    # that result now, so storing b stores data computed from unwritten memory
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress):
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x, 64)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 64)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 0, 32)
        b = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, 64)  # over a and past it
        c = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 1024, 64)
        asc.data_copy(b[0:], xg, 64)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.adds(a, c, 1.0, 32)  # all of a from unwritten c
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy(zg, b, 64)

    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    assert e.value.code in ("APK404", "APK412") and "reads b[0]" in e.value.message
    assert e.value.span.line == k.fn.__code__.co_firstlineno + 13
