"""Issue 22's loops and budgets, run as a user runs them (`python -m apdsl` in a subprocess
with an address-space cap and a timeout): a dict or set changed while a loop walks it, `check`
of a loop whose body fails, endless loops and the time budget, format widths checked before
the text is built, and the iteration an error in a loop body happened in.  (What the commands
report runs through the command line's `main` in process where nothing can run away: programs
that end at once, `check`, whose own time budget ends it, and usage errors; the commands of a
test that could run away share one capped process, `support.capped_commands`.  Each kind keeps
a test of its own process.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import apdsl_in_process, capped_cli, capped_commands

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

ROOT = Path(__file__).resolve().parent.parent
cli = capped_cli


def codes(text: str) -> list[str]:
    return re.findall(r"error\[(APK\d{3})\]", text)


def write(tmp_path: Path, source: str, name: str = "prog.apk") -> str:
    (tmp_path / name).write_text(source)
    return name


def clean(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr


# ---- a dict or set changed while a loop walks it -------------------------------------------

MUTATIONS = [
    ('d = {"a": 1}\nfor i in d:\n    d[i + "x"] = 1\n', 2),
    ('d = {"a": 1, "b": 2}\nfor k, v in d.items():\n    del d[k]\n', 2),
    ('s = {1, 2}\nfor x in s:\n    s.add(x + 10)\n', 2),
    ('d = {"a": 1}\nfor k in d.keys():\n    d.pop(k)\n    d["z" + k] = 2\n', 2),
    ('d = {"a": 1}\nxs = [d.setdefault(k + "x", 1) for k in d]\n', 2),
    ('d = {"a": 1}\nn = sum(d.setdefault(k + "x", 1) for k in d)\n', 2),
    ('def f(d):\n    for k in d:\n        d[k * 2] = 0\nf({"a": 1})\n', 2),
]


@pytest.mark.parametrize("source,line", MUTATIONS)
def test_changing_what_a_loop_walks_is_a_located_error(tmp_path, source, line):
    name = write(tmp_path, source)
    # the first as a user runs it (a process per command), the others through the command
    # line's `main` in process
    run = cli if source == MUTATIONS[0][0] else apdsl_in_process
    for command in ("run", "check"):
        proc = run(command, name, cwd=tmp_path)
        clean(proc)
        assert proc.returncode == 1, proc.stderr
        assert codes(proc.stderr) == ["APK045"], proc.stderr
        assert f"{name}:{line}:" in proc.stderr
        assert "changed size during iteration" in proc.stderr or \
            "changed during iteration" in proc.stderr


def test_walking_a_copy_while_changing_the_dict_is_fine(tmp_path):
    name = write(tmp_path, 'd = {"a": 1}\nfor i in list(d):\n    d[i + "x"] = 1\n'
                 'assert sorted(d) == ["a", "ax"]\nprint(len(d))\n')
    proc = apdsl_in_process("run", name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"


# ---- check of a loop whose body fails: reported once, the loop left -----------------------

FAILING_BODIES = [
    ("APK101", "    v = nosuchname\n"),
    ("APK044", '    v = f"{\'a\':.3f}"\n'),
    ("APK102", "    v = len(1, 2)\n"),
    ("APK103", "    v = c._hidden\n"),
    ("APK120", '    v = "a" + c\n'),
    ("APK122", "    v = [1, 2][c + 5]\n"),
    ("APK192", '    v = "{0.real}".format(c)\n'),
]


@pytest.mark.parametrize("code,line", FAILING_BODIES)
def test_check_of_an_endless_loop_whose_body_fails_reports_once_and_ends(tmp_path, code, line):
    # today's main walks the whole step budget at ~0.2 ms a step: hours.  The first as a user
    # runs it; the others in process, where check's own time budget (10 s) would end a
    # regression with APK804 instead of the body's code
    name = write(tmp_path, "c = 0\nwhile True:\n    c += 1\n" + line)
    start = time.monotonic()
    check = cli if code == FAILING_BODIES[0][0] else apdsl_in_process
    proc = check("check", name, cwd=tmp_path)
    clean(proc)
    assert proc.returncode == 1
    assert codes(proc.stderr) == [code], proc.stderr
    assert time.monotonic() - start < 60


def test_check_of_a_for_loop_whose_body_fails_reports_each_error_once(tmp_path):
    name = write(tmp_path, "for i in range(10**8):\n    v = [1, 2][i + 5]\n"
                 "    if i == 0:\n        w = nosuch\n")
    proc = apdsl_in_process("check", "--json", name, cwd=tmp_path)  # check's time budget
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted(o["code"] for o in objs) == ["APK101", "APK122"]


def test_check_still_finds_an_error_of_a_later_iteration(tmp_path):
    # iterations without failures go on: the error at i == 3 is found
    name = write(tmp_path, "xs = [0, 1, 2]\nfor i in range(5):\n    if i == 3:\n"
                 "        y = xs[i]\n")
    proc = apdsl_in_process("check", name, cwd=tmp_path)
    assert codes(proc.stderr) == ["APK122"]
    assert "in the iteration i = 3" in proc.stderr


# ---- endless loops: the time budget --------------------------------------------------------

ENDLESS = "n = 0\nwhile True:\n    n = n + 1\n"


@pytest.mark.parametrize("command", ["run", "check"])
def test_max_time_stops_an_endless_loop(tmp_path, command):
    name = write(tmp_path, ENDLESS)
    proc = cli(command, name, "--max-time", "0.5", cwd=tmp_path, timeout=120)
    clean(proc)
    assert proc.returncode == 1
    assert codes(proc.stderr) == ["APK804"], proc.stderr
    assert f"{name}:2:" in proc.stderr
    assert "--max-time" in proc.stderr and "0.5 seconds" in proc.stderr


def test_check_has_a_time_budget_by_default_and_run_none():
    # today's main walks 100,000,000 steps in check (minutes); check's default time budget is
    # 10 s of processor time (the CLI's --max-time is the same budget, tested above)
    from apdsl.semantics.interpreter import Interpreter
    from apdsl.semantics.limits import DEFAULT_CHECK_SECONDS
    assert DEFAULT_CHECK_SECONDS == 10
    assert Interpreter(dry=True).budget.seconds == DEFAULT_CHECK_SECONDS
    assert Interpreter(dry=False).budget.seconds is None
    with apdsl.options(max_time=2.5):
        assert Interpreter(dry=True).budget.seconds == Interpreter().budget.seconds == 2.5
    # and the check ends within its budget: a loop that would take minutes stops at once
    with apdsl.options(max_time=0.2):
        errors = apdsl.check(ENDLESS)
    assert [e.code for e in errors] == ["APK804"]


def test_max_time_is_a_usage_error_when_not_a_positive_number(tmp_path):
    name = write(tmp_path, "x = 1\n")
    for bad in ("0", "-1", "soon", "inf"):  # argparse's: nothing runs
        proc = apdsl_in_process("run", name, "--max-time", bad, cwd=tmp_path)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert "--max-time" in proc.stderr


def test_max_time_option_in_python():
    with apdsl.options(max_time=0.3):
        with pytest.raises(ApdslError) as e:
            Program(ENDLESS).run()
    assert e.value.code == "APK804"
    with pytest.raises(ApdslError) as e:
        apdsl.options(max_time=0)
    assert e.value.code == "APK421"


def test_a_long_finite_run_is_not_stopped_without_a_time_budget():
    # run has no time budget by default: steps alone bound it, counted exactly
    source = "t = 0\nfor i in range(300000):\n    t = t + i\nassert t == 300000 * 299999 // 2\n"
    Program(source).run()
    with apdsl.options(max_time=60):
        Program(source).run()


# ---- format widths checked before the text is built ----------------------------------------

FORMAT_WIDTHS = [
    ('i = 1\ns = "{:>99999999}".format(i)\n', "APK801", "100"),   # 1.5 M steps of padding
    ('s = "{:>{}}".format(1, 10**9)\n', "APK803", "100"),
    ('s = "{:.{}f}".format(1.0, 10**9)\n', "APK803", "100"),
    ('s = "{:>60000000}{:>60000000}".format(1, 2)\n', "APK803", "100000000"),
    ('s = "%*d" % (10**9, 1)\n', "APK803", "100"),
    ('s = "%0999999999d" % 1\n', "APK803", "100"),
    ('s = "%0999999999d"\ns %= 1\n', "APK803", "100"),          # the in-place form too
    ('s = "%*d"\ns %= (10**9, 1)\n', "APK803", "100"),
    ('i = 1\ns = "%99999999d" % i\n', "APK801", "100"),
    ('i = 1\ns = f"{i:>99999999}"\n', "APK801", "100"),
]


@pytest.fixture(scope="module")
def formatted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess]:
    """Each FORMAT_WIDTHS program run, all in one capped process with a minute for them all
    (a regression building a text of gigabytes meets the cap or the timeout there)."""
    folder = tmp_path_factory.mktemp("widths")
    commands = [["run", write(folder, source, f"w{i}.apk"), "--max-steps", steps]
                for i, (source, _, steps) in enumerate(FORMAT_WIDTHS)]
    done = capped_commands(*commands, cwd=folder, timeout=60)
    return {source: proc for (source, _, _), proc in zip(FORMAT_WIDTHS, done, strict=True)}


@pytest.mark.parametrize("source,code,steps", FORMAT_WIDTHS)
def test_huge_format_widths_are_refused_before_building(formatted, source, code, steps):
    proc = formatted[source]
    clean(proc)
    assert proc.returncode == 1, proc.stderr
    assert codes(proc.stderr) == [code], proc.stderr


def test_format_still_formats_as_python_does():
    source = ('x = "{} {:>5} {name!r} {:{}}|{{}}".format(3, 2, 7, 4, name="a")\n'
              'y = "%s %d %% %5.2f %*d|%-*.*f" % ("q", 2, 3.14159, 4, 1, 8, 2, 1.5)\n'
              'z = "%(a)5s" % {"a": 1}\n')
    namespace: dict = {}
    p = Program(source)
    p.interpreter().exec_module(p.module, namespace)
    assert namespace["x"] == "{} {:>5} {name!r} {:{}}|{{}}".format(3, 2, 7, 4, name="a")
    assert namespace["y"] == "%s %d %% %5.2f %*d|%-*.*f" % ("q", 2, 3.14159, 4, 1, 8, 2, 1.5)  # noqa: UP031
    assert namespace["z"] == "%(a)5s" % {"a": 1}  # noqa: UP031


# ---- the iteration an error happened in ----------------------------------------------------

NESTED = """\
def pick(n):
    for k in range(n):
        x = [1, 2][k]
    return x
