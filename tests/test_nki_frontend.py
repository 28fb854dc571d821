"""apdsl.nki (SPEC section 12): NKI kernels written for these tests in tests/nki_kernels/ (the
GEMM loop structures of the tutorials, layouts, gathers, iota, SPMD, a config object, a helper
module), run unchanged in-process, as Python files through the command line, and through
pytest with the plugin, checked against NumPy.  The published kernels themselves are measured
from their repositories by `apdsl corpus`, not copied here."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import apdsl_in_process

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

KERNELS = Path(__file__).parent / "nki_kernels"
ROOT = Path(__file__).resolve().parent.parent


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _matmul(k, m, n):
    def make(rng):
        return {"lhsT": _f32(rng, k, m), "rhs": _f32(rng, k, n)}
    return make


def _mm_oracle(x):
    return x["lhsT"].T.astype(np.float64) @ x["rhs"]


def _transpose_in(rng):
    return {"x": rng.integers(-100, 100, (5, 12)).astype(np.int8)}


def _swap_oracle(x):
    return np.transpose(x["x"].reshape(5, 3, 4), (0, 2, 1)).reshape(5, 12)


def _gather_in(rng):
    return {"table": _f32(rng, 16, 8),
            "row_ids": rng.integers(0, 16, (4, 1)).astype(np.uint32)}


# file, kernel, inputs, NumPy oracle, launch grid
CASES = [
    ("single_gemm.py", "gemm_one_tile", _matmul(128, 64, 512), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_tiled", _matmul(256, 256, 1024), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_stationary_resident", _matmul(256, 256, 1024), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_wide_moving", _matmul(256, 256, 1024), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_first_k_resets", _matmul(512, 64, 128), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_configured", _matmul(256, 128, 1024), _mm_oracle, None),
    ("tiled_gemms.py", "gemm_column_programs", _matmul(128, 128, 1024), _mm_oracle, 2),
    ("layouts.py", "swap_free_dims", _transpose_in, _swap_oracle, None),
    ("layouts.py", "swap_free_dims_by_columns", _transpose_in, _swap_oracle, None),
    ("layouts.py", "gather_rows", _gather_in, lambda x: x["table"][x["row_ids"][:, 0]], None),
    ("layouts.py", "iota_patterns", lambda rng: {}, lambda x: (
        1000 - 2 * np.arange(256)[None, :], 7 + 3 * np.arange(64)[:, None],
        4 * np.arange(32)[:, None] + np.arange(128)[None, :],
        100 + np.arange(64)[None, :] + np.zeros((2, 1), int)), None),
]
IDS = [c[1] for c in CASES]


def _close(got, want):
    if isinstance(want, tuple):  # a kernel returning a tuple gets a tuple of NumPy arrays
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-4, atol=1e-3)


@pytest.fixture
def nki_installed(monkeypatch):
    """`import nki` resolves to apdsl.nki for the test (undone afterwards)."""
    monkeypatch.syspath_prepend(str(KERNELS))
    for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
        monkeypatch.delitem(sys.modules, name)
    assert nki.install()
    yield
    nki.uninstall()


def _load(file):
    spec = importlib.util.spec_from_file_location(f"_nki_case_{Path(file).stem}",
                                                  KERNELS / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("file,kernel,make,oracle,grid", CASES, ids=IDS)
def test_public_kernel_in_process(nki_installed, file, kernel, make, oracle, grid):
    x = make(np.random.default_rng(7))
    k = getattr(_load(file), kernel)
    got = (k[grid] if grid else k)(*x.values())
    _close(got, oracle(x))
    # the NKI simulator's spellings give the same numbers
    _close(nki.simulate(k[grid] if grid else k)(*x.values()), oracle(x))
    if not grid:
        _close(nki.simulate_kernel(k, *x.values()), oracle(x))


def _cli_process(*args, cwd):
    return subprocess.run([sys.executable, "-m", "apdsl", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _cli(*args, cwd):
    """The command line's `main` in process (a process per command is tested by
    test_public_kernel_through_the_command_line's first kernel)."""
    return apdsl_in_process(*args, cwd=cwd)


