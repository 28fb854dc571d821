"""Rearrange patterns: parsing, error positions and codes, and plans checked against einops."""

from __future__ import annotations

import ast
import re
import warnings
from math import prod
from pathlib import Path

import einops
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl.catalogue import patterns as catalogue
from apdsl.errors import PatternError
from apdsl.tensor.rearrange import ELLIPSIS, Plan, from_tuples, parse, plan

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def apply_numpy(p: Plan, x: np.ndarray) -> np.ndarray:
    """The plan's meaning: split into elementary axes, permute them, merge them."""
    flat = [s for dim in p.input_axes for s in dim]
    return x.reshape(flat).transpose(p.order).reshape(p.output_shape)


def einops_or_error(text: str, x: np.ndarray, sizes: dict) -> np.ndarray | None:
    """einops' answer, or None when einops refuses (its errors are not all EinopsError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return einops.rearrange(x, text, **sizes)
        except Exception:
            return None


def ours_or_error(text: str, shape: tuple, sizes: dict) -> Plan | None:
    try:
        return plan(parse(text), shape, sizes)
    except PatternError as e:
        assert re.fullmatch(r"APK7\d\d", e.code)
        return None


def check_plan_invariants(p: Plan) -> None:
    flat = [s for dim in p.input_axes for s in dim]
    assert len(flat) == len(p.names) == len(p.order)
    assert sorted(p.order) == list(range(len(p.order)))
    # groups partition `order` into consecutive runs, in output order
    assert [i for g in p.output_groups for i in g] == list(range(len(p.order)))
    assert p.output_shape == tuple(prod(flat[p.order[i]] for i in g) for g in p.output_groups)


def assert_same_as_einops(text: str, shape: tuple, sizes: dict) -> None:
    x = np.arange(prod(shape), dtype=np.int64).reshape(shape)
    p = plan(parse(text), shape, sizes)
    check_plan_invariants(p)
    np.testing.assert_array_equal(apply_numpy(p, x), einops.rearrange(x, text, **sizes))


# ----------------------------------------------------------------------------- fixed examples

EXAMPLES = [
    ("b (h w) -> b w h", (128, 24), {"h": 4}),
    ("b (h w) c -> b w (h c)", (2, 12, 3), {"w": 3}),
    ("b c h w -> (b h w) c", (2, 3, 4, 5), {}),
    ("b c h w -> b (c h w)", (2, 3, 4, 5), {}),
    ("a b -> b a", (3, 5), {}),
    ("a b -> b a", (3, 5), {"a": 3, "b": 5}),
    ("b ... -> ... b", (2, 3, 4), {}),
    ("b ... -> b (...)", (2, 3, 4), {}),
    ("b ... -> b (...)", (2,), {}),
    ("... h w -> ... w h", (2, 3, 4, 5), {}),
    ("a ... b -> (a b) ...", (2, 3, 4), {}),
    ("a b ... -> a (... b)", (2, 3), {}),
    ("a 1 c -> a c", (2, 1, 3), {}),
    ("a () c -> c a", (2, 1, 3), {}),
    ("a (1) c -> c a", (2, 1, 3), {}),
    ("a c -> a 1 c ()", (2, 3), {}),
    ("a (c 1) -> (1 c) a 1", (2, 3), {}),
    ("(a b c) -> (c b a)", (24,), {"a": 2, "b": 3}),
    ("(a b c) -> c b a", (24,), {"a": 2, "c": 4}),
    ("1 1 -> ", (1, 1), {}),
    ("->", (), {}),
    ("... -> (...)", (), {}),
    ("x0 y_1 -> y_1 x0", (2, 3), {}),
    ("b (h w) -> b w h", (0, 24), {"h": 4}),
]


@pytest.mark.parametrize("text, shape, sizes", EXAMPLES)
def test_examples_match_einops(text, shape, sizes):
    assert_same_as_einops(text, shape, sizes)


def test_plan_fields_for_the_seed_example():
    p = plan(parse("b (h w) -> b w h"), (128, 24), {"h": 4})
    assert p == Plan(input_axes=((128,), (4, 6)), names=("b", "h", "w"), order=(0, 2, 1),
                     output_groups=((0,), (1,), (2,)), output_shape=(128, 6, 4))
    assert p.axis_sizes == (128, 4, 6)


def test_ellipsis_axes_get_synthetic_names_and_unit_dims_are_dropped():
    p = plan(parse("b ... 1 -> (...) b ()"), (2, 3, 4, 1), {})
    assert p.names == ("b", "...0", "...1")
    assert p.input_axes == ((2,), (3,), (4,), ())
    assert p.order == (1, 2, 0)
    assert p.output_groups == ((0, 1), (2,), ())
    assert p.output_shape == (12, 2, 1)


def test_positions_record_each_axis_group_and_ellipsis():
    text = "b (h w) ... -> ... b w h"
    p = parse(text)
    b, hw, ell = p.left
    assert text[b.start:b.end] == "b" and not b.grouped
    assert text[hw.start:hw.end] == "(h w)" and hw.grouped
    assert [text[a.start:a.end] for a in hw.axes] == ["h", "w"]
    assert ell.is_ellipsis and text[ell.start:ell.end] == ELLIPSIS
    assert [text[d.start:d.end] for d in p.right] == ["...", "b", "w", "h"]
    assert p.axis_names == ("b", "h", "w") and p.has_ellipsis


def test_parse_is_cached_by_text():
    assert parse("a (b c) -> c b a") is parse("a (b c) -> c b a")
    assert parse("a b -> b a") == parse("a b -> b a")


def test_whitespace_is_free():
    assert_same_as_einops("  b(h w)->b  w h ", (2, 6), {"h": 2})


# ------------------------------------------------------------------------ errors and positions

def error_of(fn, *args, **kwargs) -> PatternError:
    with pytest.raises(PatternError) as info:
        fn(*args, **kwargs)
    return info.value


# (pattern, code, the exact characters the error points at)
PARSE_ERRORS = [
    ("b (h w) b w h", "APK701", "b (h w) b w h"),
    ("b - > b", "APK701", "b - > b"),
    ("a -> a -> a", "APK702", "->"),
    ("b (h w -> b w h", "APK703", "("),
    ("b h w) -> b w h", "APK703", ")"),
    ("b (h w) -> b (w h", "APK703", "("),
    ("b (h (w)) -> b w h", "APK704", "("),
    ("b, (h w) -> b w h", "APK705", ","),
    ("b (h*w) -> b w h", "APK705", "*"),
    ("b (h 2w) -> b 2w h", "APK706", "2w"),
    ("_b h -> h _b", "APK706", "_b"),
    ("b h_ -> h_ b", "APK706", "h_"),
    ("b... -> b...", "APK706", "b..."),
    (".. b -> b", "APK706", ".."),
    ("b (4 w) -> b w", "APK707", "4"),
    ("b (h h) -> b h", "APK708", "h"),
    ("a b -> a b a", "APK708", "a"),
    ("b ... ... -> b ...", "APK709", "..."),
    ("b (...) -> b ...", "APK710", "..."),
    ("b (h w) -> b w c", "APK711", "c"),
    ("b (h w) -> b w", "APK711", "h"),
    ("b ... -> b", "APK712", "..."),
    ("b -> b ...", "APK712", "..."),
]


@pytest.mark.parametrize("text, code, marked", PARSE_ERRORS)
def test_parse_errors_point_at_the_exact_characters(text, code, marked):
    e = error_of(parse, text)
    assert e.code == code
    assert e.pattern == text
    assert e.start is not None and text[e.start:e.end] == marked
    assert e.help
    assert einops_or_error(text, np.ones((1,) * 8), {}) is None  # einops refuses it too


def test_repeated_axis_points_at_the_second_occurrence():
    e = error_of(parse, "b (h h) -> b h")
    assert (e.start, e.end) == (5, 6)


# (pattern, shape, sizes, code, the characters pointed at)
SHAPE_ERRORS = [
    ("b h w -> b w h", (128, 24), {}, "APK715", "b h w"),
    ("b ... h w -> b w h ...", (128, 24), {}, "APK715", "b ... h w"),
    ("b -> b", (2, 3), {}, "APK715", "b"),
    ("-> ", (2,), {}, "APK715", "->"),
    ("b (h w) -> b w h", (128, 24), {}, "APK716", "(h w)"),
    ("b (h w) -> b w h", (128, 24), {"h": 5}, "APK717", "(h w)"),
    ("b (h w) -> b w h", (128, 24), {"h": 4, "w": 4}, "APK718", "(h w)"),
    ("b w -> w b", (128, 24), {"w": 4}, "APK718", "w"),
    ("b 1 -> b", (128, 24), {}, "APK718", "1"),
    ("b () -> b", (128, 24), {}, "APK718", "()"),
    ("b (h w) -> b w h", (128, 24), {"h": 0}, "APK714", "h"),
    ("b (h w) -> b w h", (128, 24), {"h": -1}, "APK714", "h"),
    ("b (h w) -> b w h", (128, 24), {"h": True}, "APK714", "h"),
    ("b (h w) -> b w h", (128, 24), {"h": 4.0}, "APK714", "h"),
]


@pytest.mark.parametrize("text, shape, sizes, code, marked", SHAPE_ERRORS)
def test_shape_errors_carry_facts_and_point_at_the_group(text, shape, sizes, code, marked):
    e = error_of(plan, parse(text), shape, sizes)
    assert e.code == code
    assert text[e.start:e.end] == marked
    assert e.pattern == text
    if code != "APK714":
        assert e.facts["shape"] == shape
        assert any(str(shape) in note for note in e.notes)


def test_unknown_size_name_suggests_a_close_match():
    e = error_of(plan, parse("b (h w) -> b w h"), (128, 24), {"hh": 4})
    assert e.code == "APK713" and "'h'" in e.help
    assert e.start is None  # the name is not in the pattern text


# ---------------------------------------------------------------------------------- tuple form

TUPLE_EQUIVALENTS = [
    ((("b", ("h", "w")), ("b", "w", "h")), "b (h w) -> b w h", (128, 24), {"h": 4}),
    ((("b", "...", 1), ("...", "b", ())), "b ... 1 -> ... b ()", (2, 3, 4, 1), {}),
    ((["b", ["h", "w"]], ["b", ["w", "h"]]), "b (h w) -> b (w h)", (4, 6), {"w": 2}),
    ((("b", "...", "1"), ("b", ("...",), 1)), "b ... 1 -> b (...) 1", (4, 2, 3, 1), {}),
]


@pytest.mark.parametrize("tuples, text, shape, sizes", TUPLE_EQUIVALENTS)
def test_tuple_form_means_the_string_form(tuples, text, shape, sizes):
    src, dst = tuples
    p = from_tuples(src, dst, sizes)
    assert plan(p, shape, sizes) == plan(parse(text), shape, sizes)
    assert all(d.start is None and all(a.start is None for a in d.axes) for d in p.left + p.right)


TUPLE_ERRORS = [
    (("b", ("h", ("w",))), ("b", "h", "w"), None, "APK704"),
    (("b", ("h", None)), ("b", "h"), None, "APK719"),
    (("b", "c"), "c b", None, "APK719"),
    ("b c", ("c", "b"), None, "APK719"),
    (("b", True), ("b",), None, "APK719"),
    (("b", "h w"), ("b", "h", "w"), None, "APK705"),
    (("b", "2w"), ("b", "2w"), None, "APK706"),
    (("b", ""), ("b",), None, "APK706"),
    (("b", ("h", 3)), ("b", "h"), None, "APK707"),
    (("b", ("h", "h")), ("b", "h"), None, "APK708"),
    (("b", ("h", "w")), ("b", "w"), None, "APK711"),
    (("b", ("h", "w")), ("b", "w", "h"), {"c": 4}, "APK713"),
    (("b", ("h", "w")), ("b", "w", "h"), {"h": -1}, "APK714"),
]


@pytest.mark.parametrize("src, dst, sizes, code", TUPLE_ERRORS)
def test_tuple_form_errors_have_codes_and_no_positions(src, dst, sizes, code):
    e = error_of(from_tuples, src, dst, sizes)
    assert e.code == code
    assert e.start is None and e.end is None


def test_tuple_form_cache_does_not_confuse_true_or_floats_with_1():
    from_tuples(("b", 1), ("b",))
    assert error_of(from_tuples, ("b", True), ("b",)).code == "APK719"
    assert error_of(from_tuples, ("b", (1.0,)), ("b",)).code == "APK719"


def test_tuple_form_shape_error_has_no_positions():
    e = error_of(plan, from_tuples(("b", ("h", "w")), ("b", "w", "h")), (128, 24), {"h": 5})
    assert e.code == "APK717" and e.start is None
    assert "(h w)" in e.message


def test_non_string_pattern_is_an_error():
    assert error_of(parse, ("b", "c")).code == "APK719"


# ----------------------------------------------------------------- generated patterns vs einops

NAMES = ["a", "b", "c", "h", "w", "k0", "x_y"]


@st.composite
def cases(draw):
    """A valid pattern with its shape and a sufficient set of sizes."""
    names = draw(st.permutations(NAMES))[: draw(st.integers(0, 5))]
    size = {n: draw(st.integers(1, 4)) for n in names}
    ellipsis = draw(st.booleans())
    ell_shape = draw(st.lists(st.integers(1, 3), max_size=3)) if ellipsis else []

    def chunks(items):
        out, i = [], 0
        while i < len(items):
            k = draw(st.integers(1, len(items) - i))
            out.append(items[i:i + k])
            i += k
        return out

    def unit():
        return draw(st.sampled_from(["1", "()"]))

    left, shape, given = [], [], {}
    for chunk in chunks(names):
        if len(chunk) == 1 and draw(st.booleans()):
            left.append(chunk[0])
            if draw(st.booleans()):
                given[chunk[0]] = size[chunk[0]]
        else:
            inner = list(chunk)
            if draw(st.integers(0, 3)) == 0:
                inner.insert(draw(st.integers(0, len(inner))), "1")
            left.append("(" + " ".join(inner) + ")")
            free = draw(st.sampled_from(chunk + [None]))
            given.update({n: size[n] for n in chunk if n != free})
        shape.append(prod(size[n] for n in chunk))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(left)))
        left.insert(at, unit())
        shape.insert(at, 1)
    if ellipsis:
        at = draw(st.integers(0, len(left)))
        left.insert(at, ELLIPSIS)
        shape[at:at] = ell_shape

    right_items = list(draw(st.permutations(names))) + ([ELLIPSIS] if ellipsis else [])
    right_items = draw(st.permutations(right_items))
    right = []
    for chunk in chunks(right_items):
        if len(chunk) == 1 and draw(st.booleans()):
            right.append(chunk[0])
        else:
            right.append("(" + " ".join(chunk) + ")")
    for _ in range(draw(st.integers(0, 2))):
        right.insert(draw(st.integers(0, len(right))), unit())
    return f"{' '.join(left)} -> {' '.join(right)}", tuple(shape), given


@FAST
@given(cases())
def test_generated_patterns_match_einops(case):
    assert_same_as_einops(*case)


@FAST
@given(cases(), st.data())
def test_we_raise_exactly_when_einops_raises(case, data):
    text, shape, given = case
    # perturb: change the dimension count or a size, drop or add sizes, give wrong sizes
    shape = list(shape)
    action = data.draw(st.sampled_from(["shape", "ndim", "drop", "wrong", "extra", "none"]))
    if action == "shape" and shape:
        shape[data.draw(st.integers(0, len(shape) - 1))] = data.draw(st.integers(1, 12))
    elif action == "ndim":
        if shape and data.draw(st.booleans()):
            del shape[data.draw(st.integers(0, len(shape) - 1))]
        else:
            shape.insert(data.draw(st.integers(0, len(shape))), data.draw(st.integers(1, 4)))
    elif action == "drop" and given:
        del given[data.draw(st.sampled_from(sorted(given)))]
    elif action == "wrong":
        axis = data.draw(st.sampled_from(sorted(NAMES)))
        given[axis] = data.draw(st.integers(1, 5))
    elif action == "extra":
        given["zz"] = 2
    shape = tuple(shape)
    x = np.arange(prod(shape), dtype=np.int64).reshape(shape)
    expected = einops_or_error(text, x, given)
    ours = ours_or_error(text, shape, given)
    assert (ours is None) == (expected is None), (text, shape, given)
    if ours is not None:
        check_plan_invariants(ours)
        np.testing.assert_array_equal(apply_numpy(ours, x), expected)


TOKENS = ["a", "b", "c", "(", ")", "...", "1", "()", "->", " ", " ", "2", "_x", "y_", "a.",
          "..", "-", ",", "01", "ab1"]


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=14), st.integers(0, 2))
def test_random_token_strings_parse_exactly_when_einops_accepts(tokens, n_ellipsis):
    text = "".join(tokens)
    try:
        p = parse(text)
    except PatternError as e:
        assert e.start is not None and 0 <= e.start <= e.end <= len(text)
        p = None
    # all-ones shapes pass every size check, so only the pattern itself can make einops refuse
    if p is None:
        assert all(einops_or_error(text, np.ones((1,) * n), {}) is None for n in range(8)), text
        return
    shape = (1,) * (len(p.left) - p.has_ellipsis + (n_ellipsis if p.has_ellipsis else 0))
    expected = einops_or_error(text, np.ones(shape), {})
    assert expected is not None, text
    assert plan(p, shape, {}).output_shape == expected.shape


# ------------------------------------------------------------------------------------ catalogue

def _raised_codes() -> set[str]:
    import apdsl.tensor.rearrange as module

    return set(re.findall(r'"(APK7\d\d)"', Path(module.__file__).read_text()))


def test_every_raised_code_has_a_catalogue_entry():
    documented = {e.code for e in catalogue.ENTRIES}
    assert _raised_codes() <= documented
    assert all(re.fullmatch(r"APK7\d\d", c) for c in documented)


def _run_example(example: str) -> None:
    """Apply the `rearrange` call of a catalogue example to its declared tensor's shape."""
    decl, call = example.splitlines()
    shape = tuple(int(d) for d in re.search(r"\[([\d, ]+)\]", decl).group(1).split(","))
    node = ast.parse(call.split("=", 1)[1].strip(), mode="eval").body
    args = [ast.literal_eval(a) for a in node.args]
    sizes = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    if isinstance(args[0], str):
        plan(parse(args[0]), shape, sizes)
    else:
        plan(from_tuples(args[0], args[1], args[2] if len(args) > 2 else None), shape,
             args[2] if len(args) > 2 else {})


@pytest.mark.parametrize("entry", catalogue.ENTRIES, ids=lambda e: e.code)
def test_each_catalogue_example_triggers_its_code(entry):
    assert entry.title and entry.explanation
    e = error_of(_run_example, entry.example)
    assert e.code == entry.code
