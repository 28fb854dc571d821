"""The Python that NKI kernels are written in (SPEC section 3), run by the `.apk` interpreter and
checked by `check`: while/else and for/else, break/continue, comprehensions, starred
unpacking, item and slice assignment, del, augmented assignment on elements, lambdas,
f-strings, annotations and `raise`.

CPython is the oracle: the same source text runs under `exec` and under apdsl, and both print
the same lines.  Every program here also passes `check` (check must understand what run
accepts).
"""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import raises_code

from apdsl.semantics.program import Program

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def apk_output(src: str) -> str:
    out = io.StringIO()
    Program(src, "t.apk").run(out=out)
    return out.getvalue()


def python_output(src: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(src, "<oracle>", "exec"), {})
    return out.getvalue()


def check_errors(src: str) -> list:
    return Program(src, "t.apk").check(out=io.StringIO())


def same_as_python(src: str) -> str:
    """Run `src` in both; they must print the same, and `check` must find nothing."""
    expected = python_output(src)
    assert apk_output(src) == expected
    assert check_errors(src) == []
    return expected


# ---- loops ------------------------------------------------------------------------------

LOOPS = """
def first_over(xs, limit):
    i = 0
    while i < len(xs):
        if xs[i] > limit:
            break
        i += 1
    else:
        return -1
    return i

def skip_odd(n):
    total = 0
    for k in range(n):
        if k % 2:
            continue
        total += k
    else:
        total += 1000
    return total

print(first_over(XS, LIMIT), skip_odd(N))
n = N
while n > 0:
    n -= 3
    if n == 4:
        continue
print(n)
"""


@FAST
@given(st.lists(st.integers(-20, 20), max_size=8), st.integers(-20, 20), st.integers(0, 12))
def test_while_for_else_break_continue_match_python(xs, limit, n):
    same_as_python(LOOPS.replace("XS", repr(xs)).replace("LIMIT", str(limit))
                   .replace("N", str(n)))


def test_nested_loop_else_break_belongs_to_outer_loop():
    same_as_python("""
found = None
for a in range(5):
    for b in range(5):
        if a * b == 6:
            break
    else:
        continue
    found = (a, b)
    break
print(found)
""")


# ---- comprehensions ---------------------------------------------------------------------

COMPREHENSIONS = """
xs = XS
print([x * 2 for x in xs if x % 3 != 0])
print([(a, b) for a in xs if a > 0 for b in range(a) if b != 1])
print({x % 4 for x in xs})
print({x: x * x for x in xs if x})
print(sum(x for x in xs if x > 0), max((x * x for x in xs), default=-1), sorted(x for x in xs))
print([[y for y in range(x)] for x in range(3)])
x = 'outer'
print([x for x in range(2)], x)
"""


@FAST
@given(st.lists(st.integers(-9, 9), max_size=10))
def test_comprehensions_match_python(xs):
    same_as_python(COMPREHENSIONS.replace("XS", repr(xs)))


def test_comprehension_sees_enclosing_locals_and_does_not_leak():
    same_as_python("""
def scaled(xs, k):
    return [x * k for x in xs]
print(scaled([1, 2, 3], 4))
""")
    with raises_code("APK101"):
        Program("ys = [i for i in range(3)]\nprint(i)\n", "t.apk").run(out=io.StringIO())


def test_a_generator_is_lazy_in_run_mode():
    # zip stops when range(1) ends: the generator's division by zero is never reached
    src = "xs = [1, 0]\nprint(list(zip(range(1), (10 // x for x in xs))))\n"
    assert apk_output(src) == "[(0, 10)]\n"


def test_comprehension_elements_are_steps():
    src = "ys = [i for i in range(1000)]\n"
    p = Program(src, "t.apk")
    with raises_code("APK801"):
        from apdsl.tensor.machine import current
        with current().child().active() as m:
            m.options.max_steps = 500
            p.run(out=io.StringIO())


# ---- assignment ---------------------------------------------------------------------------

@FAST
@given(st.lists(st.integers(0, 99), min_size=2, max_size=8), st.integers(0, 2))
def test_starred_unpacking_matches_python(xs, where):
    target = ["a, *rest", "*rest, a", "a, *rest, b"][where]
    same_as_python(f"{target} = {xs!r}\nprint({target.replace('*', '')})\n"
                   f"first, *_ = [{xs!r}, 1]\nprint(first)\n")


