"""pyasc's automatic synchronisation (SPEC 18): `asc.LocalTensorAuto` kernels, which pyasc's
`insert_sync` pass synchronises, run without flags and match NumPy; what the pass leaves
unordered (global memory, a write after a read of one tensor with no new allocation between)
is still a race at the user's lines; the kernel's own events are erased as the pass erases
them; misuse is a located error.  Oracles: NumPy for values; for the checker, kernels whose
race (or its absence) follows from the pass's rules (`apdsl.runtime.sync.auto`)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def _part(addr, n):
    g = asc.GlobalTensor()
    g.set_global_buffer(addr + asc.get_block_idx() * n, n)
    return g


@asc.jit
def _vadd(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int, tile: int):
    xg, yg, zg = _part(x, n), _part(y, n), _part(z, n)
    for i in range(n // tile):
        xl = asc.LocalTensorAuto(x.dtype, tile)
        yl = asc.LocalTensorAuto(y.dtype, tile)
        zl = asc.LocalTensorAuto(z.dtype, tile)
        asc.data_copy(xl, xg[i * tile:], count=tile)
        asc.data_copy(yl, yg[i * tile:], count=tile)
        asc.add(zl, xl, yl, tile)
        asc.muls(zl, zl, 3.0, tile)
        asc.data_copy(zg[i * tile:], zl, count=tile)


@pytest.mark.parametrize("cores,n,tile", [(1, 64, 64), (3, 256, 64), (4, 512, 128)])
def test_an_auto_vector_kernel_needs_no_flags_and_matches_numpy(cores, n, tile):
    rng = np.random.default_rng(cores)
    x = rng.standard_normal(cores * n).astype(np.float32)
    y = rng.standard_normal(cores * n).astype(np.float32)
    z = np.zeros_like(x)
    _vadd[cores, None](x, y, z, n, tile)
    np.testing.assert_allclose(z, (x + y) * np.float32(3.0), rtol=1e-6)


@asc.jit(insert_sync=True)
def _broadcast_first(x: asc.GlobalAddress, y: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, yg, zg = _part(x, n), _part(y, n), _part(z, n)
    xl = asc.LocalTensorAuto(x.dtype, n)
    yl = asc.LocalTensorAuto(y.dtype, n)
    asc.data_copy(xl, xg, count=n)
    asc.data_copy(yl, yg, count=n)
    first = asc.LocalTensorAuto(y.dtype, (2, n // 2))
    asc.duplicate(first, yl.get_value(0), n)   # the scalar read: the pass's V_S / S_V fence
    zl = asc.LocalTensorAuto(z.dtype, n)
    asc.sub(zl, xl, first, n)
    asc.data_copy(zg, zl, count=n)


def test_a_scalar_read_of_an_auto_tensor_is_ordered_and_matches_numpy():
    x = np.arange(2 * 64, dtype=np.float32)
    y = np.linspace(1, 2, 2 * 64, dtype=np.float32)
    z = np.zeros_like(x)
    _broadcast_first[2, None](x, y, z, 64)
    want = x - np.repeat(y[::64], 64)
    np.testing.assert_array_equal(z, want)


@asc.jit
def _reload(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, zg = _part(x, n), _part(z, n)
    xl = asc.LocalTensorAuto(x.dtype, n)
    zl = asc.LocalTensorAuto(z.dtype, n)
    asc.data_copy(xl, xg, count=n)
    asc.adds(zl, xl, 1.0, n)
    asc.data_copy(xl, xg, count=n)
    asc.data_copy(zg, zl, count=n)


def test_a_write_after_a_read_of_one_auto_tensor_is_still_a_race():
    """The pass enqueues after each write and dequeues before the next user only: the second
    copy into xl (MTE2) is not ordered after the add reading it (V)."""
    with pytest.raises(apdsl.ApdslError) as e:
        _reload[1, None](np.zeros(64, np.float32), np.zeros(64, np.float32), 64)
    err = e.value
    assert err.code == "APK570" and "write-after-read" in err.message
    assert err.span.file == __file__
    assert err.span.line == _line(_reload, "asc.data_copy(xl, xg, count=n)") + 2


@asc.jit
def _gm_round_trip(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, zg = _part(x, n), _part(z, n)
    xl = asc.LocalTensorAuto(x.dtype, n)
    asc.data_copy(xl, xg, count=n)
    asc.data_copy(zg, xl, count=n)
    back = asc.LocalTensorAuto(z.dtype, n)
    asc.data_copy(back, zg, count=n)
    asc.data_copy(xg, back, count=n)


def test_global_memory_is_not_the_pass_business():
    """MTE3 writes z in GM, MTE2 reads it back: the pass inserts nothing for GM."""
    with pytest.raises(apdsl.ApdslError) as e:
        _gm_round_trip[1, None](np.zeros(64, np.float32), np.zeros(64, np.float32), 64)
    err = e.value
    assert err.code == "APK570" and "read-after-write" in err.message
    assert err.span.line == _line(_gm_round_trip, "asc.data_copy(back, zg, count=n)")


@asc.jit
def _own_events(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, zg = _part(x, n), _part(z, n)
    xl = asc.LocalTensorAuto(x.dtype, n)
    asc.data_copy(xl, xg, count=n)
    asc.wait_flag(asc.HardEvent.MTE2_V, 3)   # never set: erased by the pass
    zl = asc.LocalTensorAuto(z.dtype, n)
    asc.abs(zl, xl, n)
    asc.set_flag(asc.HardEvent.V_MTE3, 0)    # never waited for: erased too
    asc.data_copy(zg, zl, count=n)


def test_the_kernel_own_events_are_erased():
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    z = np.zeros_like(x)
    _own_events[1, None](x, z, 64)
    np.testing.assert_array_equal(z, np.abs(x))


@asc.jit
def _stale(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg, zg = _part(x, n), _part(z, n)
    before = None
    for _ in range(2):
        xl = asc.LocalTensorAuto(x.dtype, n)
        asc.data_copy(xl, xg, count=n)
        if before is not None:
            zl = asc.LocalTensorAuto(z.dtype, n)
            asc.add(zl, xl, before, n)
            asc.data_copy(zg, zl, count=n)
        before = xl


def test_an_auto_tensor_made_again_frees_the_one_before():
    """One buffer per LocalTensorAuto operation: last iteration's tensor is gone."""
    with pytest.raises(apdsl.ApdslError) as e:
        _stale[1, None](np.zeros(64, np.float32), np.zeros(64, np.float32), 64)
    assert e.value.code == "APK408"
    assert e.value.span.line == _line(_stale, "asc.add(zl, xl, before, n)")


