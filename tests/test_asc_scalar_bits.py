"""pyasc's scalar bit functions (`asc.scalar_get_sff_value`, `asc.scalar_get_count_of_value`,
`asc.scalar_count_leading_zero`, `asc.count_bits_cnt_same_as_sign_bit`) against a brute-force
walk over the 64 bits of the word, the examples of pyasc's docstrings, and inside a kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.asc as asc


def bits_of(v: int) -> list[int]:
    """The 64 bits of v's two's complement, bit 0 first (NumPy's view of the word)."""
    word = np.array([v], dtype=np.int64 if v < 0 else np.uint64).view(np.uint8)
    return [int(b) for b in np.unpackbits(word, bitorder="little")]


words = st.integers(-(2**63), 2**64 - 1)


@settings(max_examples=120, deadline=None)
@given(words, st.sampled_from([0, 1]))
def test_first_and_count_of_a_bit_value_against_a_walk_over_the_bits(v, c):
    bits = bits_of(v)
    assert asc.scalar_get_sff_value(v, c) == (bits.index(c) if c in bits else -1)
    assert asc.scalar_get_count_of_value(v, c) == bits.count(c)


@settings(max_examples=120, deadline=None)
@given(words)
def test_leading_zeros_against_a_walk_over_the_bits(v):
    bits = bits_of(v)[::-1]  # highest first
    assert asc.scalar_count_leading_zero(v) == (bits.index(1) if 1 in bits else 64)


@settings(max_examples=120, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_bits_like_the_sign_bit_against_a_walk_over_the_bits(v):
    bits = bits_of(v)[::-1]
    sign, rest = bits[0], bits[1:]
    want = -1 if all(b == sign for b in rest) else rest.index(1 - sign)
    assert asc.count_bits_cnt_same_as_sign_bit(v) == want


def test_the_examples_of_pyascs_docstrings():
    assert asc.scalar_get_count_of_value(0xFFFF, 1) == 16
    assert asc.scalar_count_leading_zero(0x0FFFFFFFFFFFFFFF) == 4
    assert asc.count_bits_cnt_same_as_sign_bit(0x0F00000000000000) == 3
    assert asc.count_bits_cnt_same_as_sign_bit(0) == -1
    assert asc.count_bits_cnt_same_as_sign_bit(-1) == -1


def test_in_a_kernel_the_results_are_scalars_it_computes_with():
    @asc.jit
    def k(z: asc.GlobalAddress):
        zg = asc.GlobalTensor()
        zg.set_global_buffer(z, 8)
        zg.set_value(0, asc.scalar_get_sff_value(28, 1))
        zg.set_value(1, asc.scalar_count_leading_zero(1 << 40))
        zg.set_value(2, asc.scalar_get_count_of_value(-1, 1))

    z = np.zeros(8, np.int32)
    k[1, None](z)
    assert z[:3].tolist() == [2, 23, 64]


@pytest.mark.parametrize("call", [
    lambda: asc.scalar_get_sff_value(28, 2),
    lambda: asc.scalar_get_count_of_value(1.5, 1),
    lambda: asc.scalar_count_leading_zero(2**64),
    lambda: asc.count_bits_cnt_same_as_sign_bit(2**63),
])
def test_values_the_functions_do_not_take_are_apk666(call):
    with pytest.raises(apdsl.ApdslError) as e:
        call()
    assert e.value.code == "APK666"
