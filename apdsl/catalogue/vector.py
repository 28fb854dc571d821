"""Catalogue entries: the AscendC vector unit on UB and DataCopy/DataCopyPad (APK550-APK569)."""

from __future__ import annotations

from . import entry

ENTRIES = [
    entry("APK550", "vector instruction argument out of its documented range",
          """
A vector instruction's addressing arguments are checked against the ranges the AscendC docs
give: `count` >= 0; the mask form's `repeat_times` in [0, 255], a count mask of at most the
lanes of one 256-byte repeat (128 for 16-bit data, 64 for 32-bit), a bit mask `[low, high]`
with at least one lane set (and `high` 0 for 32-bit data, which has 64 lanes), block and repeat
strides that are non-negative (the dst block stride at least 1: 0 is undefined), the parameter
object of the right kind (`asc.BinaryRepeatParams` for two-input instructions,
`asc.UnaryRepeatParams` for one-input and scalar ones), a shift of 0 to the dtype's bits, and
the DataCopy/DataCopyPad burst fields.  `is_set_mask=False` (a mask set by SetVectorMask) is
not modelled.
""",
          """
kernel k(X: f32[64] @ gm):
    x = ndarray((64,), f32, ub)
    asc.data_copy(x, X, 64)
    set_flag("MTE2_V", 0)
    wait_flag("MTE2_V", 0)
    asc.adds(x, x, 1.0, 65, 1, asc.UnaryRepeatParams())   # 65 lanes: float32 has 64
"""),
    entry("APK551", "vector operand is not contiguous",
          """
An AscendC LocalTensor is a start address and a length, so a vector instruction's operand is a
view whose elements are consecutive in its storage (a row, a range of rows, the whole tensor).
A strided view (a column, every other element) cannot be an operand: address such elements
with the mask form's block and repeat strides instead.
""",
          """
kernel k(X: f32[8, 64] @ gm):
    x = ndarray((8, 64), f32, ub)
    asc.data_copy(x, X, 512)
    set_flag("MTE2_V", 0)
    wait_flag("MTE2_V", 0)
    asc.exp(x[:, 0:8], x[:, 0:8], 64)
"""),
    entry("APK552", "vector instruction touches elements past its operand",
          """
An instruction may touch an operand's elements from its start up to its size: the count form
its first `count` elements, the mask form the elements its repeats, lanes and strides address
(`r * rep_stride * B + (k // B) * blk_stride * B + k % B` for lane k of repeat r, B elements a
32-byte block).  An element past the end would be another tensor's data on hardware.  Declare
the operand large enough, or lower the count, repeat_times or strides.
""",
          """
kernel k(X: f32[64] @ gm):
    x = ndarray((64,), f32, ub)
    asc.data_copy(x, X, 64)
    set_flag("MTE2_V", 0)
    wait_flag("MTE2_V", 0)
    asc.exp(x, x, 128)
"""),
    entry("APK553", "vector operands overlap in a way AscendC does not support",
          """
The AscendC overlap rule: within a repeat a source and the destination overlap completely or
not at all, and no repeat may read what an earlier repeat of the same instruction wrote.  apdsl
accepts a source that is the destination's elements lane for lane (in place) and refuses any
other overlap, and a destination that one instruction writes twice (a dst repeat stride of 0
with several repeats).
""",
          """
kernel k(X: f32[128] @ gm):
    x = ndarray((128,), f32, ub)
    asc.data_copy(x, X, 128)
    set_flag("MTE2_V", 0)
    wait_flag("MTE2_V", 0)
    asc.adds(x[8:72], x[0:64], 1.0, 64)
"""),
    entry("APK554", "integer vector result out of range",
          """
Integer vector arithmetic (int16, int32) is computed exactly.  When a result does not fit the
destination dtype the AscendC docs do not say whether the vector unit wraps or saturates, so
apdsl stops rather than guess: keep the values in range, or compute in a wider dtype.
""",
          """
kernel k(X: i16[16] @ gm):
    x = ndarray((16,), i16, ub)
    asc.data_copy(x, X, 16)
    set_flag("MTE2_V", 0)
    wait_flag("MTE2_V", 0)
    asc.adds(x, x, 32767, 16)
"""),
    entry("APK555", "vector input outside the function's domain",
          """
Ln, Sqrt, Rsqrt, Reciprocal and Div are defined for inputs in their domain (ln: x > 0, sqrt:
x >= 0, rsqrt: x > 0, reciprocal and a divisor: x != 0).  The AscendC docs give no result
outside it, so apdsl reports the first such input rather than guess one.
""",
          """
kernel k():
    x = ndarray((64,), f32, ub)
    asc.duplicate(x, -1.0, 64)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.ln(x, x, 64)
"""),
    entry("APK556", "vector operand dtypes do not match",
          """
Most vector instructions compute in one dtype: dst and every source must share it.  The
instructions with mixed dtypes accept only the combinations their Atlas A2 docs list (axpy and
mul_add_dst: half inputs into a float dst; cast: its table of conversions).  Cast the operands
to a listed combination first.
""",
          """
kernel k():
    x = ndarray((64,), f16, ub)
    y = ndarray((64,), f32, ub)
    asc.duplicate(x, 1.0, 64)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.add(y, x, x, 64)
"""),
    entry("APK557", "data_copy of a partial 32-byte block",
          """
DataCopy between GM and UB moves whole 32-byte blocks: with a count whose bytes are not a
multiple of 32, hardware rounds the transfer down and silently drops the tail -- a classic bug.
apdsl reports it instead (a deliberate difference from hardware).  Copy a multiple of 32 bytes,
or use `asc.data_copy_pad`, which moves any number of bytes and pads the UB side to 32 bytes.
""",
          """
kernel k(X: f32[10] @ gm):
    x = ndarray((16,), f32, ub)
    asc.data_copy(x, X, 10)
"""),
    entry("APK558", "cast round mode not available for this conversion",
          """
`asc.cast` takes, for each pair of dtypes, the round modes its Atlas A2 table lists
(CAST_NONE: exact where no precision is lost, else to nearest even; CAST_RINT, CAST_FLOOR,
CAST_CEIL, CAST_ROUND (half away from zero), CAST_TRUNC, CAST_ODD (to odd, float to half)).
A mode the table does not list for the pair is refused, as is a NaN (the page gives no
integer for it) or, in a directed mode, a value beyond the target's largest finite value.
""",
          """
kernel k():
    x = ndarray((64,), f16, ub)
    y = ndarray((64,), f32, ub)
    asc.duplicate(x, 1.5, 64)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.cast(y, x, asc.RoundMode.CAST_FLOOR, 64)   # half -> float takes CAST_NONE only
"""),
    entry("APK559", "compare whose elements do not fill whole repeats",
          """
`asc.compare` in the count form works on whole 256-byte repeats: the AscendC page says the
elements of a partial repeat are silently left out, which apdsl reports instead (pad the
operands to a multiple of 64 floats or 128 halves).  In the mask form the page does not say
where the result bits of a second repeat go, so apdsl runs one repeat only.
""",
          """
kernel k():
    x = ndarray((64,), f32, ub)
    bits = ndarray((32,), u8, ub)
    asc.duplicate(x, 1.0, 64)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.compare(bits, x, x, asc.CMPMODE.LT, 60)
"""),
    entry("APK560", "a form of the instruction apdsl does not model",
          """
Some forms of an AscendC instruction are described by their page only in figures that leave
the layout open: TransDataTo5HD for 8-bit data (half blocks chosen by dst_high_half and
src_high_half) and for 32-bit data (pairs of blocks).  apdsl models the 16-bit form, the one
the page's NCHW -> NC1HWC0 sample uses, and refuses the others rather than guess a layout.
""",
          """
kernel k():
    f = ndarray((512,), f32, ub)
    asc.duplicate(f, 1.0, 512)
    asc.pipe_barrier(asc.PipeID.PIPE_V)
    asc.trans_data_to_5hd([f[j * 8:] for j in range(16)], [f[256 + i * 8:] for i in range(16)],
                          asc.TransDataTo5HDParams())
"""),
]
