"""The high-level `nl` functions (SPEC section 11): values and dtypes against NumPy, where the
result lives, the instruction each issues (as `lower` records it), and their refusals; the
`nl.`-prefixed names kept apart from the `.apk` builtins they clash with."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.semantics.program import Program

RNG = np.random.default_rng(11)


def run(source: str, inputs: dict | None = None, kernel: str | None = None):
    """Run `source`; (the kernel's result, the ops `lower` records, in order)."""
    result = Program(source, "<nl>").run(kernel, inputs or {}, trace=True)
    ops = [(r.op, {role: aps[0].buffer for role, aps in r.operands.items()})
           for r in result.trace.records]
    value = result.value
    return (value.numpy() if hasattr(value, "numpy") else value), ops, value


def test_load_copy_store_round_trip_issues_dma_tensor_copy_dma():
    src = """
kernel k(a: f32[128, 64] @ hbm) -> f32[128, 64] @ shared_hbm:
    t = nl.load(a)
    assert t.buffer == "sbuf" and t.dtype == nl.float32 and t.shape == (128, 64)
    u = nl.copy(t)
    assert u.buffer == "sbuf"
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, u)
    return out
"""
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    value, ops, _ = run(src, {"a": a})
    np.testing.assert_array_equal(value, a)
    assert ops == [("dma_copy", {"dst": "sbuf", "src": "hbm"}),
                   ("tensor_copy", {"dst": "sbuf", "src": "sbuf"}),
                   ("dma_copy", {"dst": "shared_hbm", "src": "sbuf"})]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32", "int8"])
def test_load_and_copy_cast_to_dtype(dtype):
    import ml_dtypes  # noqa: F401 - registers bfloat16 with NumPy
    src = f"""
kernel k(a: f32[64, 32] @ hbm) -> f32[64, 32] @ shared_hbm:
    t = nl.load(a, dtype=nl.{dtype})
    assert t.dtype == nl.{dtype}
    u = nl.copy(t, dtype=nl.float32)
    out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, u)
    return out
"""
    a = (RNG.standard_normal((64, 32)) * 50).astype(np.float32)
    value, _, _ = run(src, {"a": a})
    from apdsl.tensor.dtypes import cast_array
    from apdsl.tensor.dtypes import dtype as to_dtype
    expect = cast_array(a, to_dtype(dtype)).astype(np.float32)
    np.testing.assert_array_equal(value, expect)


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 128), f=st.integers(1, 40),
       fill=st.one_of(st.integers(-300, 300), st.floats(-1e4, 1e4, width=32)),
       dtype=st.sampled_from(["float32", "bfloat16", "int16", "uint8"]),
       buffer=st.sampled_from(["sbuf", "psum"]))
def test_creation_functions_fill_like_numpy(p, f, fill, dtype, buffer):
    from apdsl.tensor.dtypes import cast_array
    from apdsl.tensor.dtypes import dtype as to_dtype
    src = f"""
kernel k() -> f32[{p}, {f}] @ sbuf:
    z = nl.zeros(({p}, {f}), nl.{dtype}, buffer=nl.{buffer})
    o = nl.ones(({p}, {f}), dtype=nl.{dtype}, buffer=nl.{buffer})
    v = nl.full(({p}, {f}), {fill!r}, nl.{dtype}, buffer=nl.{buffer})
    zl = nl.zeros_like(v)
    assert z.buffer == "{buffer}" and zl.buffer == "{buffer}" and zl.dtype == nl.{dtype}
    assert equal(host(z), host(zl))
    assert equal(host(o), host(z) + 1)
    out = nl.copy(v, dtype=nl.float32)
    return out
"""
    value, ops, _ = run(src)
    expect = cast_array(np.full((p, f), fill), to_dtype(dtype)).astype(np.float32)
    np.testing.assert_array_equal(value, expect)
    assert [op for op, _ in ops] == ["memset"] * 4 + ["tensor_copy"]


def test_empty_like_allocates_unwritten_memory():
    src = """
kernel k(a: f32[8, 4] @ hbm) -> bf16[8, 4] @ sbuf:
    t = nl.load(a)
    e = nl.empty_like(t, dtype=nl.bfloat16)
    assert e.shape == (8, 4) and e.dtype == nl.bfloat16 and e.buffer == "sbuf"
    return nl.copy(e)
"""
    with raises_code("APK412"):  # the result is a copy of memory nothing wrote
        run(src, {"a": np.ones((8, 4), np.float32)})