def test_starred_unpacking_with_too_few_values_is_located():
    with raises_code("APK120") as err:
        Program("a, *b, c = [1]\n", "t.apk").run(out=io.StringIO())
    assert "at least 2" in err.value.message
    assert err.value.span.line == 1


ITEMS = """
xs = XS
d = {'a': 1}
xs[I] = 100
xs[1:3] = [7, 8, 9]
xs[I] += 5
d['b'] = 2
d['a'] += 10
del xs[0]
del d['b']
ys = xs
ys += [4]
print(xs, ys, d, len(xs))
k = 3
del k
print([*xs, *range(2)], (*xs,), {*xs})
"""


@FAST
@given(st.lists(st.integers(-50, 50), min_size=3, max_size=8), st.integers(0, 2))
def test_item_slice_del_and_in_place_updates_match_python(xs, i):
    same_as_python(ITEMS.replace("XS", repr(xs)).replace("I", str(i)))


@pytest.mark.parametrize("src, code", [
    ("t = (1, 2)\nt[0] = 5\n", "APK042"),
    ("s = 'ab'\ndel s[0]\n", "APK042"),
    ("t: f32[4, 4] @ sbuf\nt[0] = 1\n", "APK107"),
    ("t: f32[4, 4] @ sbuf\nt[0] += 1\n", "APK107"),
    ("t: f32[4, 4] @ sbuf\nt.name = 'x'\n", "APK043"),
    ("t: f32[4, 4] @ sbuf\nt.offset += 1\n", "APK043"),
    ("xs = [1]\nxs[5] = 2\n", "APK122"),
    ("d = {}\ndel d['k']\n", "APK122"),
    ("del nothing\n", "APK101"),
])
def test_what_cannot_be_assigned_or_deleted_is_a_located_error(src, code):
    with raises_code(code) as err:
        Program(src, "t.apk").run(out=io.StringIO())
    assert err.value.span is not None and err.value.span.line == src.count("\n")
    assert any(e.code == code for e in check_errors(src))


def test_host_arrays_take_item_assignment():
    out = apk_output("t: f32[2, 3] @ sbuf = 1.0\nh = host(t)\nh[0, 1] = 7\nh[1] += 2\n"
                     "print(h.tolist())\n")
    assert out == "[[1.0, 7.0, 1.0], [3.0, 3.0, 3.0]]\n"


# ---- lambdas and closures -------------------------------------------------------------------

def test_lambdas_and_nested_defs_see_the_enclosing_function():
    same_as_python("""
def make(k):
    scale = lambda x, y=2: x * y * k
    def twice(x):
        return scale(x) * 2
    return scale(3), scale(3, 1), twice(5)
print(make(10))
pairs = [(1, 20), (0, 30)]
print(sorted(pairs, key=lambda p: p[0]), sorted(pairs, key=lambda p: -p[1]))
""")


def test_call_with_star_arguments():
    same_as_python("""
def f(a, b, c=0):
    return a * 100 + b * 10 + c
xs = [1, 2]
kw = {'c': 3}
print(f(*xs), f(*xs, **kw), f(*[4], 5, **{'c': 6}), max(*xs, 0))
""")


# ---- f-strings --------------------------------------------------------------------------

@FAST
@given(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False),
       st.sampled_from(["", ":>8", ":<5", ":^7", ":+d", ":08d", ":x", ":#b", ":,"]),
       st.sampled_from(["", ":.2f", ":10.3e", ":g", ":%", ":+.1f"]),
       st.integers(0, 9))
def test_fstrings_match_python(n, x, int_spec, float_spec, width):
    same_as_python(f"""
n = {n!r}
x = {x!r}
w = {width}
s = 'ab'
print(f"n={{n{int_spec}}} x={{x{float_spec}}} {{{{lit}}}} {{s!r}} {{s!s:>{{w}}}} {{n=}}")
print(f'''{{n + 1}} {{[n, 2]}} {{(lambda q: q * 2)(n)}}''' "tail" f"{{x!r}}")
""")


