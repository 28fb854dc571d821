"""The Python builtins and methods of SPEC section 3 (issue 12 item 2): each gives what CPython
gives (the `.apk` text is run by both and the printed results compared), within the sandbox,
the step budget and the size limits."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program


def _apk_prints(source: str) -> str:
    out = io.StringIO()
    Program(source).run(out=out)
    return out.getvalue()


def _python_prints(source: str) -> str:
    out = io.StringIO()
    exec(source, {"print": lambda *a, **k: print(*a, file=out, **k)})  # noqa: S102 - oracle
    return out.getvalue()


PROGRAMS = [
    # list methods
    """x = [3, 1, 2]
x.append(7)
x.extend([5, 4])
x.insert(0, 9)
print(x, x.pop(), x.pop(0), x.index(2), x.count(1))
x.remove(1)
x.sort()
y = x.copy()
y.reverse()
x.sort(reverse=True)
print(x, y)
y.clear()
print(y, (1, 2, 2).count(2), (1, 2, 3).index(3))""",
    # dict methods
    """d = {"a": 1, "b": 2}
d.update({"c": 3}, e=5)
print(list(d.keys()), list(d.values()), list(d.items()))
print(d.get("z"), d.get("a", 0), d.setdefault("f", 6), d.pop("b"), d.popitem())
e = d.copy()
e.clear()
print(d, e)""",
    # str methods
    """s = "  Tile_Size x128  "
print(s.strip(), s.lstrip(), s.rstrip(), s.split(), "a,b,,c".split(","), "a b c".rsplit(" ", 1))
print("-".join(["x", "y", "z"]), s.lower(), s.upper(), s.replace("1", "one"), s.find("x"))
print("abc".startswith("ab"), "abc".endswith(("z", "c")), "42".isdigit(), "4a".isalnum())
print("{} {:>6.2f} {name!r}".format("m", 3.14159, name="n"), "{1}{0}".format(1, 2), "7".zfill(3), "ab".center(6, "*"))
print("k=v".partition("="), "line1\\nline2".splitlines(), "tile".title(), "x_y".removeprefix("x_"))""",
    # builtins
    """print(isinstance(3, int), isinstance(True, int), isinstance(2.0, (int, float)), isinstance("a", list))
print(isinstance([1], (tuple, list)), isinstance({}, dict), isinstance((1,), tuple))
print(isinstance(slice(1, 2), slice), [0, 1, 2, 3][slice(1, 3)], isinstance(range(3), range))
print(divmod(17, 5), divmod(-17, 5), divmod(7.5, 2), pow(2, 10), pow(3, 4, 5), pow(2, -1), pow(2.0, 0.5))
print(any([]), any([0, 0, 1]), all([]), all([1, 0]))
print(float("1.5"), float(3), int("12"), sorted(set([3, 1, 3])), len(set("abca")))""",
    # math
    """import math
from math import ceil, floor
print(math.ceil(7 / 2), floor(-3.5), math.log2(1024), math.prod([2, 3, 4]), math.prod([]))
print(math.gcd(12, 18), math.isqrt(99), math.sqrt(2.25), math.inf > 1e308, -math.inf < 0)
print(math.floor(5 // 2), math.ceil(128 / 3), math.log(math.e), math.pi > 3.14, math.lcm(4, 6))""",
]


@pytest.mark.parametrize("source", PROGRAMS)
def test_same_as_python(source):
    assert _apk_prints(source) == _python_prints(source)


@settings(max_examples=60, deadline=None)
@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000).filter(lambda b: b != 0),
       st.integers(0, 40))
def test_divmod_pow_like_python(a, b, e):
    src = f"print(divmod({a}, {b}), pow({a}, {e}), pow({a}, {e}, {abs(b) + 1}))"
    assert _apk_prints(src) == _python_prints(src)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 1e6), st.integers(1, 10**12))
def test_math_like_python(x, n):
    src = (f"import math\nprint(math.ceil({x!r}), math.floor({x!r}), math.log2({x!r}), "
           f"math.sqrt({x!r}), math.isqrt({n}), math.gcd({n}, 360))")
    expect = (f"{math.ceil(x)} {math.floor(x)} {math.log2(x)} {math.sqrt(x)} {math.isqrt(n)} "
              f"{math.gcd(n, 360)}\n")
    assert _apk_prints(src) == expect


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text("ab,_ ", max_size=6), max_size=6), st.text("ab,_", max_size=3))
def test_str_join_split_like_python(parts, sep):
    src = f"s = {sep!r}.join({parts!r})\nprint(s, s.split(',') , s.replace('a', 'xy'))"
    assert _apk_prints(src) == _python_prints(src)


def _code(source: str, **options: object) -> ApdslError:
    with pytest.raises(ApdslError) as err:
        if options:
            with apdsl.options(**options):
                apdsl.run(source)
        else:
            apdsl.run(source)
    return err.value


@pytest.mark.parametrize("source, code", [
    ("x = pow(7, 10 ** 6)", "APK802"),                     # a power past 2**1024
    ("import math\nx = math.prod([2 ** 1000, 2 ** 30])", "APK802"),
    ("s = 'ab' * 40000000\nt = s.replace('a', 'aaaaa')", "APK803"),   # would exceed 1e8
    ("s = 'x'.zfill(10 ** 9)", "APK803"),
    ("s = '{:2000000000}'.format(1)", "APK803"),
    ("x = [1] * 60000000\nx.extend(x)", "APK803"),
    ("s = ','.join(['ab' * 30000000, 'cd' * 30000000])", "APK803"),
    ("x = isinstance(3, 'int')", "APK191"),
    ("s = '{0.__class__}'.format(1)", "APK192"),
    ("s = '{0[0]}'.format([1])", "APK192"),
    ("x = [].append.__self__", "APK103"),                  # no dunder ever
    ("x = 'a'.encode", "APK103"),                          # not on the allow-list
    ("x = {}.fromkeys", "APK103"),
    ("import math\nx = math.sqrt(-1)", "APK120"),
    ("x = divmod(1, 0)", "APK121"),
])
def test_limits_and_sandbox(source, code):
    assert _code(source).code == code


def test_limit_codes_are_the_size_limits():
    # (the codes above are the limits of SPEC 15, not new ones)
    assert _code("x = 2 ** 5000").code == "APK802"
    assert _code("s = 'a' * (10 ** 8 + 1)").code == "APK803"


def test_methods_pay_the_step_budget():
    # one sort of a 100,000-element list costs 100,000 steps: past a 50,000-step budget
    src = "x = list(range(1000))\nfor i in range(100):\n    y = x * 100\n    y.sort()\n"
    assert _code(src, max_steps=50_000).code == "APK801"
    src = "x = ['a'] * 100000\nfor i in range(100):\n    s = ''.join(x)\n"
    assert _code(src, max_steps=150_000).code == "APK801"


def test_methods_in_check_mode():
    src = "x = []\nx.append(1)\nd = {}\nd.update(a=1)\nassert x == [1] and d['a'] == 1\n"
    assert apdsl.check(src) == []
