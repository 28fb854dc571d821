"""Every element-wise asc. instruction of the table, its two forms against each other: the
mask form with a full mask, default strides and R repeats equals the count form over R repeats
of elements, and a count mask of n lanes in one repeat equals the count form over n."""

from __future__ import annotations

import numpy as np
import pytest

import apdsl
from apdsl.runtime.ascend.vector.params import BinaryRepeatParams, UnaryRepeatParams
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.table import TABLE, implementation

ELEMENTWISE = sorted(n for n, e in TABLE.items()
                     if e.module.endswith("vector.ops") and n.startswith("asc."))


def test_the_list_is_the_table_s():
    assert len(ELEMENTWISE) == 25 and "asc.add" in ELEMENTWISE and "asc.axpy" in ELEMENTWISE


def ub(values):
    t = apdsl.ndarray(values.shape, str(values.dtype), "ub")
    write_view(t, values)
    return t


def call(name, dst, ins, form):
    fn = implementation(name)
    roles = [o.role for o in TABLE[name].operands]
    scalar = () if len(roles) == 3 or name in ("asc.exp", "asc.ln", "asc.abs", "asc.sqrt",
                                                "asc.rsqrt", "asc.reciprocal", "asc.relu",
                                                "asc.bitwise_not") else (2,)
    args = [dst, *ins, *scalar]
    fn(*args, *form)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_both_forms_agree(name):
    entry = TABLE[name]
    dtype = entry.operand("dst").dtypes[-1 if "float32" in entry.operand("dst").dtypes else 0]
    np_dt = apdsl.ndarray((1,), dtype, "gm").dtype.np
    lanes = 256 // np.dtype(np_dt).itemsize
    n = 3 * lanes
    rng = np.random.default_rng(1)
    if np.dtype(np_dt).kind == "f":
        data = [rng.uniform(0.5, 2, n).astype(np_dt) for _ in range(2)]
    else:
        data = [rng.integers(1, 50, n).astype(np_dt) for _ in range(2)]
    srcs = [o.role for o in entry.operands if not o.writes]
    start = rng.uniform(0.5, 2, n).astype(np_dt) if np.dtype(np_dt).kind == "f" else \
        rng.integers(1, 50, n).astype(np_dt)
    params = BinaryRepeatParams() if len(srcs) == 2 else UnaryRepeatParams()
    a, b = ub(start.copy()), ub(start.copy())
    call(name, a, [ub(d) for d in data[:len(srcs)]], (n,))
    call(name, b, [ub(d) for d in data[:len(srcs)]], (lanes, 3, params))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    part = lanes // 2 + 3
    a, b = ub(start.copy()), ub(start.copy())
    call(name, a, [ub(d) for d in data[:len(srcs)]], (part,))
    call(name, b, [ub(d) for d in data[:len(srcs)]], (part, 1, params))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
