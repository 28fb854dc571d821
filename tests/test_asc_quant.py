"""`asc.adv.quant` (AscendQuant per tensor, SPEC 18): the AscendQuant page's steps -- src,
scale and offset to half, Muls, Adds, cast to int8 rounding half to even, saturating -- on pipe
V, in kernels written in pyasc style.  Oracle: the same steps in exact float64 arithmetic, each
rounded to half once (for the values here every float32 intermediate is exact, so the two
agree), and the pyasc tests' own golden `round(src * scale + offset)` where it applies."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, s in enumerate(lines) if text in s)


def _oracle(x, scale, offset):
    h = np.float16
    s64 = np.float64(np.asarray(scale, x.dtype).astype(h))
    o64 = np.float64(np.asarray(offset, x.dtype).astype(h))
    t = (x.astype(h).astype(np.float64) * s64).astype(h).astype(np.float64)
    t = (t + o64).astype(h).astype(np.float64)
    return np.clip(np.rint(t), -128, 127).astype(np.int8)


@asc.jit
def _quant(src: asc.GlobalAddress, dst: asc.GlobalAddress, n: int, count: int, scale: float,
           offset: float):
    s = asc.GlobalTensor()
    s.set_global_buffer(src)
    d = asc.GlobalTensor()
    d.set_global_buffer(dst)
    pipe = asc.TPipe()
    qin = asc.TQue(asc.TPosition.VECIN, 1)
    qout = asc.TQue(asc.TPosition.VECOUT, 1)
    tmp = asc.TBuf(asc.TPosition.VECCALC)
    pipe.init_buffer(que=qin, num=1, len=n * s.dtype.sizeof())
    pipe.init_buffer(que=qout, num=1, len=n)
    pipe.init_buffer(buf=tmp, num=512)
    x = qin.alloc_tensor(s.dtype)
    asc.data_copy(x, s, count=n)
    qin.enque(x)
    x = qin.deque(s.dtype)
    y = qout.alloc_tensor(asc.int8)
    asc.duplicate(y.reinterpret_cast(asc.int16), 0x7f7f, n // 2)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.adv.quant(y, x, scale, offset, count, tmp.get(asc.uint8))
    qout.enque(y)
    qin.free_tensor(x)
    y = qout.deque(asc.int8)
    asc.data_copy(d, y, count=n)
    qout.free_tensor(y)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("scale,offset", [(2.0, 0.9), (0.37, -1.25), (13.0, 0.0)])
def test_quant_follows_the_documented_steps(dtype, scale, offset):
    rng = np.random.default_rng(7)
    x = (rng.random(256) * 16 - 8).astype(dtype)
    z = np.zeros(256, np.int8)
    _quant[1, None](x, z, 256, 256, scale, offset)
    np.testing.assert_array_equal(z, _oracle(x, scale, offset))


def test_quant_matches_the_pyasc_golden_in_half():
    x = (np.random.default_rng(3).random(64) * 8 - 4).astype(np.float16)
    z = np.zeros(64, np.int8)
    _quant[1, None](x, z, 64, 64, 2.0, 0.9)
    np.testing.assert_array_equal(z, np.round(x * 2.0 + 0.9).astype(np.int8))


def test_quant_rounds_half_to_even_and_saturates():
    x = np.array([2.0, 3.0, -2.0, -3.0, 100.0, -100.0, 0.0, 1.0] * 4, np.float16)
    z = np.zeros(32, np.int8)
    _quant[1, None](x, z, 32, 32, 1.0, 0.5)
    want = np.array([2, 4, -2, -2, 100, -100, 0, 2] * 4, np.int8)
    np.testing.assert_array_equal(z, want)
    _quant[1, None](x, z, 32, 32, 3.0, 0.0)
    assert z[4] == 127 and z[5] == -128


def test_quant_writes_count_elements_only():
    x = np.linspace(-4, 4, 64).astype(np.float32)
    z = np.zeros(64, np.int8)
    _quant[1, None](x, z, 64, 32, 2.0, 0.9)
    np.testing.assert_array_equal(z[:32], _oracle(x[:32], 2.0, 0.9))
    assert (z[32:] == 0x7f).all()  # what the kernel's duplicate left there


@asc.jit
def _wrong_dst(src: asc.GlobalAddress, n: int):
    x = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, n)
    y = asc.LocalTensor(asc.float16, asc.TPosition.VECOUT, 1024, n)
    asc.duplicate(x, 1.0, n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.adv.quant(y, x, 2.0, 0.0, n)


@asc.jit
def _config_count(src: asc.GlobalAddress, n: int):
    x = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, n)
    y = asc.LocalTensor(asc.int8, asc.TPosition.VECOUT, 1024, n)
    asc.duplicate(x, 1.0, n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.adv.quant(y, x, 2.0, 0.0, n, config=asc.adv.QuantConfig(32, 0, 0, 512))


@asc.jit
def _unordered(src: asc.GlobalAddress, n: int):
    g = asc.GlobalTensor()
    g.set_global_buffer(src)
    x = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, n)
    y = asc.LocalTensor(asc.int8, asc.TPosition.VECOUT, 1024, n)
    asc.duplicate(x, 1.0, n)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.adv.quant(y, x, 2.0, 0.0, n)
    asc.data_copy(g, y, count=n)


@pytest.mark.parametrize("kernel,code,text", [
    (_wrong_dst, "APK461", "asc.adv.quant("),
    (_config_count, "APK674", "asc.adv.quant("),
    (_unordered, "APK570", "asc.data_copy(g, y, count=n)"),
])
def test_quant_misuse_is_located(kernel, code, text):
    with pytest.raises(apdsl.ApdslError) as e:
        kernel[1, None](np.zeros(64, np.int8), 64)
    assert e.value.code == code and e.value.span.file == __file__
    assert e.value.span.line == _line(kernel, text)
