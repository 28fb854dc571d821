"""Layout operations and rearrange: NumPy integer sizes, re-splitting nested dimensions, pure
layout operations with one error code per root cause, and patterns of any length in linear time.

Oracles: NumPy (the offsets a view must have: `Layout.offsets()` of the source rearranged or
reshaped by NumPy) and einops (the values a rearrange must give)."""

import einops
import numpy as np
import pytest

import apdsl
from apdsl.errors import PatternError

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
             np.intp]


def hbm_arange(shape, dtype="int32"):
    return apdsl.from_numpy(np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
                            .astype(dtype))


# ---------------------------------------------------------------- 1. NumPy integers as sizes

@pytest.mark.parametrize("kind", INT_TYPES, ids=lambda k: k.__name__)
def test_numpy_integer_sizes_in_the_string_form_match_einops(kind):
    x = np.arange(2 * 12 * 5, dtype=np.int32).reshape(2, 12, 5)
    t = apdsl.from_numpy(x)
    pattern = "b (h w) c -> b w (c h)"
    u = t.rearrange(pattern, h=kind(4))
    expect = einops.rearrange(x, pattern, h=kind(4))
    assert u.shape == expect.shape and all(type(n) is int for n in u.shape)
    np.testing.assert_array_equal(u.numpy(), expect)
    # sizes given as a dict after the pattern, and as a dict of several NumPy ints
    v = t.rearrange(pattern, {"h": kind(4), "w": kind(3)})
    np.testing.assert_array_equal(v.numpy(), expect)


@pytest.mark.parametrize("kind", INT_TYPES, ids=lambda k: k.__name__)
def test_numpy_integer_sizes_in_the_tuple_form(kind):
    x = np.arange(2 * 12, dtype=np.int32).reshape(2, 12)
    t = apdsl.from_numpy(x)
    u = t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": kind(4)})
    np.testing.assert_array_equal(u.numpy(), einops.rearrange(x, "b (h w) -> b w h", h=4))
    # a NumPy 1 is the anonymous axis there, as the int 1 is
    w = t.rearrange(("b", "f"), ("b", kind(1), "f"))
    assert w.shape == (2, 1, 12)


@pytest.mark.parametrize("size", [True, False, np.bool_(True), 4.0, np.float64(4), "4", None,
                                  np.int64(0), np.int64(-4), 0])
def test_non_integer_or_non_positive_sizes_are_refused_in_both_forms(size):
    t = apdsl.ndarray((2, 12), "float32", "hbm")
    for call in (lambda: t.rearrange("b (h w) -> b w h", h=size),
                 lambda: t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": size})):
        with pytest.raises(PatternError) as e:
            call()
        assert e.value.code == "APK714"


def test_a_bool_in_the_tuple_form_is_not_the_anonymous_axis():
    t = apdsl.ndarray((2, 12), "float32", "hbm")
    with pytest.raises(PatternError) as e:
        t.rearrange(("b", "f"), ("b", True, "f"))
    assert e.value.code == "APK719"