def test_matmul_transpose_x_is_one_nc_matmul_into_psum():
    src = """
kernel k(xt: bf16[128, 96] @ hbm, y: bf16[128, 512] @ hbm) -> f32[96, 512] @ shared_hbm:
    x_sb = nl.load(xt)
    y_sb = nl.load(y)
    r = nl.matmul(x_sb, y_sb, transpose_x=True)
    assert r.buffer == "psum" and r.dtype == nl.float32 and r.shape == (96, 512)
    out = nl.ndarray((96, 512), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(r))
    return out
"""
    import ml_dtypes
    xt = RNG.standard_normal((128, 96)).astype(ml_dtypes.bfloat16)
    y = RNG.standard_normal((128, 512)).astype(ml_dtypes.bfloat16)
    value, ops, _ = run(src, {"xt": xt.astype(np.float32), "y": y.astype(np.float32)})
    expect = xt.astype(np.float32).T @ y.astype(np.float32)
    np.testing.assert_allclose(value, expect, rtol=1e-5, atol=1e-4)
    assert ("nc_matmul", {"dst": "psum", "stationary": "sbuf", "moving": "sbuf"}) in ops


def test_lower_json_shows_what_the_functions_issue(tmp_path):
    f = tmp_path / "k.apk"
    f.write_text("""
kernel k(a: f32[128, 64] @ hbm) -> f32[128, 64] @ shared_hbm:
    t = nl.load(a)
    z = nl.zeros((128, 64), nl.float32)
    out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
    nl.store(out, t)
    return out
""")
    proc = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f), "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["op"], r["line"]) for r in recs] == [("dma_copy", 3), ("memset", 4),
                                                   ("dma_copy", 6)]
    assert recs[0]["operands"]["dst"]["buffer"] == "sbuf"
    assert recs[0]["operands"]["src"]["tensor"] == "a"
    assert recs[2]["operands"]["dst"]["tensor"] == "out"


# -- refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize("body, code", [
    ("t = nl.load(nl.zeros((8, 4), nl.float32))", "APK151"),      # load reads HBM
    ("nl.store(a, nl.zeros((8, 4), nl.float32, buffer=nl.psum))", "APK151"),  # from PSUM
    ("nl.store(nl.zeros((8, 4), nl.float32), nl.load(a))", "APK151"),  # dst on chip
    ("t = nl.copy(a)", "APK151"),                                   # copy of HBM
    ("t = nl.zeros((8, 4), nl.float32, buffer=nl.hbm)", "APK151"),  # HBM fill
    ("t = nl.load('a.npy')", "APK152"),                             # not a tensor
    ("t = nl.load(b)", "APK152"),                                   # 256 partitions
    ("t = nl.full((8, 4), 'x', nl.float32)", "APK152"),
    ("t = nl.matmul(nl.load(a), nl.load(b[0:16, :]), transpose_x=True)", "APK153"),  # K
    ("t = nl.matmul(nl.load(a), a, transpose_x=True)", "APK151"),  # y in HBM
])
def test_refusals(body, code):
    src = f"""
kernel k(a: f32[8, 4] @ hbm, b: f32[256, 4] @ hbm):
    {body}
"""
    with raises_code(code) as err:
        run(src)
    assert err.value.span is not None and err.value.span.line == 3


def test_refusals_are_located_and_coded_on_the_command_line(tmp_path):
    f = tmp_path / "bad.apk"
    f.write_text("kernel k(a: f32[8, 4] @ sbuf):\n    t = nl.load(a)\n")
    proc = subprocess.run([sys.executable, "-m", "apdsl", "run", str(f)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "bad.apk:2:9: error[APK151]: nl.load: src a is in sbuf" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- the names kept apart ------------------------------------------------------------------

def test_bare_names_stay_the_apk_builtins(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32))
    src = """
x = load("x.npy")
assert max(1, 5) == 5 and min([3, 2]) == 2 and sum([1, 2]) == 3 and abs(-2) == 2
assert nl.load is not load
load = 3            # a program's own name never shadows nl.load
assert nl.load is not load
"""
    Program(src, "<nl>", str(tmp_path)).run()


def test_a_prefixed_unknown_name_is_reported_as_such():
    with raises_code("APK101") as err:
        run("x = nl.lod\n")
    assert "nl.lod" in err.value.message and "nl.load" in (err.value.help or "")
    errs = Program("x = nl.lod\n", "<nl>").check()
    assert [e.code for e in errs] == ["APK101"]


def test_check_knows_the_nl_functions_signatures():
    src = """
kernel k(a: f32[8, 4] @ hbm):
    t = nl.load(a, dtyp=nl.float32)
"""
    errs = Program(src, "<nl>").check()
    assert [e.code for e in errs] == ["APK102"]
    assert "nl.load() has no parameter 'dtyp'" in errs[0].message


def test_prefixes_still_reach_every_builtin():
    run("t = nl.ndarray((4, 4), nl.float32, nl.sbuf)\nnisa.memset(t, 1.0)\n"
        "assert nl.host(t).sum() == 16.0\n")


# -- the Python frontend sees the same names ---------------------------------------------------

def test_python_frontend_nl_functions_match_apk():
    import apdsl.nki as nki
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a):
        t = nl.load(a)
        z = nl.zeros_like(t)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(t))
        assert z.buffer == "sbuf"
        return out

    a = RNG.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a)
    assert nl.load is not None and "load" in dir(nl) and "store" in dir(nl)
    assert nl.par_dim(128) == 128  # the legacy partition marker: just the size, first


