"""Ascend cores (SPEC 17): `kernel[n]` / `--grid N` runs an Ascend kernel once per AI core,
each with its own on-chip buffers, pipes and flags, GM shared; the AIC/AIV split, cross-core
flags and `sync_all`; races between cores at both lines, deadlocks naming the cores.  Oracles:
NumPy for values, a brute-force model of which accesses `sync_all` orders for race verdicts."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

CLI = [sys.executable, "-m", "apdsl"]


def run_cli(tmp_path, text, *args):
    f = tmp_path / "k.apk"
    f.write_text(text)
    return subprocess.run(CLI + [args[0], str(f), *args[1:]], capture_output=True, text=True,
                          cwd=tmp_path)


def run(text, inputs=None, grid=()):
    prog = Program.from_source(text, "k.apk") if hasattr(Program, "from_source") else None
    if prog is None:
        import tempfile
        from pathlib import Path
        d = Path(tempfile.mkdtemp())
        (d / "k.apk").write_text(text)
        prog = Program.from_path(str(d / "k.apk"))
    return prog.run(None, inputs or {}, grid=grid)


# each core copies its rows of A to C through its own UB tile
ROWS = """\
kernel rows(A: f32[R, 64] @ gm) -> f32[R, 64] @ gm:
    C = ndarray((R, 64), f32, gm)
    n = asc.get_block_num()
    b = asc.get_block_idx()
    per = R // n
    t = ndarray((per, 64), f32, ub)
    dma_copy(t, A[b * per:(b + 1) * per, :])
    set_flag("MTE2_MTE3", 0)
    wait_flag("MTE2_MTE3", 0)
    dma_copy(C[b * per:(b + 1) * per, :], t)
    return C
"""


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_grid_n_runs_once_per_core_and_matches_numpy(tmp_path, n):
    a = np.random.default_rng(n).standard_normal((n * 4, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    r = run_cli(tmp_path, ROWS, "run", "-i", "A=a.npy", "--grid", str(n), "-o", "o.npy")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), a)


def test_each_core_has_its_own_ub():
    # 4 cores each allocate 150 KiB of UB (192 KiB per core): fine on separate cores
    text = ROWS.replace("per = R // n", "per = R // n\n    big = ndarray((150 * 256,), f32, ub)")
    res = run(text, {"A": np.ones((8, 64), np.float32)}, grid=(4,))
    np.testing.assert_array_equal(res.value.numpy(), np.ones((8, 64), np.float32))


def test_a_race_between_cores_is_reported_at_both_lines(tmp_path):
    text = ROWS.replace("dma_copy(C[b * per:(b + 1) * per, :], t)", "dma_copy(C[0:per, :], t)")
    np.save(tmp_path / "a.npy", np.zeros((4, 64), np.float32))
    r = run_cli(tmp_path, text, "run", "-i", "A=a.npy", "--grid", "2")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    head = r.stderr.splitlines()[0]
    assert "error[APK583]" in head and "write-after-write" in head
    assert "core 1 (pipe MTE3)" in head and "core 0 (pipe MTE3)" in head
    assert "written here on core 0, pipe MTE3" in r.stderr
    assert "cross_core_set_flag(" in r.stderr and "sync_all()" in r.stderr


def test_grid_of_an_ascend_kernel(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((4, 64), np.float32))
    r = run_cli(tmp_path, ROWS, "run", "-i", "A=a.npy", "--grid", "70000")
    assert r.returncode == 2 and "1 to 65535 AI cores" in r.stderr
    r = run_cli(tmp_path, ROWS + "\nA = ndarray((4, 64), f32, gm)\nC = rows[0](A)\n", "check")
    assert "APK590" in r.stdout + r.stderr


# -- the AIC/AIV split -----------------------------------------------------------------------

# every core writes (block_idx, block_num, sub_block_idx, is_aic) into its row of GM
IDS = """\
kernel ids(A: f32[1, 8] @ gm) -> f32[NV, 8] @ gm:
    C = ndarray((NV, 8), f32, gm)
    if asc.ascend_is_aiv():
        u = ndarray((8,), f32, ub)
        memset(u, asc.get_block_idx() * 1000 + asc.get_block_num() * 100 + \
asc.get_sub_block_idx() * 10 + asc.get_sub_block_num())
        set_flag("V_MTE3", 0)
        wait_flag("V_MTE3", 0)
        dma_copy(C[asc.get_block_idx(), :], u)
    return C
