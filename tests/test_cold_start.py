"""The start-up path of `apdsl check` (SPEC section 10, cold start): what it must not import,
and the pieces that replaced heavier ones (no pathlib, a lean argparse, the exit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePath

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apdsl.semantics.program import path_stem

ROOT = Path(__file__).resolve().parent.parent

# Modules the check of a small correct file does not use.  Each was once on the path and cost
# a cold `apdsl check` time: Lark (parsing runs on cached tables; Lark only reports syntax
# errors), the terminal and colour libraries, the profile, the Python frontend, the error
# catalogue, and standard modules imported for one rare use (pathlib and its urllib/ipaddress,
# json, shutil and its compressors, hashlib and secrets, difflib, threading, logging).
HEAVY = ("lark", "regex", "rich", "pygments", "prompt_toolkit", "apdsl.profile", "apdsl.nki",
         "apdsl.catalogue", "apdsl.runtime.core.files", "apdsl.syntax.diagnose", "pathlib",
         "urllib", "ipaddress", "json", "shutil", "bz2", "lzma", "hashlib", "secrets",
         "difflib", "threading", "logging", "tempfile")


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose cache (XDG_CACHE_HOME) holds the parser tables, as after a user's
    first `apdsl check`: the start-up measured here is that of the later ones.  The cache
    holds the grammar's tables only (nothing of a file), so one first check serves the
    module (each costs a process and a Lark build: two seconds of CPU)."""
    folder = tmp_path_factory.mktemp("cold_start")
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    env.pop("APDSL_NO_CACHE", None)
    (folder / "first.apk").write_text("x = 1\n")
    subprocess.run([sys.executable, "-m", "apdsl", "check", "first.apk"], check=True, env=env,
                   capture_output=True, cwd=folder)  # computes and caches the parser tables
    assert list((folder / "cache").rglob("*.tables")), "the first check cached no tables"
    return env


def _imported_by_check(tmp_path: Path, env: dict[str, str], text: str, *args: str,
                       command: str = "check") -> tuple[set[str], str]:
    src = tmp_path / "small.apk"
    src.write_text(text)
    code = ("import io, sys, contextlib\n"
            "from apdsl.surfaces.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    status = main([{command!r}, sys.argv[1], *{list(args)!r}])\n"
            "print(status, out.getvalue().strip())\n"
            "print(' '.join(sorted(sys.modules)))\n")
    r = subprocess.run([sys.executable, "-c", code, str(src)], check=True, env=env,
                       capture_output=True, text=True)
    lines = r.stdout.splitlines()
    first, modules = lines[0], lines[-1]
    return set(modules.split()), first


@pytest.mark.parametrize("name", ["views.apk", "softmax.apk", "matmul.apk"])
def test_checking_a_small_file_imports_none_of_the_heavy_modules(tmp_path: Path, warm: dict,
                                                                 name: str) -> None:
    example = ROOT / "examples" / name
    if not example.exists():
        pytest.skip(f"no {name}")
    modules, first = _imported_by_check(tmp_path, warm, example.read_text())
    assert first.startswith("0 ") and ": ok" in first, first
    loaded = sorted(m for m in modules for h in HEAVY if m == h or m.startswith(h + "."))
    assert loaded == [], f"the check path imported {loaded}"


def test_a_check_loads_the_executors_of_the_instructions_it_calls_only(tmp_path: Path,
                                                                       warm: dict) -> None:
    # the builtins load an instruction's module on its first call or signature: a check of
    # views.apk (one dma_copy) loads that executor and none of the others, one of
    # matmul.apk (dma_copy, nc_matmul, tensor_copy) loads nc_matmul's too
    others = {"apdsl.runtime.nki.activation", "apdsl.runtime.nki.collectives",
              "apdsl.runtime.nki.reduce", "apdsl.runtime.nki.selection"}
    modules, first = _imported_by_check(tmp_path, warm, (ROOT / "examples" /
                                                         "views.apk").read_text())
    assert first.startswith("0 ") and ": ok" in first, first
    assert "apdsl.runtime.copies" in modules and "apdsl.runtime.nki.matmul" not in modules
    assert not modules & others
    modules, first = _imported_by_check(tmp_path, warm, (ROOT / "examples" /
                                                         "matmul.apk").read_text())
    assert first.startswith("0 ") and ": ok" in first, first
    assert {"apdsl.runtime.copies", "apdsl.runtime.nki.matmul"} <= modules
    assert not modules & others


def test_a_lazy_instruction_builtin_shows_its_executor_s_signature(tmp_path: Path) -> None:
    import inspect

    from apdsl.runtime.table import implementation
    from apdsl.semantics.program import Program
    interp = Program("x = 1\n", "<lazy>").interpreter(dry=True)
    builtin = interp.builtins["nc_matmul"]
    assert inspect.signature(builtin) == inspect.signature(implementation("nc_matmul"))
    assert builtin.__name__ == "nc_matmul"
    # an Ascend-only instruction keeps its wrapper's signature (as before the loading moved)
    assert not hasattr(interp.builtins["mmad"], "__wrapped__")
    # the checker still matches a call against the executor's parameters
    bad = Program("a: f32[128, 64] @ sbuf\nb: f32[128, 64] @ sbuf\n"
                  "dma_copy(a, b, colour=1)\n", str(tmp_path / "bad.apk"))
    errors = bad.check()
    assert any("colour" in str(e) for e in errors), errors


