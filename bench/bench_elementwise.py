"""The element-wise row of SPEC section 10: `tensor_tensor` on a (128, 512) float32 tile.

    python bench/bench_elementwise.py [--repeats N] [--attempts N] [-k TEXT]

`nisa.tensor_tensor(c, a, b, op=nl.add)` through the Python API, every check on (operands,
engine, init check, trace record), vs the NumPy expression a user would write,
`np.add(a, b, out=c)`: <= 3x.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Side, main  # noqa: E402

from apdsl.runtime.nki.elementwise import tensor_tensor  # noqa: E402
from apdsl.runtime.table.operators import OPERATORS  # noqa: E402
from apdsl.tensor.machine import current  # noqa: E402
from apdsl.tensor.view import from_numpy, ndarray  # noqa: E402

P, F = 128, 512


def _tensor_tensor() -> tuple[Side, Side]:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((P, F), dtype=np.float32) for _ in range(2))
    c = np.empty((P, F), np.float32)
    A, B = from_numpy(a, "sbuf"), from_numpy(b, "sbuf")
    C = ndarray((P, F), "float32", "sbuf")
    add = OPERATORS["add"]

    def ours() -> None:
        tensor_tensor(C, A, B, add)

    def numpy() -> None:
        np.add(a, b, out=c)

    ours()
    numpy()
    assert np.array_equal(C.numpy(), c), "tensor_tensor add"
    return ours, numpy


def cases(args: object = None) -> list[Case]:
    assert current().options.init_check, "the target is measured with init checking on"
    return [Case("element-wise tensor_tensor (128, 512) f32 add", "np.add(a, b, out=c)", 3.0,
                 _tensor_tensor)]


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0]))
