"""`@nki.jit(platform_target=...)` (the legacy API; NKI before 0.3.0): the kernel runs on the
target it names, whose rules are the ones checked; a name NKI does not list, or a run that chose
another target, is APK972 at the user's line."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError


def _scales_kernel(platform):
    @nki.jit(platform_target=platform)
    def scales(x):
        a = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x)
        d = nl.ndarray((32, 1), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((4, 1), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=d, src=a, dst_scale=s)
        o = nl.ndarray((4, 1), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=s)
        return o
    return scales


X = np.full((32, 4), 3.0, ml_dtypes.bfloat16)  # scale 2**(1 - 7): byte 121


@pytest.mark.parametrize("name", ["trn3", "gen4", "TRN3"])
def test_a_trn3_kernel_runs_on_trn3_and_the_target_is_restored(name):
    assert apdsl.get_target("trn2") is not None
    np.testing.assert_array_equal(_scales_kernel(name)(X)[:, 0], [121] * 4)
    np.testing.assert_array_equal(_scales_kernel(name)[1](X)[:, 0], [121] * 4)
    from apdsl.tensor.machine import current
    assert current().targets["nki"] == "trn2"


def test_a_trn2_kernel_gets_trn2_rules():
    with pytest.raises(ApdslError) as e:
        _scales_kernel("gen3")(X)
    assert e.value.code == "APK961" and "the target is trn2" in e.value.message


def test_a_trn1_kernel_gets_trn1_capacities():
    @nki.jit(platform_target="trn1")
    def big(x):
        t = nl.ndarray((128, 50 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # 200 KiB
        nisa.memset(dst=t, value=0.0)
        return x
    with pytest.raises(ApdslError) as e:
        big(np.ones((2, 2), np.float32))
    assert e.value.code == "APK302"
    with apdsl.target("trn2"):
        nki.jit(big.fn)(np.ones((2, 2), np.float32))  # the same kernel fits trn2's 224 KiB


def test_an_unknown_platform_is_located_at_the_decorator():
    with pytest.raises(ApdslError) as e:
        @nki.jit(platform_target="trn4")
        def k(a):
            return a
    err = e.value
    assert err.code == "APK972" and err.span is not None and err.span.file == __file__
    assert "platform_target" in open(__file__).read().splitlines()[err.span.line - 1]


def test_a_run_on_another_target_stops_at_the_call():
    k = _scales_kernel("trn3")
    with apdsl.target("trn1"), pytest.raises(ApdslError) as e:
        k(X)
    assert e.value.code == "APK972" and "built for trn3" in e.value.message
    assert e.value.span is not None and e.value.span.file == __file__


KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit(mode="simulation", platform_target="trn3")
def scales(x):
    a = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    d = nl.ndarray((32, 1), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    s = nl.ndarray((4, 1), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=d, src=a, dst_scale=s)
    o = nl.ndarray((4, 1), dtype=nl.uint8, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=s)
    return o
'''


def test_the_command_line_honours_platform_target(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    np.save(tmp_path / "x.npy", X.astype(np.float32))
    base = [sys.executable, "-m", "apdsl", "run", str(tmp_path / "k.py"), "-i",
            f"x={tmp_path / 'x.npy'}"]
    r = subprocess.run([*base, "-o", str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy")[:, 0], [121] * 4)
    r = subprocess.run([*base, "--target", "trn1"], capture_output=True, text=True)
    assert r.returncode == 1 and "APK972" in r.stderr and "Traceback" not in r.stderr, r.stderr
