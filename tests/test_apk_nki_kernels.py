"""NKI kernels as `.apk` kernels (issue 12 item 2, SPEC 3): a `def` decorated as NKI decorates
its kernels is a kernel; its untyped parameters take shape, dtype and values from `-i` (in
HBM); a missing one is a usage error naming it; the NKI imports resolve to the builtins."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program, UsageError

COPY = """\
import nki
import nki.isa as nisa
import nki.language as nl


{decorator}
def copy_scaled(a_input, b_input, scale=2.0):
    out = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.sbuf)
    b = nl.ndarray(b_input.shape, dtype=b_input.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=a_input)
    nisa.dma_copy(dst=b, src=b_input)
    nisa.tensor_copy(dst=a, src=b)
    nisa.dma_copy(dst=out, src=a)
    assert a_input.buffer == "hbm" and scale == 2.0
    return out
"""


def _cli(*args: str, cwd: object = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.parametrize("decorator", [
    "@nki.jit", "@nki.jit(mode='simulation')", "@nki.baremetal",
    "@nki.compiler.skip_middle_end_transformations", "@neuronxcc.nki.jit"])
def test_decorated_def_is_a_kernel(decorator):
    prog = Program(COPY.format(decorator=decorator))
    assert [k.name for k in prog.kernels()] == ["copy_scaled"]
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(0, 1, 12, dtype=np.float16).reshape(3, 4)
    got = apdsl.run(COPY.format(decorator=decorator), inputs={"a_input": a, "b_input": b})
    # the kernel copies b (float16) over a (float32): b's values in a's dtype and shape
    assert got.dtype == np.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got, b.astype(np.float32))


def test_undecorated_def_is_a_helper_not_a_kernel():
    prog = Program(COPY.format(decorator="@some.other"))
    assert prog.kernels() == []
    assert Program(COPY.format(decorator="")).kernels() == []


def test_missing_input_is_a_usage_error_naming_it(tmp_path):
    src = tmp_path / "k.apk"
    src.write_text(COPY.format(decorator="@nki.jit"))
    a = tmp_path / "a.npy"
    np.save(a, np.ones((2, 3), np.float32))
    for command in ("run", "check", "lower"):
        r = _cli(command, str(src), "-i", f"a_input={a}")
        assert r.returncode == 2, (command, r.stderr)
        assert "-i b_input=FILE.npy" in r.stderr and "a_input=" not in r.stderr.split(
            "needs")[1], r.stderr
        assert "Traceback" not in r.stderr
    with pytest.raises(UsageError, match="b_input"):
        Program(COPY.format(decorator="@nki.jit")).run(inputs={"a_input": np.ones((2, 3),
                                                                                  np.float32)})


def test_run_and_check_with_inputs(tmp_path):
    src = tmp_path / "k.apk"
    src.write_text(COPY.format(decorator="@nki.jit"))
    a, b, out = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "out.npy"
    np.save(a, np.zeros((4, 8), np.float32))
    bv = np.arange(32, dtype=np.int32).reshape(4, 8)
    np.save(b, bv)
    r = _cli("run", str(src), "-i", f"a_input={a}", "-i", f"b_input={b}", "-o", str(out))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out), bv.astype(np.float32))
    r = _cli("check", str(src), "-i", f"a_input={a}", "-i", f"b_input={b}")
    assert r.returncode == 0 and "ok (1 kernel)" in r.stdout, r.stderr


def test_float64_input_is_located_error(tmp_path):
    src = tmp_path / "k.apk"
    src.write_text(COPY.format(decorator="@nki.jit"))
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.zeros((4, 8)))
    np.save(b, np.zeros((4, 8), np.float32))
    r = _cli("run", str(src), "-i", f"a_input={a}", "-i", f"b_input={b}")
    assert r.returncode == 1 and "error[APK140]" in r.stderr and "float64" in r.stderr
    assert f"{src}:7:17" in r.stderr  # at the parameter


def test_typed_parameter_keeps_its_meaning():
    src = """\
