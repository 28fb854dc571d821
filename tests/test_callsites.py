"""Run mode's specialised call sites (apdsl.semantics.callsites) against the general call
closure they stand in for: the same results, trace, steps, errors (code, span, labels,
message) and the program's own bindings of builtin names.  The oracle is the general path
itself, with every fast path turned off (`apdsl.options(plans=False)`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

GEMM = (Path(__file__).resolve().parent.parent / "stdlib" / "gemm.apk").read_text()
GEMM_KERNEL = """
kernel matmul(A: f16[40, 150] @ gm, B: f16[150, 30] @ gm) -> f32[40, 30] @ gm:
    C = ndarray((40, 30), f32, gm)
    return gemm(A, B, C, 32, 32, 32, 64)
"""


pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


@pytest.fixture
def general():
    """Turn every fast path off for the rest of the test (its own machine): every call,
    assignment and block compiles to the general closures."""
    return lambda: apdsl.options(plans=False)


def outcome(source: str, kernel: str | None = None, inputs=None, trace: bool = False,
            max_steps: int | None = None):
    """What a run gives: its value's data, trace records and steps, or its error."""
    program = Program(source, "p.apk")
    try:
        if max_steps is None:
            r = program.run(kernel, inputs, trace=trace)
        else:
            with apdsl.options(max_steps=max_steps):
                r = program.run(kernel, inputs, trace=trace)
    except ApdslError as e:
        return ("error", e.code, e.span, [(lab.span, lab.message) for lab in e.labels],
                e.message)
    value = r.value.numpy() if hasattr(r.value, "numpy") else r.value
    records = [(x.op, x.name, x.location, x.engine, x.event) for x in r.trace.records] \
        if r.trace is not None else None
    return ("ok", value, records, r.interpreter.budget.used)


def same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "ok":
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2:] == b[2:]
    else:
        assert a == b


def gemm_inputs():
    rng = np.random.default_rng(3)
    return {"A": rng.standard_normal((40, 150)).astype(np.float16),
            "B": rng.standard_normal((150, 30)).astype(np.float16)}


def test_a_builtin_call_compiles_to_a_site_in_run_mode_only():
    source = "def f(i):\n    wait_flag('M_MTE1', i)\n"
    program = Program(source, "p.apk")
    call = program.module.body[0].body[0].expr
    run = program.interpreter()
    assert run.compile_expr(call).__code__.co_filename == "<apdsl site>"
    check = program.interpreter(dry=True)
    assert check.compile_expr(call).__code__.co_filename != "<apdsl site>"


@pytest.mark.parametrize("trace", [False, True])
def test_the_stdlib_gemm_runs_and_traces_as_the_general_path(general, trace):
    inputs = gemm_inputs()
    fast = outcome(GEMM + GEMM_KERNEL, "matmul", inputs, trace=trace)
    general()
    slow = outcome(GEMM + GEMM_KERNEL, "matmul", inputs, trace=trace)
    same(fast, slow)
    want = inputs["A"].astype(np.float32) @ inputs["B"].astype(np.float32)
    np.testing.assert_allclose(fast[1], want, rtol=1e-4, atol=1e-3)
    if trace:
        assert any(r[0] == "wait_flag" and r[4] == ("M_MTE1", 0) for r in fast[2])


# Each program fails in a call that a site makes: the error must be the general path's.
FAILING = {
    "wait without set (APK575)": """\
kernel k() -> i32:
    i = 1
    wait_flag("M_MTE1", i)
    return 0
""",
    "an unknown keyword of an instruction": """\
kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    t = ndarray((128, 64), f32, sbuf)
    dma_copy(t, A, bogus=1)
    return A
""",
    "a shape mismatch of dma_copy": """\
kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    t = ndarray((128, 32), f32, sbuf)
    dma_copy(t, A)
    return A
""",
    "a wrong argument of tile_view": """\
kernel k(A: f16[64, 64] @ gm) -> f16[64, 64] @ gm:
    v = tile_view(A, (0, 0), "wide")
    return A
""",
    "too many arguments of cdiv": """\
kernel k() -> i32:
    n = 3
    return cdiv(n, 2, 1)
""",
    "an error inside a helper called with many arguments": """\
def helper(a, b, c, d, e):
    wait_flag("MTE1_M", a + b + c + d + e)

kernel k() -> i32:
    x = 0
    helper(x, x, x, x, x)
    return 0
""",
    "a helper called with a missing argument": """\
def helper(a, b, c, d, e):
    return a

kernel k() -> i32:
    x = 0
    return helper(x, x, x, x)
""",
    "an int past the limit in an argument": """\
kernel k() -> i32:
    i = 2 ** 1023
    set_flag("M_MTE1", i + i)
    return 0
""",
}


@pytest.mark.parametrize("name", sorted(FAILING))
def test_errors_of_a_site_are_the_general_paths(general, name):
    fast = outcome(FAILING[name], "k")
    assert fast[0] == "error", fast
    general()
    slow = outcome(FAILING[name], "k")
    same(fast, slow)


