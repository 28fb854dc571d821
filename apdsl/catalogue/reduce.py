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

Where the NKI docs leave a rule or a meaning open, apdsl checks nothing and says what it does:
`bn_stats`' "even" and "odd" elements are taken by their index in the flattened free
dimensions (an empty odd half has count, mean and variance 0); `max8` and `nc_find_index8`
name no engine (apdsl places them on the Vector Engine); `nc_find_index8` gives a repeated value
with no occurrence left the not-found sentinel; lane `i` of `reduce_regs` is the `i`-th
partition an `activation` processes; `dropout` does not rescale survivors; `tensor_reduce`'s
`keepdims` changes no value when `dst` is given; the free-size limit of the architecture guide
(64K elements a partition in SBUF, 4K in PSUM) is not checked.
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
    entry("APK373", "tensor_reduce: axis is not the trailing free dimensions", """
`tensor_reduce` reduces free dimensions only, and only the last contiguous ones, ending at the
final dimension: for a `(P, D1, D2, D3)` tile `axis` is `(3,)`, `(2, 3)` or `(1, 2, 3)` (an int
or a list of ints; negative ones count from the end, as in NumPy). Axis 0, the partitions, is
never reduced: use `tensor_partition_reduce`, or transpose first.
""", """
a: f32[8, 4, 16] @ sbuf = 1.0
m: f32[8, 16] @ sbuf
tensor_reduce(m, maximum, a, axis=(1,))
"""),
    entry("APK375", "bit-vector operator rules", """
The bit-vector operators (`nl.bitwise_and`, `nl.bitwise_or`, `nl.bitwise_xor`, ...) treat
elements as bit patterns, without any conversion, so `tensor_reduce` and
`tensor_partition_reduce` with them need integer data and destination, of one width (the docs
give no conversion between bit patterns of other widths: a signed and an unsigned dtype of the
same width share the bits), and `negate` applies to arithmetic operators only.
""", """
a: f32[8, 16] @ sbuf = 1.0
m: i32[8, 1] @ sbuf
tensor_reduce(m, bitwise_or, a, axis=1)
"""),
    entry("APK376", "activation: reduce_cmd and reduce_op", """
`activation`'s `reduce_cmd` is a `nisa.reduce_cmd` member (or its name): `idle` leaves the
Scalar Engine's `reduce_regs` alone, `reset` zeroes them, `reduce` adds the free-axis sum of
the activated data, `reset_reduce` does both. `load_reduce` exists in the enum but the
`activation` docs do not describe it, so apdsl refuses it. Accumulating (`reduce`,
`reset_reduce`, and `activation_reduce`) needs `reduce_op=nl.add`, the one reduction the docs
allow.
""", """
a: f32[4, 8] @ sbuf = 1.0
o: f32[4, 8] @ sbuf
activation(o, exp, a, reduce_cmd="reduce")
"""),
    entry("APK378", "activation: a number as bias on trn1", """
On NeuronCore-v2 (trn1) `activation`'s `bias` is a `[partitions, 1]` vector; a compile-time
number is allowed from NeuronCore-v3 (trn2) on. Memset a `[partitions, 1]` tile to the value
and pass it instead. (`scale` may be a number on every target; as a tile it is float32.)
""", """
set_target("trn1")
a: f32[4, 8] @ sbuf = 1.0
o: f32[4, 8] @ sbuf
activation(o, exp, a, bias=0.5)
"""),
    entry("APK384", "activate2's arguments", """
`nisa.activate2` (NeuronCore-v4: `--target trn3` only) computes `op((data op0 imm0) op1 imm1)`
on the Scalar Engine. Its tensor-scalar stage takes the six `(op0, op1)` pairs its docs list:
`(nl.multiply, nl.add)`, `(nl.multiply, nl.subtract)`, `(nl.multiply, nl.bypass)`,
`(nl.add, nl.bypass)`, `(nl.subtract, nl.bypass)` and `(nl.bypass, nl.bypass)`; `reverse0`
and `reverse1` need their operator set (not `nl.bypass`); `imm0` and `imm1` given as tiles
have one dtype. Its reduction (`reduce_op`: `nl.add`, `nl.maximum`, `nl.minimum`,
`nl.abs_max`, `nl.abs_min`) shares the `reduce_regs` of `activation`, a reset setting the
identity of `reduce_op`.
""", """
set_target("trn3")
a: f32[4, 8] @ sbuf = 1.0
o: f32[4, 8] @ sbuf
activate2(o, exp, a, 2.0, 1.0, add, add)
"""),
    entry("APK382", "reduce_regs used before a reset", """
The Scalar Engine's `reduce_regs` (one register per lane, kept across `activation`
instructions on the device) hold whatever ran before until an `activation` with
`reduce_cmd=reset` or `reset_reduce` sets them. Accumulating into (`reduce_cmd=reduce`) or
reading out (`reduce_res=`) a lane no reset set is almost always a missing reset, so apdsl
stops, as it does for unwritten memory (APK404); with `--no-init-check` unset lanes read as 0.
Each program run starts on a fresh device. `apdsl check` does not track the registers.
""", """
a: f32[4, 8] @ sbuf = 1.0
o: f32[4, 8] @ sbuf
r: f32[4, 1] @ sbuf
activation(o, exp, a, reduce_op=add, reduce_cmd="reduce", reduce_res=r)
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
from trn2 on (GpSimd writes SBUF only). `rand_set_state` and `rand_get_state` exist from
NeuronCore-v3 (trn2) on: on trn2 on the GpSimd Engine only, on trn3 on GpSimd or the Vector
Engine. apdsl's random numbers come from a seeded NumPy generator per engine
(`Generator(PCG64(seed))`, seed 0 until `set_rng_seed`), or, after `rand_set_state`, from the
engine's per-lane XORWOW states (APK386): deterministic but not hardware's bits.
""", """
set_target("trn2")
r: f32[4, 16] @ sbuf
rand2(r, 0.0, 1.0)
"""),
    entry("APK385", "rand_set_state / rand_get_state: the state tile's shape", """
`rand_set_state(src_seeds, engine)` and `rand_get_state(dst, engine)` move the XORWOW states of
the engine's compute lanes through a 2-D uint32 tile: partition p is lane p, and the free
dimension holds that lane's words, 6 on the GpSimd Engine (the default) and 24 on the Vector
Engine (trn3: four states a lane). Give the tile that shape, e.g. `(128, 6)` for all GpSimd
lanes. `src_seeds` is in SBUF; `dst` in SBUF, or in PSUM on trn3 with the Vector Engine
(GpSimd cannot access PSUM: APK348). Both exist from NeuronCore-v3 (trn2) on, on GpSimd only
on trn2 (APK380).
""", """
s: u32[4, 8] @ sbuf = 1
rand_set_state(s)
"""),
    entry("APK386", "a PRNG lane no rand_set_state set", """
After `rand_set_state` on an engine, apdsl draws that engine's random numbers (`rng`, and on
the Vector Engine `dropout` and `rand2`) from one XORWOW generator per compute lane, lane p
serving physical partition p, and `rand_get_state` stores those lanes' words. A lane the
instruction needs that no `rand_set_state` on that engine set holds a state the docs do not
describe, so apdsl stops and names the lane and the engine rather than invent numbers. Set
every lane first (a seeds tile covering the partitions you draw into). `set_rng_seed` returns
the Vector Engine to its seeded generator (`Generator(PCG64(seed))`), where no lane needs
setting.

What apdsl guarantees is what programs rely on: `rand_get_state` after `rand_set_state` gives
back the words set, and setting a saved state repeats the draws that followed it. It does not
reproduce hardware's bits: the word order of a state (`x, y, z, w, v, d`, cuRAND's XORWOW with
its Weyl counter d), element i of a Vector lane drawing from its state i % 4, and floats made
as `(word >> 8) * 2**-24` are apdsl's choices, the docs being silent on them.
""", """
s: u32[2, 6] @ sbuf = 1
rand_set_state(s)
r: u32[4, 8] @ sbuf
rng(r, engine="gpsimd")
"""),
    entry("APK381", "set_rng_seed takes a [1, 1] tile", """
`set_rng_seed(src_seeds)` seeds the Vector Engine's generator from one 32-bit value: a `[1, 1]`
tile in SBUF or PSUM (int32, uint32, or float32 taken by its bits). Slice one element of a
larger tile.
""", """
s: i32[4, 4] @ sbuf = 7
set_rng_seed(s)
"""),
    entry("APK383", "Tensor Indirection where the instruction takes none", """
On trn3 a compute operand may be a Tensor Indirection view (`t.indirect(index)`) only where the
instruction's docs say so: `activation`/`activation_reduce` (`dst` and `data`, not `scale`,
`bias` or `reduce_res`; and a scattered `dst` of the Scalar Engine is in SBUF, not PSUM) and
`tensor_reduce` (`dst` and `data`). The other reduce-group instructions (`bn_stats`, `max8`,
`dropout`, ...) list no indirection: gather into a plain tile first with `tensor_copy`.
""", """
set_target("trn3")
t: f32[32, 40] @ sbuf = 1.0
idx: i32[32, 2] @ sbuf = 3
m: f32[32, 8] @ sbuf
max8(m, t.indirect(idx, num_elem=32))
"""),
]
