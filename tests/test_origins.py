"""interp.origins (apdsl.semantics.origins): the span where each view was made, weakly held,
the first recording kept, a dead view's id never lending its span to a new one, and bounded
by the live views."""

from __future__ import annotations

import gc

from apdsl.errors import Span
from apdsl.semantics.origins import Origins
from apdsl.tensor.view import ndarray


def span(line: int) -> Span:
    return Span("p.apk", line, 1, line, 5)


def test_first_recording_is_kept_and_read_back():
    o = Origins()
    t = ndarray((4, 4), "float32", "sbuf")
    assert o.get(t) is None and t not in o
    assert o.setdefault(t, span(1)) == span(1)
    assert o.setdefault(t, span(2)) == span(1)
    assert o.get(t) == span(1) and o[t] == span(1) and t in o
    o[t] = span(3)  # a declaration sets its own
    assert o.get(t) == span(3)


def test_a_dead_view_lends_no_span_and_is_not_kept_alive():
    import weakref
    o = Origins()
    t = ndarray((4, 4), "float32", "sbuf")
    o.setdefault(t, span(1))
    alive = weakref.ref(t)
    del t
    gc.collect()
    assert alive() is None  # the table does not hold it
    # a new view, whatever its id, starts without a span
    for _ in range(50):
        u = ndarray((4, 4), "float32", "sbuf")
        assert o.get(u) is None
    assert len(o) == 0


def test_the_table_stays_bounded_by_the_live_views():
    o = Origins()
    keep = []
    for i in range(20_000):
        t = ndarray((2, 2), "float32", "sbuf")
        o.setdefault(t, span(i + 1))
        if i % 100 == 0:
            keep.append(t)
    del t
    assert len(o) == len(keep)
    assert len(o.spans) <= 2 * 1024 + len(keep)  # dead entries are swept
    assert all(o.get(t) == span(100 * j + 1) for j, t in enumerate(keep))
