"""The engines' pseudo-random number generators, per device (`Machine.engine_state`).

NKI's engines generate random numbers in hardware (the Vector Engine's PRNG, seeded by
`set_rng_seed`; XORWOW states from `rand_set_state` on NeuronCore-v3+).  apdsl does not
reproduce their bits: each engine of a device has a NumPy `Generator(PCG64(seed))`, where
`seed` is the last 32-bit value given to `set_rng_seed` (taken as unsigned) and 0 before any.
The Vector Engine's generator serves `rng(engine=vector)`, `dropout` and `rand2`; GpSimd's
serves `rng(engine=gpsimd)`.  A program run starts on a fresh device, so a run is
deterministic: the same program and seed draw the same numbers, run after run (SPEC 11).
Draws are taken in row-major order of the destination's elements.
"""

from __future__ import annotations

import numpy as np

from ...tensor.machine import current

KEY = "rng"
DEFAULT_SEED = 0


def seeded(seed: int) -> np.random.Generator:
    """The generator a seed starts (the 32-bit value as unsigned)."""
    return np.random.Generator(np.random.PCG64(int(seed) & 0xFFFFFFFF))


def generator(engine: str) -> np.random.Generator:
    """The generator of `engine` on the current device (seeded with 0 until seeded)."""
    state = current().engine_state.setdefault(KEY, {})
    g = state.get(engine)
    if g is None:
        g = state[engine] = seeded(DEFAULT_SEED)
    return g


def seed(engine: str, value: int) -> None:
    """Restart `engine`'s generator from `value`."""
    current().engine_state.setdefault(KEY, {})[engine] = seeded(value)


def bits32(engine: str, count: int) -> np.ndarray:
    """`count` random 32-bit words."""
    return generator(engine).integers(0, 2**32, size=count, dtype=np.uint32)


def uniform(engine: str, count: int) -> np.ndarray:
    """`count` float32 values uniform in [0, 1)."""
    return generator(engine).random(count, dtype=np.float32)
