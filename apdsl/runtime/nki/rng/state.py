"""The engines' pseudo-random number generators, per device (`Machine.engine_state`).

NKI's engines generate random numbers in hardware (the Vector Engine's PRNG, seeded by
`set_rng_seed`; XORWOW states from `rand_set_state` on NeuronCore-v3+).  apdsl does not
reproduce their bits.

Seeded mode (every engine until `rand_set_state`): each engine of a device has a NumPy
`Generator(PCG64(seed))`, where `seed` is the last 32-bit value given to `set_rng_seed` (taken
as unsigned) and 0 before any.  The Vector Engine's generator serves `rng(engine=vector)`,
`dropout` and `rand2`; GpSimd's serves `rng(engine=gpsimd)`.  A program run starts on a fresh
device, so a run is deterministic: the same program and seed draw the same numbers, run after
run (SPEC 11).  Draws are taken in row-major order of the destination's elements.

XORWOW mode (an engine after `rand_set_state` on it): what users rely on with
`rand_set_state`/`rand_get_state` is saving and restoring a state (get it, draw, set it back,
draw again: the same numbers; set then get: the words set), and apdsl guarantees exactly that.
The engine's draws come from one XORWOW generator per compute lane (Marsaglia 2003, in the form
cuRAND uses: five 32-bit words x, y, z, w, v and a Weyl counter d; a step is
`t = x ^ (x >> 2)`, `x, y, z, w = y, z, w, v`, `v = (v ^ (v << 4)) ^ (t ^ (t << 1))`,
`d += 362437`, giving `v + d`, all modulo 2**32).  Lane p is physical partition p (the
partition a row of the operand is in): it serves that partition's elements in row-major order.
A GpSimd lane's state is the 6 words `(x, y, z, w, v, d)` in that order; a Vector lane's 24
words are four such states, element i of a partition (in one instruction) drawn from state
i % 4.  A float in [0, 1) is `(word >> 8) * 2**-24` (float32), as NumPy's `random(dtype=float32)`
derives it in seeded mode.  The docs are silent on the word order and on how floats are made:
both are apdsl's choice.  A lane `rand_set_state` never set holds what the docs do not say: a
draw that needs it, or `rand_get_state` of it, is refused.  `set_rng_seed` returns the Vector
Engine to seeded mode (its XORWOW states are dropped).

The state is the device's (`Machine.engine_state`), keyed by engine, as the seeded generators
always were.  Each program of an LNC=2 launch runs on a machine of its own, so each has its own
engines' state, as each NeuronCore has its own engines: one program's `rand_set_state` does
not set the other's lanes.
"""

from __future__ import annotations

import numpy as np

from ....tensor.machine import current

KEY = "rng"
XORWOW_KEY = "rng.xorwow"
DEFAULT_SEED = 0
LANES = 128
WORDS = 6  # one XORWOW state: x, y, z, w, v, d
# the XORWOW states a lane of each engine holds (rand_set_state: 6 words on GpSimd, 24 on Vector)
STATES = {"gpsimd": 1, "vector": 4}
WEYL = np.uint32(362437)


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
    """Restart `engine`'s generator from `value` (seeded mode: its XORWOW states dropped)."""
    current().engine_state.setdefault(KEY, {})[engine] = seeded(value)
    current().engine_state.get(XORWOW_KEY, {}).pop(engine, None)


class Xorwow:
    """One engine's XORWOW lanes: `words[lane, state]` the 6 words of each state, `set` which
    lanes `rand_set_state` has set."""

    __slots__ = ("words", "set")

    def __init__(self, states: int) -> None:
        self.words = np.zeros((LANES, states, WORDS), np.uint32)
        self.set = np.zeros(LANES, bool)


def xorwow(engine: str) -> Xorwow | None:
    """`engine`'s XORWOW lanes on the current device (None: the engine is in seeded mode)."""
    return current().engine_state.get(XORWOW_KEY, {}).get(engine)


def unset_lane(engine: str, lanes: np.ndarray) -> int | None:
    """The first of `lanes` that `engine` (in XORWOW mode) draws from but no `rand_set_state`
    set; None when all are set or the engine is in seeded mode."""
    x = xorwow(engine)
    if x is None:
        return None
    missing = np.flatnonzero(~x.set[lanes])
    return int(lanes[missing[0]]) if missing.size else None


def set_state(engine: str, lanes: np.ndarray, words: np.ndarray) -> None:
    """Load lane `lanes[i]` of `engine` from row i of `words` (uint32, STATES[engine] * 6
    a row); the engine is in XORWOW mode from now on."""
    table = current().engine_state.setdefault(XORWOW_KEY, {})
    x = table.get(engine)
    if x is None:
        x = table[engine] = Xorwow(STATES[engine])
    x.words[lanes] = words.reshape(len(lanes), STATES[engine], WORDS)
    x.set[lanes] = True


def get_state(engine: str, lanes: np.ndarray) -> np.ndarray:
    """The words of `engine`'s lanes `lanes`, a row each (every lane set: `unset_lane`)."""
    x = xorwow(engine)
    assert x is not None
    return x.words[lanes].reshape(len(lanes), -1).copy()


def _xorwow_draw(x: Xorwow, lanes: np.ndarray, per_lane: int) -> np.ndarray:
    """`per_lane` words from each of `lanes` (element i from state i % states), advancing
    the states; a (len(lanes), per_lane) uint32 array."""
    k = x.words.shape[1]
    st = x.words[lanes]  # (n, k, 6): a copy, written back below
    xs, ys, zs, ws, vs, ds = (st[:, :, j].copy() for j in range(WORDS))
    steps = -(-per_lane // k)
    out = np.empty((len(lanes), steps * k), np.uint32)
    for m in range(steps):
        live = min(k, per_lane - m * k)  # the states still drawing at this step
        sl = slice(0, live)
        t = xs[:, sl] ^ (xs[:, sl] >> np.uint32(2))
        xs[:, sl], ys[:, sl], zs[:, sl], ws[:, sl] = ys[:, sl], zs[:, sl], ws[:, sl], vs[:, sl]
        vs[:, sl] = (vs[:, sl] ^ (vs[:, sl] << np.uint32(4))) ^ (t ^ (t << np.uint32(1)))
        ds[:, sl] += WEYL
        out[:, m * k:m * k + live] = vs[:, sl] + ds[:, sl]
    x.words[lanes] = np.stack([xs, ys, zs, ws, vs, ds], axis=-1)
    return out[:, :per_lane]


def bits32(engine: str, lanes: np.ndarray, per_lane: int) -> np.ndarray:
    """`per_lane` random 32-bit words for each of `lanes` (a (len(lanes), per_lane) array,
    row-major: in seeded mode the generator's next `len(lanes) * per_lane` words).  In XORWOW
    mode every lane is set (`unset_lane` is None)."""
    x = xorwow(engine)
    if x is not None:
        return _xorwow_draw(x, lanes, per_lane)
    return generator(engine).integers(0, 2**32, size=len(lanes) * per_lane,
                                      dtype=np.uint32).reshape(len(lanes), per_lane)


def uniform(engine: str, lanes: np.ndarray, per_lane: int) -> np.ndarray:
    """float32 values uniform in [0, 1), shaped as `bits32`'s words."""
    x = xorwow(engine)
    if x is not None:
        return (_xorwow_draw(x, lanes, per_lane) >> np.uint32(8)).astype(np.float32) * \
            np.float32(2.0 ** -24)
    return generator(engine).random(len(lanes) * per_lane,
                                    dtype=np.float32).reshape(len(lanes), per_lane)
