"""`nki.collectives`: communication between the ranks of a group (NKI API reference):
`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `collective_permute`, the implicit
(ring) permutes, `rank_id`, `ReplicaGroup`.  Each call is an instruction of the one table
(`ncc.<name>`), issued through the kernel's host like an `nisa` call (located, traced, dry in
check mode); the meaning is `apdsl.runtime.nki.collectives`.  A group of ranks is launched by
`apdsl run FILE.py --ranks N` or `apdsl.nki.simulate_ranks`; outside one a kernel is rank 0
of 1."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..runtime.nki import collectives as _rt
from ..runtime.nki.collectives import ReplicaGroup

_ISSUED = ("all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "all_to_all",
           "all_to_all_v", "collective_permute", "collective_permute_implicit",
           "collective_permute_implicit_reduce")


def _issued(op: str) -> Callable[..., Any]:
    impl = getattr(_rt, op)

    @functools.wraps(impl)
    def call(*args: Any, **kwargs: Any) -> Any:
        from .host import current
        return current().instruction(f"ncc.{op}", impl, args, kwargs)
    return call


def _located(impl: Callable[..., Any]) -> Callable[..., Any]:
    """A call that returns a register (no tensors, nothing traced): errors point at the
    user's line like any other."""
    @functools.wraps(impl)
    def call(*args: Any, **kwargs: Any) -> Any:
        from ..errors import ApdslError
        from .locate import caller_span
        try:
            return impl(*args, **kwargs)
        except ApdslError as e:
            raise e.replace(span=caller_span(2)) from None
    return call


all_reduce = _issued("all_reduce")
all_gather = _issued("all_gather")
all_gather_v = _issued("all_gather_v")
reduce_scatter = _issued("reduce_scatter")
all_to_all = _issued("all_to_all")
all_to_all_v = _issued("all_to_all_v")
collective_permute = _issued("collective_permute")
collective_permute_implicit = _issued("collective_permute_implicit")
collective_permute_implicit_reduce = _issued("collective_permute_implicit_reduce")
collective_permute_implicit_current_processing_rank_id = _located(
    _rt.collective_permute_implicit_current_processing_rank_id)
rank_id = _located(_rt.rank_id)

__all__ = ["ReplicaGroup", *_ISSUED, "collective_permute_implicit_current_processing_rank_id",
           "rank_id"]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    from difflib import get_close_matches

    from .namespace import missing
    close = get_close_matches(name, __all__, n=3)
    raise missing(f"apdsl.nki has no nki.collectives.{name}", code="APK144", name=name,
                  notes=[f"nki.collectives offers: {', '.join(__all__)}"],
                  help=f"did you mean {', '.join(close)}?" if close else None)
