"""`nl.transpose(x, dtype=None)` (the NKI language reference): a 2-D on-chip tile with its
partition and free dimensions swapped, in a new PSUM tile (the reference's example reads it as
`result_psum`), issued as `nc_transpose` (+ `tensor_copy` for another dtype) so `lower` shows
it; values against NumPy."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.semantics.program import Program

KERNEL = """\
kernel k(a: DT[P, F] @ hbm) -> OUT[F, P] @ shared_hbm:
    out = nl.ndarray((F, P), nl.OUT, buffer=nl.shared_hbm)
    x = nl.load(a)
    result_psum = nl.transpose(x, dtype=CAST)
    assert result_psum.buffer == "psum" and result_psum.shape == (F, P)
    result = nl.ndarray((F, P), dtype=nl.OUT, buffer=nl.sbuf)
    nisa.tensor_copy(result, result_psum)
    nl.store(out, result)
    return out
"""


def _kernel(p: int, f: int, dt: str, cast: str | None) -> str:
    out = cast or dt
    return (KERNEL.replace("DT", dt).replace("OUT", out).replace("P", str(p))
            .replace("F", str(f)).replace("CAST", f"nl.{cast}" if cast else "None"))


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 128), f=st.integers(1, 128),
       dt=st.sampled_from(["float32", "bfloat16", "float16", "int8"]),
       cast=st.sampled_from([None, "float32", "bfloat16"]))
def test_transpose_against_numpy(p, f, dt, cast):
    src = _kernel(p, f, dt, cast)
    np_dt = ml_dtypes.bfloat16 if dt == "bfloat16" else np.dtype(dt)
    rng = np.random.default_rng(p * 1000 + f)
    a = (rng.integers(-100, 100, (p, f)) if dt == "int8" else
         rng.standard_normal((p, f))).astype(np_dt)
    r = Program(src, "t.apk").run("k", {"a": a}, trace=True)
    want = a.T.astype(ml_dtypes.bfloat16 if cast == "bfloat16" else
                      np.dtype(cast) if cast else np_dt)
    np.testing.assert_array_equal(np.asarray(r.value.numpy()).astype(np.float32),
                                  want.astype(np.float32))
    ops = [(rec.op, rec.engine) for rec in r.trace.records if rec.location[1] == 4]
    engine = "vector" if p <= 32 and f <= 32 else "tensor"
    expected = [("nc_transpose", engine)]
    if cast is not None and cast != dt:
        expected.append(("tensor_copy", "vector"))
    assert [op for op, _ in ops] == [op for op, _ in expected]
    assert ops[0] == expected[0]


def test_reference_example_identity():
    # the reference's example: the transpose of an identity is the identity
    src = """\
kernel k(i: f32[128, 128] @ hbm) -> f32[128, 128] @ shared_hbm:
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    x = nl.load(i)
    result_psum = nl.transpose(x)
    result = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(result, result_psum)
    assert equal(host(result), host(x))
    nl.store(out, result)
    return out
"""
    eye = np.eye(128, dtype=np.float32)
    np.testing.assert_array_equal(Program(src, "t.apk").run("k", {"i": eye}).value.numpy(),
                                  eye)


@pytest.mark.parametrize("x, code, text", [
    ("3", "APK167", "x must be a tile, not int"),
    ("nl.ndarray((4, 2, 2), nl.float32, buffer=nl.sbuf)", "APK167", "transposes a 2-D tile"),
    ("a", "APK168", "x a is in hbm"),
    ("nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)", "APK169",
     "its transpose has 256 partitions; a tile has at most 128"),
    ("nl.ndarray((64, 64), nl.float32, buffer=nl.psum)", "APK391", "at most [32, 32]"),
])
def test_refusals(x, code, text):
    src = f"kernel k(a: f32[8, 8] @ hbm):\n    r = nl.transpose({x})\n"
    src = src.replace("nl.float32, buffer=nl.sbuf)", "nl.float32, buffer=nl.sbuf)") \
        .replace("    r = nl.transpose(nl.ndarray", "    t = nl.ndarray") \
        .replace(", buffer=nl.sbuf))\n", ", buffer=nl.sbuf)\n    nisa.memset(t, 1.0)\n"
                 "    r = nl.transpose(t)\n") \
        .replace(", buffer=nl.psum))\n", ", buffer=nl.psum)\n    nisa.memset(t, 1.0)\n"
                 "    r = nl.transpose(t)\n")
    with raises_code(code) as err:
        Program(src, "t.apk").run("k", {"a": np.ones((8, 8), np.float32)})
    assert text in err.value.message
    assert err.value.span.line == src.count("\n")
    assert [e.code for e in Program(src, "t.apk").check()] == [code]


def test_python_frontend():
    import apdsl.nki as nki
    import apdsl.nki.isa as nisa
    import apdsl.nki.language as nl

    @nki.jit
    def kernel(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.load(a)
        t = nl.transpose(x)
        result = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(result, t)
        nl.store(out, result)
        return out

    a = np.random.default_rng(5).standard_normal((96, 40), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a.T)


def test_cli_lower_shows_the_transpose(tmp_path):
    f = tmp_path / "t.apk"
    f.write_text(_kernel(128, 64, "float32", "bfloat16"))
    r = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(f), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ops = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    mine = [o for o in ops if o["line"] == 4]
    assert [o["op"] for o in mine] == ["nc_transpose", "tensor_copy"]
    t = mine[0]["operands"]
    assert (t["data"]["buffer"], t["data"]["pattern"]) == ("sbuf", [[64, 128], [1, 64]])
    assert (t["dst"]["buffer"], t["dst"]["pattern"]) == ("psum", [[128, 64], [1, 128]])
    c = mine[1]["operands"]
    assert (c["dst"]["buffer"], c["dst"]["dtype"]) == ("psum", "bfloat16")
