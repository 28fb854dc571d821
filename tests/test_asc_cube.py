"""The cube path in pyasc's form (SPEC 17, 18): `data_copy` with `Nd2NzParams` (GM -> L1,
ND -> NZ), `load_data` with `LoadData2DParams` (whole fractals into L0A/L0B, transposed or
not), `mmad` with `MmadParams` and `fixpipe` with `FixpipeParamsV220` on pyasc's flat
LocalTensors, `TQueBind`, the C2 position.  Oracles: brute-force NumPy models of the AscendC
pages' formulas (each element's destination written out by loops), `A @ B` in float32, and the
cube + vector example against NumPy through the CLI; its mutants (a missing event, a tensor in
the wrong position, data in the wrong buffer for its format, an MmadParams pyasc empties) are
errors at the user's line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.asc as asc

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "asc_python" / "matmul_epilogue.py"
SEEN: dict[str, np.ndarray] = {}


def _image(t: asc.LocalTensor) -> np.ndarray:
    """What local tensor `t`'s storage holds now, as its dtype (a test's look inside)."""
    return t.tensor.storage.elements(t.tensor.dtype).copy()


# -- Nd2Nz ---------------------------------------------------------------------------------------
def _nd2nz_model(src: np.ndarray, p: tuple, c0: int, size: int) -> np.ndarray:
    """The L1 image the DataCopy ND2NZ page describes, element by element (NaN: not written)."""
    nd, n, d, snd, sd, c0s, ns, dms = p
    out = np.full(size, np.nan)
    for i in range(nd):
        for r in range(n):
            for c in range(-(-d // c0) * c0):
                at = i * dms + (c // c0) * c0s * c0 + r * ns * c0 + c % c0
                out[at] = src[i * snd + r * sd + c] if c < d else 0.0
    return out


@asc.jit
def _nd2nz(x: asc.GlobalAddress, size: int, p0: int, p1: int, p2: int, p3: int, p4: int,
           p5: int, p6: int, p7: int):
    g = asc.GlobalTensor()
    g.set_global_buffer(x)
    l1 = asc.LocalTensor(x.dtype, asc.TPosition.A1, 0, size)
    asc.data_copy(l1, g, asc.Nd2NzParams(p0, p1, p2, p3, p4, p5, p6, p7))
    SEEN["l1"] = _image(l1)


@pytest.mark.parametrize(("dtype", "p"), [
    (np.float16, (1, 32, 48, 0, 48, 32, 1, 0)),      # the example's A: whole fractals
    (np.float16, (1, 16, 23, 0, 32, 16, 1, 0)),      # the page's 23 columns: padded with 0
    (np.float16, (2, 8, 23, 384, 32, 37, 2, 320)),   # the page's two matrices
    (np.float32, (1, 5, 10, 0, 12, 7, 1, 0)),        # C0 = 8 float32
    (np.int8, (1, 3, 40, 0, 40, 4, 1, 0)),           # C0 = 32 int8
])
def test_nd2nz_places_every_element_as_the_page_says(dtype, p):
    c0 = 32 // np.dtype(dtype).itemsize
    size = 4096 // np.dtype(dtype).itemsize
    x = (np.arange(2048) % 101 + 1).astype(dtype)
    _nd2nz[1, None](x, size, *p)
    want = _nd2nz_model(x.astype(np.float64), p, c0, size)
    written = ~np.isnan(want)
    np.testing.assert_array_equal(SEEN["l1"][written].astype(np.float64), want[written])


def test_nd2nz_goes_gm_to_l1_only():
    @asc.jit
    def k(x: asc.GlobalAddress):
        g = asc.GlobalTensor()
        g.set_global_buffer(x)
        u = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, 256)
        asc.data_copy(u, g, asc.Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0))
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(256, np.float16))
    assert e.value.code in ("APK673", "APK309") and e.value.span.file == __file__


# -- LoadData 2D ---------------------------------------------------------------------------------
def _load2d_model(src: np.ndarray, dst: np.ndarray, p: tuple, frac: int,
                  transpose: bool) -> np.ndarray:
    start, reps, stride, gap = p
    out = dst.copy()
    for i in range(reps):
        block = src[(start + i * stride) * frac:(start + i * stride + 1) * frac]
        if transpose:
            block = block.reshape(16, 16).T.ravel()
        out[i * (1 + gap) * frac:(i * (1 + gap) + 1) * frac] = block
    return out


@asc.jit
def _load2d(x: asc.GlobalAddress, n: int, pos: int, start: int, reps: int, stride: int,
            gap: int, transpose: int):
    g = asc.GlobalTensor()
    g.set_global_buffer(x)
    l1 = asc.LocalTensor(x.dtype, asc.TPosition.A1, 0, n)
    asc.data_copy(l1, g, n)
    asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    where = asc.TPosition.A2 if pos == 0 else asc.TPosition.B2
    l0 = asc.LocalTensor(x.dtype, where, 0, n)
    asc.load_data(l0, l1, asc.LoadData2DParams(start, reps, stride, 0, gap, transpose == 1))
    SEEN["l0"] = _image(l0)


@pytest.mark.parametrize(("dtype", "pos", "p", "transpose"), [
    (np.float16, 0, (0, 4, 1, 0), False),
    (np.float32, 0, (0, 4, 2, 2), False),      # the page's float example: strides and gaps
    (np.float32, 1, (1, 4, 2, 1), False),
    (np.float16, 0, (0, 2, 2, 2), True),       # the page's transposed half example
    (np.float16, 1, (1, 3, 2, 1), True),
    (np.int8, 1, (2, 3, 0, 0), False),         # src_stride 0: the same fractal again
])
def test_load2d_moves_whole_fractals_as_the_page_says(dtype, pos, p, transpose):
    n = 16 * 512 // np.dtype(dtype).itemsize
    frac = 512 // np.dtype(dtype).itemsize
    x = (np.arange(n) % 127).astype(dtype)
    _load2d[1, None](x, n, pos, *p, int(transpose))
    want = _load2d_model(x, np.zeros(n, dtype), p, frac, transpose)
    start, reps, stride, gap = p
    for i in range(reps):  # the fractals the load wrote
        at = slice(i * (1 + gap) * frac, (i * (1 + gap) + 1) * frac)
        np.testing.assert_array_equal(SEEN["l0"][at], want[at])


def test_load2d_transposes_16_bit_data_from_l1_only():
    x = np.zeros(16 * 128, np.float32)
    with pytest.raises(apdsl.ApdslError) as e:
        _load2d[1, None](x, x.size, 0, 0, 1, 1, 0, 1)
    assert e.value.code == "APK673" and "b16" in " ".join(e.value.notes)


# -- the whole path: Nd2Nz, LoadData, Mmad, Fixpipe -------------------------------------------------
@asc.jit
def _matmul(a: asc.GlobalAddress, b: asc.GlobalAddress, c: asc.GlobalAddress, m: int, k: int,
            n: int, mp: int, kp: int, np_: int, c0: int, acc: int):
    """C (m x n) = A (m x k) @ B (k x n); mp, kp, np_: m, k and n rounded up to the fractal
    sides (16, C0 and 16); acc: L0C's dtype (0 float32, 1 int32)."""
    a_gm = asc.GlobalTensor()
    b_gm = asc.GlobalTensor()
    c_gm = asc.GlobalTensor()
    a_gm.set_global_buffer(a)
    b_gm.set_global_buffer(b)
    c_gm.set_global_buffer(c)
    size = a.dtype.sizeof()
    a1 = asc.LocalTensor(a.dtype, asc.TPosition.A1, 0, mp * kp)
    b1 = asc.LocalTensor(a.dtype, asc.TPosition.B1, mp * kp * size, kp * np_)
    a2 = asc.LocalTensor(a.dtype, asc.TPosition.A2, 0, mp * kp)
    b2 = asc.LocalTensor(a.dtype, asc.TPosition.B2, 0, kp * np_)
    c1 = asc.LocalTensor(asc.float32 if acc == 0 else asc.int32, asc.TPosition.CO1, 0, mp * np_)
    asc.data_copy(a1, a_gm, asc.Nd2NzParams(1, m, k, 0, k, mp, 1, 0))
    # B goes to L1 transposed (n rows of k): its NZ fractals are ZN's once L0B holds them
    asc.data_copy(b1, b_gm, asc.Nd2NzParams(1, n, k, 0, k, np_, 1, 0))
    asc.set_flag(asc.HardEvent.MTE2_MTE1, 0)
    asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)
    for i in range(mp // 16):
        asc.load_data(a2[i * kp * 16:], a1, asc.LoadData2DParams(i, kp // c0, mp // 16))
    for j in range(kp // c0):
        asc.load_data(b2[j * np_ * c0:], b1, asc.LoadData2DParams(j * np_ // 16, np_ // 16, 1))
    asc.set_flag(asc.HardEvent.MTE1_M, 0)
    asc.wait_flag(asc.HardEvent.MTE1_M, 0)
    asc.mmad(c1, a2, b2, asc.MmadParams(m, n, k, unit_flag=0, cmatrix_source=False,
                                        cmatrix_init_val=True))
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    asc.fixpipe(c_gm, c1, asc.FixpipeParamsV220(n, m, mp, n))


def _run_matmul(dtype, m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    c0 = 32 // np.dtype(dtype).itemsize
    if np.dtype(dtype).kind == "i":
        a = rng.integers(-8, 8, (m, k)).astype(dtype)
        b = rng.integers(-8, 8, (k, n)).astype(dtype)
        c = np.zeros((m, n), np.int32)
    else:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        c = np.zeros((m, n), np.float32)
    up = lambda v, q: -(-v // q) * q  # noqa: E731
    # B's transpose in GM: Nd2Nz of its n rows gives L1 what L0B's ZN fractals hold
    _matmul[1, None](a, np.ascontiguousarray(b.T), c, m, k, n, up(m, 16), up(k, c0), up(n, 16),
                     c0, 0 if c.dtype == np.float32 else 1)
    return a, b, c


@pytest.mark.parametrize(("dtype", "m", "k", "n"), [
    (np.float16, 32, 48, 32), (np.float16, 20, 40, 24), (np.float32, 16, 8, 16),
    (np.float32, 7, 12, 5), (np.int8, 16, 64, 16), (np.int8, 3, 40, 17)])
def test_the_flat_cube_path_matches_numpy(dtype, m, k, n):
    a, b, c = _run_matmul(dtype, m, k, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if np.dtype(dtype).kind == "i":
        np.testing.assert_array_equal(c, want.astype(np.int32))
    else:
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40))
def test_the_flat_cube_path_matches_numpy_for_any_shape(m, k, n):
    a, b, c = _run_matmul(np.float16, m, k, n, seed=m * 1600 + k * 40 + n)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5,
                               atol=1e-4)


@asc.jit
def _mmad_flags(a: asc.GlobalAddress, c: asc.GlobalAddress, init: int, legacy: int):
    """L0A and L0B filled from GM by Load2D (ZZ / ZN data laid out by the host), two mmads."""
    a_gm = asc.GlobalTensor()
    c_gm = asc.GlobalTensor()
    a_gm.set_global_buffer(a)
    c_gm.set_global_buffer(c)
    a2 = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, 256)
    b2 = asc.LocalTensor(asc.float16, asc.TPosition.B2, 0, 256)
    c1 = asc.LocalTensor(asc.float32, asc.TPosition.CO1, 0, 256)
    asc.load_data(a2, a_gm, asc.LoadData2DParams(0, 1, 0))
    asc.load_data(b2, a_gm, asc.LoadData2DParams(0, 1, 0))
    asc.set_flag(asc.HardEvent.MTE2_M, 0)
    asc.wait_flag(asc.HardEvent.MTE2_M, 0)
    asc.mmad(c1, a2, b2, asc.MmadParams(16, 16, 16, unit_flag=0, cmatrix_source=False,
                                        cmatrix_init_val=True))
    if legacy == 1:
        second = asc.MmadParams(16, 16, 16, init == 0, 0, False, False, False)
    else:
        second = asc.MmadParams(16, 16, 16, unit_flag=0, cmatrix_source=False,
                                cmatrix_init_val=init == 1)
    asc.mmad(c1, a2, b2, second)
    asc.set_flag(asc.HardEvent.M_FIX, 0)
    asc.wait_flag(asc.HardEvent.M_FIX, 0)
    asc.fixpipe(c_gm, c1, asc.FixpipeParamsV220(16, 16, 16, 16))


@pytest.mark.parametrize("legacy", [0, 1])
@pytest.mark.parametrize("init", [0, 1])
def test_mmad_starts_from_zero_or_accumulates_as_its_flags_say(init, legacy):
    x = (np.arange(256) % 7 - 3).astype(np.float16)
    c = np.zeros(256, np.float32)
    _mmad_flags[1, None](x, c, init, legacy)
    one = x.reshape(16, 16).astype(np.float32) @ x.reshape(16, 16).T.astype(np.float32)
    np.testing.assert_array_equal(c.reshape(16, 16), one * (1 if init else 2))


def test_mmad_params_pyasc_empties_are_refused_at_the_users_line():
    @asc.jit
    def k(c: asc.GlobalAddress):
        a2 = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, 256)
        b2 = asc.LocalTensor(asc.float16, asc.TPosition.B2, 0, 256)
        c1 = asc.LocalTensor(asc.float32, asc.TPosition.CO1, 0, 256)
        asc.mmad(c1, a2, b2, asc.MmadParams(16, 16, 16))
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(4, np.float32))
    assert e.value.code == "APK670" and e.value.span.file == __file__
    assert "unit_flag" in e.value.help


# -- the example: cube + vector, its mutants, the CLI -------------------------------------------
def _example(source: str | None = None, tmp_path: Path | None = None):
    path = EXAMPLE
    if source is not None:
        path = tmp_path / "matmul_epilogue_mutant.py"
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"asc_cube_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    asc.install()
    spec.loader.exec_module(module)
    return module


def _inputs(m, cores, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((cores * m.TM, m.K)).astype(np.float16)
    b = rng.standard_normal((m.K, m.N)).astype(np.float16)
    r = rng.standard_normal((cores * m.TM, m.N)).astype(np.float32)
    return a, b, r


@pytest.mark.parametrize("cores", [1, 3])
def test_the_cube_vector_example_matches_numpy(cores):
    m = _example()
    a, b, r = _inputs(m, cores, cores)
    w = np.zeros((cores * m.TM, m.N), np.float32)
    d = np.zeros_like(w)
    m.matmul_epilogue[cores, None](a, b, r, w, d)
    p = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(w, p, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, p * np.float32(m.ALPHA) + r, rtol=1e-5, atol=1e-5)


WAITS = ["asc.wait_flag(asc.HardEvent.MTE2_MTE1, 0)", "asc.wait_flag(asc.HardEvent.MTE1_M, 0)",
         "asc.wait_flag(asc.HardEvent.M_FIX, 0)", "asc.cross_core_wait_flag(0, 2)",
         "asc.wait_flag(asc.HardEvent.MTE2_V, 0)", "asc.wait_flag(asc.HardEvent.V_MTE3, 0)"]


@pytest.mark.parametrize("wait", WAITS)
def test_without_any_one_wait_the_example_races_at_both_lines(tmp_path, wait):
    text = EXAMPLE.read_text()
    assert text.count(wait) == 1
    mutant = text.replace(wait, "pass  # " + wait)
    m = _example(mutant, tmp_path)
    a, b, r = _inputs(m, 2, 0)
    w = np.zeros((2 * m.TM, m.N), np.float32)
    with pytest.raises(apdsl.ApdslError) as e:
        m.matmul_epilogue[2, None](a, b, r, w, np.zeros_like(w))
    err = e.value
    assert err.code in ("APK570", "APK583"), err
    assert err.span.file.endswith("matmul_epilogue_mutant.py") and "(line " in err.message


MISUSE = [
    # an L0A tensor in L1's position: load_data writes L0A or L0B only
    ("a2 = asc.LocalTensor(asc.float16, asc.TPosition.A2, 0, TM * K)",
     "a2 = asc.LocalTensor(asc.float16, asc.TPosition.A1, 8192, TM * K)",
     "asc.load_data(a2[i * K * 16:]", "APK309"),
    # ND -> NZ into UB: the conversion is the GM -> L1 path's
    ("a1 = asc.LocalTensor(asc.float16, asc.TPosition.A1, 0, TM * K)",
     "a1 = asc.LocalTensor(asc.float16, asc.TPosition.VECIN, 0, TM * K)",
     "asc.data_copy(a1, a_gm", "APK673"),
    # the MmadParams pyasc builds empty (m = n = k = 0 on the device)
    ("asc.MmadParams(TM, N, K, unit_flag=0, cmatrix_source=False,\n"
     "                                        cmatrix_init_val=True)",
     "asc.MmadParams(TM, N, K)", "asc.mmad(c1", "APK670"),
    # a float32 accumulator read as float16 results without a quantising mode
    ("asc.FixpipeParamsV220(N, TM, TM, N)", "asc.FixpipeParamsV220(N, TM, TM // 2, N)",
     "asc.fixpipe(w_gm", "APK511"),
]


@pytest.mark.parametrize(("old", "new", "at", "code"), MISUSE)
def test_misuse_of_the_cube_path_is_an_error_at_the_users_line(tmp_path, old, new, at, code):
    text = EXAMPLE.read_text()
    assert old in text
    mutant = text.replace(old, new, 1)
    m = _example(mutant, tmp_path)
    a, b, r = _inputs(m, 1, 0)
    w = np.zeros((m.TM, m.N), np.float32)
    with pytest.raises(apdsl.ApdslError) as e:
        m.matmul_epilogue[1, None](a, b, r, w, np.zeros_like(w))
    line = 1 + next(i for i, s in enumerate(mutant.splitlines()) if at in s)
    assert e.value.code == code, e.value
    assert e.value.span.file.endswith("matmul_epilogue_mutant.py") and e.value.span.line == line


def test_the_cli_runs_and_lowers_the_example(tmp_path):
    m = _example()
    a, b, r = _inputs(m, 2, 5)
    w = np.zeros((2 * m.TM, m.N), np.float32)
    for name, v in (("a", a), ("b", b), ("r", r), ("w", w), ("d", w)):
        np.save(tmp_path / f"{name}.npy", v)
    args = [f"-i{x}={x}.npy" for x in "abrwd"]
    run = subprocess.run([sys.executable, "-m", "apdsl", "run", str(EXAMPLE), "--grid", "2",
                          *args, "-o", "out.npz"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    d = np.load(tmp_path / "out.npz")["r4"].reshape(w.shape)
    p = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(d, p * np.float32(m.ALPHA) + r, rtol=1e-5, atol=1e-5)
    low = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(EXAMPLE), "--grid", "1",
                          *args], cwd=tmp_path, capture_output=True, text=True)
    assert low.returncode == 0, low.stderr
    for part in ("asc.load_data  [AIC 0, pipe MTE1]", "mmad  [AIC 0, pipe M]",
                 "asc.fixpipe  [AIC 0, pipe FIX]", "asc.muls  [AIV 0, pipe V]"):
        assert part in low.stdout
    bad = tmp_path / "bad.py"
    bad.write_text(EXAMPLE.read_text().replace("asc.wait_flag(asc.HardEvent.M_FIX, 0)", "pass"))
    race = subprocess.run([sys.executable, "-m", "apdsl", "run", str(bad), "--grid", "1",
                           *args], cwd=tmp_path, capture_output=True, text=True)
    assert race.returncode == 1 and "APK570" in race.stderr and "Traceback" not in race.stderr


# -- TQueBind, C2 ----------------------------------------------------------------------------------
@asc.jit
def _bound(x: asc.GlobalAddress, z: asc.GlobalAddress, n: int):
    xg = asc.GlobalTensor()
    zg = asc.GlobalTensor()
    xg.set_global_buffer(x)
    zg.set_global_buffer(z)
    pipe = asc.TPipe()
    q = asc.TQueBind(asc.TPosition.VECIN, asc.TPosition.VECOUT, 2)
    pipe.init_buffer(q, 2, n * 4)
    for i in range(2):
        t = q.alloc_tensor(asc.float32)
        asc.data_copy(t, xg[i * n:], n)
        q.enque(t)
        u = q.deque(asc.float32)
        asc.data_copy(zg[i * n:], u, n)
        q.free_tensor(u)


def test_a_vecin_vecout_bind_queue_orders_mte2_before_mte3():
    x = np.arange(128, dtype=np.float32)
    z = np.zeros_like(x)
    _bound[1, None](x, z, 64)
    np.testing.assert_array_equal(z, x)


def test_a_bind_queue_of_a_path_apdsl_does_not_model_is_apk591():
    @asc.jit
    def k(x: asc.GlobalAddress):
        asc.TQueBind(asc.TPosition.VECOUT, asc.TPosition.A1, 1)
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(8, np.float32))
    assert e.value.code == "APK591" and "VECOUT -> A1" in e.value.message


def test_a_co2_local_tensor_is_global_memory_on_atlas_a2():
    @asc.jit
    def k(x: asc.GlobalAddress):
        asc.LocalTensor(asc.float32, asc.TPosition.CO2, 0, 64)
    with pytest.raises(apdsl.ApdslError) as e:
        k[1, None](np.zeros(8, np.float32))
    assert e.value.code == "APK664" and "global memory" in e.value.message
