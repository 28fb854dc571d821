"""register_move and register_store (NKI isa: 32-bit registers, one-element SBUF/HBM tensors),
in the Python API, `.apk` programs and check mode."""

from __future__ import annotations

import numpy as np
import pytest
from support import raises_code

import apdsl
from apdsl.runtime.instructions import (
    register_alloc,
    register_load,
    register_move,
    register_store,
)
from apdsl.semantics.program import Program
from apdsl.tensor.view import ndarray


def test_move_copies_an_int_or_a_register():
    a, b = register_alloc(), register_alloc()
    register_move(a, 7)
    register_move(b, a)
    register_move(a, -3)
    assert (a.value, b.value) == (-3, 7)


@pytest.mark.parametrize("buffer", ["sbuf", "hbm", "shared_hbm"])
@pytest.mark.parametrize("dtype,shape", [("int32", (1, 1)), ("uint16", (1,)), ("int8", (1,))])
def test_store_writes_the_value_cast_by_the_saturating_rule(buffer, dtype, shape):
    t = ndarray(shape, dtype, buffer)
    register_store(t, register_alloc(300))
    want = np.clip(300, np.iinfo(dtype).min, np.iinfo(dtype).max)
    np.testing.assert_array_equal(t.numpy(), np.full(shape, want, dtype))
    back = register_alloc()
    register_load(back, t)
    assert back.value == want


def test_store_and_move_refusals():
    r = register_alloc(1)
    with raises_code("APK492"):
        register_store(ndarray((1, 1), "int32", "psum"), r)
    with raises_code("APK493"):
        register_store(ndarray((1, 1), "float32", "sbuf"), r)
    with raises_code("APK493"):
        register_store(ndarray((2, 1), "int32", "sbuf"), r)
    with raises_code("APK493"):
        register_store(ndarray((1, 1), "int64", "sbuf"), r)
    with raises_code("APK410"):  # a register nothing set
        register_store(ndarray((1, 1), "int32", "sbuf"), register_alloc())
    with raises_code("APK494"):
        register_move(r, 2**32)
    with raises_code("APK420"):
        register_move(r, 1.5)
    with raises_code("APK420"):
        register_store(ndarray((1, 1), "int32", "sbuf"), 5)
    with raises_code("APK420"):
        register_move(5, r)


def test_registers_in_an_apk_program_and_its_check(tmp_path):
    path = tmp_path / "r.apk"
    path.write_text("""\
kernel k() -> i32[1, 1] @ hbm:
    src: i32[1, 1] @ sbuf = 40
    n = register_alloc()
    register_load(n, src)
    m = register_alloc()
    register_move(m, n)
    out: i32[1, 1] @ hbm
    register_store(out, m)
    return out
""")
    assert apdsl.run(str(path)).tolist() == [[40]]
    assert Program.from_path(str(path)).check() == []  # check mode: n and m are unknown


def test_profile_schedules_register_moves(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "p.apk"
    path.write_text("r = register_alloc(1)\nregister_move(r, 2)\nt: i32[1, 1] @ sbuf\n"
                    "register_store(t, r)\n")
    r = subprocess.run([sys.executable, "-m", "apdsl", "profile", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "register_move" in r.stdout and "[Sync]" in r.stdout