@pytest.mark.parametrize("file,kernel,make,oracle,grid", CASES, ids=IDS)
def test_public_kernel_through_the_command_line(tmp_path, file, kernel, make, oracle, grid):
    # the first kernel as a user runs it (a process per command), the others through the
    # command line's `main` in process: the same commands, without three starts each
    cli = _cli_process if kernel == IDS[0] else _cli
    for f in KERNELS.glob("*.py"):
        shutil.copy(f, tmp_path)
    x = make(np.random.default_rng(11))
    flags = []
    for name, arr in x.items():
        np.save(tmp_path / f"{name}.npy", arr)
        flags += ["-i", f"{name}={name}.npy"]
    launch = ["--grid", grid] if grid else []
    want = oracle(x)
    out = "out.npz" if isinstance(want, tuple) else "out.npy"
    proc = cli("run", file, kernel, *flags, *launch, "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{kernel} -> ")
    if isinstance(want, tuple):
        with np.load(tmp_path / out) as z:
            _close(tuple(z[f"r{i}"] for i in range(len(want))), want)
    else:
        _close(np.load(tmp_path / out), want)
    check = cli("check", file, kernel, *flags, cwd=tmp_path)
    assert check.returncode == 0 and f"{file}: ok" in check.stdout, check.stderr
    lower = cli("lower", file, kernel, *flags, *launch, "--json", cwd=tmp_path)
    assert lower.returncode == 0, lower.stderr
    assert f'"file": "{file}"' in lower.stdout  # each instruction at its line of the file


TEST_TEMPLATE = '''\
import numpy as np
{imports}
from {module} import {kernel}


def test_{kernel}():
    x = {{name: np.load(name + ".npy") for name in {names!r}}}
    got = {call}(*x.values())
    with np.load("want.npz") as z:
        want = [z[k] for k in sorted(z.files, key=lambda k: int(k[1:]))]
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=1e-4, atol=1e-3)
'''


def test_public_kernels_under_pytest_with_the_plugin(tmp_path):
    """One pytest session (`pytest -p apdsl.nki`) runs a test file per kernel, each written as
    a user would: `import nki` unchanged, the kernel imported from its file."""
    for f in KERNELS.glob("*.py"):
        shutil.copy(f, tmp_path)
    for file, kernel, make, oracle, grid in CASES:
        folder = tmp_path / kernel
        folder.mkdir()
        x = make(np.random.default_rng(5))
        for name, arr in x.items():
            np.save(folder / f"{name}.npy", arr)
        want = oracle(x)
        want = want if isinstance(want, tuple) else (want,)
        np.savez(folder / "want.npz", **{f"w{i}": w for i, w in enumerate(want)})
        call = f"{kernel}[{grid}]" if grid else kernel
        (folder / f"test_{kernel}.py").write_text(TEST_TEMPLATE.format(
            imports="import nki", module=Path(file).stem, kernel=kernel, names=list(x),
            call=call).replace('np.load(name + ".npy")', f'np.load("{folder}/" + name + ".npy")')
            .replace('np.load("want.npz")', f'np.load("{folder}/want.npz")'))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "apdsl.nki", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(tmp_path), "--import-mode=append", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"})
    assert f"{len(CASES)} passed" in proc.stdout, proc.stdout + proc.stderr


