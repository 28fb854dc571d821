"""The legacy NKI index API (`neuronxcc.nki`): `nl.arange` and `nl.mgrid` index grids, whose
affine expressions index tensors and make masks (`apdsl.tensor.index_grid`), and `nl.par_dim`,
which marks the partition dimension of a shape.  The current NKI reference removed them; the
public kernels written before it use them, so they run as what they are: access patterns."""

from __future__ import annotations

from ..tensor.index_grid import MGRID, arange


class ParDim(int):
    """`nl.par_dim(n)`: the size of a shape's partition dimension.  First in a shape it is
    just that size; dimensions before it are the legacy *block* dimensions."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


class Constants:
    """`nl.fp32` / `nl.bfp16`: a dtype's constants (`.min`, the most negative finite value,
    what the legacy kernels pass as the "minus infinity" of a masked max)."""

    __slots__ = ("_dtype",)

    def __init__(self, name: str) -> None:
        self._dtype = name

    @property
    def min(self) -> float:
        from ..tensor.dtypes import dtype
        return float(dtype(self._dtype).min)

    @property
    def max(self) -> float:
        from ..tensor.dtypes import dtype
        return float(dtype(self._dtype).max)

    def __repr__(self) -> str:
        return f"nl.{'fp32' if self._dtype == 'float32' else 'bfp16'}"


LEGACY = {"arange": arange, "mgrid": MGRID, "par_dim": ParDim,
          "fp32": Constants("float32"), "bfp16": Constants("bfloat16")}