@asc.jit(insert_sync=False)
def _unsynchronised(x: asc.GlobalAddress, n: int):
    asc.LocalTensorAuto(x.dtype, n)


@asc.jit
def _growing(x: asc.GlobalAddress, n: int):
    for k in range(1, 3):
        xl = asc.LocalTensorAuto(x.dtype, n * k)
        asc.duplicate(xl, 1.0, n * k)


@asc.jit
def _queue_too(x: asc.GlobalAddress, n: int):
    asc.LocalTensorAuto(x.dtype, n)
    asc.TQue(asc.TPosition.VECIN, 1)


@pytest.mark.parametrize("kernel,code,text", [
    (_unsynchronised, "APK667", "asc.LocalTensorAuto(x.dtype, n)"),
    (_growing, "APK667", "xl = asc.LocalTensorAuto"),
    (_queue_too, "APK660", "asc.TQue("),
])
def test_misuse_is_located(kernel, code, text):
    with pytest.raises(apdsl.ApdslError) as e:
        kernel[1, None](np.zeros(128, np.float32), 64)
    assert e.value.code == code and e.value.span.file == __file__
    assert e.value.span.line == _line(kernel, text)


def test_insert_sync_is_decided_as_pyasc_decides():
    from apdsl.asc.kernel import insert_sync
    assert insert_sync(_vadd.fn, None) and insert_sync(_queue_too.fn, None)
    assert not insert_sync(_unsynchronised.fn, False)

    @asc.jit
    def plain(x: asc.GlobalAddress):
        asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 8)

    assert not insert_sync(plain.fn, None) and insert_sync(plain.fn, True)