def test_running_a_program_without_ml_dtypes_types_never_loads_ml_dtypes(tmp_path: Path,
                                                                       warm: dict) -> None:
    # ml_dtypes costs about a second of CPU to import (more than the rest of a run): only a
    # program with bfloat16, float8 or int4 data pays for it
    f32 = (ROOT / "examples" / "gather_rows.apk").read_text()
    modules, first = _imported_by_check(tmp_path, warm, f32, command="run")
    assert first.startswith("0 gather_rows") and "ml_dtypes" not in modules, first
    bf16 = ("x: bf16[4, 8] @ hbm = arange\ny: i32[4, 8] @ sbuf\ndma_copy(dst=y, src=x)\n"
            "assert host(y)[3, 7] == 31\n")
    modules, first = _imported_by_check(tmp_path, warm, bf16, command="run")
    assert first.startswith("0") and "ml_dtypes" in modules, first


def test_a_python_kernel_on_numpy_types_never_loads_ml_dtypes(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(
        "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef double(x):\n"
        "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.load(x)\n    nl.store(out, t * 2)\n    return out\n")
    np.save(tmp_path / "x.npy", np.arange(8, dtype=np.int32).reshape(2, 4))
    code = ("import sys\nfrom apdsl.surfaces.cli import main\n"
            "status = main(['run', 'k.py', 'double', '-i', 'x=x.npy', '-o', 'y.npy'])\n"
            "print(status, 'ml_dtypes' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, check=True)
    assert r.stdout.splitlines()[-1] == "0 False", r.stdout + r.stderr
    assert (np.load(tmp_path / "y.npy") == 2 * np.arange(8).reshape(2, 4)).all()


def test_a_syntax_error_still_imports_lark_and_reports_as_before(tmp_path: Path,
                                                                warm: dict) -> None:
    modules, first = _imported_by_check(tmp_path, warm, "x = (1,\n")
    assert first.startswith("1"), first
    assert "lark" in modules  # the diagnostic comes from Lark's parse of the text


@given(st.lists(st.sampled_from(["a", "b.apk", ".", "..", "", ".x", "x.", "a.b.c", "/", "<s>"]),
                max_size=5))
def test_path_stem_is_pathlib_s(parts: list[str]) -> None:
    for text in ("/".join(parts), "/" + "/".join(parts), "/".join(parts) + "/"):
        assert path_stem(text) == PurePath(text).stem, text


def test_python_m_apdsl_exits_with_the_command_s_status_and_flushed_output(
        tmp_path: Path) -> None:
    """`leave` ends the process without Python's teardown: everything printed is there, the
    status is the command's, and exit handlers (a program's, or a library's) still run."""
    good = tmp_path / "good.apk"
    good.write_text("x = 1\nprint(x)\n")
    bad = tmp_path / "bad.apk"
    bad.write_text("assert 1 == 2\n")
    r = subprocess.run([sys.executable, "-m", "apdsl", "check", str(good)],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (0, f"{good}: ok (0 kernels)\n")
    r = subprocess.run([sys.executable, "-m", "apdsl", "check", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "APK" in r.stderr and r.stderr.endswith(
        "1 error\nFor more information about this error, try `apdsl explain APK901`.\n")
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
            "from apdsl.surfaces.cli import leave\n"
            "print('out', end='')\n"
            "leave(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (3, "out", "handler ran\n")


def test_a_python_kernel_file_s_open_files_are_flushed_at_exit(tmp_path: Path) -> None:
    """A `.py` file is the user's code: a file its module keeps open is flushed by Python's
    teardown, so the command ends through Python's exit, not `leave`'s shortcut."""
    log = tmp_path / "log.txt"
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import apdsl.nki as nki\n"
        "import apdsl.nki.language as nl\n"
        f"LOG = open({str(log)!r}, 'w')\n"
        "LOG.write('imported')\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, nl.load(a))\n"
        "    return out\n")
    np.save(tmp_path / "a.npy", np.ones((4, 8), np.float32))
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(kernel), "-i",
                        f"a={tmp_path / 'a.npy'}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert log.read_text() == "imported"


def test_leave_to_a_closed_pipe_behaves_as_python_s_exit() -> None:
    """When flushing fails the interpreter's own exit reports it, as before `leave`."""
    code = ("import sys\n"
            "from apdsl.surfaces.cli import leave\n"
            "print('x' * 100000)\n"
            "leave(0)\n")
    plain = "import sys\nprint('x' * 100000)\nsys.exit(0)\n"
    got = []
    for c in (code, plain):
        p = subprocess.Popen([sys.executable, "-c", c], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdout.close()  # the reader went away
        err = p.stderr.read()
        got.append((p.wait(), b"BrokenPipeError" in err))
    assert got[0] == got[1]


def test_only_the_named_command_s_arguments_are_declared() -> None:
    from apdsl.surfaces.arguments import build_parser
    full = build_parser()
    lean = build_parser(["check", "f.apk"])
    assert lean.parse_args(["check", "f.apk", "--json"]) == \
        full.parse_args(["check", "f.apk", "--json"])
    for argv in (["run", "f.apk", "-o", "o.npy"], ["explain", "--list"], ["show", "f", "t"]):
        assert build_parser(argv).parse_args(argv) == full.parse_args(argv)
