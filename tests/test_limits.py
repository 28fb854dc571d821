"""The limits of SPEC section 15: the step budget, integer and sequence sizes, helper recursion,
source nesting, odd inputs and the isolation of a program from its caller.

Command-line tests run `python -m apdsl` in a subprocess with an address-space cap and a
timeout, so a regression (a hang, a runaway allocation) fails the test instead of the machine;
where a test compares what several commands report, they share one such process
(`support.capped_commands`), and each command keeps a test of its own process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import (
    MEMORY_CAP,
    address_space,
    apdsl_in_process,
    capped_cli,
    capped_commands,
    raises_code,
)

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program
from apdsl.tensor import targets

ROOT = Path(__file__).resolve().parent.parent
cli = capped_cli
HUGE_LOOP = "total = 0\nfor i in range(10**12):\n    total = total + i\n"


def codes(text: str) -> list[str]:
    return re.findall(r"error\[(APK\d{3})\]", text)


def located(stderr: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of each diagnostic header."""
    return [(c, int(line), int(col)) for line, col, c in
            re.findall(r"^\S+:(\d+):(\d+): error\[(APK\d{3})\]", stderr, re.M)]


def everywhere(tmp_path: Path, source: str, *extra: str, name: str = "prog.apk") -> dict:
    """Run, check and check --json one program (in one capped process); the located
    diagnostics of each."""
    path = tmp_path / name
    path.write_text(source)
    run, check, as_json = capped_commands(["run", name, *extra], ["check", name, *extra],
                                          ["check", "--json", name, *extra], cwd=tmp_path)
    for proc in (run, check, as_json):
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    objs = [json.loads(line) for line in as_json.stdout.splitlines()]
    return {"run": located(run.stderr), "check": located(check.stderr),
            "json": [(o["code"], o["line"], o["column"]) for o in objs],
            "help": [o["help"] for o in objs]}


def namespace(source: str) -> dict:
    """The top-level names after running `source`."""
    ns: dict = {}
    program = Program(source)
    program.interpreter().exec_module(program.module, ns)
    return ns


def steps_used(source: str) -> int:
    """The smallest budget a program runs within, found by bisection over apdsl.run."""
    lo, hi = 1, 10_000
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            with apdsl.options(max_steps=mid):
                Program(source).run()
            hi = mid
        except ApdslError as e:
            assert e.code == "APK801", e
            lo = mid + 1
    return lo


# ---- the step budget ------------------------------------------------------------------------

# Programs and their step counts by SPEC's definition (a simple statement, an if or loop test,
# a loop iteration, a call): each count is worked out by hand in the comment.
COUNTED = [
    ("x = 1\n", 1),
    ("x = 0\nfor i in range(10):\n    x = x + i\n",  # 2 statements, range(), 10 x (iter, stmt)
     2 + 1 + 20),
    ("x = 0\nfor i in range(10):\n    if i == 3:\n        break\n    x = x + i\n",
     # 2 statements, range(); i = 0, 1, 2: iter + if + assign; i = 3: iter + if + break
     2 + 1 + 3 * 3 + 3),
    ("x = 0\nfor i in range(6):\n    if i % 2:\n        continue\n    x = x + 1\n",
     # 3 even i: iter + if + assign; 3 odd: iter + if + continue
     2 + 1 + 3 * 3 + 3 * 3),
    ("def f(n):\n    if n == 0:\n        return 0\n    return n + f(n - 1)\ny = f(3)\n",
     # def, assign, 4 calls of f; f(0): if + return; f(1..3): if + return
     2 + 4 + 4 * 2),
    ("def g():\n    return 1\nx = [g(), g(), len([1])]\n",  # def, assign, 3 calls, 2 returns
     2 + 3 + 2),
    ("x = sum(range(50))\n", 1 + 2 + 50),  # a builtin walking a sequence: a step an element
    ("x = 1\nif x > 0:\n    y = 1\nelif x < 0:\n    y = 2\nelse:\n    y = 3\n", 3),
    ("x = -1\nif x > 0:\n    y = 1\nelif x < 0:\n    y = 2\nelse:\n    y = 3\n", 4),
]


@pytest.mark.parametrize("source,expected", COUNTED)
def test_steps_are_counted_as_spec_defines(source, expected):
    assert steps_used(source) == expected


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), m=st.integers(0, 6), stop=st.integers(-1, 45))
def test_nested_loops_with_break_count_exactly(n, m, stop):
    source = (f"c = 0\nfor i in range({n}):\n    if i == {stop}:\n        break\n"
              f"    for j in range({m}):\n        c = c + 1\n")
    ran = n if stop < 0 or stop >= n else stop
    # 2 statements + range(n); each full outer iteration: iter + if + for + range(m) + m x
    # (iter + assign); the breaking iteration: iter + if + break
    expected = 3 + ran * (4 + 2 * m) + (3 if ran < n else 0)
    assert steps_used(source) == expected


