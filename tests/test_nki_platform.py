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


@pytest.mark.parametrize("variable,value", [
    ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3"),  # the nki.jit docstring's way
    ("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4"),
    ("NEURON_CC_FLAGS", " --target trn3 --pipeline compile SaveTemps"),  # the compiler's
    ("NEURON_CC_FLAGS", "--model-type transformer --target=trn3"),
])
def test_a_kernel_without_platform_target_runs_on_the_target_its_environment_names(
        monkeypatch, variable, value):
    kernel = _scales_kernel(None)
    with pytest.raises(ApdslError) as e:
        kernel(X)  # trn2, the default: quantize_mx is trn3's
    assert e.value.code == "APK961"
    monkeypatch.setenv(variable, value)
    np.testing.assert_array_equal(kernel(X)[:, 0], [121] * 4)
    from apdsl.tensor.machine import current
    assert current().targets["nki"] == "trn2"  # for this run only


def test_the_override_wins_over_the_compiler_flags(monkeypatch):
    monkeypatch.setenv("NEURON_CC_FLAGS", "--target trn3")
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    with pytest.raises(ApdslError) as e:
        _scales_kernel(None)(X)
    assert e.value.code == "APK961"


@pytest.mark.parametrize("variable,value,shown", [
    ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9", "NEURON_PLATFORM_TARGET_OVERRIDE=trn9"),
    ("NEURON_CC_FLAGS", "--target inf9", "NEURON_CC_FLAGS --target inf9")])
def test_a_name_the_tools_do_not_know_is_located_at_the_call(monkeypatch, variable, value,
                                                               shown):
    kernel = _scales_kernel(None)
    monkeypatch.setenv(variable, value)
    with pytest.raises(ApdslError) as e:
        kernel(X)
    assert e.value.code == "APK972" and shown in e.value.message, e.value.message
    assert e.value.span is not None and e.value.span.file == __file__


def test_an_environment_target_against_the_runs_own_is_apk972(monkeypatch):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")
    with apdsl.target("trn1"), pytest.raises(ApdslError) as e:
        _scales_kernel(None)(X)
    assert e.value.code == "APK972" and "environment names" in e.value.message


@pytest.mark.parametrize("variable,value,platform", [
    (None, None, "trn2"),
    ("NEURON_PLATFORM_TARGET_OVERRIDE", "gen4", "trn3"),
    ("NEURON_PLATFORM_TARGET_OVERRIDE", "inf2", "trn1"),
    ("NEURON_CC_FLAGS", "--target=trn3", "trn3"),
])
def test_torch_neuronx_get_platform_target_is_the_target_kernels_run_on(
        monkeypatch, variable, value, platform):
    from apdsl.nki.torch_neuronx_host import get_platform_target
    for name in ("NEURON_PLATFORM_TARGET_OVERRIDE", "NEURON_CC_FLAGS"):
        monkeypatch.delenv(name, raising=False)
    if variable is not None:
        monkeypatch.setenv(variable, value)
    assert get_platform_target() == platform
    # neuronx-distributed-inference's tests' idiom: the override set to it keeps that target
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", get_platform_target())
    kernel = _scales_kernel(None)
    if platform == "trn3":
        np.testing.assert_array_equal(kernel(X)[:, 0], [121] * 4)
    else:
        with pytest.raises(ApdslError) as e:
            kernel(X)
        assert e.value.code == "APK961"  # quantize_mx is trn3's


def test_torch_neuronx_get_platform_target_follows_the_run_and_refuses_unknown_names(
        monkeypatch):
    from apdsl.nki.torch_neuronx_host import get_platform_target
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE", raising=False)
    with apdsl.target("trn3"):
        assert get_platform_target() == "trn3"
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn9")
    with pytest.raises(ApdslError) as e:
        get_platform_target()
    assert e.value.code == "APK972" and "trn9" in e.value.message
