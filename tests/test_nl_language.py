"""`nl.tile_size` per target, `nl.ds`, the range functions, the `nisa` enums and
`nisa.get_nc_version()`, in `.apk` and in the Python frontend."""

from __future__ import annotations

import numpy as np
import pytest
from support import raises_code

from apdsl.semantics.program import Program

KiB = 1024
# docs/facts/nki_isa.md section 5: the tiling overview (pmax 128, psum_bank_fmax 512,
# gemm_stationary_fmax 128, gemm_moving_fmax 512), MIG (8 banks of 2 KiB), the architecture
# guides (SBUF 192/224/256 KiB a partition on trn1/trn2/trn3)
EXPECTED = {
    "trn1": (128, 512, 2048, 8, 128, 512, 512, 192 * KiB),
    "trn2": (128, 512, 2048, 8, 128, 512, 512, 224 * KiB),
    "trn3": (128, 512, 2048, 8, 128, 512, 512, 256 * KiB),
}
FIELDS = ("pmax", "psum_bank_fmax", "psum_bank_fmax_bytes", "psum_num_banks",
          "gemm_stationary_fmax", "gemm_moving_fmax", "bn_stats_fmax", "sbuf_fmax_bytes")


def run(src: str):
    return Program(src, "<nl>").run()


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_tile_size_per_target_in_apk(target):
    checks = "\n".join(f"assert nl.tile_size.{f} == {v}, nl.tile_size.{f}"
                       for f, v in zip(FIELDS, EXPECTED[target]))
    sb = EXPECTED[target][-1]
    run(f"set_target({target!r})\n{checks}\n"
        f"assert nl.tile_size.psum_fmax == 512 and nl.tile_size.sbuf_fmax == {sb // 4}\n"
        f"assert nl.tile_size.sbuf_size_bytes == {128 * sb}\n"
        f"assert nl.tile_size.total_available_sbuf_size == {sb}\n")


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_tile_size_per_target_in_python(target):
    import apdsl
    import apdsl.nki.language as nl
    with apdsl.target(target):
        assert tuple(getattr(nl.tile_size, f) for f in FIELDS) == EXPECTED[target]


@pytest.mark.parametrize("field", ["psum_min_align", "sbuf_min_align"])
def test_unpublished_tile_size_fields_are_refused(field):
    with raises_code("APK156") as err:
        run(f"x = 1\ny = nl.tile_size.{field}\n")
    assert err.value.span.line == 2


def test_tile_size_has_only_its_fields():
    with raises_code("APK103"):
        run("y = nl.tile_size.pmx\n")


def test_nc_version_follows_the_target():
    run("""
assert nisa.get_nc_version() == nisa.nc_version.gen3      # trn2, the default
assert nisa.get_nc_version() > nisa.nc_version.gen2 and nisa.nc_version.gen4 == 4
set_target("trn1")
assert nisa.get_nc_version() == nisa.nc_version.gen2
set_target("trn3")
assert nisa.get_nc_version() == nisa.nc_version.gen4
""")
    import apdsl
    import apdsl.nki.isa as nisa
    with apdsl.target("trn1"):
        assert nisa.get_nc_version() == nisa.nc_version.gen2 == 2
    assert repr(nisa.nc_version.gen3) == "nisa.nc_version.gen3"


def test_enums_have_the_reference_members():
    # docs/facts/nki_isa.md section 1
    run("""
assert [nisa.engine.tensor, nisa.engine.vector, nisa.engine.scalar, nisa.engine.gpsimd,
        nisa.engine.dma, nisa.engine.sync, nisa.engine.unknown] == ["tensor", "vector",
        "scalar", "gpsimd", "dma", "sync", "unknown"]
assert nisa.vector_engine == nisa.engine.vector and nisa.gpsimd_engine == "gpsimd"
assert [nisa.dge_mode.unknown, nisa.dge_mode.swdge, nisa.dge_mode.hwdge,
        nisa.dge_mode.none] == ["unknown", "swdge", "hwdge", "none"]
assert [nisa.oob_mode.error, nisa.oob_mode.skip] == ["error", "skip"]
assert [nisa.reduce_cmd.idle, nisa.reduce_cmd.reset, nisa.reduce_cmd.reduce,
        nisa.reduce_cmd.reset_reduce, nisa.reduce_cmd.load_reduce] == ["idle", "reset",
        "reduce", "reset_reduce", "load_reduce"]
assert nisa.matmul_perf_mode.double_row == "double_row"
""")
    with raises_code("APK103"):
        run("x = nisa.engine.tensr\n")


def test_enum_values_are_what_the_instructions_take():
    src = """
kernel k(a: f32[8, 4] @ hbm) -> f32[8, 4] @ shared_hbm:
    t = nl.ndarray((8, 4), nl.float32, nl.sbuf)
    nisa.dma_copy(dst=t, src=a, dge_mode=nisa.dge_mode.swdge, oob_mode=nisa.oob_mode.error)
    u = nl.ndarray((8, 4), nl.float32, nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, engine=nisa.engine.gpsimd)
    out = nl.ndarray((8, 4), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    value = Program(src, "<nl>").run(None, {"a": a}).value.numpy()
    np.testing.assert_array_equal(value, a)


def test_ds_and_the_range_functions():
    run("""
t = nl.ndarray((8, 64), nl.float32, nl.sbuf)
v = t[:, nl.ds(16, 8)]
assert v.shape == (8, 8) and v.offset == 16
assert list(nl.affine_range(3)) == [0, 1, 2] and list(nl.sequential_range(1, 4)) == [1, 2, 3]
assert list(nl.static_range(0, 6, 2)) == [0, 2, 4] and list(nl.dynamic_range(2, 5)) == [2, 3, 4]
""")


@pytest.mark.parametrize("expr", ["nl.dynamic_range(0, 4, 0)", "nl.dynamic_range(1.5)",
                                  "nl.dynamic_range(0, 4, r)"])
def test_dynamic_range_refusals(expr):
    with raises_code("APK157"):
        run(f"r = register_alloc(3)\nx = {expr}\n")


def test_dynamic_range_reads_a_register_bound():
    run("""
r = register_alloc(3)
assert list(nl.dynamic_range(1, r)) == [1, 2]
assert list(nl.dynamic_range(r)) == [0, 1, 2]
""")
