"""The command line of check and lower: `-i`, what ran before a runtime error, JSON-only stdout
with `--json`, and `--target` of the program's family."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import EXPECTED_TO_FAIL, apdsl_in_process

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.apk"))


def apdsl(*args: str, cwd: Path | None = None):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=300)


def apdsl_many(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Several command lines at once (each still its own process): the cold starts overlap."""
    env = {**os.environ, "NO_COLOR": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "apdsl", *c], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for c in commands]
    out = []
    for c, p in zip(commands, procs):
        stdout, stderr = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(c, p.returncode, stdout, stderr))
    return out


def codes(stderr: str) -> list[str]:
    return re.findall(r"error\[(APK\d{3})\]", stderr)


# A shape-generic kernel whose shapes also depend on an input's values.
GENERIC = """\
kernel head(A: f32[M, N] @ hbm, n: i32[1, 2] @ hbm) -> f32[M, N] @ hbm:
    k = host(n)[0, 1]
    t = ndarray((k, N), f32, sbuf)
    out = ndarray((M, N), f32, hbm)
    dma_copy(dst=t, src=A[0:k, :])
    dma_copy(dst=out[0:k, :], src=t)
    dma_copy(dst=out[k:M, :], src=A[k:M, :])
    return out
"""


@pytest.fixture
def generic(tmp_path: Path) -> Path:
    (tmp_path / "head.apk").write_text(GENERIC)
    np.save(tmp_path / "a.npy", np.arange(24, dtype=np.float32).reshape(6, 4))
    np.save(tmp_path / "n.npy", np.array([[0, 2]], np.int32))
    np.save(tmp_path / "far.npy", np.array([[0, 9]], np.int32))
    return tmp_path


def test_check_takes_inputs_for_shapes_and_values(generic):
    f = str(generic / "head.apk")
    a, n, far = (str(generic / x) for x in ("a.npy", "n.npy", "far.npy"))
    bare = apdsl("check", f)  # a real process; the rest what `check` reports, in process
    assert bare.returncode == 1 and "APK132" in codes(bare.stderr)  # M is not bound
    ok = apdsl_in_process("check", f, "-i", f"A={a}", "-i", f"n={n}")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"{f}: ok")
    # the value 9 read from n makes every slice by k out of range: check reports them all
    bad = apdsl_in_process("check", f, "head", "-i", f"A={a}", "-i", f"n={far}")
    assert bad.returncode == 1 and codes(bad.stderr) == ["APK215"] * 3, bad.stderr
    js = apdsl_in_process("check", f, "-i", f"A={a}", "-i", f"n={far}", "--json")
    assert [json.loads(line)["code"] for line in js.stdout.splitlines()] == ["APK215"] * 3
    wrong = apdsl_in_process("check", f, "-i", f"B={a}")
    assert wrong.returncode == 2 and "no kernel parameter is called 'B'" in wrong.stderr
    assert apdsl_in_process("check", f, "nope", "-i", f"A={a}").returncode == 2
    (generic / "junk.npy").write_text("not an array\n")
    junk = apdsl_in_process("check", f, "-i", f"A={generic / 'junk.npy'}", "--json")
    assert junk.returncode == 1 and json.loads(junk.stdout)["code"] == "APK605"


def test_lower_takes_inputs(generic):
    f = str(generic / "head.apk")
    r = apdsl("lower", f, "--json", "-i", f"A={generic / 'a.npy'}", "-i",
              f"n={generic / 'n.npy'}")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["line"] for o in objs] == [5, 6, 7]
    # k = 2 rows of N = 4 from the input's values; the rest, M - k = 4 rows, from its shape
    assert objs[0]["operands"]["src"]["pattern"] == [[1, 8]]
    assert objs[2]["operands"]["src"] == {**objs[2]["operands"]["src"], "offset": 8,
                                          "pattern": [[1, 16]]}


FAILS = """\
x: f32[4, 8] @ hbm = arange
y: f32[4, 8] @ hbm
print("hello")
dma_copy(dst=y, src=x)
memset_me = ndarray((4, 8), f32, sbuf)
memset(memset_me, 1.0)
u: f32[4, 8] @ hbm
dma_copy(dst=y, src=u)
dma_copy(dst=u, src=x)
"""


def test_lower_prints_what_ran_before_a_runtime_error(tmp_path):
    f = tmp_path / "fails.apk"
    f.write_text(FAILS)
    table = apdsl("lower", str(f))
    assert table.returncode == 1
    heads = [line for line in table.stdout.splitlines() if line.startswith(str(f))]
    assert heads == [f"{f}:4  dma_copy", f"{f}:6  memset  value=1.0"]  # not the copy that failed
    assert codes(table.stderr) == ["APK404"] and f"{f}:8:1" in table.stderr
    js = apdsl("lower", str(f), "--json")
    assert js.returncode == 1 and codes(js.stderr) == ["APK404"]
    assert [(o["op"], o["line"]) for o in map(json.loads, js.stdout.splitlines())] == [
        ("dma_copy", 4), ("memset", 6)]


