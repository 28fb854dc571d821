"""The fast paths of issue 16 compute exactly what the general code computes: an access
memoised on its view; the entry-limit test and the unrolled injectivity test against
their general definitions.  No timing here (bench/ measures)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.core import trace
from apdsl.runtime.core.access import Strided
from apdsl.runtime.core.resolve import resolve
from apdsl.tensor.layout import Layout, terms_injective

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


_index = st.one_of(st.integers(-9, 9), st.none())
_key_item = st.one_of(
    st.integers(-9, 9),
    st.builds(slice, _index, _index, st.one_of(st.none(), st.integers(1, 3))),
    st.just(slice(None)),
)


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=2, max_size=3),
       key=st.lists(_key_item, min_size=1, max_size=3), pre=st.booleans())
def test_indexing_addresses_what_numpy_indexes(shape, key, pre):
    # off chip, where an int index drops its dim as NumPy's does; out-of-range bounds refuse
    t = apdsl.ndarray(tuple(shape), "float32", "hbm")
    if pre and shape[-1] > 1:  # a view that is already sliced
        t = t[..., 1:]
    key = tuple(key)
    offsets = t.layout.offsets()
    try:
        want = offsets[key]
    except IndexError:
        want = None
    try:
        got = t[key]
    except ApdslError:
        assert want is None or want.size == 0 or any(
            type(k) is slice and (k.start is not None and not -n <= k.start <= n or
                                  k.stop is not None and not -n <= k.stop <= n)
            for k, n in zip(key, t.shape)), key
        return
    assert want is not None, key
    np.testing.assert_array_equal(got.layout.offsets(), want)


def test_getitem_errors():
    t = apdsl.ndarray((8, 8), "float32", "sbuf")
    for key in [(slice(0, 9), slice(None)), (slice(3, 3),), (slice(None), slice(0, 8, 0)),
                (slice(0, 8, 2),)]:
        with pytest.raises(ApdslError):
            t[key]


def test_an_access_is_memoised_on_its_view_and_a_freed_storage_still_refuses():
    t = apdsl.ndarray((16, 8), "float32", "hbm")
    v = t[4:12, 2:6]
    a = resolve(v, "read", "src")
    assert resolve(v, "read", "src") is a and v.memo is a
    assert t[4:12, 2:6] is v  # the same key gives the same child (`tensor.view.cache`)
    assert not hasattr(t.slice(0, 4, 12).slice(1, 2, 6), "memo")  # a fresh equal view: none
    t.storage.free()
    with pytest.raises(ApdslError) as e:
        resolve(v, "read", "src")
    assert e.value.code == "APK408"


def _old_may_exceed(t) -> bool:
    layout = t.layout
    n = sum(len(d.modes) for d in layout.dims) - 1 if layout.is_regular else None
    return n is None or n > apdsl.tensor.targets.target_for(t.buffer).max_free_entries


@settings(max_examples=200, deadline=None)
@given(dims=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=2, max_size=5),
       pattern=st.sampled_from(["", "merge", "slice"]))
def test_the_entry_limit_test_is_the_general_one(dims, pattern):
    shape = tuple(a * b for a, b in dims)
    t = apdsl.ndarray((2,) + shape, "float32", "hbm")  # the same limit, no capacity
    if pattern == "merge" and len(shape) >= 2:
        t = t.rearrange("p a b ... -> p (b a) ...")
    elif pattern == "slice" and len(shape) >= 2:
        t = t.rearrange("p a b ... -> p (b a) ...")
        if t.shape[1] > 2:
            t = t[:, 1:]
    assert trace._may_exceed_entries(t) == _old_may_exceed(t)


@settings(max_examples=300, deadline=None)
@given(counts=st.tuples(st.integers(2, 9), st.integers(2, 9)),
       strides=st.tuples(st.integers(-40, 40), st.integers(-40, 40)))
def test_two_leaf_injectivity_is_terms_injective(counts, strides):
    t = apdsl.ndarray((4096,), "float32", "hbm")
    acc = Strided("x", t.storage, t.dtype, counts, Layout.row_major(counts), 2000, counts,
                  strides)
    want = terms_injective((abs(s), abs(s) * (c - 1)) for c, s in zip(counts, strides))
    assert acc.injective() == want