for i in range(3):
    for j in range(4):
        if i == 1 and j == 2:
            y = pick(j + 1)
"""


def test_an_error_in_a_loop_says_its_iteration(tmp_path):
    name = write(tmp_path, NESTED)  # ends at once: in process
    for command in ("run", "check"):
        proc = apdsl_in_process(command, name, cwd=tmp_path)
        clean(proc)
        assert codes(proc.stderr) == ["APK122"], proc.stderr
        assert "note: in the iteration i = 1, j = 2, k = 2" in proc.stderr, proc.stderr
    proc = apdsl_in_process("check", "--json", name, cwd=tmp_path)
    obj = json.loads(proc.stdout.splitlines()[0])
    assert "in the iteration i = 1, j = 2, k = 2" in obj["notes"]


def test_the_iteration_note_shows_tuple_targets_and_long_values_briefly(tmp_path):
    name = write(tmp_path, 'rows = [(0, "a"), (1, list(range(100)))]\n'
                 'for n, (i, v) in enumerate(rows):\n    assert i == 0, "only zero"\n')
    proc = apdsl_in_process("run", name, cwd=tmp_path)
    assert codes(proc.stderr) == ["APK900"] or "APK9" in proc.stderr, proc.stderr
    note = next(line for line in proc.stderr.splitlines() if "in the iteration" in line)
    assert "n = 1, i = 1, v = [0, 1, 2, 3, ... (100 elements)]" in note, note


# ---- Python values and random data inside --max-memory -------------------------------------

_MEASURED = ("import resource, sys\nfrom apdsl.surfaces.cli import main\n"
             "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
             "print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
             "file=sys.stderr)\nsys.exit(rc)\n")


def measured(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, int]:
    """The command line's `main` in a fresh process, and its peak resident memory in bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
           "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=600)
    peak = int(re.search(r"maxrss (\d+)", proc.stderr).group(1)) * 1024
    return proc, peak