"""


def test_split_kernel_runs_one_aic_and_two_aivs_per_ai_core():
    nb = 3
    res = run(IDS.replace("NV", str(2 * nb)), grid=(nb,))
    got = res.value.numpy()[:, 0]
    want = [i * 1000 + nb * 100 + (i % 2) * 10 + 2 for i in range(2 * nb)]
    assert got.tolist() == want


# a cube core computes A @ B into a GM workspace; its two vector cores each move half of it
# to the output once the AIC's flag (mode 2) says it is there
MIX = """\
kernel mm(A: f16[32, 32] @ gm, B: f16[32, 32] @ gm) -> f32[32, 32] @ gm:
    W = ndarray((32, 32), f32, gm)
    out = ndarray((32, 32), f32, gm)
    if asc.ascend_is_aic():
        a1 = ndarray((32, 32), f16, l1, "NZ")
        b1 = ndarray((32, 32), f16, l1, "NZ")
        a0 = ndarray((32, 32), f16, l0a, "ZZ")
        b0 = ndarray((32, 32), f16, l0b, "ZN")
        c0 = ndarray((32, 32), f32, l0c, "NZ")
        dma_copy(a1, A)
        dma_copy(b1, B)
        set_flag("MTE2_MTE1", 0)
        wait_flag("MTE2_MTE1", 0)
        dma_copy(a0, a1)
        dma_copy(b0, b1)
        set_flag("MTE1_M", 0)
        wait_flag("MTE1_M", 0)
        mmad(c0, a0, b0)
        set_flag("M_FIX", 0)
        wait_flag("M_FIX", 0)
        dma_copy(W, c0)
        asc.cross_core_set_flag(3, 2, asc.PipeID.PIPE_FIX)
    if asc.ascend_is_aiv():
        h = asc.get_sub_block_idx()
        t = ndarray((16, 32), f32, ub)
        asc.cross_core_wait_flag(3, 2)
        dma_copy(t, W[h * 16:(h + 1) * 16, :])
        set_flag("MTE2_MTE3", 0)
        wait_flag("MTE2_MTE3", 0)
        dma_copy(out[h * 16:(h + 1) * 16, :], t)
    return out
