"""Programs and helpers shared by several test files."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from apdsl.errors import ApdslError

# The long run (`APDSL_DEEP=1`, README "Tests and benchmarks"): the tests that try a fixed
# sample of a larger set in an ordinary run (mutants, stack depths, fuzz programs) try it all.
DEEP = bool(os.environ.get("APDSL_DEEP"))

# The program of SPEC section 3.
SPEC_EXAMPLE = """\
t: f32[128, 64] @ sbuf                  # declaration: allocates a tensor
u = t.slice(1, 8, 24)                   # a view: no data moves
assert u.get_pattern() == [[64, 128], [1, 16]]
assert u.offset == 8

kernel gather_rows(A: f32[128, 512] @ hbm) -> f32[64, 512] @ shared_hbm:
    offsets = ndarray((64, 1), int32, sbuf)
    iota(offsets, [[1, 1]], 0, 2)       # offsets[p] = 2 * p
    result = ndarray((64, 512), f32, shared_hbm)
    dma_copy(dst=result, src=A.vector_select(0, offsets))
    assert allclose(host(result), host(A)[0:128:2])
    return result
"""

# NKI documentation code (seed 000), as it pastes in.
NKI_EXAMPLE = """\
def gather_rows(A):
    offsets = nl.ndarray((64, 1), nl.int32, nl.sbuf)
    nisa.iota(offsets, [[1, 1]], 0, 2)        # e.g. rows 0, 2, 4, ...
    src = A.vector_select(0, offsets)
    result = nl.ndarray((64, 512), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(src=src, dst=result[...])
    return result
"""


class raises_code:  # noqa: N801 - used like pytest.raises
    """`with raises_code("APK523") as err:` -- an ApdslError with exactly that code."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __enter__(self) -> raises_code:
        return self

    def __exit__(self, tp, value, tb) -> bool:
        assert tp is not None, f"expected {self.code}, nothing was raised"
        assert issubclass(tp, ApdslError), f"expected {self.code}, got {tp.__name__}: {value}"
        assert value.code == self.code, f"expected {self.code}, got {value.code}: {value}"
        self.value = value
        return True

# Examples that show an error on purpose: file name -> the code `run` and `check` must report.
EXPECTED_TO_FAIL = {"ascend_race.apk": "APK570"}


def lower_header(lines: list[str], head: str) -> int:
    """The index of an instruction's line in `apdsl lower`'s table: `head`, then (after two
    spaces) its non-tensor operands and hints, if any."""
    return next(i for i, ln in enumerate(lines) if ln == head or ln.startswith(head + "  "))


def error_code(fn) -> str | None:
    """The code of the ApdslError `fn()` raises (None when it raises none)."""
    try:
        fn()
    except ApdslError as e:
        return e.code
    return None


def lowered_rows(folder: str | os.PathLike, source: str, inputs: dict, *extra: str
                 ) -> list[dict]:
    """`apdsl lower --json` of the kernel file `source` (written as kern.py in `folder`) on
    `inputs` (name -> array): each instruction and its operands' access patterns, the tensors'
    names, lines and files left out, so that two spellings of one kernel compare equal."""
    import numpy as np
    with open(os.path.join(folder, "kern.py"), "w", encoding="utf-8") as f:
        f.write(source)
    args: list[str] = []
    for name, arr in inputs.items():
        np.save(os.path.join(folder, f"{name}.npy"), arr)
        args += ["-i", f"{name}={name}.npy"]
    proc = apdsl_in_process("lower", "kern.py", *args, "--json", *extra, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    for row in rows:
        row.pop("line"), row.pop("file")
        for operand in row["operands"].values():
            operand.pop("tensor")
    return rows


def run_nki_file(folder: str | os.PathLike, *body: str, rows: int = 4
                 ) -> subprocess.CompletedProcess:
    """`apdsl run kern.py -i a=a.npy` in `folder`, where kern.py is an `@nki.jit` kernel `k(a)`
    (nki, nki.isa and nki.language imported) that allocates `out` in shared HBM, runs the
    statements `body` (each one line of the kernel) and returns `out`; `a` is ones of shape
    (rows, 4).  Line 9 of kern.py is the first line of `body`."""
    source = ["import nki", "import nki.isa as nisa", "import nki.language as nl", "", "",
              "@nki.jit", "def k(a):",
              "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)",
              *(f"    {line}" for line in body), "    return out"]
    Path(folder, "kern.py").write_text("\n".join(source) + "\n")
    np.save(Path(folder, "a.npy"), np.ones((rows, 4), np.float32))
    return apdsl_in_process("run", "kern.py", "-i", "a=a.npy", cwd=folder)


def apdsl_in_process(*args: str, cwd: str | os.PathLike | None = None
                     ) -> subprocess.CompletedProcess:
    """`apdsl ARGS` run by the command line's own `main` inside the test's process: its exit
    status, stdout and stderr as `subprocess.run` gives them, without a process start (a tenth
    to a half of a second of CPU each, most of a command-line test's cost).  For tests of what
    a command reports; what only a process shows (start-up, exit, the streams as pipes) keeps
    its subprocess tests, at least one per command.  The garbage-collector policy of a
    one-command process (apdsl.surfaces.collector) is left out: it would outlive the command
    here.  Each command runs on a fresh machine (apdsl.tensor.machine), as in its own process."""
    from apdsl.surfaces import cli, collector
    from apdsl.tensor.machine import Machine

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    nki_before = "nki" in sys.modules
    tune, collector.tune_for_one_command = collector.tune_for_one_command, lambda: None
    colour = os.environ.pop("NO_COLOR", None)
    os.environ["NO_COLOR"] = "1"
    try:
        if cwd is not None:
            os.chdir(cwd)
        # a fresh machine, as a new process has: no target or state of an earlier command
        with Machine().active(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                status = cli.main([str(a) for a in args])
            except SystemExit as e:  # argparse's usage errors
                status = e.code if isinstance(e.code, int) else 1
    finally:
        if not nki_before and "apdsl.nki.install" in sys.modules:  # a .py kernel installed it
            sys.modules["apdsl.nki.install"].uninstall()
        os.chdir(here)
        collector.tune_for_one_command = tune
        if colour is None:
            del os.environ["NO_COLOR"]
        else:
            os.environ["NO_COLOR"] = colour
    return subprocess.CompletedProcess([str(a) for a in args], status, out.getvalue(),
                                       err.getvalue())


# ---- `apdsl` in a process under an address-space cap and a timeout --------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMORY_CAP = 1 << 30  # bytes of address space a capped command may use


def address_space(limit: int):
    """A `preexec_fn` capping the child's address space at `limit` bytes."""
    def apply() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def _capped_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT, "OPENBLAS_NUM_THREADS": "1", "NO_COLOR": "1"}


def capped_cli(*args: str, cwd: str | os.PathLike, memory: int = MEMORY_CAP,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m apdsl ARGS` as a user runs it, in a process whose address space is capped
    and which has `timeout` seconds: a regression (a hang, a runaway allocation) fails the
    test instead of the machine."""
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env=_capped_env(), timeout=timeout,
                          preexec_fn=address_space(memory))


# The child of `capped_commands`: each command through `apdsl_in_process`, then one JSON line.
_COMMANDS = """\
import json, sys
sys.path.insert(0, sys.argv[1])
from support import apdsl_in_process
done = [apdsl_in_process(*args) for args in json.loads(sys.argv[2])]
print(json.dumps([[p.args, p.returncode, p.stdout, p.stderr] for p in done]))
"""


def capped_commands(*commands: list[str], cwd: str | os.PathLike, memory: int = MEMORY_CAP,
                    timeout: float = 120) -> list[subprocess.CompletedProcess]:
    """Several `apdsl` commands, each run by the command line's `main` on a fresh machine
    (`apdsl_in_process`), all in one new process with `capped_cli`'s cap and timeout: what
    they report, for one process start (most of a command's cost) instead of one each.  The
    commands' exits as processes keep their own tests (`capped_cli`)."""
    proc = subprocess.run([sys.executable, "-c", _COMMANDS, os.path.dirname(__file__),
                           json.dumps([[str(a) for a in c] for c in commands])],
                          capture_output=True, text=True, cwd=cwd, env=_capped_env(),
                          timeout=timeout, preexec_fn=address_space(memory))
    assert proc.returncode == 0 and proc.stdout, proc.stderr
    return [subprocess.CompletedProcess(*done)
            for done in json.loads(proc.stdout.splitlines()[-1])]
