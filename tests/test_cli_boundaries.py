"""The command line's boundaries: `-i` arrays a kernel cannot take are refused at the
parameter in the user's file, naming the `-i` argument; no output replaces the program or an
input; every command that runs a program takes the run options; a usage error prints the
command's own usage (SPEC sections 2 and 15).

Each command runs as a user runs it (a subprocess) at least once here; the other variants run
the command line's `main` in process (`support.apdsl_in_process`), which reports the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import apdsl_in_process

PY_KERNEL = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2)
    nisa.dma_copy(dst=out, src=t)
    return out
'''

APK_UNTYPED = '''\
@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
'''

APK_TYPED = '''\
kernel k(A: f32[4, 8] @ hbm) -> f32[4, 8] @ hbm:
    out: f32[4, 8] @ hbm
    dma_copy(out, A)
    return out
'''

# reads a tile nothing wrote: an APK404 unless --no-init-check
UNWRITTEN = '''\
kernel k() -> f32[4, 8] @ hbm:
    t: f32[4, 8] @ sbuf
    out: f32[4, 8] @ hbm
    dma_copy(out, t)
    return out
'''


def cli_process(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"},
                          timeout=timeout)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return apdsl_in_process(*args, cwd=cwd)


def no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "double.py").write_text(PY_KERNEL)
    (tmp_path / "double.apk").write_text(APK_UNTYPED)
    (tmp_path / "typed.apk").write_text(APK_TYPED)
    (tmp_path / "unwritten.apk").write_text(UNWRITTEN)
    np.save(tmp_path / "x32.npy", np.arange(32, dtype=np.float32).reshape(4, 8))
    np.save(tmp_path / "x64.npy", np.arange(32, dtype=np.float64).reshape(4, 8))
    np.save(tmp_path / "i64.npy", np.arange(32, dtype=np.int64).reshape(4, 8))
    np.save(tmp_path / "u64.npy", np.arange(32, dtype=np.uint64).reshape(4, 8))
    return tmp_path


# -- inputs at the boundary ---------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "check", "lower", "profile"])
@pytest.mark.parametrize("file, where", [("double.py", "double.py:7:12"),
                                         ("double.apk", "double.apk:2:12")])
@pytest.mark.parametrize("array, dtype, cast", [("x64.npy", "float64", "float32"),
                                                ("i64.npy", "int64", "int32"),
                                                ("u64.npy", "uint64", "uint32")])
def test_a_64_bit_input_is_refused_at_the_parameter(folder, command, file, where, array, dtype,
                                                    cast):
    real = file == "double.py" and array == "x64.npy"  # a process per command
    proc = (cli_process if real else cli)(command, file, "-i", f"x={array}", cwd=folder)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    # located at `x` in `def double(x):`, in the user's file, naming the -i argument
    assert first.startswith(f"{where}: error[APK140]: -i x={array}: "), proc.stderr
    assert f"{dtype} array (4, 8)" in first and f"no {dtype}" in first
    assert "bin/apdsl" not in proc.stderr and "apdsl/" not in proc.stderr
    # help for a command-line user: a command that converts the file, and the -i to use then
    assert f"np.load('{array}').astype(np.{cast})" in proc.stderr
    assert f"-i x={Path(array).stem}_{cast}.npy" in proc.stderr


def test_the_conversion_the_help_gives_works(folder):
    proc = cli_process("run", "double.py", "-i", "x=i64.npy", cwd=folder)
    help_line = next(line for line in proc.stderr.splitlines() if "help:" in line)
    command = help_line.split('python -c "', 1)[1].split('"', 1)[0]
    subprocess.run([sys.executable, "-c", command], cwd=folder, check=True)
    proc = cli_process("run", "double.py", "-i", "x=i64_int32.npy", "-o", "out.npy",
                       cwd=folder)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(folder / "out.npy"),
                                  np.arange(32, dtype=np.int32).reshape(4, 8) * 2)


def test_a_typed_parameter_converts_an_int64_input_exactly(folder):
    # SPEC section 4: an integer source converts exactly (saturating) to the declared dtype
    (folder / "ityped.apk").write_text(APK_TYPED.replace("f32", "i32"))
    big = np.array([[2**40, -2**40, 7, -7, 2**31 - 1, -2**31, 0, 1]] * 4, np.int64)
    np.save(folder / "big.npy", big)
    proc = cli("run", "ityped.apk", "-i", "A=big.npy", "-o", "out.npy", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(folder / "out.npy"),
                                  np.clip(big, -2**31, 2**31 - 1).astype(np.int32))


def test_a_shape_the_type_contradicts_names_the_input(folder):
    np.save(folder / "wide.npy", np.zeros((4, 9), np.float32))
    proc = cli("run", "typed.apk", "-i", "A=wide.npy", cwd=folder)
    no_traceback(proc)
    assert proc.returncode == 1
    assert proc.stderr.startswith("typed.apk:1:20: error[APK131]: -i A=wide.npy: "), proc.stderr
    # a literal dimension: no talk of named dimensions agreeing
    assert "named dimensions" not in proc.stderr and "8" in proc.stderr


def test_a_named_dimension_that_disagrees_says_so(folder):
    (folder / "named.apk").write_text(
        "kernel k(A: f32[N, K] @ hbm, B: f32[N, K] @ hbm) -> f32[N, K] @ hbm:\n"
        "    return A\n")
    np.save(folder / "b.npy", np.zeros((5, 8), np.float32))
    proc = cli("check", "named.apk", "-i", "A=x32.npy", "-i", "B=b.npy", cwd=folder)
    assert proc.returncode == 1 and "error[APK131]" in proc.stderr, proc.stderr
    assert "named dimensions must agree" in proc.stderr and "-i B=b.npy" in proc.stderr


def test_an_input_fifo_is_refused_at_once(folder):
    os.mkfifo(folder / "pipe.npy")  # nothing ever writes it: opening it would block
    for command in ("run", "check"):
        proc = cli_process(command, "double.py", "-i", "x=pipe.npy", cwd=folder, timeout=60)
        no_traceback(proc)
        assert proc.returncode == 1 and "error[APK601]" in proc.stderr, proc.stderr


# -- nothing lost ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["run", "typed.apk", "-o", "typed.apk"],
    ["run", "typed.apk", "-o", "./sub/../typed.apk"],
    ["profile", "typed.apk", "--svg", "typed.apk"],
    ["profile", "typed.apk", "--trace", "typed.apk"],
    ["show", "typed.apk", "k.out", "--svg", "typed.apk"],
    ["run", "typed.apk", "-i", "A=x32.npy", "-o", "x32.npy"],
    ["run", "double.py", "-i", "x=x32.npy", "-o", "double.py"],
    ["run", "typed.apk", "-o", "link.apk"],
    ["run", "typed.apk", "-o", "hard.apk"],
    ["profile", "typed.apk", "--svg", "t.svg", "--trace", "t.svg"],
])
def test_an_output_that_would_replace_what_is_read_is_refused(folder, argv):
    (folder / "sub").mkdir()
    (folder / "link.apk").symlink_to("typed.apk")
    os.link(folder / "typed.apk", folder / "hard.apk")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    proc = cli(*argv, cwd=folder)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert "would replace" in proc.stderr and f"usage: apdsl {argv[0]}" in proc.stderr
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert after == before


@pytest.mark.parametrize("argv", [["run", "typed.apk", "-o", ""],
                                  ["profile", "typed.apk", "--svg", ""],
                                  ["profile", "typed.apk", "--trace", " "],
                                  ["show", "typed.apk", "k.out", "--svg", ""]])
def test_an_empty_output_name_is_a_usage_error(folder, argv):
    proc = cli(*argv, cwd=folder)
    assert proc.returncode == 2 and "needs a file name" in proc.stderr, proc.stderr


def test_an_output_next_to_the_program_is_written(folder):
    proc = cli_process("run", "typed.apk", "-i", "A=x32.npy", "-o", "out.npy", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(folder / "out.npy"), np.load(folder / "x32.npy"))


# -- run options on every command -----------------------------------------------------------------

RUNS = ["run", "check", "lower", "profile", "show"]


def _argv(command: str, file: str) -> list[str]:
    return [command, file, "k.out"] if command == "show" else [command, file]


@pytest.mark.parametrize("command", RUNS)
def test_every_command_that_runs_a_program_takes_the_run_options(folder, command):
    options = ["--target", "trn2", "--strict-padding", "--sync", "off", "--max-steps",
               "100000", "--max-memory", "1G", "--grid", "1", "--ranks", "1"]
    for init in (["--no-init-check"], ["--strict-init"], []):
        run = cli if init else cli_process  # a process per command
        proc = run(*_argv(command, "typed.apk"), *options, *init, cwd=folder)
        assert proc.returncode == 0, (init, proc.stderr)


@pytest.mark.parametrize("command", ["run", "lower", "profile", "show"])
def test_no_init_check_turns_the_check_off_where_the_diagnostic_says(folder, command):
    proc = cli(*_argv(command, "unwritten.apk"), cwd=folder)
    assert proc.returncode == 1 and "error[APK404]" in proc.stderr, proc.stderr
    assert "--no-init-check" in proc.stderr  # the help names the option ...
    proc = cli(*_argv(command, "unwritten.apk"), "--no-init-check", cwd=folder)
    assert proc.returncode == 0, proc.stderr  # ... and the command takes it
    proc = cli(*_argv(command, "unwritten.apk"), "--strict-init", cwd=folder)
    assert proc.returncode == 1 and "error[APK404]" in proc.stderr, proc.stderr


@pytest.mark.parametrize("command", RUNS)
def test_a_usage_error_prints_the_commands_usage(folder, command):
    for extra in (["--bogus"], ["--no-init-check", "--strict-init"], ["--grid", "0"]):
        proc = cli(*_argv(command, "typed.apk"), *extra, cwd=folder)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(f"usage: apdsl {command} "), proc.stderr
        assert "COMMAND ..." not in proc.stderr
    proc = cli_process(command, "typed.apk", "nosuchkernel" if command != "show" else "nosuch.x",
                       cwd=folder)
    assert proc.returncode == 2 and proc.stderr.startswith(f"usage: apdsl {command} ")


@pytest.mark.parametrize("command", RUNS)
def test_more_than_one_rank_is_for_python_kernels_only(folder, command):
    proc = cli(*_argv(command, "typed.apk"), "--ranks", "4", cwd=folder)
    no_traceback(proc)
    assert proc.returncode == 1
    assert "error[APK170]: --ranks 4: a group of ranks runs NKI Python kernels" in proc.stderr


def test_grid_reaches_check_and_show(folder):
    (folder / "two.apk").write_text(
        "kernel k() -> i32[1, 1] @ shared_hbm:\n"
        "    out: i32[1, 1] @ shared_hbm\n"
        "    t: i32[1, 1] @ sbuf\n"
        "    memset(t, program_id(0))\n"
        "    assert program_id(0) < 1\n"
        "    dma_copy(out, t)\n"
        "    return out\n")
    for command in ("run", "check"):
        assert cli(command, "two.apk", cwd=folder).returncode == 0
        proc = cli(command, "two.apk", "--grid", "2", cwd=folder)
        assert proc.returncode == 1 and "error[APK9" in proc.stderr, proc.stderr
    proc = cli("show", "two.apk", "k.t", "--grid", "2", cwd=folder)
    assert proc.returncode == 1 and "error[APK9" in proc.stderr, proc.stderr
