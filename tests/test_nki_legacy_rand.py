"""`nl.rand(shape)` without a dtype draws float32, as the legacy reference's
`rand(shape, dtype=np.float32)` says (the SDK's max8 and find_index8 examples call it so)."""

from __future__ import annotations

import numpy as np

import apdsl.nki as nki
import apdsl.nki.language as nl


@nki.jit
def draws(a):
    out = nl.ndarray((32, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.rand((32, 128))
    nl.store(out, r)
    return out


def test_rand_without_dtype_is_float32_in_unit_interval() -> None:
    got = draws(np.zeros((1, 1), np.float32))
    assert got.dtype == np.float32 and got.shape == (32, 128)
    assert (got >= 0).all() and (got < 1).all()
    assert len(np.unique(got)) > 32 * 128 // 2  # random, not a constant fill
