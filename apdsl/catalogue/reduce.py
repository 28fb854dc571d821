"""APK370-APK389, APK475-APK484: the reduce group of the NKI instruction set (SPEC section 11):
activations, reductions, statistics and random numbers."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK370", "operands differ in partitions", """
The reduce-group instructions (`bn_stats`, `bn_aggr`, `max8`, `nc_find_index8`,
`nc_match_replace8`, `dropout`, `activation`, `tensor_reduce`, ...) work partition by
partition: every operand, including a `[partitions, 1]` operand such as `prob`, `scale`, `bias`
or `reduce_res`, covers the same number of partitions as the data.
""", """
a: f32[128, 64] @ sbuf = 2.0
s: f32[64, 6] @ sbuf
bn_stats(s, a)
"""),
    entry("APK371", "destination does not have the instruction's output size", """
Each of these instructions writes a fixed number of elements a partition, named in its
docstring: `bn_stats` 6 statistics, `bn_aggr` a mean and a variance, `max8` and
`nc_find_index8` 8 values in a 2-D `[partitions, 8]` tile, `nc_match_replace8` and `dropout`
the data's size, a `reduce_res` or per-partition operand 1, `tensor_reduce` what its `axis`
and `keepdims` leave. Give the destination that size.
""", """
a: f32[128, 64] @ sbuf = 2.0
s: f32[128, 4] @ sbuf
bn_stats(s, a)
"""),
    entry("APK372", "input size outside the instruction's range", """
The NKI docs bound what some instructions read a partition: `bn_stats` at most 512 elements
(`nl.tile_size.bn_stats_fmax`; split wider data into 512-element tiles, write each tile's 6
statistics side by side and aggregate them with one `bn_aggr`), `bn_aggr` a multiple of 3
(whole `(count, mean, variance * count)` triples), `max8`, `nc_find_index8` and
`nc_match_replace8` between 8 and 16384 elements in a tile of at most 3 dimensions, and
exactly 8 `vals` a partition.
""", """
a: f32[128, 1024] @ sbuf = 1.0
s: f32[128, 6] @ sbuf
bn_stats(s, a)
"""),
    entry("APK377", "nc_match_replace8: a value that matches nothing, with dst_idx", """
`nc_match_replace8` replaces the first occurrence of each of its 8 `vals` (equal vals take
distinct occurrences). The docs do not say what `dst_idx` holds for a value that matches no
element left in the partition, so with `dst_idx` given apdsl refuses it and names the value,
rather than invent an index. Without `dst_idx`, an unmatched value replaces nothing. Pass the
values the data holds (`max8`'s output is the usual source).
""", """
a: f32[4, 16] @ sbuf = 1.0
v: f32[4, 8] @ sbuf = 2.0
o: f32[4, 16] @ sbuf
i: u32[4, 8] @ sbuf
nc_match_replace8(o, a, v, 0.0, dst_idx=i)
"""),
    entry("APK379", "dropout's dtypes", """
`dropout`'s destination has the data's dtype (the docs: "the output data type must match the
input data type"); convert afterwards with `tensor_copy` if needed. A `[partitions, 1]`
probability tile is a float, and float32 when the data are integers. The docs say nothing of
probabilities outside [0, 1], so apdsl does not check them: below 0 drops nothing, above 1
everything.
""", """
a: f32[4, 16] @ sbuf = 1.0
o: bf16[4, 16] @ sbuf
dropout(o, a, 0.5)
"""),
    entry("APK380", "random numbers on a target or engine that lacks them", """
`rand2` exists on NeuronCore-v4 (trn3) only and needs `min < max` (checked for each partition
when they are tiles). `rng` runs on the Vector Engine on trn1 and on the Vector or GpSimd Engine
from trn2 on (GpSimd writes SBUF only). apdsl's random numbers come from a seeded NumPy
generator per engine (`Generator(PCG64(seed))`, seed 0 until `set_rng_seed`), deterministic
but not hardware's bits.
""", """
set_target("trn2")
r: f32[4, 16] @ sbuf
rand2(r, 0.0, 1.0)
"""),
    entry("APK381", "set_rng_seed takes a [1, 1] tile", """
`set_rng_seed(src_seeds)` seeds the Vector Engine's generator from one 32-bit value: a `[1, 1]`
tile in SBUF or PSUM (int32, uint32, or float32 taken by its bits). Slice one element of a
larger tile.
""", """
s: i32[4, 4] @ sbuf = 7
set_rng_seed(s)
"""),
]
