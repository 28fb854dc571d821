"""The memory budget (SPEC section 15): live storage plus its written-state bookkeeping, every
buffer included, bounded by --max-memory / apdsl.options(max_memory=); past it, a coded error
at the allocation.  NumPy's MemoryError is a coded error too.  Nothing here allocates more than
a few MiB for real: subprocesses that could run a real allocation run under an address-space
cap."""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import apdsl_in_process, raises_code

import apdsl
from apdsl.runtime.core.options import DEFAULT_MAX_MEMORY, physical_memory
from apdsl.tensor import budget

CAP = 1 << 30  # address space of the capped subprocesses: far below what the programs ask for

ISSUE = "x: f32[100000, 100000] @ hbm = zeros\n"  # issue 9: 40 GB
FOUR_MIB = "x: f32[1024, 1024] @ hbm = zeros\ny = x[0:4, 0:4]\n"  # 4 MiB + 1 MiB bookkeeping


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1", "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120, input=stdin,
                          preexec_fn=_cap)


def codes(stderr: str) -> list[str]:
    import re
    return re.findall(r"error\[(APK\d{3})\]", stderr)


@pytest.fixture
def issue_file(tmp_path: Path) -> Path:
    (tmp_path / "big.apk").write_text(ISSUE)
    return tmp_path


@pytest.mark.parametrize("command", ["run", "check", "lower"])
def test_the_issue_declaration_is_a_coded_error(issue_file, command):
    r = cli(command, "big.apk", cwd=issue_file)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    # past the default budget (half the machine) on any machine with less than 100 GB; a
    # bigger machine passes the budget and then meets the cap: out of memory, also coded
    expect = "APK430" if 50_000_000_000 > DEFAULT_MAX_MEMORY else "APK431"
    assert codes(r.stderr) == [expect]
    assert "big.apk:1:1:" in r.stderr


@pytest.mark.parametrize("command", ["run", "check", "lower"])
def test_past_the_budget_at_the_declaration_names_the_option(issue_file, command):
    r = cli(command, "big.apk", "--max-memory", "1G", cwd=issue_file)
    assert r.returncode == 1
    assert codes(r.stderr) == ["APK430"]
    assert "big.apk:1:1: error[APK430]: allocating x: float32[100000, 100000] @ hbm needs " \
        "50,000,000,000 bytes (46.6 GiB), past the memory budget of 1,073,741,824 bytes " \
        "(1.0 GiB)" in r.stderr
    assert "40,000,000,000 bytes (37.3 GiB) of data and 10,000,000,000 bytes (9.3 GiB) of " \
        "written-state bookkeeping" in r.stderr
    assert "--max-memory" in r.stderr and "apdsl.options(max_memory=" in r.stderr


def test_default_budget_is_half_the_physical_memory(tmp_path):
    assert DEFAULT_MAX_MEMORY == physical_memory() // 2
    assert apdsl.options().__enter__().max_memory == DEFAULT_MAX_MEMORY
    # 4 TB is past half of any machine this runs on, and nothing is allocated
    (tmp_path / "huge.apk").write_text("x: f32[1000000, 1000000] @ hbm = zeros\n")
    r = cli("run", "huge.apk", cwd=tmp_path)
    assert codes(r.stderr) == ["APK430"] and r.returncode == 1


@pytest.mark.parametrize("budget_arg, ok", [("4M", False), ("5242880", True), ("8MiB", True)])
def test_every_command_takes_max_memory(tmp_path, budget_arg, ok):
    (tmp_path / "m.apk").write_text(FOUR_MIB)
    # the refused budget as a user runs it (a process per command); the budgets that fit
    # through the command line's `main` in process (the budget is the machine's count, not
    # the process's memory), but for the REPL, which reads its input from stdin
    run = cli if budget_arg == "4M" else apdsl_in_process
    runs = {
        "run": run("run", "m.apk", "--max-memory", budget_arg, cwd=tmp_path),
        "check": run("check", "m.apk", "--max-memory", budget_arg, cwd=tmp_path),
        "lower": run("lower", "m.apk", "--max-memory", budget_arg, cwd=tmp_path),
        "show": run("show", "m.apk", "y", "--max-memory", budget_arg, cwd=tmp_path),
        "repl": cli("repl", "--max-memory", budget_arg, cwd=tmp_path, stdin=FOUR_MIB),
    }
    for command, r in runs.items():
        assert "Traceback" not in r.stderr, (command, r.stderr)
        if ok:
            assert r.returncode == 0 and not codes(r.stderr), (command, r.stderr)
        else:
            assert r.returncode == 1, (command, r.stderr)
            assert codes(r.stderr)[:1] == ["APK430"], (command, r.stderr)
    j = run("check", "--json", "m.apk", "--max-memory", budget_arg, cwd=tmp_path)
    objs = [json.loads(line) for line in j.stdout.splitlines()]
    assert [o["code"] for o in objs] == ([] if ok else ["APK430"])
    if not ok:
        assert objs[0]["line"] == 1 and "--max-memory" in objs[0]["help"]


