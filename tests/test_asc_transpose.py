"""asc.transpose and asc.copy in pyasc kernels (queues, one core and several) against NumPy:
the 16 x 16 transpose of 16-bit data, NCHW -> NHWC with a scratch buffer, and Copy's mask form
against the page's addressing written out element by element; misuse is a located error."""

from __future__ import annotations

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc

SIDE = 16


@asc.jit
def blocks(x: asc.GlobalAddress, z: asc.GlobalAddress, tiles: int):
    # each core transposes `tiles` consecutive 16 x 16 matrices, one at a time through queues
    per_core = tiles * SIDE * SIDE
    base = asc.get_block_idx() * per_core
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x + base, per_core)
    zg.set_global_buffer(z + base, per_core)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 2)
    qout = asc.TQue(asc.TPosition.VECOUT, 2)
    pipe.init_buffer(que=qin, num=2, len=SIDE * SIDE * x.dtype.sizeof())
    pipe.init_buffer(que=qout, num=2, len=SIDE * SIDE * z.dtype.sizeof())
    for i in range(tiles):
        t = qin.alloc_tensor(x.dtype)
        asc.data_copy(t, xg[i * SIDE * SIDE:], count=SIDE * SIDE)
        qin.enque(t)
        t = qin.deque(x.dtype)
        o = qout.alloc_tensor(z.dtype)
        asc.transpose(o, t)
        qout.enque(o)
        qin.free_tensor(t)
        o = qout.deque(z.dtype)
        asc.data_copy(zg[i * SIDE * SIDE:], o, count=SIDE * SIDE)
        qout.free_tensor(o)


@pytest.mark.parametrize(("dtype", "cores", "tiles"), [
    (np.float16, 1, 1), (np.int16, 1, 3), (np.uint16, 2, 2), (np.float16, 4, 1)])
def test_sixteen_by_sixteen_blocks_are_transposed(dtype, cores, tiles):
    rng = np.random.default_rng(cores * 10 + tiles)
    x = (rng.integers(-3000, 3000, (cores * tiles, SIDE, SIDE)) if dtype != np.float16
         else rng.standard_normal((cores * tiles, SIDE, SIDE))).astype(dtype)
    z = np.zeros_like(x)
    blocks[cores, None](x, z, tiles)
    np.testing.assert_array_equal(z, x.transpose(0, 2, 1))


@asc.jit
def in_place(x: asc.GlobalAddress):
    g = asc.GlobalTensor()
    g.set_global_buffer(x, SIDE * SIDE)
    t = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 0, SIDE * SIDE)
    asc.data_copy(t, g, count=SIDE * SIDE)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.transpose(t, t)  # the page allows src and dst to be one tensor
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(g, t, count=SIDE * SIDE)


def test_the_plain_form_may_transpose_in_place():
    x = np.arange(SIDE * SIDE, dtype=np.int16).reshape(SIDE, SIDE)
    y = x.copy()
    in_place[1, None](y)
    np.testing.assert_array_equal(y, x.T)


@asc.jit
def nchw_to_nhwc(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int, c: int, h: int, w: int,
                 scratch: int):
    size = n * c * h * w
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, size)
    zg.set_global_buffer(z, size)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    qtmp = asc.TQue(asc.TPosition.VECCALC, 1)
    pipe.init_buffer(que=qin, num=1, len=size * x.dtype.sizeof())
    pipe.init_buffer(que=qout, num=1, len=size * z.dtype.sizeof())
    pipe.init_buffer(que=qtmp, num=1, len=scratch)
    t = qin.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, count=size)
    qin.enque(t)
    t = qin.deque(x.dtype)
    o = qout.alloc_tensor(z.dtype)
    tmp = qtmp.alloc_tensor(asc.uint8)
    params = asc.TransposeParamsExt(n_size=n, c_size=c, h_size=h, w_size=w,
                                    transpose_type=asc.TransposeType.TRANSPOSE_NCHW2NHWC)
    asc.transpose(o, t, tmp, params)
    qout.enque(o)
    qin.free_tensor(t)
    qtmp.free_tensor(tmp)
    o = qout.deque(z.dtype)
    asc.data_copy(zg, o, count=size)
    qout.free_tensor(o)


