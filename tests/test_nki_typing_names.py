"""`nki.typing.mutable_tensor` (the NKI library's annotation of arguments a kernel writes) is an
annotation like `tensor`; any other missing `nki.typing` name is a located APK144, never a bare
AttributeError from apdsl."""

import numpy as np
import pytest

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError


def test_mutable_tensor_annotates_and_changes_nothing():
    nt = nki.typing

    @nki.jit
    def negate_into(x: nt.tensor, out: nt.mutable_tensor):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
        nisa.dma_copy(dst=out, src=t)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros_like(x)
    negate_into(x, out)
    np.testing.assert_array_equal(out, -x)
    assert repr(nt.mutable_tensor[2, 3]) == "tensor[2, 3]"


def test_other_names_are_located():
    with pytest.raises(ApdslError) as e:
        nki.typing.shared_tensor  # noqa: B018
    assert e.value.code == "APK144" and "mutable_tensor" in e.value.notes[0]