@pytest.mark.parametrize("text, start, end", [
    ('f"{x"', 7, 8), ('f"}"', 7, 8), ('f"{x!z}"', 9, 11), ('f"{}"', 7, 9),
    ('f"{x +}"', 8, 11), ('f"{a:{b:{c}}}"', 12, 13),
])
def test_malformed_fstrings_underline_the_characters(text, start, end):
    src = f"t = {text}\n"
    with raises_code("APK041") as err:
        Program(src, "t.apk")
    s = err.value.span
    assert (s.line, s.column, s.end_column) == (1, start, end)


def test_fstring_fields_have_their_source_spans():
    from apdsl.syntax import parse
    src = "x = 1\nt = f'v={x + 1!r:>{x}}'\n"
    (_, assign) = parse(src, "t.apk").body
    field = assign.value.parts[1]
    add = field.value
    assert src.split("\n")[1][add.span.column - 1:add.span.end_column - 1] == "x + 1"
    width = field.spec.parts[1].value
    assert (width.span.line, width.span.column) == (2, 20)


@pytest.mark.parametrize("src, code", [
    ("s = 'a'\nt = f'{s:.3f}'\n", "APK044"),
    ("t = f'{1:200000001}'\n", "APK803"),
    ("t = f'{1.5:.999999999999}'\n", "APK803"),
])
def test_format_errors_and_size_limits(src, code):
    with raises_code(code):
        Program(src, "t.apk").run(out=io.StringIO())


# ---- annotations ---------------------------------------------------------------------------

def test_type_hints_are_accepted_and_ignored():
    same_as_python("""
def tile_count(n: int, sizes: list[int] = [1], shape: tuple[int, ...] = (2, 3)) -> int:
    total: int = n
    unused: float
    for s in sizes:
        total += s
    return total * shape[0]
print(tile_count(4), tile_count(1, [2, 3]))
""")


def test_a_tensor_type_on_a_parameter_keeps_its_meaning():
    src = ("def first(A: f32[128, 64] @ hbm, k: int = 2) -> f32[128, 64] @ hbm:\n"
           "    return A\n"
           "kernel k(A: f32[128, 64] @ hbm, n: int = 3) -> f32[128, 64] @ hbm:\n"
           "    return first(A, n)\n")
    from apdsl.syntax import parse
    fn = parse(src, "t.apk").body[0]
    assert fn.params[0].type.dtype == "f32" and fn.params[1].type is None
    assert fn.returns.buffer == "hbm"
    result = Program(src, "t.apk").run()
    assert result.value.shape == (128, 64)


def test_a_dtype_hint_without_buffer_is_still_a_type_error():
    with raises_code("APK006"):
        Program("x: f32[4] = zeros\n", "t.apk")


# ---- raise ----------------------------------------------------------------------------------

@pytest.mark.parametrize("src, message", [
    ("raise ValueError('bad tile')\n", "ValueError: bad tile"),
    ("n = 3\nraise RuntimeError(f'n = {n}')\n", "RuntimeError: n = 3"),
    ("raise NotImplementedError\n", "NotImplementedError"),
    ("raise Exception('a', 2)\n", "Exception: ('a', 2)"),
])
def test_raise_is_a_located_error_with_the_message(src, message):
    with raises_code("APK040") as err:
        Program(src, "t.apk").run(out=io.StringIO())
    assert err.value.message == message
    assert err.value.span.line == src.count("\n")
    assert [e.message for e in check_errors(src)] == [message]


def test_raise_in_a_branch_not_taken_is_no_error():
    src = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\nf(3)\n"
    apk_output(src)
    assert check_errors(src) == []


# ---- check mode -----------------------------------------------------------------------------

def test_check_stops_a_while_loop_whose_course_it_cannot_know():
    # host values are unknown in check mode: the loop is checked once, not spun to the budget
    src = ("kernel k(A: f32[4, 4] @ hbm):\n"
           "    n = 0\n"
           "    while True:\n"
           "        n += 1\n"
           "        if host(A)[0, 0] > 100:\n"
           "            break\n"
           "        if n > 10:\n"
           "            break\n")
    assert check_errors(src) == []