def scratch(dtype, c):
    """The page's scratch size for NCHW -> NHWC: (c + 2) * 32 * 32 * 1 B for 8-bit data,
    (c + 2) * 16 * 16 * 2 B for 16-bit, (c + 2) * 16 * 8 * 4 B for 32-bit."""
    return (c + 2) * {1: 32 * 32 * 1, 2: 16 * 16 * 2, 4: 16 * 8 * 4}[np.dtype(dtype).itemsize]


@pytest.mark.parametrize(("dtype", "shape"), [
    (np.float16, (1, 16, 4, 4)), (np.int16, (2, 32, 4, 8)), (np.float32, (3, 8, 2, 4)),
    (np.int32, (1, 24, 8, 1)), (np.int8, (2, 32, 8, 4)), (np.uint8, (1, 64, 4, 8))])
def test_nchw_becomes_nhwc(dtype, shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-100, 100, shape).astype(dtype) if np.dtype(dtype).kind in "iu" \
        else rng.standard_normal(shape).astype(dtype)
    z = np.zeros(x.size, dtype)
    nchw_to_nhwc[1, None](x, z, *shape, scratch(dtype, shape[1]))
    np.testing.assert_array_equal(z.reshape(shape[0], shape[2], shape[3], shape[1]),
                                  x.transpose(0, 2, 3, 1))


def _error(kernel, *args):
    with pytest.raises(apdsl.ApdslError) as e:
        kernel[1, None](*args)
    assert e.value.span is not None and e.value.span.file == __file__
    return e.value


def test_a_scratch_smaller_than_the_page_asks_is_apk552_at_the_call():
    x = np.zeros((1, 16, 4, 4), np.float16)
    e = _error(nchw_to_nhwc, x, np.zeros(x.size, np.float16), 1, 16, 4, 4,
               scratch(np.float16, 16) - 32)
    assert e.code == "APK552" and "shared_tmp_buffer" in str(e)
    z = np.zeros(x.size, np.float16)  # pyasc's own test gives (16 + c) * 16 * 8 * 4 bytes
    nchw_to_nhwc[1, None](x, z, 1, 16, 4, 4, (16 + 16) * 16 * 8 * 4)
    e = _error(nchw_to_nhwc, np.zeros(64 * 4 * 8, np.int8), np.zeros(64 * 4 * 8, np.int8),
               1, 64, 4, 8, scratch(np.int16, 64))  # 8-bit data needs twice as much
    assert e.code == "APK552"
    assert e.span.line == nchw_to_nhwc.fn.__code__.co_firstlineno + 22


def test_partial_blocks_and_unmodelled_types_are_refused():
    x = np.zeros((1, 16, 3, 3), np.float16)  # h * w = 9: not whole 32-byte blocks
    e = _error(nchw_to_nhwc, x, np.zeros(x.size, np.float16), 1, 16, 3, 3,
               scratch(np.float16, 16))
    assert e.code == "APK560" and "h_size * w_size" in str(e)
    e = _error(other_type, np.zeros(256, np.float16))
    assert e.code == "APK560" and "TRANSPOSE_NHWC2NCHW" in str(e)


def test_the_plain_form_takes_sixteen_bit_data_only():
    e = _error(in_place, np.zeros(256, np.float32))
    assert e.code == "APK462" and e.span.line == in_place.fn.__code__.co_firstlineno + 8


@asc.jit
def other_type(x: asc.GlobalAddress):
    t = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 0, 256)
    o = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 512, 256)
    tmp = asc.LocalTensor(asc.uint8, asc.TPosition.VECCALC, 1024, 20000)
    asc.duplicate(t, 1.0, 256)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.transpose(o, t, tmp, asc.TransposeParamsExt(
        1, 16, 4, 4, asc.TransposeType.TRANSPOSE_NHWC2NCHW))


@asc.jit
def overlapping(x: asc.GlobalAddress):
    t = asc.LocalTensor(x.dtype, asc.TPosition.VECCALC, 0, 512)
    tmp = asc.LocalTensor(asc.uint8, asc.TPosition.VECCALC, 1024, 20000)
    asc.duplicate(t, 1.0, 512)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.transpose(t[16:], t, tmp, asc.TransposeParamsExt(
        1, 16, 4, 4, asc.TransposeType.TRANSPOSE_NCHW2NHWC))


