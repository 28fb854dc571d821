"""The fast paths of issue 16 compute exactly what the general code computes: indexing built in
one step (`indexing.fast_index`) against the dimension-by-dimension path, against NumPy; an
access memoised on its view; the entry-limit test and the unrolled injectivity test against
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
from apdsl.tensor.view.indexing import fast_index, index_view

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


def _outcome(fn):
    try:
        return fn()
    except ApdslError as e:
        return (type(e), e.code, e.message)


_index = st.one_of(st.integers(-9, 9), st.none())
_key_item = st.one_of(
    st.integers(-9, 9),
    st.builds(slice, _index, _index, st.one_of(st.none(), st.integers(-1, 3))),
    st.just(slice(None)),
)


@settings(max_examples=400, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=2, max_size=3),
       buffer=st.sampled_from(["hbm", "sbuf"]),
       key=st.lists(_key_item, min_size=1, max_size=3), pre=st.booleans())
def test_fast_indexing_is_the_general_path(shape, buffer, key, pre):
    t = apdsl.ndarray(tuple(shape), "float32", buffer)
    if pre and shape[-1] > 1:  # a view that is already sliced
        t = t[..., 1:]
    key = tuple(key)
    fast = _outcome(lambda: fast_index(t, key))
    general = _outcome(lambda: index_view(t, key))
    if fast is None or isinstance(fast, tuple):
        assert fast is None, fast  # the fast path never raises: it leaves errors to the other
        return
    assert not isinstance(general, tuple), general
    assert fast.layout == general.layout and fast.shape == general.shape
    assert fast.storage is t.storage and fast.dtype == t.dtype
    # and both address what NumPy's indexing reads (off chip, where ints drop dims as NumPy's)
    if buffer == "hbm":
        want = t.layout.offsets()[key]
        np.testing.assert_array_equal(fast.layout.offsets(), want)


def test_getitem_errors_stay_the_general_ones():
    t = apdsl.ndarray((8, 8), "float32", "sbuf")
    for key in [(slice(0, 9), slice(None)), (slice(3, 3),), (slice(None), slice(0, 8, 0)),
                (slice(0, 8, 2),)]:
        assert fast_index(t, key) is None
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
