"""The random `nl` functions (`nl.random_seed`, `nl.rand`, `nl.dropout`) and the lowered
output (APK580-APK589)."""

from . import entry

ENTRIES = [
    entry("APK580", "nl.random_seed takes a [1, 1] tensor", """
The current NKI reference defines `nl.random_seed(seed)` with `seed` "a [1,1] tensor on SBUF or
PSUM with a 32-bit seed value" (the older `neuronxcc` API took a scalar). apdsl issues
`set_rng_seed(src_seeds=seed)`, which seeds the Vector Engine's generator that `nl.rand` and
`nl.dropout` draw from (a NumPy `Generator(PCG64(seed))`: deterministic, not hardware's bits).
Put the seed in a tile first: `nl.full((1, 1), 42, dtype=nl.int32, buffer=nl.sbuf)`.
""", """
kernel k():
    nl.random_seed(42)
"""),
    entry("APK581", "nl.rand of an integer dtype", """
`nl.rand(shape, dtype)` fills a tile with values uniform between 0 and 1 (the reference's
example: in [0, 1)). An integer dtype holds none of them but 0, and the reference does not say
what it would give, so apdsl refuses it. Draw a float dtype, or random integer bits with
`nisa.rng`. (apdsl draws the top 24 of 32 random bits times 2**-24, exact in float32; a
narrower float dtype is that value cast, rounding to nearest even.)
""", """
kernel k():
    r = nl.rand((128, 64), dtype=nl.int32)
"""),
    entry("APK582", "nl.dropout rate is not a probability", """
`nl.dropout(x, rate)` zeroes each element of `x` with probability `rate` (the reference: "the
probability of zeroing each element"), a number in [0, 1] or a `(x.shape[0], 1)` tile of
per-partition probabilities. A number outside [0, 1], NaN, a bool or a non-number is refused.
Survivors keep their value: neither the language reference nor `nisa.dropout`'s describes a
rescaling by 1 / (1 - rate), so apdsl does none (scale the result yourself if you need it).
""", """
kernel k(a: f32[128, 64] @ hbm):
    y = nl.dropout(nl.load(a), 1.5)
"""),
]