def test_nchw_to_nhwc_refuses_overlapping_dst_and_src():
    e = _error(overlapping, np.zeros(256, np.float16))
    assert e.code == "APK553"


@asc.jit
def unsynchronised(x: asc.GlobalAddress):
    g = asc.GlobalTensor()
    g.set_global_buffer(x, SIDE * SIDE)
    t = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, SIDE * SIDE)
    o = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 512, SIDE * SIDE)
    asc.data_copy(t, g, count=SIDE * SIDE)
    asc.transpose(o, t)  # no MTE2_V event: it may read t before the copy lands


def test_a_missing_wait_flag_before_transpose_is_a_race_at_both_lines():
    e = _error(unsynchronised, np.zeros(SIDE * SIDE, np.float16))
    first = unsynchronised.fn.__code__.co_firstlineno
    assert e.code == "APK570" and e.span.line == first + 7  # (first: the decorator's line)
    assert any(label.span.line == first + 6 for label in e.labels)


@asc.jit
def strided_copy(x: asc.GlobalAddress, z: asc.GlobalAddress, size: int, mask: int,
                 repeats: int, dst_blk: int, src_blk: int, dst_rep: int, src_rep: int):
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, size)
    zg.set_global_buffer(z, size)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(que=qin, num=1, len=size * x.dtype.sizeof())
    pipe.init_buffer(que=qout, num=1, len=size * z.dtype.sizeof())
    t = qin.alloc_tensor(x.dtype)
    asc.data_copy(t, xg, count=size)
    qin.enque(t)
    t = qin.deque(x.dtype)
    o = qout.alloc_tensor(z.dtype)
    asc.duplicate(o, 0, size)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.copy(o, t, mask, repeats, asc.CopyRepeatParams(dst_blk, src_blk, dst_rep, src_rep))
    qout.enque(o)
    qin.free_tensor(t)
    o = qout.deque(z.dtype)
    asc.data_copy(zg, o, count=size)
    qout.free_tensor(o)


def _copied(x, mask, repeats, dst_blk, src_blk, dst_rep, src_rep):
    """The Copy page's addressing, element by element: lane k of repeat r lies in block
    k // B at k % B, blocks `blk` apart, repeats `rep` blocks apart (B: a block's elements)."""
    b = 32 // x.itemsize
    z = np.zeros_like(x)
    for r in range(repeats):
        for k in range(mask):
            d = (r * dst_rep + k // b * dst_blk) * b + k % b
            s = (r * src_rep + k // b * src_blk) * b + k % b
            z[d] = x[s]
    return z


@pytest.mark.parametrize(("dtype", "args"), [
    (np.float32, (64, 4, 1, 1, 8, 8)),      # pyasc's test: whole repeats
    (np.float16, (100, 3, 1, 2, 8, 16)),    # part of a repeat, src blocks spread out
    (np.int32, (24, 2, 2, 1, 16, 3)),       # dst blocks spread out, repeats overlapping src
    (np.int16, (128, 2, 1, 1, 8, 8))])
def test_copy_moves_the_mask_forms_lanes(dtype, args):
    size = 4096 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(args[0])
    x = rng.integers(-1000, 1000, size).astype(dtype)
    z = np.full(size, 7, dtype)
    strided_copy[1, None](x, z, size, *args)
    np.testing.assert_array_equal(z, _copied(x, *args))


def test_copy_refuses_a_repeat_size_past_the_page_and_a_zero_dst_stride():
    x = np.zeros(1024, np.float32)
    e = _error(strided_copy, x, x.copy(), 1024, 64, 1, 1, 1, 4096, 8)
    assert e.code == "APK550" and "dst_repeat_size" in str(e)
    assert e.span.line == strided_copy.fn.__code__.co_firstlineno + 18
    e = _error(strided_copy, x, x.copy(), 1024, 64, 1, 0, 1, 8, 8)  # pyasc's default is 0
    assert e.code == "APK550" and "block stride" in str(e)
