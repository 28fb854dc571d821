"""apdsl.asc, the pyasc frontend (SPEC 18): pyasc kernels on NumPy arrays written in place,
both instruction forms, the sync checker at the user's lines, names apdsl lacks as APK660,
the command line on pyasc files and the pytest plugin."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import apdsl
import apdsl.asc as asc

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "asc_python" / "vector_add.py"


def _example():
    import importlib.util
    spec = importlib.util.spec_from_file_location("asc_vector_add_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    asc.install()
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("tiles", "dtype", "seed"), [
    (1, np.float16, 0), (2, np.float32, 1), (3, np.float16, 2), (6, np.float32, 3)])
def test_vector_add_writes_x_plus_y_into_z(tiles, dtype, seed):
    m = _example()
    rng = np.random.default_rng(seed)
    n = tiles * m.TILE
    x, y = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    z = np.full_like(x, 7)
    xs, ys = x.copy(), y.copy()
    assert m.vadd[1, None](x, y, z, n) is None  # pyasc kernels write in place
    np.testing.assert_array_equal(z, xs + ys)
    np.testing.assert_array_equal(x, xs)  # inputs unchanged


@asc.jit
def _forms(x: asc.GlobalAddress, a: asc.GlobalAddress, b: asc.GlobalAddress, n: int):
    xg = asc.GlobalTensor()
    xg.set_global_buffer(x, n)
    ag = asc.GlobalTensor()
    ag.set_global_buffer(a, n)
    bg = asc.GlobalTensor()
    bg.set_global_buffer(b, n)
    size = n * x.dtype.sizeof()
    xu = asc.LocalTensor(x.dtype, asc.TPosition.VECIN, 0, n)
    au = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, size, n)
    bu = asc.LocalTensor(x.dtype, asc.TPosition.VECOUT, 2 * size, n)
    asc.data_copy(xu, xg, n)
    asc.set_flag(asc.HardEvent.MTE2_V, 0)
    asc.wait_flag(asc.HardEvent.MTE2_V, 0)
    asc.muls(au, xu, 3.0, n)                                        # count form
    lanes = 256 // x.dtype.sizeof()
    asc.muls(bu, xu, 3.0, mask=lanes, repeat_times=n // lanes,      # mask + repeat form
             repeat_params=asc.UnaryRepeatParams())
    asc.set_flag(asc.HardEvent.V_MTE3, 0)
    asc.wait_flag(asc.HardEvent.V_MTE3, 0)
    asc.data_copy(ag, au, n)
    asc.data_copy(bg, bu, n)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_count_and_mask_forms_agree_with_numpy(dtype):
    n = 512
    x = np.random.default_rng(3).standard_normal(n).astype(dtype)
    a, b = np.zeros_like(x), np.zeros_like(x)
    _forms[1, None](x, a, b, n)
    np.testing.assert_array_equal(a, x * dtype(3))
    np.testing.assert_array_equal(b, a)


def test_same_address_is_the_same_storage_and_an_unaligned_address_is_refused():
    @asc.jit
    def k(x: asc.GlobalAddress, z: asc.GlobalAddress):
        xg = asc.GlobalTensor()
        xg.set_global_buffer(x, 128)
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 128)
        a = asc.LocalTensor(asc.float32, asc.TPosition.VECIN, 0, 128)
        b = asc.LocalTensor(asc.float32, asc.TPosition.VECOUT, 0, 128)  # a's storage
        asc.data_copy(a, xg, 128)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.data_copy(zg, b, 128)
        asc.pipe_barrier(asc.PipeID.PIPE_ALL)
        asc.LocalTensor(asc.float32, asc.TPosition.VECCALC, 520, 8)  # not on a 32-byte block

    x = np.arange(128, dtype=np.float32)
    z = np.zeros_like(x)
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](x, z)
    assert e.value.code == "APK664" and e.value.span.file == __file__
    assert e.value.span.line == k.fn.__code__.co_firstlineno + 12
    assert "32-byte aligned" in e.value.message


def test_names_apdsl_lacks_are_apk660_naming_them():
    with pytest.raises(apdsl.ApdslError, match=r"asc\.TBufPool") as e:
        asc.TBufPool  # noqa: B018
    assert e.value.code == "APK660" and isinstance(e.value, AttributeError)
    assert not hasattr(asc, "no_such_name")


@pytest.mark.parametrize("cores", [0, -1, 65536, 2.0, "8"])
def test_a_launch_on_no_number_of_cores_is_apk661_at_the_launch(cores):
    with pytest.raises(apdsl.ApdslError) as e:
        _forms[cores, None]
    assert e.value.code == "APK661" and e.value.span.file == __file__


def test_a_global_address_parameter_needs_an_array():
    with pytest.raises(apdsl.ApdslError) as e:
        _forms[1, None]([1.0] * 512, np.zeros(512, np.float32), np.zeros(512, np.float32), 512)
    assert e.value.code == "APK662"


def test_a_patched_launcher_leaves_the_arrays_and_still_checks_the_kernel():
    # pyasc's unit tests patch asc.runtime.launcher.Launcher.run out to test code generation
    # without a device: the kernel is still run on the model (and checked), once per launch,
    # and what it wrote does not reach the caller's arrays
    from unittest.mock import patch
    asc.install()
    m = _example()
    x, y = np.ones(m.TILE, np.float16), np.full(m.TILE, 2, np.float16)
    z = np.zeros(m.TILE, np.float16)
    with patch("asc.runtime.launcher.Launcher.run", return_value=None) as run:
        m.vadd[1, None](x, y, z, m.TILE)
        assert run.call_count == 1
        (compiled, name, args), _ = run.call_args
        assert name == "vadd" and args[2] is z
        got = dict((id(a), w) for a, w in compiled.results)[id(z)]
        np.testing.assert_array_equal(got, np.full(m.TILE, 3, np.float16))
        np.testing.assert_array_equal(z, 0)
        with pytest.raises(apdsl.ApdslError) as e:  # checked all the same: a race is refused
            _unsynchronised[1, None](x, z)
        assert e.value.code == "APK570" and run.call_count == 1
    m.vadd[1, None](x, y, z, m.TILE)  # unpatched: the writes arrive
    np.testing.assert_array_equal(z, 3)


@asc.jit
def _unsynchronised(x: asc.GlobalAddress, z: asc.GlobalAddress):
    xg, zg = asc.GlobalTensor(), asc.GlobalTensor()
    xg.set_global_buffer(x, 256)
    zg.set_global_buffer(z, 256)
    t = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, 256)
    asc.data_copy(t, xg, 256)
    asc.data_copy(zg, t, 256)  # no MTE2_MTE3 order: a race


def test_a_mock_tensor_argument_is_apk662_naming_it():
    asc.install()
    from asc.runtime.jit import JITFunction, MockTensor
    assert JITFunction is asc.JitKernel
    with pytest.raises(apdsl.ApdslError, match="MockTensor") as e:
        _unsynchronised[1, None](MockTensor(asc.float16), np.zeros(256, np.float16))
    assert e.value.code == "APK662" and e.value.span.file == __file__


def test_install_resolves_import_asc():
    import sys as _sys
    assert asc.install()
    import asc as plain
    import asc.language as lang
    import asc.lib.runtime as rt
    assert plain is asc and lang.data_copy.__name__ == "data_copy"
    assert rt.current_stream() is not None
    assert _sys.modules["asc.language.basic"] is lang


def _cli(folder, *args):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], cwd=folder,
                          capture_output=True, text=True)


@pytest.fixture
def inputs(tmp_path):
    rng = np.random.default_rng(5)
    np.save(tmp_path / "x.npy", rng.standard_normal(1024).astype(np.float16))
    np.save(tmp_path / "y.npy", rng.standard_normal(1024).astype(np.float16))
    np.save(tmp_path / "z.npy", np.zeros(1024, np.float16))
    np.save(tmp_path / "n.npy", np.array(1024))
    shutil.copy(EXAMPLE, tmp_path / "vadd.py")
    return ["-i", "x=x.npy", "-i", "y=y.npy", "-i", "z=z.npy", "-i", "n=n.npy"]


def test_cli_runs_checks_and_lowers_a_pyasc_file(tmp_path, inputs):
    run = _cli(tmp_path, "run", "vadd.py", *inputs, "-o", "out.npz")
    assert run.returncode == 0, run.stderr
    assert _cli(tmp_path, "check", "vadd.py", *inputs).returncode == 0
    low = _cli(tmp_path, "lower", "vadd.py", *inputs)
    assert low.returncode == 0 and "vadd.py:34  asc.add  [pipe V]  count=256" in low.stdout


def test_cli_reports_a_missing_wait_flag_at_both_lines(tmp_path, inputs):
    src = (tmp_path / "vadd.py").read_text()
    (tmp_path / "vadd.py").write_text(
        src.replace("        asc.wait_flag(asc.HardEvent.MTE2_V, b)\n", "", 1))
    proc = _cli(tmp_path, "run", "vadd.py", *inputs)
    assert proc.returncode == 1
    assert "vadd.py:33:9: error[APK570]: data race (read-after-write)" in proc.stderr
    assert "written here on pipe MTE2" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_names_a_queue_apdsl_lacks_at_its_line(tmp_path, inputs):
    src = (tmp_path / "vadd.py").read_text()
    (tmp_path / "vadd.py").write_text(src.replace(
        "x_ub = asc.LocalTensor(", "x_ub = asc.TBufPool(", 1))
    proc = _cli(tmp_path, "run", "vadd.py", *inputs)
    assert proc.returncode == 1
    assert "vadd.py:23:12: error[APK660]: apdsl.asc does not model asc.TBufPool" in proc.stderr


def test_user_exception_is_apk148_with_the_users_frames(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent("""\
        import asc

        @asc.jit
        def k(x: asc.GlobalAddress):
            return {}["missing"]
        """))
    np.save(tmp_path / "x.npy", np.zeros(8, np.float32))
    proc = _cli(tmp_path, "run", "k.py", "-i", "x=x.npy")
    assert proc.returncode == 1 and "APK148" in proc.stderr and "KeyError" in proc.stderr


def test_example_runs_under_the_plugin(tmp_path):
    for f in (ROOT / "examples" / "asc_python").glob("*.py"):
        shutil.copy(f, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "apdsl.asc", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and "12 passed" in proc.stdout, proc.stdout + proc.stderr
