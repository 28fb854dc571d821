"""The command line's policy for Python's cyclic garbage collector.

Parsing and compiling a program allocate hundreds of thousands of small objects (syntax nodes,
closures) and free none of them, so collections triggered while they are built are wasted work,
and once the tree is large each full collection walks all of it: with the default thresholds
`apdsl check` of a 10,000-line file takes 1.8x as long.  A library must not change how its
caller's process collects, so this policy is the command line's alone, whose process ends with
the command: what the start-up imports built is frozen (never walked again), and generation 0
is collected every 50,000 allocations instead of 700.  Cyclic garbage is still collected.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000  # allocations between young collections (CPython's default: 700)
GEN1_EVERY = 20  # young collections per middle one (10)
GEN2_EVERY = 10  # middle collections per full one (10; CPython also waits for 25% growth)


def tune_for_one_command() -> None:
    """Set the policy for a process that runs one command (`apdsl ...`) and ends."""
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, GEN1_EVERY, GEN2_EVERY)