@nki.jit
def k(a: f32[4, 8] @ hbm, b):
    out = nl.ndarray(b.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""
    b = np.zeros((4, 8), np.float16)
    got = apdsl.run(src, inputs={"b": b})  # a: seeded data of its declared type
    assert got.shape == (4, 8) and got.dtype == np.float32


def test_several_kernels_need_a_name():
    src = COPY.format(decorator="@nki.jit") + "\n\n" + COPY.format(
        decorator="@nki.jit").split("\n\n\n")[1].replace("copy_scaled", "other")
    prog = Program(src)
    assert [k.name for k in prog.kernels()] == ["copy_scaled", "other"]
    with pytest.raises(UsageError, match="name the one"):
        prog.run()
    # check without a kernel named checks each statically; a named one needs its inputs
    assert prog.check() == []
    with pytest.raises(UsageError, match="b_input"):
        prog.check(kernel="other")


def test_nki_imports_resolve_to_the_builtins():
    src = """\
import nki
import nki.language as language
import neuronxcc.nki.isa as isa
from nki.language import ndarray, sbuf, float32 as f
from nki.isa import memset
import numpy as np
from nki.typing import tensor
t = language.ndarray((2, 4), dtype=f, buffer=sbuf)
memset(dst=t, value=3.0)
u = ndarray((2, 4), dtype=nki.language.float32, buffer=language.sbuf)
isa.tensor_copy(dst=u, src=t)
assert allclose(host(u), 3.0 + 0 * host(u))
"""
    apdsl.run(src)


def test_from_nki_import_of_an_unknown_name_is_located():
    with pytest.raises(ApdslError) as err:
        apdsl.run("from nki.language import ndarray, nosuch_fn\n")
    e = err.value
    assert e.code == "APK108" and "nosuch_fn" in str(e)
    assert (e.span.line, e.span.column) == (1, 35)


def test_decorated_kernel_is_a_kernel_value_for_show_and_repl():
    prog = Program(COPY.format(decorator="@nki.jit"))
    result = prog.run(inputs={"a_input": np.ones((2, 2), np.float32),
                              "b_input": np.ones((2, 2), np.float32)})
    assert result.kernel == "copy_scaled"


def test_from_nki_language_import_takes_nki_meaning():
    # nl.load is NKI's (a high-level function), not the .apk `load` of a .npy file
    src = """\
from nki.language import load, ndarray
import nki.language as lang
kernel k(a: f32[4, 8] @ hbm) -> f32[4, 8] @ sbuf:
    t = load(a)
    u = lang.load(a)
    assert allclose(host(t), host(a)) and allclose(host(u), host(a))
    return t
"""
    apdsl.run(src)


def test_main_block_of_an_nki_example_does_not_run(tmp_path):
    # __name__ is the file's name, as for a .py file: host code under __main__ is skipped
    src = tmp_path / "example.apk"
    src.write_text('print(__name__)\nif __name__ == "__main__":\n    import torch\n'
                   '    x = torch.ones(3)\n')
    r = _cli("run", str(src))
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "example", r.stderr
    r = _cli("check", str(src))
    assert r.returncode == 0, r.stderr


def test_os_environ_is_the_programs_own():
    from apdsl.semantics.environ import Environ
    from apdsl.tensor import targets
    from apdsl.tensor.machine import current
    src = "import os\nassert os.environ.get('HOME') is None and list(os.environ.keys()) == []\n"
    apdsl.run(src)  # never the process environment
    with current().child().active():
        env = Environ()
        env["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn1"
        assert targets.target_for("sbuf").name == "trn1"
        env["NEURON_FRAMEWORK_DEBUG"] = "1"
        assert env.get("NEURON_FRAMEWORK_DEBUG") == "1"
        with pytest.raises(ApdslError) as err:
            env["X"] = 1
        assert err.value.code == "APK120"
        with pytest.raises(ApdslError):
            env["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn9"
    with pytest.raises(ApdslError) as err:
        apdsl.run("import os\nx = os.environ.update")
    assert err.value.code == "APK103"


def test_tile_size_in_apk():
    src = ("assert nl.tile_size.pmax == 128 and nl.tile_size.gemm_stationary_fmax == 128\n"
           "assert nl.tile_size.gemm_moving_fmax == 512\n")
    apdsl.run(src)
    with pytest.raises(ApdslError) as err:
        apdsl.run("x = nl.tile_size._target")
    assert err.value.code == "APK103"


_IDENTITY = """\
@nki.jit
def identity(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    assert x.buffer == nl.hbm and x.shape == out.shape
    nisa.dma_copy(dst=out, src=x)
    return out
"""


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["float32", "float16", "int32", "int8", "uint8", "int16"]),
       st.lists(st.integers(1, 6), min_size=1, max_size=3))
def test_untyped_input_keeps_shape_dtype_and_values(dtype, shape):
    arr = (np.arange(int(np.prod(shape))) % 100).astype(dtype).reshape(shape)
    got = apdsl.run(_IDENTITY, inputs={"x": arr})
    assert got.dtype == arr.dtype and got.shape == arr.shape
    np.testing.assert_array_equal(got, arr)


def test_type_hints_are_not_tensor_types():
    # `a: nl.ndarray` and `-> nl.ndarray` are hints: a still takes its shape from -i
    src = """\
@nki.jit
def k(a: nl.ndarray, scale: float = 2.0) -> nl.ndarray:
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(apdsl.run(src, inputs={"a": arr}), arr)
    with pytest.raises(UsageError, match="-i a=FILE.npy"):
        Program(src).run()