def test_python_lists_count_in_max_memory(tmp_path):
    # today's main: 64 lists of 10**8 elements reach 3 GB under --max-memory 1G
    name = write(tmp_path, "xs = []\nfor i in range(64):\n    xs.append([0] * 10**8)\n")
    proc, peak = measured("run", name, "--max-memory", "1G", cwd=tmp_path)
    clean(proc)
    assert proc.returncode == 1
    assert codes(proc.stderr) == ["APK430"], proc.stderr
    assert f"{name}:3:" in proc.stderr and "in the iteration i = 1" in proc.stderr
    assert peak < 1.25 * (1 << 30), peak


# (a tenth of the sizes that reach the machine's limits: the budget counts the values a
# program builds, so a budget of 20M proves what 200M would; test_python_lists_count_in_max_memory
# measures the process itself)
@pytest.mark.parametrize("source", [
    "x = list(range(10**6))\n",  # 8 MB of slots and 28 MB of ints
    'x = "\U0001F600" * 10**7\n',  # 40 MB: four bytes a character
    "x = [i for i in range(2 * 10**6)]\ny = [i for i in range(2 * 10**6)]\n",
    'x = ["a"] * 10**6\ny = "".join(x) * 9\n',  # 11 MB, then 1 MB and 9 MB more
])
def test_large_python_values_are_refused_at_the_budget(tmp_path, source):
    name = write(tmp_path, source)
    proc = cli("run", name, "--max-memory", "20M", cwd=tmp_path, timeout=300)
    clean(proc)
    assert proc.returncode == 1
    assert codes(proc.stderr) == ["APK430"], proc.stderr