def test_without_the_plugin_import_nki_fails(tmp_path):
    """The oracle of the plugin test: without `-p apdsl.nki` the same imports fail."""
    (tmp_path / "test_k.py").write_text("import nki\n\ndef test_k():\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and "No module named 'nki'" in proc.stdout


# -- diagnostics in the user's file ------------------------------------------------------------

BAD = '''\
import nki
import nki.isa as nisa
import nki.language as nl


def helper(t):
    return undefined_name + t


@nki.jit
def bad_slice(a):
    t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[0:128, 0:65])
    return t


@nki.jit
def too_tall(a):
    t = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.sbuf)
    out = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    return out


@nki.jit
def user_bug(a):
    return helper(1)


if __name__ == "__main__":
    raise SystemExit("the __main__ block must not run")
'''


def test_diagnostic_points_at_the_line_and_column_of_the_user_file(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    np.save(tmp_path / "a.npy", np.zeros((128, 64), np.float32))
    proc = _cli("run", "bad.py", "bad_slice", "-i", "a=a.npy", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    # the slice a[0:128, 0:65] starts at column 30 of line 13 and is 14 characters long
    assert lines[0] == ("bad.py:13:30: error[APK215]: index 65 is out of range for dim 1 "
                        "(size 64)")
    caret = next(ln for ln in lines if "^" in ln)
    assert caret.index("^") - caret.index("|") - 2 == 29 and caret.count("^") == 14
    assert "Traceback" not in proc.stderr and "apdsl/" not in proc.stderr
    proc = _cli("check", "bad.py", "too_tall", "-i", "a=a.npy", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("bad.py:19:9: error[APK301]")


def test_diagnostic_span_in_process(nki_installed, tmp_path):
    (tmp_path / "bad_mod.py").write_text(BAD.replace('if __name__ == "__main__"', "if False"))
    spec = importlib.util.spec_from_file_location("bad_mod", tmp_path / "bad_mod.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(apdsl.ApdslError) as info:
        module.bad_slice(np.zeros((128, 64), np.float32))
    span = info.value.span
    assert (Path(span.file).name, span.line, span.column, span.end_column) == \
        ("bad_mod.py", 13, 30, 44)


def test_user_python_error_shows_only_the_users_frames(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    np.save(tmp_path / "a.npy", np.zeros((128, 64), np.float32))
    proc = _cli("run", "bad.py", "user_bug", "-i", "a=a.npy", cwd=tmp_path)
    assert proc.returncode == 1
    err = proc.stderr
    assert err.startswith("bad.py:7:12: error[APK148]: your Python code raised NameError")
    assert 'File "bad.py", line 26, in user_bug' in err
    assert 'File "bad.py", line 7, in helper' in err
    assert "apdsl/" not in err and "must not run" not in err


# -- arguments, results, launch ------------------------------------------------------------------

@nki.jit
def _copy(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out, out[0:1]


def test_float64_input_names_the_parameter_and_the_dtype():
    with pytest.raises(apdsl.ApdslError) as info:
        _copy(np.zeros((4, 4)))
    e = info.value
    assert e.code == "APK140" and "parameter a" in e.message and "float32" in e.help
    assert Path(e.span.file).name == "test_nki_frontend.py"  # the user's call


def test_tuple_results_come_back_as_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    full, first = _copy(a)
    assert isinstance(full, np.ndarray) and isinstance(first, np.ndarray)
    np.testing.assert_array_equal(full, a)
    np.testing.assert_array_equal(first, a[0:1])


@nki.jit
def _ids():
    out = nl.ndarray((nl.num_programs(), 3), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 3), dtype=nl.int32, buffer=nl.sbuf)
    p = nl.program_id(0)
    nisa.memset(dst=t[0:1, 0:1], value=p)
    nisa.memset(dst=t[0:1, 1:2], value=nl.num_programs())
    nisa.memset(dst=t[0:1, 2:3], value=nl.program_ndim())
    nisa.dma_copy(dst=out[p:p + 1, :], src=t)
    return out


def test_launch_runs_once_per_program_id():
    np.testing.assert_array_equal(_ids[2](), [[0, 2, 1], [1, 2, 1]])
    np.testing.assert_array_equal(_ids[1](), [[0, 1, 1]])
    np.testing.assert_array_equal(_ids(), [[0, 1, 0]])  # no grid: no grid dimensions


@nki.jit
def _grid_ids():
    out = nl.ndarray((nl.num_programs(), 1), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    i, j = nl.program_id(0), nl.program_id(1)
    nisa.memset(dst=t, value=10 * i + j)
    k = i * nl.num_programs(1) + j
    nisa.dma_copy(dst=out[k:k + 1, :], src=t)
    return out


def test_launch_grid_rules():
    for bad in (0, 3, 8, (2, 0), 1.5):
        with pytest.raises(apdsl.ApdslError) as info:
            _ids[bad]
        assert info.value.code == "APK141"
    # two or more sizes: the legacy API's SPMD grid of programs, run one after another
    np.testing.assert_array_equal(_grid_ids[2, 3](), [[10 * i + j] for i in range(2)
                                                      for j in range(3)])
    with apdsl.target("trn1"):
        with pytest.raises(apdsl.ApdslError) as info:
            _ids[2]
        assert info.value.code == "APK141" and "trn1" in info.value.message


def test_returned_on_chip_tile_is_refused():
    @nki.jit
    def k():
        t = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        return t
    with pytest.raises(apdsl.ApdslError) as info:
        k()
    assert info.value.code == "APK143"


def test_python_tiles_are_freed_when_unreferenced():
    """224 KiB of SBUF per partition on trn2: 40 tiles of 32 KiB each fit only if the tiles
    no Python object refers to any more are freed (or, referred to, are never accessed again:
    `test_liveness`)."""
    def loop(keep):
        kept = []
        for _ in range(40):
            t = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=t, value=0.0)
            if keep:
                kept.append(t)
        for k in kept:  # accessed again: all 40 live at the last allocation
            nisa.memset(dst=k, value=1.0)
        out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t[0:1, 0:1])
        return out
    assert nki.jit(loop)(False)[0, 0] == 0.0
    with pytest.raises(apdsl.ApdslError) as info:
        nki.jit(loop)(True)
    assert info.value.code.startswith("APK4") or info.value.code.startswith("APK3")


def test_decorators_kernels_use():
    @nki.compiler.skip_middle_end_transformations
    @nki.baremetal(artifacts_dir="x")
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = np.ones((2, 2), np.float16)
    np.testing.assert_array_equal(k(a), a)
    np.testing.assert_array_equal(nki.jit()(k.fn)(a), a)
    np.testing.assert_array_equal(nki.jit(mode="simulation")(k)(a), a)


# -- namespaces: the one builtins table --------------------------------------------------------

def test_namespaces_come_from_the_builtins_table():
    from apdsl.runtime import instructions as ins
    from apdsl.semantics.builtins import INSTRUCTIONS, builtin_names
    from apdsl.tensor.targets import NKI_HBM, NKI_ONCHIP
    isa_names, lang = set(dir(nisa)), set(dir(nl))
    assert {n for n in INSTRUCTIONS if hasattr(ins, n)} <= isa_names
    assert {"program_id", "num_programs", "program_ndim", "ndarray", "tile_size", "ds",
            "float32", "bfloat16", *NKI_ONCHIP, *NKI_HBM} <= lang
    # reciprocal and dropout are both: the instructions nisa.X and the functions nl.X
    assert isa_names & lang == {"reciprocal", "dropout"}
    assert "mmad" not in isa_names and "make_layout" not in lang and "host" not in lang
    # every builtin that is not an .apk host helper, a Python builtin or Ascend's is in one
    from apdsl.nki.namespace import PYTHON
    from apdsl.semantics.builtins import APK_ONLY, TLA
    from apdsl.tensor.targets import ASCEND
    # (pyasc's Ascend enums and queue types are builtins of .apk too, and not NKI's)
    ascend_names = {"HardEvent", "PipeID", "TPosition", "TPipe", "TQue", "TBuf"}
    nki_names = (builtin_names() - APK_ONLY - PYTHON - set(TLA) - set(ASCEND) - {"mmad"}
                 - ascend_names)
    assert nki_names and nki_names <= isa_names | lang, nki_names - isa_names - lang
    # the same objects as the model: nl.ndarray allocates apdsl tensors
    t = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.sbuf)
    assert isinstance(t, apdsl.Tensor)


def test_unknown_name_is_located_and_still_an_attribute_error():
    assert not hasattr(nisa, "dma_cpy")
    with pytest.raises(apdsl.ApdslError) as info:
        nisa.dma_cpy  # noqa: B018
    assert info.value.code == "APK144" and "nisa.dma_copy" in info.value.help
    with pytest.raises(AttributeError, match="nki.isa, not nki.language"):
        nl.dma_copy  # noqa: B018


def test_tile_size_follows_the_target():
    assert (nl.tile_size.pmax, nl.tile_size.psum_bank_fmax, nl.tile_size.gemm_moving_fmax,
            nl.tile_size.psum_num_banks, nl.tile_size.sbuf_fmax_bytes) == (
        128, 512, 512, 8, 224 * 1024)
    with apdsl.target("trn1"):
        assert nl.tile_size.sbuf_fmax_bytes == 192 * 1024


def test_check_reads_no_input_values(tmp_path):
    """Indices out of range: `run` (which reads them) fails, `check` (which does not) passes."""
    shutil.copy(KERNELS / "layouts.py", tmp_path)
    np.save(tmp_path / "table.npy", np.zeros((16, 8), np.float32))
    np.save(tmp_path / "row_ids.npy", np.full((4, 1), 99, np.uint32))
    flags = ["gather_rows", "-i", "table=table.npy", "-i", "row_ids=row_ids.npy"]
    assert _cli("run", "layouts.py", *flags, cwd=tmp_path).returncode == 1
    proc = _cli("check", "layouts.py", *flags, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_command_line_usage_errors(tmp_path):
    shutil.copy(KERNELS / "single_gemm.py", tmp_path)
    proc = _cli("run", "single_gemm.py", cwd=tmp_path)
    assert proc.returncode == 2 and "-i lhsT=FILE.npy -i rhs=FILE.npy" in proc.stderr
    proc = _cli("run", "single_gemm.py", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and "has no kernel 'nope'" in proc.stderr
    np.save(tmp_path / "a.npy", np.zeros((128, 64), np.float32))
    proc = _cli("run", "single_gemm.py", "--grid", "3", "-i", "lhsT=a.npy", cwd=tmp_path)
    assert proc.returncode == 2


# -- install(): never shadow a real nki ------------------------------------------------------------

def _stub_nki(folder):
    pkg = folder / "nki"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("REAL = True\n")
    (pkg / "language.py").write_text("REAL = True\n")


def test_a_real_nki_is_not_shadowed(tmp_path):
    _stub_nki(tmp_path)
    code = ("import warnings, apdsl.nki\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    ok = apdsl.nki.install()\n"
            "import nki, nki.language\n"
            "print(ok, nki.REAL, nki.language.REAL, [str(x.message)[:26] for x in w])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "False True True ['a real nki package is inst']", proc.stderr


def test_the_plugin_does_not_shadow_a_real_nki(tmp_path):
    _stub_nki(tmp_path)
    (tmp_path / "test_real.py").write_text(
        "import nki\n\ndef test_real():\n    assert nki.REAL\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "apdsl.nki", "-p", "no:cacheprovider", "-q",
         "-W", "always", str(tmp_path / "test_real.py")], cwd=tmp_path,
        capture_output=True, text=True,
        env={"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"})
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert "does not shadow it" in proc.stdout + proc.stderr


def test_pyproject_declares_the_pytest_entry_point():
    text = (ROOT / "pyproject.toml").read_text()
    assert '[project.entry-points.pytest11]' in text and '"apdsl.nki.entry"' in text


# -- the worked example and pytest reports ----------------------------------------------------------

def _pytest(folder, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "apdsl.nki", "-p", "no:cacheprovider", "-q",
         *args], cwd=folder, capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_worked_example_runs_under_the_plugin(tmp_path):
    for f in (ROOT / "examples" / "nki_python").glob("*.py"):
        shutil.copy(f, tmp_path)
    proc = _pytest(tmp_path)
    assert proc.returncode == 0 and "6 passed" in proc.stdout, proc.stdout + proc.stderr


def test_a_failing_kernel_test_reports_the_diagnostic_in_the_users_source(tmp_path):
    shutil.copy(ROOT / "examples" / "nki_python" / "transpose_kernel.py", tmp_path)
    (tmp_path / "test_wide.py").write_text(
        "import numpy as np\nfrom transpose_kernel import transpose_kernel\n\n\n"
        "def test_wide():\n    transpose_kernel(np.zeros((128, 256), np.float32),\n"
        "                     np.eye(128, dtype=np.float32))\n")
    proc = _pytest(tmp_path)
    out = proc.stdout
    assert proc.returncode == 1
    assert "transpose_kernel.py:22:14: error[APK301]: psum tensor has 256 partitions" in out
    assert 'test_wide.py", line 6, in test_wide' in out
    assert "apdsl/" not in out.split("short test summary")[0]  # no frame of apdsl's


def test_show_draws_a_view_a_python_kernel_binds(tmp_path):
    shutil.copy(KERNELS / "single_gemm.py", tmp_path)
    (tmp_path / "top.py").write_text(
        "import nki.language as nl\n\nt = nl.ndarray((4, 8), dtype=nl.float32, "
        "buffer=nl.sbuf)\nv = t[:, 2:6]\n")
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", _f32(rng, 128, 64))
    np.save(tmp_path / "b.npy", _f32(rng, 128, 512))
    flags = ["-i", "lhsT=a.npy", "-i", "rhs=b.npy"]
    proc = _cli("show", "single_gemm.py", "gemm_one_tile.out_sb", *flags,
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()
    assert head[0] == "gemm_one_tile.out_sb" and "float32[64, 512] @ sbuf" in head[1]
    proc = _cli("show", "single_gemm.py", "gemm_one_tile.K", *flags, cwd=tmp_path)
    assert proc.returncode == 1 and "error[APK110]" in proc.stderr
    proc = _cli("show", "single_gemm.py", "gemm_one_tile.zz", *flags, cwd=tmp_path)
    assert proc.returncode == 1 and "error[APK101]" in proc.stderr
    proc = _cli("show", "top.py", "v", cwd=tmp_path)
    assert proc.returncode == 0 and "float32[4, 8] @ sbuf" in proc.stdout, proc.stderr


def test_the_entry_point_plugin_is_inert_unless_asked(tmp_path):
    """`apdsl.nki.entry` is what the pytest11 entry point loads in every session: it installs
    only with --apdsl-nki (loaded here with -p, as the entry point would load it; autoloading is
    off so that an installed entry point does not register it a second time)."""
    (tmp_path / "test_k.py").write_text(
        "import nki.isa as nisa\n\ndef test_k():\n    assert 'dma_copy' in dir(nisa)\n")
    def run(*flags):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "apdsl.nki.entry", "-p", "no:cacheprovider",
             "-q", *flags, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                 "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "1 passed" in run("--apdsl-nki").stdout
    assert "No module named 'nki'" in run().stdout


def test_programs_returning_different_values_are_refused():
    @nki.jit
    def k():
        out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=1.0)
        nisa.dma_copy(dst=out, src=t)
        return out, np.full(2, nl.program_id(0))
    with pytest.raises(apdsl.ApdslError) as info:
        k[2]()
    assert info.value.code == "APK146"
    got, host = k[1]()
    assert got[0, 0] == 1.0 and list(host) == [0, 0]


def test_lower_names_tensors_after_the_users_variables(tmp_path):
    shutil.copy(KERNELS / "single_gemm.py", tmp_path)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", _f32(rng, 128, 64))
    np.save(tmp_path / "b.npy", _f32(rng, 128, 512))
    proc = _cli("lower", "single_gemm.py", "-i", "lhsT=a.npy", "-i", "rhs=b.npy", "--json",
                cwd=tmp_path)
    import json
    ops = [json.loads(line) for line in proc.stdout.splitlines()]
    matmul = next(o for o in ops if o["op"] == "nc_matmul")
    assert (matmul["line"], matmul["operands"]["dst"]["tensor"],
            matmul["operands"]["stationary"]["tensor"],
            matmul["operands"]["moving"]["tensor"]) == (22, "acc", "stationary", "moving")


def test_isa_enums_are_attributes_in_python_kernels(nki_installed):
    """`nisa.engine.gpsimd`, `nisa.dge_mode.hwdge`, `nisa.oob_mode.skip`: Python code reads the
    enums' members as attributes (in .apk they are names of a builtin namespace)."""
    @nki.jit
    def copy_on(a, engine):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=u, src=t, engine=engine)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=u)
        return out

    a = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    from apdsl.runtime.core.trace import tracing
    with tracing() as tr:
        out = nki.simulate(copy_on)(a, nisa.engine.gpsimd)
    np.testing.assert_array_equal(out, a)
    assert [r.hints for r in tr.records if r.op == "tensor_copy"] == [{"engine": "gpsimd"}]
    assert (nisa.dge_mode.hwdge, nisa.oob_mode.skip) == ("hwdge", "skip")
    with pytest.raises(AttributeError):
        nisa.engine.warp_drive  # noqa: B018


@nki.jit
def _overwrite_first_row(x, row):
    # writes its argument x (as a legacy kernel writes its output argument)
    nisa.dma_copy(dst=x[0:1, :], src=row)


def test_an_argument_the_kernel_wrote_is_written_back_by_its_values():
    # the same bits, equal values of other bits (0.0 over -0.0, another NaN payload) and a
    # changed value: only the last is written back into the caller's array
    from apdsl.nki.kernel import same_values
    base = np.array([[-0.0, np.nan, 1.0], [2.0, 3.0, 4.0]], np.float32)
    nan2 = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)[0]
    for row, back in (([-0.0, np.nan, 1.0], False), ([0.0, nan2, 1.0], False),
                      ([5.0, np.nan, 1.0], True)):
        x = base.copy()
        before = x.tobytes()
        nki.simulate_kernel(_overwrite_first_row, x, np.array([row], np.float32))
        assert (x.tobytes() != before) == back, row
    rng = np.random.default_rng(7)
    for _ in range(50):
        a = rng.choice([0.0, -0.0, np.nan, nan2, 1.0], size=(3, 4)).astype(np.float32)
        b = a.copy()
        if rng.random() < 0.5:
            b.flat[rng.integers(b.size)] = rng.choice([0.0, -0.0, np.nan, nan2, 1.0, 2.0])
        assert same_values(b, a) == np.array_equal(b, a, equal_nan=True)
    ints = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert same_values(ints.copy(), ints) and not same_values(ints + 1, ints)
    assert same_values(ints.T.copy(), ints.T)  # (a view that is not C-contiguous: by values)
