"""Launch on logical NeuronCores for `.apk` kernels (SPEC section 11): `apdsl run FILE.apk
--grid N` (and lower, profile) runs the kernel once per program id in id order, the programs
sharing their inputs and their shared-HBM outputs, as the Python frontend's `kernel[n]` does."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from support import raises_code

from apdsl.semantics.program import Program

SPMD = """\
@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows = a.shape[0] // nl.num_programs(0)
    start = nl.program_id(0) * rows
    x = nl.load(a[start:start + rows, :])
    y = nl.load(b[start:start + rows, :])
    nl.store(out[start:start + rows, :], nl.add(x, y))
    return out
"""


def _inputs():
    rng = np.random.default_rng(7)
    return {"a": rng.standard_normal((256, 64), dtype=np.float32),
            "b": rng.standard_normal((256, 64), dtype=np.float32)}


def test_each_program_does_its_share_and_the_outputs_are_shared():
    x = _inputs()
    two = Program(SPMD, "spmd.apk").run("add", x, trace=True, grid=(2,))
    np.testing.assert_array_equal(two.value.numpy(), x["a"] + x["b"])
    # each program loads its 128 rows, program 0 first
    loads = [r for r in two.trace.records if r.op == "dma_copy" and r.location[1] == 6]
    assert [r.operands["src"][0].offset for r in loads] == [0, 128 * 64]
    # one program would need 256-row tiles: more partitions than a tile has
    with pytest.raises(Exception) as info:
        Program(SPMD, "spmd.apk").run("add", x)
    assert getattr(info.value, "code", None) == "APK152"


def test_a_program_allocating_other_shared_outputs_is_an_error():
    src = SPMD.replace("out = nl.ndarray(a.shape,",
                       "out = nl.ndarray((a.shape[0] + nl.program_id(0), a.shape[1]),")
    with pytest.raises(Exception) as info:
        Program(src, "spmd.apk").run("add", _inputs(), grid=(2,))
    assert getattr(info.value, "code", None) == "APK145"


def test_cli_grid_for_an_apk_file(tmp_path):
    f = tmp_path / "spmd.apk"
    f.write_text(SPMD)
    x = _inputs()
    for k, v in x.items():
        np.save(tmp_path / f"{k}.npy", v)
    base = [sys.executable, "-m", "apdsl"]
    ins = ["-i", f"a={tmp_path / 'a.npy'}", "-i", f"b={tmp_path / 'b.npy'}"]
    r = subprocess.run(base + ["run", str(f), *ins, "--grid", "2", "-o", str(tmp_path / "o.npy")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), x["a"] + x["b"])
    low = subprocess.run(base + ["lower", str(f), *ins, "--grid", "2"], capture_output=True,
                         text=True)
    assert low.returncode == 0 and low.stdout.count("dma_copy") == 6
    prof = subprocess.run(base + ["profile", str(f), *ins, "--grid", "2", "--json"],
                          capture_output=True, text=True)
    assert prof.returncode == 0, prof.stderr
    assert json.loads(prof.stdout)["instructions"] == 8  # 2 programs x (2 loads, add, store)
    bad = subprocess.run(base + ["run", str(f), *ins, "--grid", "3"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "1 or 2 logical NeuronCores" in bad.stderr
    assert "Traceback" not in bad.stderr


# -- kernel[n](...) written in .apk code ------------------------------------------------------

# each program writes its id, the program count and the grid's rank into its row of a shared
# HBM output, then adds its half of a + b (a NumPy oracle checks both)
LAUNCHED = """\
kernel ids(a: f32[256, 64] @ hbm, b: f32[256, 64] @ hbm) -> f32[256, 64] @ shared_hbm:
    out = nl.ndarray((256, 64), nl.float32, buffer=nl.shared_hbm)
    rows = 256 // nl.num_programs()
    for t in range(rows // 128):
        start = nl.program_id(0) * rows + t * 128
        x = nl.load(a[start:start + 128, :])
        y = nl.load(b[start:start + 128, :])
        nl.store(out[start:start + 128, :], nl.add(x, y))
    return out

kernel who() -> f32[2, 3] @ shared_hbm:
    out = nl.ndarray((2, 3), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 3), nl.float32, buffer=nl.sbuf)
    nisa.memset(t[:, 0:1], nl.program_id(0))
    nisa.memset(t[:, 1:2], nl.num_programs())
    nisa.memset(t[:, 2:3], nl.program_ndim())
    nisa.dma_copy(out[nl.program_id(0):nl.program_id(0) + 1, :], t)
    return out

a: f32[256, 64] @ hbm = random(1)
b: f32[256, 64] @ hbm = random(2)
"""


def _run_top(src: str, trace: bool = False):
    """Run the top level of `src` (which launches its kernels): its names and the trace."""
    from contextlib import nullcontext

    from apdsl.runtime.core.trace import tracing
    prog = Program(src, "launch.apk")
    interp = prog.interpreter()
    namespace: dict = {}
    with interp.machine.active(), (tracing() if trace else nullcontext()) as tr:
        interp.exec_module(prog.module, namespace)
    return namespace, tr


def test_kernel_n_in_apk_code_runs_each_program_in_id_order():
    src = LAUNCHED + """\