@pytest.mark.parametrize("value", ["lots", "1.5G", "0", "-3", "4X"])
def test_a_bad_max_memory_is_a_usage_error(tmp_path, value):
    (tmp_path / "m.apk").write_text(FOUR_MIB)
    r = cli("run", "m.apk", f"--max-memory={value}", cwd=tmp_path)
    assert r.returncode == 2 and "--max-memory" in r.stderr and "Traceback" not in r.stderr


def test_numpy_memory_error_is_a_coded_error(tmp_path):
    """Within a budget the machine cannot honour, the allocation fails in NumPy: APK431 at the
    declaration, never a MemoryError traceback."""
    (tmp_path / "b.apk").write_text("x: f32[1000000, 1000] @ hbm = zeros\n")  # 4 GB > CAP
    for command in ("run", "lower"):
        r = cli(command, "b.apk", "--max-memory", "100G", cwd=tmp_path)
        assert r.returncode == 1 and codes(r.stderr) == ["APK431"], r.stderr
        assert "b.apk:1:1:" in r.stderr and "Traceback" not in r.stderr
    # check allocates nothing: within the budget it is fine
    r = cli("check", "b.apk", "--max-memory", "100G", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_an_instruction_that_cannot_get_memory_is_a_coded_error(tmp_path):
    (tmp_path / "i.apk").write_text(
        "x: u8[1000000, 4000] @ hbm\n"  # 4 GB, never touched until the copy
        "y: u8[1000000, 4000] @ hbm\n"
        "dma_copy(y, x)\n")
    r = cli("run", "i.apk", "--max-memory", "100G", "--no-init-check", cwd=tmp_path)
    assert r.returncode == 1 and codes(r.stderr) == ["APK431"], r.stderr
    assert "i.apk:3:1:" in r.stderr and "Traceback" not in r.stderr


# -- the Python API ---------------------------------------------------------------------------

def test_python_api_budget():
    with apdsl.options(max_memory=budget.live() + (6 << 20)):
        with raises_code("APK430") as err:
            apdsl.run("x: f32[2048, 1024] @ hbm = zeros\n")
        assert err.value.span.line == 1 and "max_memory" in err.value.help
        assert [e.code for e in apdsl.check("x: f32[2048, 1024] @ hbm\n")] == ["APK430"]
        with raises_code("APK430"):
            apdsl.ndarray((2048, 1024), "float32", "hbm")
        with raises_code("APK430"):
            apdsl.from_numpy(np.zeros((2048, 1024), np.float32))
        with raises_code("APK430"):  # kernel inputs are allocations too
            apdsl.run("kernel k(a: f32[2048, 1024] @ hbm):\n    pass\n",
                      inputs={"a": np.zeros((2048, 1024), np.float32)})
        t = apdsl.ndarray((1024, 1024), "float32", "hbm")  # 5 MiB fits
        assert t.shape == (1024, 1024)


def test_freed_and_dead_tensors_return_their_bytes():
    gc.collect()
    before = budget.live()
    source = """\
for i in range(10):
    t: f32[1024, 1024] @ hbm = 1.0
"""
    with apdsl.options(max_memory=before + (6 << 20)):  # one at a time fits, two do not
        apdsl.run(source)
        for _ in range(10):
            apdsl.ndarray((1024, 1024), "float32", "hbm")  # dropped at once
    assert budget.live() == before


def test_narrow_writes_reserve_their_bookkeeping():
    """Per-byte written state costs one byte per byte: a float32 tensor reserves one per
    element, and a uint8 write into part of it reserves the rest -- past the budget, APK430
    at the instruction, before anything is written."""
    gc.collect()  # earlier tests' garbage would otherwise return its bytes mid-test
    live = budget.live()
    t = apdsl.ndarray((1, 4096), "float32", "sbuf")
    assert budget.live() - live == 4 * 4096 + 4096
    src = apdsl.from_numpy(np.ones((1, 16), np.uint8), "sbuf")
    with apdsl.options(max_memory=budget.live() + 1000):
        with raises_code("APK430") as err:
            apdsl.tensor_copy(t.view("uint8")[:, 0:16], src)
        assert "written state" in err.value.message
    assert t.storage.unit_bits == 32 and t.storage._data is None  # nothing moved
    apdsl.tensor_copy(t.view("uint8")[:, 0:16], src)
    assert t.storage.unit_bits == 8 and budget.live() - live == 2 * 4 * 4096 + 32
    del t, err  # (the error's traceback refers to the tensor)
    gc.collect()
    assert budget.live() - live == 32  # src


@pytest.mark.parametrize("value", [0, -1, True, 1.5, "4G"])
def test_max_memory_option_must_be_a_positive_int(value):
    with raises_code("APK421"):
        apdsl.options(max_memory=value)


def test_memory_error_outside_a_statement_is_coded(monkeypatch, capsys, tmp_path):
    """Writing -o or drawing can run out of memory outside any statement: still APK431."""
    from apdsl.surfaces import cli as cli_module

    def exhausted(args):
        raise MemoryError("Unable to allocate 9.0 GiB")
    monkeypatch.setitem(cli_module.COMMANDS, "run", exhausted)
    (tmp_path / "m.apk").write_text(FOUR_MIB)
    assert cli_module.main(["run", str(tmp_path / "m.apk")]) == 1
    err = capsys.readouterr().err
    assert "error[APK431]: out of memory" in err and "Traceback" not in err
