"""pyasc's scalar bit functions (AscendC's ScalarGetSFFValue, ScalarGetCountOfValue,
ScalarCountLeadingZero, CountBitsCntSameAsSignBit): pure functions of a 64-bit integer on the
scalar unit, as pyasc's docstrings define them.  The first three read their argument as a
uint64_t (pyasc converts it so: a negative int is its two's complement), the last as an
int64_t."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError
from ..nki.locate import caller_span

BITS = 64
MASK = (1 << BITS) - 1


def _bad(what: str, help: str) -> ApdslTypeError:  # noqa: A002 - the diagnostic's field
    return ApdslTypeError(what, code="APK666", help=help).replace(span=caller_span(3))


def _word(name: str, value: Any, signed: bool) -> int:
    """`value` as the 64-bit word the function reads (two's complement)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _bad(f"asc.{name}({value!r}): takes an int", "pass an int")
    v = int(value.__index__())
    lo, hi = (-(1 << 63), (1 << 63) - 1) if signed else (-(1 << 63), MASK)
    if not lo <= v <= hi:
        kind = "int64_t" if signed else "uint64_t"
        raise _bad(f"asc.{name}({v:#x}): the value does not fit a {kind}",
                   f"pass a value in [{lo}, {hi}]")
    return v & MASK


def _bit(name: str, count_value: Any) -> int:
    if isinstance(count_value, bool) or count_value not in (0, 1):
        raise _bad(f"asc.{name}: count_value is {count_value!r}; it is 0 or 1",
                   "count_value 1 looks for ones, 0 for zeros")
    return int(count_value)


def scalar_get_sff_value(value_in: Any, count_value: Any) -> int:
    """The position (from the least significant bit, 0) of the first bit of `value_in` equal
    to `count_value`, or -1 when no bit is.

    >>> scalar_get_sff_value(28, 1), scalar_get_sff_value(28, 0), scalar_get_sff_value(0, 1)
    (2, 0, -1)
    """
    v = _word("scalar_get_sff_value", value_in, False)
    if not _bit("scalar_get_sff_value", count_value):
        v = ~v & MASK
    return (v & -v).bit_length() - 1 if v else -1


def scalar_get_count_of_value(value_in: Any, count_value: Any) -> int:
    """How many of the 64 bits of `value_in` are `count_value`.

    >>> scalar_get_count_of_value(0xffff, 1), scalar_get_count_of_value(16, 0)
    (16, 63)
    """
    ones = bin(_word("scalar_get_count_of_value", value_in, False)).count("1")
    return ones if _bit("scalar_get_count_of_value", count_value) else BITS - ones


def scalar_count_leading_zero(value_in: Any) -> int:
    """The zero bits of `value_in` above its highest one (64 for 0).

    >>> scalar_count_leading_zero(0x0fffffffffffffff), scalar_count_leading_zero(0)
    (4, 64)
    """
    return BITS - _word("scalar_count_leading_zero", value_in, False).bit_length()


def count_bits_cnt_same_as_sign_bit(value_in: Any) -> int:
    """The run of bits equal to the sign bit, from the highest value bit (bit 62) down; -1 for
    0 and -1, whose bits all are.

    >>> count_bits_cnt_same_as_sign_bit(0x0f00000000000000), count_bits_cnt_same_as_sign_bit(-1)
    (3, -1)
    """
    v = _word("count_bits_cnt_same_as_sign_bit", value_in, True)
    if v >> (BITS - 1):  # negative: count the ones below the sign bit as zeros
        v = ~v & MASK
    if not v:
        return -1
    return BITS - 1 - v.bit_length()


FUNCTIONS = {f.__name__: f for f in (scalar_get_sff_value, scalar_get_count_of_value,
                                     scalar_count_leading_zero,
                                     count_bits_cnt_same_as_sign_bit)}
