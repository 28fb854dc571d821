"""How a Python kernel ends, as a user runs it (`apdsl run|check kernel.py`): every exception
their code raises is APK148 with their frames and exit 1, whatever its class or however its
`__str__` fails; a returned on-chip tile is APK143 at their `return`; a result nothing wrote is
APK180 at their `return`; a `shared_hbm` output written and not returned warns (APK181);
`tensor_copy(dtype=)` writes dst's dtype (another warns, APK182); `nl.divide` is refused as the
compiler refuses it (APK183), showing the working form."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n"


def _apdsl(tmp_path, source: str, *args: str, command: str = "run"):
    f = tmp_path / "kern.py"
    f.write_text(HEAD + source)
    np.save(tmp_path / "a.npy", np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64))
    np.save(tmp_path / "b.npy", np.linspace(1, 2, 128 * 64, dtype=np.float32).reshape(128, 64))
    return subprocess.run([sys.executable, "-m", "apdsl", command, "kern.py", *args],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "NO_COLOR": "1"})


RAISES = {
    "base_exception": ("class Stop(BaseException):\n    pass\n\n", "raise Stop('halt')",
                       "Stop: halt"),
    "generator_exit": ("", "raise GeneratorExit()", "GeneratorExit"),
    "system_exit_3": ("", "raise SystemExit(3)", "SystemExit: 3"),
    "system_exit_0": ("", "raise SystemExit(0)", "SystemExit: 0"),
    "keyboard_interrupt": ("", "raise KeyboardInterrupt()", "KeyboardInterrupt"),
    "str_raises": ("class E(Exception):\n    def __str__(self):\n        raise ValueError()\n\n",
                   "raise E()", "E: <exception str() failed>"),
    "str_and_repr_raise_base": ("class E(BaseException):\n    def __str__(self):\n"
                                "        raise SystemExit(4)\n    def __repr__(self):\n"
                                "        raise KeyboardInterrupt\n\n", "raise E()",
                                "E: <exception str() failed>"),
}


@pytest.mark.parametrize("case", sorted(RAISES))
@pytest.mark.parametrize("command", ["run", "check"])
def test_every_exception_the_kernel_raises_is_apk148_exit_1(tmp_path, case, command):
    prelude, statement, shown = RAISES[case]
    source = f"{prelude}@nki.jit\ndef k(a):\n    {statement}\n"
    proc = _apdsl(tmp_path, source, "-i", "a=a.npy", command=command)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    err = proc.stderr
    assert "error[APK148]" in err and "kern.py:" in err and shown in err, err
    assert f"kern.py\", line {source.count(chr(10)) + 4}, in k" in err  # their frame
    assert "Traceback" not in err and "apdsl/nki" not in err and "internal error" not in err


def test_an_exception_at_the_top_level_of_the_file_is_apk148(tmp_path):
    proc = _apdsl(tmp_path, "raise SystemExit(0)\n")
    assert proc.returncode == 1 and "error[APK148]" in proc.stderr, proc.stderr
    assert "kern.py:5:1" in proc.stderr


def test_returning_an_sbuf_tile_is_located_at_the_return(tmp_path):
    source = """@nki.jit
