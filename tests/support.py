"""Programs and helpers shared by several test files."""

from __future__ import annotations

from apdsl.errors import ApdslError

# The program of SPEC section 3.
SPEC_EXAMPLE = """\
t: f32[128, 64] @ sbuf                  # declaration: allocates a tensor
u = t.slice(1, 8, 24)                   # a view: no data moves
assert u.get_pattern() == [[64, 128], [1, 16]]
assert u.offset == 8

kernel gather_rows(A: f32[128, 512] @ hbm) -> f32[64, 512] @ shared_hbm:
    offsets = ndarray((64, 1), int32, sbuf)
    iota(offsets, [[1, 1]], 0, 2)       # offsets[p] = 2 * p
    result = ndarray((64, 512), f32, shared_hbm)
    dma_copy(dst=result, src=A.vector_select(0, offsets))
    assert allclose(host(result), host(A)[0:128:2])
    return result
"""

# NKI documentation code (seed 000), as it pastes in.
NKI_EXAMPLE = """\
def gather_rows(A):
    offsets = nl.ndarray((64, 1), nl.int32, nl.sbuf)
    nisa.iota(offsets, [[1, 1]], 0, 2)        # e.g. rows 0, 2, 4, ...
    src = A.vector_select(0, offsets)
    result = nl.ndarray((64, 512), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(src=src, dst=result[...])
    return result
"""


class raises_code:  # noqa: N801 - used like pytest.raises
    """`with raises_code("APK523") as err:` -- an ApdslError with exactly that code."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __enter__(self) -> raises_code:
        return self

    def __exit__(self, tp, value, tb) -> bool:
        assert tp is not None, f"expected {self.code}, nothing was raised"
        assert issubclass(tp, ApdslError), f"expected {self.code}, got {tp.__name__}: {value}"
        assert value.code == self.code, f"expected {self.code}, got {value.code}: {value}"
        self.value = value
        return True

# Examples that show an error on purpose: file name -> the code `run` and `check` must report.
EXPECTED_TO_FAIL = {"ascend_race.apk": "APK570"}


def lower_header(lines: list[str], head: str) -> int:
    """The index of an instruction's line in `apdsl lower`'s table: `head`, then (after two
    spaces) its non-tensor operands and hints, if any."""
    return next(i for i, ln in enumerate(lines) if ln == head or ln.startswith(head + "  "))


def error_code(fn) -> str | None:
    """The code of the ApdslError `fn()` raises (None when it raises none)."""
    try:
        fn()
    except ApdslError as e:
        return e.code
    return None