two = ids[2](a, b)
one = ids(a, b)
assert equal(host(two), host(a) + host(b))
assert equal(host(one), host(two))
w = who[2]()
assert equal(host(w), [[0, 2, 1], [1, 2, 1]])
assert program_ndim() == 0 and program_id() == 0 and num_programs() == 1
res = who[1]()
"""
    ns, tr = _run_top(src, trace=True)
    loads = [rec for rec in tr.records if rec.op == "dma_copy" and rec.location[1] == 6]
    # program 0 loads rows 0-127, program 1 rows 128-255; then the plain call loads both
    assert [rec.operands["src"][0].offset for rec in loads] == [0, 128 * 64, 0, 128 * 64]
    # the launched programs share the output: one tensor, every row of it written
    a, b = ns["a"].numpy(), ns["b"].numpy()
    np.testing.assert_array_equal(ns["two"].numpy(), a + b)
    np.testing.assert_array_equal(ns["w"].numpy(), np.array([[0, 2, 1], [1, 2, 1]], np.float32))
    # kernel[1]: a grid of one program (program_ndim 1), only row 0 written
    np.testing.assert_array_equal(ns["res"][0:1, :].numpy(), [[0, 1, 1]])


@pytest.mark.parametrize("launch, where", [
    ("ids[3](a, b)", "1 or 2 logical NeuronCores"),
    ("ids[0](a, b)", "1 or 2 logical NeuronCores"),
    ("ids[1.5](a, b)", "ids['float']"),
    ("ids['2'](a, b)", "ids['str']"),
    ("ids[True](a, b)", "ids[True]"),
    ("ids[1, 2](a, b)", "ids['tuple']"),
])
def test_launch_grid_errors_are_located(launch, where):
    src = LAUNCHED + f"r = {launch}\n"
    with raises_code("APK141") as err:
        _run_top(src)
    assert where in err.value.message
    line = src.count("\n")
    assert (err.value.span.line, err.value.span.column) == (line, 5)
    # check mode reports it too, at the same place (and that `who`, checked as a launch of one
    # program, returns a result only its row 0 is written of: APK180 at its return, as `run`)
    errors = Program(src, "launch.apk").check()
    assert [(e.code, e.span.line) for e in errors] == [("APK180", 18), ("APK141", line)]


def test_trn1_launches_on_one_core():
    src = 'set_target("trn1")\n' + LAUNCHED + "r = ids[2](a, b)\n"
    with raises_code("APK141") as err:
        _run_top(src)
    assert "trn1 has 1" in err.value.message
    ok = 'set_target("trn1")\n' + LAUNCHED + "r = ids[1](a, b)\nassert equal(host(r), " \
        "host(a) + host(b))\n"
    _run_top(ok)


def test_indexing_a_def_is_no_launch():
    src = "def helper(x):\n    return x\ny = helper[2](1)\n"
    with raises_code("APK159") as err:
        _run_top(src)
    assert err.value.span.line == 3 and "is a def, not a kernel" in err.value.message


def test_a_launch_inside_a_launched_program_is_refused():
    src = LAUNCHED + """\
kernel outer(a: f32[256, 64] @ hbm, b: f32[256, 64] @ hbm) -> f32[256, 64] @ shared_hbm:
    return ids[2](a, b)
r = outer[2](a, b)
"""
    with raises_code("APK160") as err:
        _run_top(src)
    assert err.value.span.line == src.count("\n") - 1
    assert any("in program 0 of this launch of outer" in lab.message for lab in err.value.labels)
    # called plainly from a kernel that is not launched, a launch is fine
    _run_top(src.replace("r = outer[2](a, b)", "r = outer(a, b)\n"
                         "assert equal(host(r), host(a) + host(b))"))


def test_programs_returning_other_tensors_in_code():
    src = """\
kernel private() -> f32[4, 4] @ hbm:
    out = nl.ndarray((4, 4), nl.float32, buffer=nl.hbm)
    return out
r = private[2]()
"""
    with raises_code("APK146") as err:
        _run_top(src)
    assert err.value.span.line == 4
    assert "program 1 returns other tensors" in err.value.message


def test_list_tuple_and_string_slices():
    # (a single slice was passed as a 1-tuple, which lists, tuples and strings refuse)
    src = """\
l = [1, 2, 3, 4]
t = (1, 2, 3, 4)
x: f32[2, 4, 8] @ hbm
assert l[1:] == [2, 3, 4] and l[::2] == [1, 3] and t[1:3] == (2, 3) and "abcd"[1:] == "bcd"
assert x.shape[1:] == (4, 8)
assert x[1:].shape == (1, 4, 8)
"""
    _run_top(src)


def test_cli_example_launch(tmp_path):
    from pathlib import Path
    example = Path(__file__).resolve().parent.parent / "examples" / "lnc_launch.apk"
    base = [sys.executable, "-m", "apdsl"]
    r = subprocess.run(base + ["run", str(example), "-o", str(tmp_path / "o.npy")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "2 programs: (2, 128, 128) shared_hbm" in r.stdout
    low = subprocess.run(base + ["lower", str(example), "--json"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert low.returncode == 0, low.stderr
    ops = [json.loads(line) for line in low.stdout.splitlines() if line.startswith("{")]
    recips = [o for o in ops if o["op"] == "reciprocal"]
    # launch: 2 programs x 1 tile (line 21); plain call and run's call: 2 tiles each (line 16)
    assert [o["line"] for o in recips] == [21, 21, 16, 16, 16, 16]
    srcs = [o["operands"]["src"]["offset"] for o in ops if o["op"] == "dma_copy"
            and o["line"] == 20]
    assert srcs == [0, 128 * 128]
    prof = subprocess.run(base + ["profile", str(example), "--json"], capture_output=True,
                          text=True, cwd=tmp_path)
    assert prof.returncode == 0, prof.stderr
    assert json.loads(prof.stdout.splitlines()[-1])["instructions"] == 18
    bad = tmp_path / "bad.apk"
    bad.write_text(example.read_text().replace("lnc_reciprocal[2](x)", "lnc_reciprocal[4](x)"))
    r = subprocess.run(base + ["run", str(bad)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1 and "error[APK141]" in r.stderr and "Traceback" not in r.stderr
    assert f"{bad}:26:7" in r.stderr