def test_lower_keeps_the_last_instruction_when_a_later_statement_fails(tmp_path):
    """The failed one is the instruction that raised, not the last record: a statement that
    issues no instruction failing after a copy keeps the copy (in a kernel too, and for a
    Python kernel)."""
    f = tmp_path / "later.apk"
    f.write_text("kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:\n"
                 "    t = ndarray((128, 64), f32, sbuf)\n    dma_copy(t, A)\n"
                 "    x = [1, 2][5]\n    return A\n")
    r = apdsl("lower", str(f))
    assert r.returncode == 1 and codes(r.stderr) == ["APK122"]
    assert [line for line in r.stdout.splitlines() if line.startswith(str(f))] == [
        f"{f}:3  dma_copy"]
    py = tmp_path / "later.py"
    py.write_text("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
                  "@nki.jit\ndef k(a):\n"
                  "    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
                  "    nisa.dma_copy(dst=t, src=a)\n"
                  "    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)\n"
                  "    nisa.dma_copy(dst=a, src=u)\n"
                  "    return t\n")
    np.save(tmp_path / "a.npy", np.ones((4, 8), np.float32))
    r = apdsl("lower", str(py), "-i", f"a={tmp_path / 'a.npy'}")
    assert r.returncode == 1 and codes(r.stderr) == ["APK404"]  # u was never written (stored
    # into HBM: unwritten data reaching what the kernel produces)
    assert [line for line in r.stdout.splitlines() if line.startswith(str(py))] == [
        f"{py}:9  dma_copy"]


def test_json_stdout_holds_only_json_lines():
    # every example in process (what the commands write), two as real processes (stdout as
    # the pipe a caller reads)
    runs = [apdsl_in_process(command, str(example), "--json") for example in EXAMPLES
            for command in ("check", "lower")]
    runs += apdsl_many(*[[command, str(EXAMPLES[0]), "--json"] for command in ("check", "lower")])
    assert len(runs) == 2 * len(EXAMPLES) + 2 >= 20
    for r in runs:
        name = Path(r.args[1]).name
        assert r.returncode == (1 if name in EXPECTED_TO_FAIL else 0), (r.args, r.stderr)
        for line in r.stdout.splitlines():
            json.loads(line)


def test_program_prints_go_to_stderr_with_json(tmp_path):
    f = tmp_path / "fails.apk"
    f.write_text(FAILS)
    r = apdsl("lower", str(f), "--json")
    assert "hello" in r.stderr and "hello" not in r.stdout
    plain = apdsl("lower", str(f))
    assert plain.stdout.startswith("hello\n")


def test_target_of_the_other_family_is_a_usage_error(tmp_path):
    nki = tmp_path / "nki.apk"
    nki.write_text("x: f32[4, 8] @ hbm = arange\ny = nl.ndarray((4, 8), nl.float32, "
                   "buffer=nl.sbuf)\ndma_copy(dst=y, src=x)\n")
    gemm = str(ROOT / "examples" / "ascend_gemm.apk")
    commands = (["run", str(nki)], ["check", str(nki)], ["lower", str(nki)],
                ["show", str(nki), "x"])
    # what each command reports, in process (the two below are real processes)
    other = [apdsl_in_process(*c) for c in (*[[*c, "--target", "ascend-a2"] for c in commands],
                                            *[[*c, "--target", "trn9"] for c in commands],
                                            ["check", str(nki), "--target", "trn1"],
                                            ["lower", gemm, "--target", "trn2"])]
    for r in other[:4]:
        assert r.returncode == 2, (r.args, r.stderr)
        assert "Ascend target" in r.stderr and "NKI buffers (hbm, sbuf)" in r.stderr
        assert r.stdout == ""
    for r in other[4:8]:
        assert r.returncode == 2 and "unknown target 'trn9'" in r.stderr, (r.args, r.stderr)
    assert other[8].returncode == 0
    assert other[9].returncode == 2 and "uses only Ascend buffers" in other[9].stderr
    # the family is read from imported modules too: an Ascend helper makes it Ascend
    (tmp_path / "helper.apk").write_text("def tile():\n    return ndarray((16, 16), f16, l1)\n")
    mixed = tmp_path / "mixed.apk"
    mixed.write_text("from helper import tile\nt = tile()\n")
    same, wrong = apdsl_many(["check", str(mixed), "--target", "ascend-a2"],
                             ["check", str(mixed), "--target", "trn2"])
    assert (same.returncode, wrong.returncode) == (0, 2)
