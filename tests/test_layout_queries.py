"""The pure layout queries of `apdsl.tensor.layout`: bounds, leaves, injectivity, offsets.

Every view's layout is checked against an independent oracle: NumPy's own strided view of an
`arange` buffer gives the offset of every element (the views are built by NumPy and by apdsl
from the same slices and transposes), and `np.unique` decides injectivity."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.tensor import formats
from apdsl.tensor.dims import Dim, mode_offset
from apdsl.tensor.layout import (
    Layout,
    bounds,
    is_injective,
    leaves,
    pattern_bounds,
    plain_leaves,
    strided_offsets,
)


@st.composite
def views(draw):
    """A NumPy view of an arange and the same view built by apdsl (slices, transpose, merge)."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    t = apdsl.from_numpy(base.astype(np.int32))
    ref = base
    for k, n in enumerate(shape):
        a = draw(st.integers(0, n - 1))
        b = draw(st.integers(a + 1, n))
        step = draw(st.integers(1, 3))
        sl = [slice(None)] * len(shape)
        sl[k] = slice(a, b, step)
        ref = ref[tuple(sl)]
        t = t.slice(k, a, b, step)
    if len(shape) > 1 and draw(st.booleans()):
        order = tuple(draw(st.permutations(range(len(shape)))))
        ref = ref.transpose(order)
        t = t.permute(order)
    return t.layout, ref


@settings(max_examples=150, deadline=None)
@given(views())
def test_offsets_bounds_and_leaves_match_numpy(case):
    layout, ref = case
    np.testing.assert_array_equal(layout.offsets(), ref)
    assert bounds(layout) == (int(ref.min()), int(ref.max()))
    got = leaves(layout)
    assert got is not None  # slices and transposes of a row-major tensor stay regular
    counts, strides = got
    full = ref.reshape(-1)
    np.testing.assert_array_equal(strided_offsets(layout.base, counts, strides).reshape(-1),
                                  full)
    assert pattern_bounds(layout.base, counts, strides) == bounds(layout)
    assert plain_leaves(layout) == got


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-7, 7)), min_size=1, max_size=4),
       st.integers(0, 30))
def test_injectivity_is_never_claimed_wrongly(pattern, base):
    layout = Layout.from_pattern([[s, c] for c, s in pattern], base)
    offs = layout.offsets().reshape(-1)
    distinct = np.unique(offs).size == offs.size
    if is_injective(layout):  # a sufficient condition: never true of a repeating layout
        assert distinct
    assert bounds(layout) == (int(offs.min()), int(offs.max()))


def test_injectivity_is_proven_for_a_permuted_or_sliced_nested_dim():
    t = apdsl.ndarray((4, 6, 8), "float32", "hbm").rearrange("b c h -> (b h) c")
    assert is_injective(t.layout)
    u = t.slice(0, 3, 29)  # a window across the merged blocks: several pieces
    assert len(u.layout.pieces()) > 1 and leaves(u.layout) is None
    assert is_injective(u.layout)
    offs = u.layout.offsets().reshape(-1)
    assert bounds(u.layout) == (int(offs.min()), int(offs.max()))
    assert not is_injective(t.layout.broadcast(1, 5))  # a stride-0 dim repeats elements


def test_the_offset_formula_is_mixed_radix_with_an_unbounded_outer_digit():
    modes = ((4, 1), (3, 100))
    x = np.arange(40, dtype=np.int64)
    expect = (x % 4) * 1 + (x // 4) * 100  # the outer digit is not reduced modulo 3
    np.testing.assert_array_equal(mode_offset(modes, x), expect)
    assert [mode_offset(modes, int(i)) for i in x] == list(expect)
    assert Dim(40, modes).phi(13) == 1 + 300


def test_format_offsets_are_the_layout_offsets():
    """`formats.offsets` computes no offsets of its own: NZ's offsets come from the same
    formula and agree with a hand-derived NZ oracle (16 x C0 fractals, column bands)."""
    modes = formats.dim_modes("NZ", (20, 40), "float16")
    got = formats.offsets(modes, (20, 40))
    r, c = np.meshgrid(np.arange(20), np.arange(40), indexing="ij")
    # NZ of float16 (C0 = 16): column band c // 16 holds ceil(20 / 16) * 16 = 32 rows of 16
    expect = (c // 16) * 32 * 16 + r * 16 + c % 16
    np.testing.assert_array_equal(got, expect)