def test_values_the_program_drops_return_their_bytes(tmp_path):
    # 16 lists of 8 MB (128 MB) one after another fit in 30 MB: each is dropped before the
    # next (two at once, the one x names while the next is built, take 16 MB)
    name = write(tmp_path, "total = 0\nfor i in range(16):\n    x = [0] * 10**6\n"
                 "    total += len(x)\nprint(total)\n")
    proc = cli("run", name, "--max-memory", "30M", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "16000000"


def test_random_data_makes_no_temporary_past_max_memory(tmp_path):
    # 8000 x 8000 float32: 256 MB of data and 64 MB of bookkeeping (measured: a peak of about
    # 350 MB, the process's own 35 MB included); a float64 temporary of the whole would add
    # 512 MB (main's peaked at 1.7 GB for 12000 x 12000)
    name = write(tmp_path, "x: f32[8000, 8000] @ hbm = random(3)\nprint(x.shape)\n")
    proc, peak = measured("run", name, "--max-memory", "512M", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert peak < 512 << 20, peak


def test_random_data_is_the_same_drawn_in_blocks():
    import numpy as np
    source = ("a: f32[1500, 1000] @ hbm = random(5)\nb: i8[3, 700, 1000] @ hbm = random(7)\n"
              "c: f16[2, 1100000] @ hbm = random(9)\nd: u8[64, 32] @ hbm = random(11)\n")
    namespace: dict = {}
    p = Program(source)
    p.interpreter().exec_module(p.module, namespace)

    def whole(shape, kind, seed):  # the stream drawn at once, as float64 and int64
        rng = np.random.default_rng(seed)
        if kind in "iu":
            return rng.integers(0 if kind == "u" else -4, 8, size=shape).astype(np.int64)
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    for n, shape, kind, seed, dt in (("a", (1500, 1000), "f", 5, np.float32),
                                     ("b", (3, 700, 1000), "i", 7, np.int8),
                                     ("c", (2, 1100000), "f", 9, np.float16),
                                     ("d", (64, 32), "u", 11, np.uint8)):
        assert np.array_equal(namespace[n].numpy(), whole(shape, kind, seed).astype(dt)), n