@pytest.mark.parametrize("command", [["run"], ["check"], ["check", "--json"], ["lower"]])
def test_an_endless_loop_stops_at_the_budget(tmp_path, command):
    (tmp_path / "loop.apk").write_text(HUGE_LOOP)
    proc = cli(*command, "loop.apk", "--max-steps", "100000", cwd=tmp_path)
    assert proc.returncode == 1
    text = proc.stdout if "--json" in command else proc.stderr
    assert codes(text) == ["APK801"] or json.loads(text)["code"] == "APK801"
    assert "--max-steps" in text and "max_steps" in text
    if "--json" in command:
        assert json.loads(proc.stdout)["line"] == 3  # the statement the budget ran out at


def test_check_of_a_huge_tiled_transpose_ends_within_the_budget(tmp_path):
    source = (ROOT / "examples" / "tiled_transpose.apk").read_text()
    (tmp_path / "tt.apk").write_text(source.replace("M = 300", "M = 10**9"))
    (tmp_path / "tiles.apk").write_text((ROOT / "stdlib" / "tiles.apk").read_text())
    # (the memory budget must allow the 800 GB input, which check does not allocate)
    proc = cli("check", "tt.apk", "--max-steps", "20000", "--max-memory", "4T", cwd=tmp_path)
    assert proc.returncode == 1 and codes(proc.stderr) == ["APK801"], proc.stderr


def test_builtins_that_walk_count_their_elements():
    for source in ("x = sum(range(10**12))\n", "x = list(zip(range(10**12), range(10**12)))\n",
                   "x = max(range(10**15))\n", "x = sorted(range(10**7))\n"):
        with apdsl.options(max_steps=1_000_000), raises_code("APK801"):
            apdsl.run(source)


def test_the_python_api_takes_the_budget():
    with apdsl.options(max_steps=1000):
        with raises_code("APK801") as err:
            apdsl.run(HUGE_LOOP)
        assert err.value.span.line == 3
        assert [e.code for e in apdsl.check(HUGE_LOOP)] == ["APK801"]
    assert apdsl.options().__enter__().max_steps == 100_000_000
    for bad in (0, -5, True, 1.5, "10"):
        with raises_code("APK421"):
            apdsl.options(max_steps=bad)


