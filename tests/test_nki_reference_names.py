"""Names of today's NKI reference (issue 24, SPEC 16) that kernels meet beyond the
instructions: `nl.MemoryRegion`, `nl.DType`, the buffer predicates, `nisa.get_nc_sub_version`,
`nisa.NkiValidationError` and `nisa.VirtualRegister`, as kernels written with `@nki.jit` use
them, and under `install()` as `import nki.language as nl`."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

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
    np.save(tmp_path / "a.npy", _ones())
    proc = apdsl_in_process("run", "k.py", "-i", "a=a.npy", "-o", "out.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), 3 * _ones())


def test_the_names_are_in_the_namespaces():
    for name in ("MemoryRegion", "DType", "is_hbm", "is_on_chip", "is_psum", "is_sbuf"):
        assert name in dir(nl) and name not in dir(nisa)
    for name in ("get_nc_sub_version", "NkiValidationError", "VirtualRegister"):
        assert name in dir(nisa) and name not in dir(nl)