def test_check_reports_errors_inside_the_new_constructs():
    src = ("xs = [undefined_a for i in range(3)]\n"
           "f = lambda q: q + undefined_b\n"
           "t = f'{undefined_c}'\n"
           "while undefined_d:\n"
           "    pass\n")
    names = sorted(e.facts.get("name") for e in check_errors(src) if e.code == "APK101")
    assert names == ["undefined_a", "undefined_b", "undefined_c", "undefined_d"]


# ---- the command line -----------------------------------------------------------------------

@pytest.mark.parametrize("source, code, words", [
    ("class Tile:\n    pass\n", "APK007", "'class' is not part of .apk"),
    ("def f():\n    yield 1\n", "APK007", "generators ('yield') are not part of .apk"),
    ("with f() as g:\n    pass\n", "APK007", "'with' is not part of .apk"),
    ("x = 0\ndef f():\n    global x\n", "APK007", "'global' is not part of .apk"),
    ("def f(*args):\n    pass\n", "APK007", "'*args' parameters are not part of .apk"),
    ("raise ValueError('tile too big')\n", "APK040", "ValueError: tile too big"),
    ("n = 1\nprint(f'{n!q}')\n", "APK041", "conversion is !r, !s or !a"),
])
def test_cli_reports_python_apk_does_not_take(tmp_path, source, code, words):
    import json
    import subprocess
    import sys

    from support import apdsl_in_process
    path = tmp_path / "k.apk"
    path.write_text(source)
    for command in (["run"], ["check"], ["check", "--json"]):
        if code == "APK040":  # as a user runs it (a process per command) ...
            proc = subprocess.run([sys.executable, "-m", "apdsl", *command, str(path)],
                                  capture_output=True, text=True, timeout=120)
        else:  # ... and the others through the command line's `main` in process
            proc = apdsl_in_process(*command, str(path))
        assert proc.returncode == 1, proc.stderr
        text = proc.stdout + proc.stderr
        assert "Traceback" not in text
        if command[-1] == "--json":
            (first, *_) = [json.loads(line) for line in proc.stdout.splitlines()]
            assert first["code"] == code and words in first["message"]
            assert first["line"] == source.count("\n") or code != "APK040"
            if code == "APK007" and "*args" not in words:
                assert "apdsl run FILE.py" in first["help"]
        else:
            assert f"error[{code}]" in text and words in text


@pytest.mark.parametrize("source, words, column", [
    ("from . import x\n", "relative imports are not part of .apk", 6),
    ("import a, b\n", "importing several modules in one 'import' is not part of .apk", 9),
    ("x = b'abc'\n", "bytes literals are not part of .apk", 6),
    ("x = {**a, 'k': 1}\n", "'**' in a dict display is not part of .apk", 6),
    ("def f(a, /, b):\n    pass\n", "positional-only parameters ('/') are not part of .apk", 10),
    ("def f(x):\n    match x:\n        case 1:\n            pass\n",
     "'match' statements are not part of .apk", 11),
    ("x = 1j\n", "complex numbers are not part of .apk", 6),
])
def test_other_python_is_named_not_listed_as_expected_tokens(source, words, column):
    from apdsl.errors import ApdslSyntaxError
    with pytest.raises(ApdslSyntaxError) as err:
        Program(source, "t.apk")
    e = err.value
    assert (e.code, e.message) == ("APK007", words)
    assert e.span.column == column
    assert "apdsl run FILE.py" in e.help


def test_a_plain_mistake_still_lists_what_was_expected():
    from apdsl.errors import ApdslSyntaxError
    with pytest.raises(ApdslSyntaxError) as err:
        Program("x = max(1 2)\n", "t.apk")
    assert (err.value.code, err.value.message) == ("APK001", "expected ')' or ','")


def test_naming_python_constructs_raises_no_python_warnings():
    import warnings

    from apdsl.errors import ApdslSyntaxError
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ApdslSyntaxError) as err:
            Program("x = b'' if 1or 2 else 0\n", "t.apk")  # Python warns of '1or' as it parses
    assert err.value.message == "bytes literals are not part of .apk"
    assert [w for w in seen if issubclass(w.category, SyntaxWarning)] == []