def test_max_steps_must_be_a_positive_integer(tmp_path):
    (tmp_path / "p.apk").write_text("x = 1\n")
    # usage errors: argparse's, through the command line's `main` (nothing runs, nothing to cap)
    for value in ("0", "-3", "many"):
        proc = apdsl_in_process("run", "p.apk", "--max-steps", value, cwd=tmp_path)
        assert proc.returncode == 2 and "--max-steps" in proc.stderr
    proc = apdsl_in_process("check", "p.apk", "--max-steps", "1_000", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


# ---- integers, strings and lists ------------------------------------------------------------

@pytest.mark.parametrize("source,code", [
    ("x = 10**10**10\n", "APK802"),
    ('x = "a" * 10**10\n', "APK803"),
    ("x = [0] * 10**10\n", "APK803"),
    ("x = 10**10 * (1, 2)\n", "APK803"),
    ("x = list(range(2 * 10**8))\n", "APK803"),
])
def test_huge_values_are_coded_errors_everywhere(tmp_path, source, code):
    found = everywhere(tmp_path, source)
    assert found["run"] == found["check"] == found["json"] == [(code, 1, 5)]
    assert "limit" in found["help"][0]


MAX = 2 ** 1024
ints = st.one_of(st.integers(-2 ** 40, 2 ** 40), st.integers(-MAX, MAX))


@settings(max_examples=200, deadline=None)
@given(a=ints, b=ints, op=st.sampled_from(["+", "-", "*"]))
def test_integer_arithmetic_is_python_within_the_limit(a, b, op):
    expected = eval(f"({a}) {op} ({b})")  # Python is the oracle
    source = f"x = ({a}) {op} ({b})\n"
    if abs(expected) <= MAX:
        assert namespace(source)["x"] == expected
    else:
        with raises_code("APK802"):
            Program(source).run()


@settings(max_examples=100, deadline=None)
@given(a=st.integers(-300, 300), b=st.integers(0, 5000))
def test_powers_and_shifts_are_python_within_the_limit(a, b):
    for op in ("**", "<<"):
        expected_size = abs(a) ** b if op == "**" else abs(a) << b if b < 2000 else None
        source = f"x = ({a}) {op} {b}\n"
        if expected_size is not None and expected_size <= MAX:
            assert namespace(source)["x"] == eval(f"({a}) {op} {b}")
        elif a not in (-1, 0, 1) or op == "<<" and a != 0:
            with raises_code("APK802"):
                Program(source).run()


def test_integer_literals(tmp_path):
    ns = namespace(f"x = {MAX}\ny = 0x{'f' * 256}\nz = 000\n")
    assert ns["x"] == MAX and ns["y"] == 16 ** 256 - 1 and ns["z"] == 0
    with raises_code("APK802"):
        Program(f"x = {MAX + 1}\n")
    with raises_code("APK007"):  # still the leading-zeros error where it applies
        Program("x = 0017\n")
    found = everywhere(tmp_path, "x = " + "7" * 5000 + "\n")
    assert found["run"] == found["check"] == found["json"] == [("APK802", 1, 5)]


def test_augmented_and_builtin_results_obey_the_limit():
    for source in ("x = 2**1000\nx *= x\n", "x = 2**1024\nx += 1\n", "x = int('9' * 400)\n",
                   "x = sum([2**1024, 2**1024])\n", "x = prod([2**600, 2**600])\n",
                   "x = ~(2**1024)\n", "x = 1 << 1025\n", "x = -(2**1024) - 1\n"):
        with raises_code("APK802"):
            apdsl.run(source)


# ---- recursion and nesting ------------------------------------------------------------------

RECURSIVE = "def f(n):\n    if n == 0:\n        return 0\n    return f(n - 1) + 1\n"


def test_helper_recursion_up_to_the_limit_works():
    ns: dict = {}
    program = Program(RECURSIVE + "x = f(999)\n")
    program.interpreter().exec_module(program.module, ns)
    assert ns["x"] == 999
    with raises_code("APK123") as err:
        apdsl.run(RECURSIVE + "x = f(1000)\n")
    assert "1,000" in err.value.message


def test_helper_recursion_is_reported_alike_everywhere(tmp_path):
    found = everywhere(tmp_path, "def f(n):\n    return f(n + 1)\nx = f(0)\n")
    assert found["run"] == found["check"] == found["json"] == [("APK123", 2, 12)]


def _nested_ifs(depth: int) -> str:
    lines = ["x = 0"]
    for i in range(depth):
        lines.append("    " * i + "if x == 0:")
    lines.append("    " * depth + "x = 1")
    return "\n".join(lines) + "\n"


def test_source_nesting_limit(tmp_path):
    ns: dict = {}
    program = Program(_nested_ifs(199) + "y = " + "(" * 200 + "2" + ")" * 200 + "\n")
    program.interpreter().exec_module(program.module, ns)
    assert ns["x"] == 1 and ns["y"] == 2
    found = everywhere(tmp_path, _nested_ifs(300))
    assert found["run"] == found["check"] == found["json"] == [("APK125", 203, 1)]
    found = everywhere(tmp_path, "x = " + "[" * 201 + "]" * 201 + "\n")
    assert found["run"] == found["check"] == found["json"] == [("APK125", 1, 205)]


def test_long_flat_expressions_are_not_nesting(tmp_path):
    ns: dict = {}
    chain = "t: f32[128, 64] @ sbuf\nu = t" + ".slice(1, 0, 64)" * 400 + "\n"
    program = Program("x = " + "+".join(["1"] * 600) + "\n" + chain)
    program.interpreter().exec_module(program.module, ns)
    assert ns["x"] == 600 and ns["u"].shape == (128, 64)
    (tmp_path / "flat.apk").write_text("x = " + "+".join(["1"] * 600) + "\n" + chain)
    for proc in capped_commands(["run", "flat.apk"], ["check", "flat.apk"],
                                ["check", "--json", "flat.apk"], cwd=tmp_path):
        assert proc.returncode == 0, proc.stderr


def test_an_expression_too_deep_to_evaluate_is_a_coded_error(tmp_path):
    found = everywhere(tmp_path, "y = 1\nx = " + "-" * 30000 + "1\n")
    assert found["run"] == found["check"] == found["json"] == [("APK126", 2, 1)]


def test_memory_and_recursion_errors_become_diagnostics(monkeypatch):
    from apdsl.semantics import builtins

    def boom(*_):
        raise MemoryError

    monkeypatch.setattr(builtins, "_set_target", boom)
    with raises_code("APK431"):
        apdsl.run('set_target("trn1")\n')
    assert [e.code for e in apdsl.check('set_target("trn1")\n')] == ["APK431"]


# ---- odd inputs -----------------------------------------------------------------------------

def test_python_conversions_are_builtins_and_float_is_still_a_dtype():
    source = ("a = float(3)\nb = int('12') + int(2.7) + int('ff', 16) + int('11', base=2)\n"
              "c = bool(0)\nd = str(5) + 'x'\n"
              "t = ndarray((4, 4), float, sbuf)\n")
    ns: dict = {}
    program = Program(source)
    program.interpreter().exec_module(program.module, ns)
    assert (ns["a"], ns["b"], ns["c"], ns["d"]) == (3.0, 14 + 255 + 3, False, "5x")
    assert type(ns["a"]) is float
    assert str(ns["t"].dtype) == "float32"


def test_integer_initialisers_saturate_as_the_cast_rule_says():
    source = """\
kernel k() -> i32[3] @ hbm:
    out = ndarray((3,), i32, hbm)
    a: i32[3] @ hbm = 2**63
    dma_copy(dst=out, src=a)
    b: u8[2] @ hbm = -5
    c: f32[2] @ hbm = 2**1000
    d: i64[2] @ hbm = -2**70
    e: i32[2] @ hbm = -2**40
    assert equal(host(b), [0, 0])
    assert equal(host(d), [-2**63, -2**63])
    assert equal(host(e), [-2**31, -2**31])
    assert host(c)[0] > 3e38
    return out
"""
    result = apdsl.run(source)
    np.testing.assert_array_equal(result, np.full(3, np.iinfo(np.int32).max))


def test_a_5mb_string_literal_lexes_in_modest_memory(tmp_path):
    (tmp_path / "plain.apk").write_text('x = "' + "a" * 5_000_000 + '"\nassert len(x) == '
                                        '5000000\n')
    (tmp_path / "escapes.apk").write_text('x = "' + "\\n" * 2_500_000 + '"\nassert len(x) == '
                                          '2500000\n')
    (tmp_path / "long.apk").write_text('x = """' + "ab\n" * 1_500_000 + '"""\n')
    for proc in capped_commands(["run", "plain.apk"], ["run", "escapes.apk"],
                                ["run", "long.apk"], cwd=tmp_path, memory=450 << 20):
        assert proc.returncode == 0, proc.stderr


# ---- isolation from the caller ----------------------------------------------------------------

def test_a_programs_target_and_options_do_not_leak_to_the_caller():
    before = targets.target_for("sbuf").name, targets.target_for("gm").name
    source = 'set_target("trn1")\nset_target("ascend-a2")\nx = 1\n'
    assert apdsl.check(source) == []
    assert apdsl.run(source) is None
    with apdsl.options(max_steps=50):
        apdsl.run(source)
        assert apdsl.options().__enter__().max_steps == 50
    assert (targets.target_for("sbuf").name, targets.target_for("gm").name) == before
    with apdsl.target("trn3"):  # the caller's own choice holds inside and after a run
        apdsl.run('assert 1 == 1\nset_target("trn1")\n')
        assert targets.target_for("sbuf").name == "trn3"


def test_values_that_share_themselves_cannot_hang_a_builtin():
    shared = "x = [0]\nfor i in range(70):\n    x = [x, x]\n"
    assert apdsl.run(shared + "assert x == x\nassert [x, 1] == [x, 1]\n") is None
    for tail in ("print(x)\n", "s = str(x)\n"):
        with apdsl.options(max_steps=100_000), raises_code("APK801"):
            apdsl.run(shared + tail)
    ns = namespace("a = round(5, -10**10)\nb = round(2.5, 10**10)\nc = round(1234, -2)\n")
    assert (ns["a"], ns["b"], ns["c"]) == (0, 2.5, 1200)


def test_the_repl_gives_each_input_the_budget(tmp_path):
    script = "x = 0\nfor i in range(10**12):\n    x = i\n\nprint(x + 1)\ny = 10**10**10\nprint(2)\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
           "APDSL_HISTORY": str(tmp_path / "history")}
    proc = subprocess.run([sys.executable, "-m", "apdsl", "repl", "--max-steps", "1000"],
                          input=script, capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=address_space(MEMORY_CAP), cwd=tmp_path)
    assert codes(proc.stderr) == ["APK801", "APK802"], proc.stderr
    assert proc.stdout.split() == [str(int(proc.stdout.split()[0])), "2"]
    assert 0 < int(proc.stdout.split()[0]) <= 1000  # the loop ran until its budget


def test_building_long_sequences_costs_steps():
    # quadratic copying (each `+` copies the whole string) is paid for, a step per 64 elements
    # copied: within 200,000 steps each loop stops after a few thousand iterations (about
    # sqrt(64 x 200,000)), where the statements' own steps would allow 50,000 and more
    for body in ('    s = s + "ab"\n', "    x += [i]\n", "    s = s * 1 + 'ab'\n"):
        ns: dict = {}
        program = Program('s = ""\nx = []\nfor i in range(10**8):\n' + body)
        with apdsl.options(max_steps=200_000), raises_code("APK801"):
            program.interpreter().exec_module(program.module, ns)
        assert 1_000 < ns["i"] < 20_000, (body, ns["i"])
    assert steps_used("s = 'a' * 6400\n") == 1 + 100  # the statement and 6,400 / 64 copies