"""


def _ab(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((32, 32)).astype(np.float16),
            rng.standard_normal((32, 32)).astype(np.float16))


def test_cube_and_vector_cores_with_a_cross_core_flag_match_numpy():
    a, b = _ab()
    res = run(MIX, {"A": a, "B": b})
    np.testing.assert_allclose(res.value.numpy(), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-5)


def test_removing_the_cross_core_wait_is_a_race_at_both_lines(tmp_path):
    a, b = _ab()
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    text = MIX.replace("        asc.cross_core_wait_flag(3, 2)\n", "")
    r = run_cli(tmp_path, text, "run", "-i", "A=a.npy", "-i", "B=b.npy")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    head = r.stderr.splitlines()[0]
    assert "error[APK583]" in head and "AIV 0 (pipe MTE2)" in head and "AIC 0 (pipe FIX)" in head
    assert "written here on AIC 0, pipe FIX" in r.stderr
    # the flag the AIC set for it is the one to wait for
    assert "help: cross_core_wait_flag(3, 2) on AIV 0 before dma_copy" in r.stderr


def test_removing_the_cross_core_set_is_a_deadlock_naming_the_cores(tmp_path):
    a, b = _ab()
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    text = MIX.replace("        asc.cross_core_set_flag(3, 2, asc.PipeID.PIPE_FIX)\n", "")
    r = run_cli(tmp_path, text, "run", "-i", "A=a.npy", "-i", "B=b.npy")
    assert r.returncode == 1 and "error[APK588]" in r.stderr
    head = r.stderr.splitlines()[0]
    assert "AIV 0" in head and "AIV 1" in head and "cross_core_wait_flag(3)" in head


def test_vector_work_on_the_cube_core_is_refused():
    text = MIX.replace("        dma_copy(W, c0)\n", "        dma_copy(W, c0)\n"
                       "        u = ndarray((8,), f32, ub)\n        memset(u, 0)\n")
    a, b = _ab()
    with pytest.raises(ApdslError) as e:
        run(text, {"A": a, "B": b})
    assert e.value.code == "APK585"


# AIC and AIVs hand a GM workspace back and forth in a loop (mode 2 both ways): the AIC may
# write tile k only after both AIVs have read tile k - 1 -- the cores must interleave
def _pingpong(k):
    """MIX over k tiles of A: the AIC computes A[i] @ B into W, the AIVs copy W to out[i];
    the AIC writes W again only when both AIVs have read it (flag 1, mode 2), the AIVs read
    it only when the AIC has written it (flag 3, mode 2).  The cores must interleave."""
    aic = MIX[MIX.index("        a1 = "):MIX.index("    if asc.ascend_is_aiv():")]
    aiv = MIX[MIX.index("        h = "):MIX.index("    return out")]
    aic = aic.replace("dma_copy(a1, A)", "dma_copy(a1, A[i, :, :])")
    aic_loop = "\n".join("    " + line if line else line for line in aic.splitlines())
    aic_loop = aic_loop.replace("            a1 = ", "            if i > 0:\n"
                                "                asc.cross_core_wait_flag(1, 2)\n"
                                "            a1 = ", 1)
    aiv = aiv.replace("dma_copy(out[h * 16:(h + 1) * 16, :], t)",
                      "dma_copy(out[i, h * 16:(h + 1) * 16, :], t)\n"
                      "        set_flag(\"MTE3_MTE2\", 0)\n"   # t is free again
                      "        wait_flag(\"MTE3_MTE2\", 0)")
    aiv = aiv.replace("dma_copy(t, W[h * 16:(h + 1) * 16, :])\n",
                      "dma_copy(t, W[h * 16:(h + 1) * 16, :])\n"
                      "        asc.cross_core_set_flag(1, 2, \"MTE2\")\n")
    aiv_loop = "\n".join("    " + line if line else line for line in aiv.splitlines())
    return (f"kernel pp(A: f16[{k}, 32, 32] @ gm, B: f16[32, 32] @ gm) -> "
            f"f32[{k}, 32, 32] @ gm:\n"
            "    W = ndarray((32, 32), f32, gm)\n"
            f"    out = ndarray(({k}, 32, 32), f32, gm)\n"
            "    if asc.ascend_is_aic():\n"
            f"        for i in range({k}):\n{aic_loop}\n"
            "        asc.cross_core_wait_flag(1, 2)\n"
            "    if asc.ascend_is_aiv():\n"
            f"        for i in range({k}):\n{aiv_loop}\n"
            "    return out\n")


def test_cores_interleave_at_cross_core_waits():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 32, 32)).astype(np.float16)
    _, b = _ab()
    res = run(_pingpong(4), {"A": a, "B": b})
    want = np.einsum("kij,jl->kil", a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(res.value.numpy(), want, rtol=1e-4, atol=1e-4)


def test_removing_the_buffer_free_wait_is_a_race():
    text = _pingpong(3).replace("                asc.cross_core_wait_flag(1, 2)\n", "    pass\n"
                                .replace("    pass", "                pass"), 1)
    a = np.zeros((3, 32, 32), np.float16)
    with pytest.raises(ApdslError) as e:
        run(text, {"A": a, "B": a[0]})
    assert e.value.code in ("APK570", "APK583")  # (the AIC reuses its L1 and L0 too)


def test_check_mode_runs_the_cores_too(tmp_path):
    (tmp_path / "k.apk").write_text(_pingpong(3))
    errors = Program.from_path(str(tmp_path / "k.apk")).check()
    assert [e.code for e in errors if e.severity == "error"] == []


def test_profile_has_a_track_group_per_core(tmp_path):
    a, b = _ab()
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = run_cli(tmp_path, MIX, "profile", "-i", "A=a.npy", "-i", "B=b.npy", "--trace", "t.json")
    assert r.returncode == 0, r.stderr
    ev = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    groups = {e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert {"AIC 0 (estimate)", "AIV 0 (estimate)", "AIV 1 (estimate)"} <= groups
    # the AIVs' loads start after the AIC's Fixpipe store ends (the flag orders them)
    xs = [e for e in ev if e.get("ph") == "X"]
    fix = max(e["ts"] + e["dur"] for e in xs if e["cat"] == "AIC 0: FIX")
    loads = [e["ts"] for e in xs if e["cat"] in ("AIV 0: MTE2", "AIV 1: MTE2")]
    assert loads and min(loads) >= fix - 1e-9


# -- sync_all against a brute-force model --------------------------------------------------------

def _program(plan, rows):
    """A kernel whose core c runs plan[c]: phases of ("r"|"w", first row, rows) accesses of
    GM, a sync_all between phases (every core has the same number of phases)."""
    lines = ["kernel k(A: f32[16, 8] @ gm) -> f32[16, 8] @ gm:",
             "    c = asc.get_block_idx()"]
    for c, phases in enumerate(plan):
        lines.append(f"    if c == {c}:")
        body = []
        for p, accesses in enumerate(phases):
            if p:
                body.append("asc.sync_all()")
            for kind, lo, n in accesses:
                body.append(f"u = ndarray(({n}, 8), f32, ub)")
                if kind == "r":
                    body.append(f"dma_copy(u, A[{lo}:{lo + n}, :])")
                else:
                    body += ["memset(u, 1)", 'set_flag("V_MTE3", 0)', 'wait_flag("V_MTE3", 0)',
                             f"dma_copy(A[{lo}:{lo + n}, :], u)"]
                body.append('pipe_barrier("ALL")')
        if not body:
            body = ["pass"]
        lines += ["        " + b for b in body]
    lines.append("    return A")
    return "\n".join(lines) + "\n"


def _races(plan):
    """Brute force: two accesses of different cores in the same phase, overlapping rows, one
    a write (sync_all orders every phase after the one before, on every core)."""
    acc = [(c, p, kind, lo, lo + n) for c, phases in enumerate(plan)
           for p, accesses in enumerate(phases) for kind, lo, n in accesses]
    return any(a[0] != b[0] and a[1] == b[1] and "w" in (a[2], b[2]) and a[3] < b[4]
               and b[3] < a[4] for a in acc for b in acc)


@pytest.mark.parametrize("seed", range(12))
def test_sync_all_orders_phases_as_a_brute_force_model_says(seed):
    rng = random.Random(seed)
    cores = rng.randint(2, 3)
    phases = rng.randint(1, 3)
    plan = [[[(rng.choice("rw"), lo, rng.randint(1, 3))
              for lo in sorted(rng.sample(range(12), rng.randint(0, 2)))]
             for _ in range(phases)] for _ in range(cores)]
    text = _program(plan, 16)
    try:
        run(text, {"A": np.zeros((16, 8), np.float32)}, grid=(cores,))
        raced = False
    except ApdslError as e:
        assert e.code == "APK583", (e, text)
        raced = True
    assert raced == _races(plan), text


def test_lower_names_the_core_of_each_instruction(tmp_path):
    a, b = _ab()
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = run_cli(tmp_path, MIX, "lower", "-i", "A=a.npy", "-i", "B=b.npy")
    assert r.returncode == 0, r.stderr
    assert "dma_copy  [AIC 0, pipe FIX]" in r.stdout
    assert "dma_copy  [AIV 0, pipe MTE2]" in r.stdout and "dma_copy  [AIV 1, pipe MTE3]" in r.stdout
    # a kernel on one core says nothing of cores
    np.save(tmp_path / "r.npy", np.zeros((4, 64), np.float32))
    r = run_cli(tmp_path, ROWS, "lower", "-i", "A=r.npy")
    assert "[pipe MTE2]" in r.stdout and "[core" not in r.stdout and "[AI" not in r.stdout