def test_a_program_binding_a_builtin_name_calls_its_own():
    source = """\
def dma_copy(dst, src):
    print("mine", src)

kernel k() -> i32:
    dma_copy(1, 2)
    wait_flag = lambda e, i: print("local", e, i)
    wait_flag("M_MTE1", 0)
    cdiv = 5
    print(cdiv)
    return 0
"""
    import io
    out = io.StringIO()
    Program(source, "p.apk").run("k", out=out)
    assert out.getvalue().splitlines() == ["mine 2", "local M_MTE1 0", "5"]


LOOP = """\
kernel k() -> i32:
    for i in range(6):
        set_flag("M_MTE1", i % 2)
        wait_flag("M_MTE1", i % 2)
        x = cdiv(i, 2)
    return x
"""


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=60))
def test_the_step_budget_stops_a_site_where_the_general_path_stops(max_steps):
    fast = outcome(LOOP, "k", max_steps=max_steps)
    with apdsl.options(plans=False):
        slow = outcome(LOOP, "k", max_steps=max_steps)
    same(fast, slow)


# The inline forms (an int `+`/`-` or comparison, `and`/`or` of comparisons, a tuple element)
# with operands of every kind: ints at the int limit, floats, strings, tensors, indices out of
# range, names that are module names rather than locals.
OPERANDS = ["0", "1", "-3", "2 ** 1024", "-(2 ** 1024)", "2 ** 1024 - 1", "1.5", "'s'", "t",
            "True", "G", "(7, 8, 9)", "[7, 8]"]
FORMS = ["a + 1", "a - 2", "1 - a", "a + b", "a - b", "a > 0", "a <= b", "a == 2", "a != b",
         "a > 0 or b > 0", "a < 1 and b >= 0", "p[a]", "p[-1]", "p[3]", "q[a]"]
INLINE = """G = 5

kernel k() -> i32:
    t = ndarray((4, 4), f32, sbuf)
    p = (10, 20, 30)
    q = [1, 2]
    a = {a}
    b = {b}
    x = {form}
    print(x)
    set_flag("M_MTE1", {form})
    return 0
"""


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(OPERANDS), st.sampled_from(OPERANDS), st.sampled_from(FORMS))
def test_inline_forms_give_what_the_general_closures_give(a, b, form):
    import io
    source = INLINE.format(a=a, b=b, form=form)

    def result():
        out = io.StringIO()
        program = Program(source, "p.apk")
        try:
            program.run("k", out=out)
        except ApdslError as e:
            return ("error", e.code, e.span, e.message, out.getvalue())
        return ("ok", out.getvalue())
    fast = result()
    with apdsl.options(plans=False):
        slow = result()
    assert fast == slow


LAUNCH = """\
kernel k() -> i32:
    i = program_id(0)
    set_flag("M_MTE1", 0)
    if i == 1:
        wait_flag("M_MTE1", i + 1)
    wait_flag("M_MTE1", 0)
    return 0

def helper(n):
    x = cdiv(n, 0 + n - n)
    return x

kernel h() -> i32:
    y = 3
    return helper(y)
"""
LAUNCHED = LAUNCH + "\nkernel main() -> i32:\n    return k[2]()\n"


@pytest.mark.parametrize("kernel,grid", [("main", True), ("h", False)])
def test_launch_and_helper_labels_are_the_general_paths(general, kernel, grid):
    def result():
        try:
            Program(LAUNCHED if grid else LAUNCH, "p.apk").run(kernel)
        except ApdslError as e:
            return (e.code, e.span, [(lab.span, lab.message) for lab in e.labels], e.message)
        return None
    fast = result()
    assert fast is not None
    if grid:
        assert any("in program 1 of this launch of k" in m for _, m in fast[2]), fast
    else:
        assert any("in this call of helper" in m for _, m in fast[2]), fast
    general()
    assert result() == fast


RETURNS = """\
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

def first_over(xs, limit):
    for x in xs:
        if x > limit:
            return x
    return -1

def pair(a, b):
    t = ndarray((4, 4), f32, sbuf)
    return (a, t)

def nothing(a):
    a = a + 1

kernel k() -> i32:
    r = pair(1, 2)
    assert r[0] == 1 and r[1].shape == (4, 4) or r[1].shape == [4, 4]
    assert nothing(3) is None
    print(fib(N), first_over((1, 5, 9), L), first_over((1, 2), L))
    return fib(N)
"""


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=12), st.integers(min_value=-2, max_value=10))
def test_returns_give_pythons_values(n, limit):
    import io

    def fib(i):
        return i if i < 2 else fib(i - 1) + fib(i - 2)

    def first_over(xs):
        return next((x for x in xs if x > limit), -1)
    out = io.StringIO()
    source = f"N = {n}\nL = {limit}\n" + RETURNS
    r = Program(source, "p.apk").run("k", out=out)
    assert r.value == fib(n)
    assert out.getvalue().split() == [str(fib(n)), str(first_over((1, 5, 9))),
                                      str(first_over((1, 2)))]
