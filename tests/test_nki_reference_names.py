"""Names of today's NKI reference (issue 24, SPEC 16) that kernels meet beyond the
instructions: `nl.MemoryRegion`, `nl.DType`, the buffer predicates, `nisa.get_nc_sub_version`,
`nisa.NkiValidationError` and `nisa.VirtualRegister`, as kernels written with `@nki.jit` use
them, and under `install()` as `import nki.language as nl`."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError
from tests.support import apdsl_in_process


def _ones(p: int = 128, f: int = 64) -> np.ndarray:
    return np.ones((p, f), np.float32)


# -- memory regions ----------------------------------------------------------------------------

def test_memory_region_is_the_reference_enum_of_apdsl_buffer_names():
    assert [m.name for m in nl.MemoryRegion] == ["sbuf", "psum", "private_hbm", "shared_hbm"]
    assert all(m == m.name and m.value == m.name for m in nl.MemoryRegion)
    assert nl.MemoryRegion.sbuf == nl.sbuf and nl.MemoryRegion.psum == nl.psum
    assert nl.MemoryRegion.shared_hbm == nl.shared_hbm
    # the reference: nl.hbm is "an alias of private_hbm"
    assert nl.MemoryRegion.private_hbm == nl.hbm and nl.hbm == nl.MemoryRegion.private_hbm
    assert nl.MemoryRegion("hbm") is nl.MemoryRegion.private_hbm
    assert nl.MemoryRegion.sbuf != nl.psum and nl.MemoryRegion.private_hbm != nl.shared_hbm
    assert f"{nl.MemoryRegion.psum}" == "psum" and str(nl.MemoryRegion.sbuf) == "sbuf"
    assert isinstance(nl.float32, nl.DType) and isinstance(nl.bfloat16, nl.DType)


def test_a_kernel_asks_where_its_tensors_are():
    seen = {}

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.MemoryRegion.psum)
        for name, x in (("a", a), ("out", out), ("t", t), ("p", p)):
            seen[name] = (nl.is_hbm(x.buffer), nl.is_on_chip(x.buffer),
                          nl.is_sbuf(x.buffer), nl.is_psum(x.buffer))
        seen["regions"] = (t.buffer == nl.MemoryRegion.sbuf, p.buffer == nl.MemoryRegion.psum,
                           out.buffer == nl.MemoryRegion.shared_hbm,
                           t.buffer == nl.MemoryRegion.psum)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(k(_ones()), _ones())
    assert seen["a"] == (True, False, False, False)
    assert seen["out"] == (True, False, False, False)
    assert seen["t"] == (False, True, True, False)
    assert seen["p"] == (False, True, False, True)
    assert seen["regions"] == (True, True, True, False)


@pytest.mark.parametrize("region, answers", [
    ("sbuf", (False, True, True, False)), ("psum", (False, True, False, True)),
    ("hbm", (True, False, False, False)), ("private_hbm", (True, False, False, False)),
    ("shared_hbm", (True, False, False, False))])
def test_the_predicates_take_names_and_members(region, answers):
    for value in (getattr(nl, region), nl.MemoryRegion(region)):
        assert (nl.is_hbm(value), nl.is_on_chip(value), nl.is_sbuf(value),
                nl.is_psum(value)) == answers


@pytest.mark.parametrize("value", ["dram", 3, None, "ub"])
def test_a_predicate_of_something_not_a_region_is_apk105(value):
    with pytest.raises(ApdslError) as e:
        nl.is_sbuf(value)
    assert e.value.code == "APK105"


# -- nisa.get_nc_sub_version, VirtualRegister ---------------------------------------------------

@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_sub_version_is_the_first_revision_on_every_target(target):
    with apdsl.target(target):
        assert nisa.get_nc_sub_version() == 0


def test_virtual_register_is_the_type_register_alloc_returns():
    seen = []

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        seen.append(isinstance(nisa.register_alloc(2), nisa.VirtualRegister))
        nl.store(out, nl.load(a))
        return out

    k(_ones())
    assert seen == [True]


# -- NkiValidationError --------------------------------------------------------------------------

def test_a_kernel_catches_a_hardware_rule_as_nki_validation_error():
    caught = []

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        wide = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.sbuf)
        try:  # the Vector Engine transposes at most 32 x 32: a hardware constraint
            nisa.nc_transpose(dst=wide, data=t)
        except nisa.NkiValidationError as e:
            caught.append(e.code)
            nisa.tensor_copy(dst=t, src=t)
        nl.store(out, t)
        return out

    np.testing.assert_array_equal(k(_ones()), _ones())
    assert caught and caught[0].startswith("APK3")
    assert issubclass(nisa.NkiValidationError, ApdslError)


def test_a_python_value_mistake_is_not_a_hardware_constraint():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        try:
            nl.sum(nl.load(a), axis=0)  # the partition axis: a reference rule, APK158
        except nisa.NkiValidationError:
            return None
        return out

    with pytest.raises(ApdslError) as e:
        k(_ones())
    assert e.value.code == "APK158"


# -- the names as users import them ------------------------------------------------------------

def _run_file(folder, a: np.ndarray) -> np.ndarray:
    """`apdsl run k.py -i a=a.npy -o out.npy` in `folder` (k.py written by the test), as a
    user runs a kernel file: the output it saved."""
    np.save(folder / "a.npy", a)
    proc = apdsl_in_process("run", "k.py", "-i", "a=a.npy", "-o", "out.npy", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return np.load(folder / "out.npy")


def test_the_names_under_install_as_a_user_writes_them(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent('''
        import nki
        import nki.isa as nisa
        import nki.language as nl
        from nki.language import MemoryRegion, is_on_chip


        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            assert t.buffer == MemoryRegion.sbuf and is_on_chip(t.buffer)
            assert nl.is_hbm(a.buffer) and not nl.is_psum(t.buffer)
            assert nisa.get_nc_sub_version() == 0
            try:
                nisa.nc_transpose(dst=nl.ndarray((64, 128), nl.float32, buffer=nl.sbuf),
                                  data=t)
            except nisa.NkiValidationError:
                t = nl.multiply(t, 3.0)
            nl.store(out, t)
            return out
        '''))
    np.testing.assert_array_equal(_run_file(tmp_path, _ones()), 3 * _ones())


def test_the_names_are_in_the_namespaces():
    for name in ("MemoryRegion", "DType", "is_hbm", "is_on_chip", "is_psum", "is_sbuf"):
        assert name in dir(nl) and name not in dir(nisa)
    for name in ("get_nc_sub_version", "NkiValidationError", "VirtualRegister"):
        assert name in dir(nisa) and name not in dir(nl)


# -- nl.where ------------------------------------------------------------------------------------

def _bf16(a: np.ndarray) -> np.ndarray:
    import ml_dtypes
    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


def _lowered_ops(kernel, *args) -> list[str]:
    """The instructions one run of `kernel` issues, in order (as `lower` records them)."""
    from apdsl.runtime.core.trace import tracing
    with tracing() as tr:
        kernel(*args)
    return [r.op for r in tr.records]


@settings(max_examples=30, deadline=None, derandomize=True)
@given(p=st.integers(1, 128), f=st.integers(1, 40), seed=st.integers(0, 999),
       xdt=st.sampled_from(["float32", "bfloat16"]), ydt=st.sampled_from(["float32",
                                                                         "bfloat16"]),
       cond_kind=st.sampled_from(["compare", "loaded", "uint8"]))
def test_where_picks_like_numpy(p, f, seed, xdt, ydt, cond_kind):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((p, f)).astype(np.float32)
    a[rng.random((p, f)) < 0.1] = np.inf
    b = rng.standard_normal((p, f)).astype(np.float32)
    b[rng.random((p, f)) < 0.1] = np.nan
    c = rng.standard_normal((p, f)).astype(np.float32)
    a = _bf16(a) if xdt == "bfloat16" else a
    b = _bf16(b) if ydt == "bfloat16" else b
    mask = c > 0
    given_c = {"compare": c, "loaded": mask.astype(np.float32),
               "uint8": mask.astype(np.uint8)}[cond_kind]

    @nki.jit
    def k(x, y, cond):
        tx, ty, tc = nl.load(x), nl.load(y), nl.load(cond)
        if cond_kind == "compare":
            tc = nl.greater(tc, 0.0)
        r = nl.where(tc, tx, ty)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    got = k(a, b, given_c)
    want_dt = np.float32 if "float32" in (xdt, ydt) else got.dtype
    assert got.dtype == want_dt
    want = np.where(mask, a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(got.dtype)
                                  .astype(np.float32))


def test_where_takes_numbers_and_a_dtype():
    c = (np.arange(128 * 8).reshape(128, 8) % 3 == 0).astype(np.float32)
    a = np.full((128, 8), 7.5, np.float32)

    @nki.jit
    def k(x, cond):
        tc, tx = nl.load(cond), nl.load(x)
        r1 = nl.where(tc, tx, -1.0)
        r2 = nl.where(tc, 2.0, tx, dtype=nl.int32)
        o1 = nl.ndarray(r1.shape, dtype=r1.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(r2.shape, dtype=r2.dtype, buffer=nl.shared_hbm)
        nl.store(o1, r1)
        nl.store(o2, r2)
        return o1, o2

    r1, r2 = k(a, c)
    np.testing.assert_array_equal(r1, np.where(c == 1, 7.5, -1.0).astype(np.float32))
    assert r2.dtype == np.int32
    np.testing.assert_array_equal(r2, np.where(c == 1, 2, 8).astype(np.int32))  # 7.5 -> 8


def test_where_is_a_predicated_copy_over_y():
    c = np.ones((128, 8), np.float32)

    @nki.jit
    def k(cond):
        tc = nl.load(cond)
        r = nl.where(tc, tc, tc)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    assert _lowered_ops(k, c) == ["dma_copy", "tensor_copy", "tensor_copy",
                                  "tensor_copy_predicated", "dma_copy"]


@pytest.mark.parametrize("call, code", [
    (lambda x, tc: nl.where(nl.multiply(tc, 0.5), tc, tc), "APK166"),
    (lambda x, tc: nl.where(tc, tc, nl.load(x[0:64, :])), "APK154"),
    (lambda x, tc: nl.where(tc, x, tc), "APK151"),
    (lambda x, tc: nl.where(tc, "a", tc), "APK152"),
])
def test_where_refusals(call, code):
    @nki.jit
    def k(x):
        call(x, nl.load(x))
        return x

    with pytest.raises(ApdslError) as e:
        k(np.ones((128, 8), np.float32))
    assert e.value.code == code


# -- nl.expand_dims --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis", [((128, 8), 1), ((128, 8), 2), ((128, 8), -1),
                                         ((16, 4, 6), 2), ((16, 4, 6), -2)])
def test_expand_dims_is_a_view_like_numpy(shape, axis):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    want = np.expand_dims(a, axis)

    @nki.jit
    def k(x):
        t = nl.load(x)
        e = nl.expand_dims(t, axis)
        assert e.shape == want.shape
        out = nl.ndarray(e.shape, dtype=e.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(e))
        return out

    np.testing.assert_array_equal(k(a), want)
    assert _lowered_ops(k, a) == ["dma_copy", "tensor_copy", "dma_copy"]  # no instruction


def test_expand_dims_of_hbm_may_insert_anywhere():
    seen = []

    @nki.jit
    def k(x):
        seen.extend([nl.expand_dims(x, 0).shape, nl.expand_dims(x, -3).shape])
        return x

    k(np.ones((4, 8), np.float32))
    assert seen == [(1, 4, 8), (1, 4, 8)]


@pytest.mark.parametrize("axis, code", [(0, "APK202"), (-3, "APK202"), (3, "APK201"),
                                        (-4, "APK201"), (1.0, "APK111")])
def test_expand_dims_refusals(axis, code):
    @nki.jit
    def k(x):
        nl.expand_dims(nl.load(x), axis)
        return x

    with pytest.raises(ApdslError) as e:
        k(np.ones((128, 8), np.float32))
    assert e.value.code == code


# -- nl.softmax ------------------------------------------------------------------------------------

def _tol(dtype: str) -> dict:
    return {"rtol": 2.0 ** -7, "atol": 2.0 ** -12} if dtype == "bfloat16" else \
        {"rtol": 2e-6, "atol": 1e-7}


@settings(max_examples=25, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(["float32", "bfloat16"]), seed=st.integers(0, 999),
       case=st.sampled_from([((128, 64), 1), ((7, 33), -1), ((16, 4, 6), (1, 2)),
                             ((16, 4, 6), 2), ((8, 3, 5), [2])]))
def test_softmax_against_numpy(dtype, seed, case):
    shape, axis = case
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 4).astype(np.float32)
    a = _bf16(a) if dtype == "bfloat16" else a

    @nki.jit
    def k(x):
        r = nl.softmax(nl.load(x), axis=axis)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    got = k(a)
    assert got.dtype == a.dtype
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    v = a.astype(np.float64)
    e = np.exp(v - v.max(axis=axes, keepdims=True))
    want = e / e.sum(axis=axes, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float64), want, **_tol(dtype))


def test_softmax_of_the_reference_example_is_uniform_and_casts_to_dtype():
    @nki.jit
    def k():
        a = nl.full((128, 512), 1.0, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.softmax(a, axis=1, dtype=nl.bfloat16)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    got = k()
    assert got.dtype.name == "bfloat16"
    np.testing.assert_array_equal(got.astype(np.float32), np.float32(1 / 512))


@pytest.mark.parametrize("axis", [0, [0, 1], 3, [1]])
def test_softmax_axes_are_free_and_trailing(axis):
    @nki.jit
    def k(x):
        nl.softmax(nl.load(x), axis=axis)
        return x

    with pytest.raises(ApdslError) as e:
        k(np.ones((16, 4, 6), np.float32))
    assert e.value.code == "APK158"


# -- nl.rms_norm -----------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(["float32", "bfloat16"]), seed=st.integers(0, 999),
       case=st.sampled_from([((128, 64), (128, 64), 1), ((32, 48), (1, 48), 1),
                             ((16, 4, 6), (16, 4, 6), [1, 2]), ((16, 4, 6), (16, 4, 1), 2)]),
       eps=st.sampled_from([1e-6, 1e-3, 0.5]), extra_n=st.integers(0, 9))
def test_rms_norm_against_numpy(dtype, seed, case, eps, extra_n):
    shape, wshape, axis = case
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    a, w = (_bf16(a), _bf16(w)) if dtype == "bfloat16" else (a, w)
    axes = tuple(axis) if isinstance(axis, list) else (axis,)
    n = int(np.prod([shape[i] for i in axes])) + extra_n  # n is the caller's count

    @nki.jit
    def k(x, wt):
        r = nl.rms_norm(nl.load(x), nl.load(wt), axis=axis, n=n, epsilon=eps)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    got = k(a, w)
    assert got.dtype == a.dtype
    v = a.astype(np.float64)
    want = v / np.sqrt((v * v).sum(axis=axes, keepdims=True) / n + eps) * w.astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want, **_tol(dtype))


def test_rms_norm_of_the_reference_example():
    @nki.jit
    def k():
        x = nl.full((128, 512), 2.0, dtype=nl.float32, buffer=nl.sbuf)
        w = nl.full((128, 512), 1.0, dtype=nl.float32, buffer=nl.sbuf)
        r = nl.rms_norm(x, w, axis=1, n=512)
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out

    np.testing.assert_allclose(k(), 2.0 / np.sqrt(4.0 + 1e-6), rtol=1e-6)


@pytest.mark.parametrize("call, code", [
    (lambda x, t: nl.rms_norm(t, t, axis=1, n=0), "APK172"),
    (lambda x, t: nl.rms_norm(t, t, axis=1, n=8, epsilon=-1.0), "APK172"),
    (lambda x, t: nl.rms_norm(t, t, axis=0, n=8), "APK158"),
    (lambda x, t: nl.rms_norm(t, nl.load(x[:, 0:4]), axis=1, n=8), "APK154"),
])
def test_rms_norm_refusals(call, code):
    @nki.jit
    def k(x):
        call(x, nl.load(x))
        return x

    with pytest.raises(ApdslError) as e:
        k(np.ones((128, 8), np.float32))
    assert e.value.code == code


def test_composites_in_a_legacy_kernel(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent('''
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl


        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            t = nl.load(a)
            s = nl.softmax(t, axis=1)
            r = nl.where(nl.greater(t, 0.0), s, t)
            nl.store(out, r)
            return out
        '''))
    a = np.random.default_rng(3).standard_normal((128, 16)).astype(np.float32)
    e = np.exp(a - a.max(1, keepdims=True))
    want = np.where(a > 0, e / e.sum(1, keepdims=True), a)
    np.testing.assert_allclose(_run_file(tmp_path, a), want, rtol=2e-6, atol=1e-7)



# -- nisa.NkiInstruction ---------------------------------------------------------------------------

def test_an_instruction_call_returns_its_handle_and_depends_on_is_located():
    seen = {}

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        b = nisa.dma_copy(dst=t, src=a)
        c = nisa.dma_copy(dst=out, src=t)
        seen["handles"] = (isinstance(b, nisa.NkiInstruction), isinstance(c, nisa.NkiInstruction))
        c.depends_on(b)
        return out

    with pytest.raises(ApdslError) as e:
        k(_ones())
    assert seen["handles"] == (True, True)
    assert e.value.code == "APK938" and "dma_copy.depends_on(dma_copy)" in e.value.message
    assert e.value.span is not None and e.value.span.file.endswith("test_nki_reference_names.py")


def test_depends_on_checks_its_producers_first():
    @nki.jit
    def k(a):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a).depends_on(t)
        return a

    with pytest.raises(ApdslError) as e:
        k(_ones())
    assert e.value.code == "APK938" and "not an NkiInstruction" in e.value.message