def k(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return t
"""
    for command in ("run", "check"):
        proc = _apdsl(tmp_path, source, "-i", "a=a.npy", command=command)
        assert proc.returncode == 1
        assert "kern.py:9:5: error[APK143]" in proc.stderr, proc.stderr
        assert "allocated here" in proc.stderr and "bin/apdsl" not in proc.stderr


ATTRIBUTES = """@nki.jit
def k(a):
    b = a.base_tensor
    return a


@nki.jit
def m(a):
    return a.shpe


@nki.jit
def g(a):
    src = getattr(a, "base_tensor", a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def h(a):
    return a.shape.base_tensor
"""


def test_an_attribute_a_tensor_lacks_is_apk103_naming_it_where_it_is_read(tmp_path):
    proc = _apdsl(tmp_path, ATTRIBUTES, "k", "-i", "a=a.npy")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == "kern.py:7:9: error[APK103]: an NKI tensor has no attribute " \
        "'base_tensor'", proc.stderr
    caret = next(ln for ln in lines if "^" in ln)
    assert caret.count("^") == len("a.base_tensor")
    assert "TensorView" in proc.stderr and "Traceback" not in proc.stderr
    proc = _apdsl(tmp_path, ATTRIBUTES, "m", "-i", "a=a.npy")
    assert "kern.py:13:12: error[APK103]: an NKI tensor has no attribute 'shpe'" in \
        proc.stderr and "did you mean 'shape'" in proc.stderr, proc.stderr
    # still an AttributeError inside the kernel: getattr with a default goes on
    proc = _apdsl(tmp_path, ATTRIBUTES, "g", "-i", "a=a.npy", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.load(tmp_path / "out.npy"), np.load(tmp_path / "a.npy"))
    # another value's missing attribute is the kernel's own Python error, as before
    proc = _apdsl(tmp_path, ATTRIBUTES, "h", "-i", "a=a.npy")
    assert "error[APK148]: your Python code raised AttributeError" in proc.stderr, proc.stderr


class _Failures:
    """An observer keeping what each kernel call, and each call of a kernel from a kernel,
    failed with (as the corpus runner's watch hears it)."""

    def __init__(self):
        self.errors = []

    def started(self, fn, args, kwargs, launch):
        pass

    def finished(self, fn, result):
        pass

    def failed(self, fn, error):
        self.errors.append((fn.__name__, error))

    def inner_started(self, fn):
        pass

    def inner_finished(self, fn):
        pass

    def inner_failed(self, fn, error):
        self.errors.append((fn.__name__, error))


def test_a_kernel_called_from_a_kernel_fails_with_the_same_apk103(tmp_path):
    import importlib.util

    import apdsl
    from apdsl.nki.observe import observing
    (tmp_path / "nested.py").write_text("""import apdsl.nki as nki



@nki.jit
def inner(t):
    return t.base_tensor


@nki.jit
def outer(a):
    return inner(a)
""")
    spec = importlib.util.spec_from_file_location("nested_kernels", tmp_path / "nested.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with observing(_Failures()) as seen, pytest.raises(apdsl.ApdslError) as info:
        module.outer(np.zeros((4, 8), np.float32))
    assert info.value.code == "APK103" and info.value.span.line == 7
    assert [(name, e.code, e.span.line) for name, e in seen.errors] == \
        [("inner", "APK103", 7), ("outer", "APK103", 7)]


FORGOT = """@nki.jit
def k(a):
    x = nl.load(a)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    return out
"""


def test_a_forgotten_store_is_the_result_never_written_at_the_return(tmp_path):
    for flags in ([], ["-o", "out.npy"]):
        proc = _apdsl(tmp_path, FORGOT, "-i", "a=a.npy", *flags)
        assert proc.returncode == 1
        first = proc.stderr.splitlines()[0]
        assert first == "kern.py:9:5: error[APK180]: the kernel's result `out` was never " \
            "written", proc.stderr
        assert "allocated here" in proc.stderr
        assert not (tmp_path / "out.npy").exists()
    # partly written: how much, and the first element missing
    part = FORGOT.replace("    return out", "    nl.store(out[0:64, :], x[0:64, :])\n"
                          "    return out")
    proc = _apdsl(tmp_path, part, "-i", "a=a.npy")
    assert "error[APK180]: the kernel's result `out` is only partly written" in proc.stderr
    assert "4096 of its 8192 elements were never written, the first at out[64, 0]" in \
        proc.stderr
    # with the init check off, unwritten memory reads as 0, as everywhere else
    proc = _apdsl(tmp_path, FORGOT, "-i", "a=a.npy", "--no-init-check")
    assert proc.returncode == 0, proc.stderr


def test_a_shared_hbm_output_written_and_not_returned_warns(tmp_path):
    source = """@nki.jit
def k(a):
    x = nl.load(a)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, x)
"""
    proc = _apdsl(tmp_path, source, "-i", "a=a.npy")
    assert proc.returncode == 0
    assert "kern.py:8:11: warning[APK181]: kernel k writes the shared_hbm tensor `out` but " \
        "returns None" in proc.stderr, proc.stderr
    # returned: no warning; an output never written is not this warning's
    proc = _apdsl(tmp_path, source + "    return out\n", "-i", "a=a.npy")
    assert proc.returncode == 0 and "APK181" not in proc.stderr


def test_a_shared_constant_left_unreturned_is_not_an_output(tmp_path):
    # nl.shared_constant's data is the host's, "loaded to HBM at model load time": the kernel
    # wrote nothing there, so leaving it unreturned loses nothing (an output beside it still
    # warns)
    source = """import numpy as np


@nki.jit
def k(a):
    c = nl.shared_constant(np.full((128, 64), 2.0, np.float32))
    x = nl.multiply(nl.load(a), nl.load(c))
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    lost = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, x)
    nl.store(lost, x)
    return out
"""
    proc = _apdsl(tmp_path, source, "-i", "a=a.npy", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    assert "`lost`" in proc.stderr and "`c`" not in proc.stderr, proc.stderr
    assert proc.stderr.count("warning[APK181]") == 1
    a = np.load(tmp_path / "a.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), 2 * a)


TENSOR_COPY = """@nki.jit
def k(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype={dtype})
    out = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out
"""


def test_tensor_copy_takes_dtype_as_the_samples_write_it(tmp_path):
    proc = _apdsl(tmp_path, TENSOR_COPY.format(dtype="nl.bfloat16"), "-i", "a=a.npy", "-o",
                  "out.npy")
    assert proc.returncode == 0, proc.stderr
    assert "APK182" not in proc.stderr
    a = np.load(tmp_path / "a.npy")
    want = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    got = np.load(tmp_path / "out.npy")
    assert np.array_equal(got.astype(np.float32), want)


def test_tensor_copy_dtype_other_than_dsts_warns_and_writes_dsts(tmp_path):
    # the SDK matmul tutorial's form: an fp32 dst with dtype= naming bf16. The instruction has
    # one output dtype, dst's; the u tile must hold src converted to dst's dtype and nothing
    # else: an fp32 dst with a bf16 dtype= keeps fp32's precision (no rounding through bf16)
    source = """@nki.jit
def k(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        nisa.tensor_copy(dst=u, src=t, dtype=nl.bfloat16)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    proc = _apdsl(tmp_path, source, "-i", "a=a.npy", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("warning[APK182]") == 1, proc.stderr  # once for the loop
    assert "kern.py:11:9: warning[APK182]: tensor_copy: dtype=bfloat16 has no effect: the " \
        "copy writes dst u's float32" in proc.stderr, proc.stderr
    a = np.load(tmp_path / "a.npy")
    got = np.load(tmp_path / "out.npy")
    assert got.dtype == np.float32 and np.array_equal(got, a)
    assert not np.array_equal(a.astype(ml_dtypes.bfloat16).astype(np.float32), a)  # (it could)
    # the same copy into a bf16 dst with dtype= naming fp32: dst's bf16
    proc = _apdsl(tmp_path, TENSOR_COPY.format(dtype="nl.float32"), "-i", "a=a.npy", "-o",
                  "out.npy")
    assert proc.returncode == 0, proc.stderr
    assert "kern.py:10:5: warning[APK182]: tensor_copy: dtype=float32 has no effect: the copy " \
        "writes dst u's bfloat16" in proc.stderr, proc.stderr
    got = np.load(tmp_path / "out.npy")
    assert np.array_equal(got.astype(np.float32),
                          a.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_tensor_copy_dtype_that_is_no_dtype_is_refused(tmp_path):
    proc = _apdsl(tmp_path, TENSOR_COPY.format(dtype="3"), "-i", "a=a.npy")
    assert proc.returncode == 1
    assert "kern.py:10:5: error[APK420]: tensor_copy: dtype=3 is not a dtype" in proc.stderr, \
        proc.stderr
    proc = _apdsl(tmp_path, TENSOR_COPY.format(dtype="nl.bfloat16").replace("src=t, dtype=",
                                                                           "src=t, fmt="),
                  "-i", "a=a.npy")
    assert "kern.py:10:5: error[APK102]: tensor_copy(): got an unexpected keyword argument " \
        "'fmt'" in proc.stderr, proc.stderr


def test_nl_divide_is_refused_as_the_compiler_refuses_it(tmp_path):
    source = """@nki.jit
def k(a, b):
    x = nl.load(a)
    y = nl.load(b)
    z = nl.divide(x, {y})
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, z)
    return out
"""
    for y in ("y", "2.0"):
        proc = _apdsl(tmp_path, source.format(y=y), "-i", "a=a.npy", "-i", "b=b.npy")
        assert proc.returncode == 1
        first = proc.stderr.splitlines()[0]
        assert first.startswith("kern.py:9:9: error[APK183]: nl.divide: the Neuron compiler "
                                "rejects divide"), proc.stderr
        assert "tensor_scalar" not in proc.stderr and "tensor_tensor(dst" in proc.stderr
        assert "nl.multiply(a, inv)" in proc.stderr
    # the working form it shows runs, and is a / b
    working = source.format(y="y").replace("z = nl.divide(x, y)",
                                           "z = nl.multiply(x, nl.reciprocal(y))")
    proc = _apdsl(tmp_path, working, "-i", "a=a.npy", "-i", "b=b.npy", "-o", "out.npy")
    assert proc.returncode == 0, proc.stderr
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), a / b, rtol=1e-6)

