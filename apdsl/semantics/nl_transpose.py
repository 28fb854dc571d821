"""`nl.transpose(x, dtype=None)` of the NKI language reference, built on `nisa.nc_transpose` so
`apdsl lower` shows what it issues.

The reference (aws-neuron-sdk `nki/api/nki/language/__init__.py`): "Transposes a 2D tile
between its partition and free dimension"; `x` a 2D input tile; `dtype` the type to cast the
output to, else x's; it returns "a tile that has the values of the input tile with its
partition and free dimensions swapped".  Its example names the result `result_psum` and
copies it to SBUF with `nisa.tensor_copy`: the result tile is in PSUM.  It names no engine;
`nisa.nc_transpose` is the instruction that transposes a tile on chip into PSUM (the Tensor
Engine, SBUF -> PSUM up to [128, 128]; the Vector Engine, up to [32, 32]), and without an
`engine=` the compiler chooses by shape, as `nc_transpose` does here.  nc_transpose keeps the
dtype, so a `dtype` other than x's is a `tensor_copy` of the transposed tile into a new PSUM
tile of that dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError, TargetError
from ..tensor import targets
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """`nl.transpose` bound to one program: `interp` allocates the result tile, `table` holds
    the program's instruction builtins it issues."""

    def transpose(x: Any, dtype: Any = None) -> Tensor:
        """`nl.transpose(x, dtype=None)`: a new PSUM tile holding x with its partition and free
        dimensions swapped (nc_transpose; then tensor_copy when `dtype` differs)."""
        if type(x) is not Tensor:
            raise ApdslTypeError(f"nl.transpose: x must be a tile, not {type(x).__name__}",
                                 code="APK167", param=("x", 0),
                                 help="pass a 2-D SBUF or PSUM tile")
        if len(x.shape) != 2:
            raise ApdslTypeError(
                f"nl.transpose: x {x.name} has shape {tuple(x.shape)}; it transposes a 2-D "
                "tile (partition dimension and one free dimension)", code="APK167",
                param=("x", 0), notes=[f"x: shape {tuple(x.shape)} @ {x.buffer}"],
                help="reshape or slice it to 2-D first, or use nisa.nc_transpose, which "
                     "flattens the free dimensions")
        if not targets.is_onchip(x.buffer) or targets.family(x.buffer) != "nki":
            raise TargetError(
                f"nl.transpose: x {x.name} is in {x.buffer}; it transposes an on-chip tile",
                code="APK168", param=("x", 0), buffer=x.buffer,
                notes=[f"x: shape {tuple(x.shape)} @ {x.buffer}"],
                help="nl.load it into SBUF first (or transpose while loading with "
                     "nisa.dma_transpose)")
        p, f = x.shape
        from .tile_size import TILE_SIZE
        if f > TILE_SIZE.pmax:  # (the result's partitions; the Tensor Engine's limit too)
            raise TargetError(
                f"nl.transpose: x {x.name} is [{p}, {f}], so its transpose has {f} partitions; "
                f"a tile has at most {TILE_SIZE.pmax}", code="APK169", param=("x", 0),
                notes=["nc_transpose (NKI docs): Tensor Engine up to [128, 128] SBUF -> PSUM, "
                       "Vector Engine up to [32, 32]"],
                help=f"transpose it in blocks of at most {TILE_SIZE.pmax} free elements, "
                     f"x[:, j:j + {TILE_SIZE.pmax}]")
        span = interp.call_span
        out = interp.allocate((f, p), x.dtype, "psum", "ND", "", span=span)
        table["nc_transpose"](dst=out, data=x)
        want = x.dtype if dtype is None else to_dtype(dtype)
        if want == x.dtype:
            return out
        cast = interp.allocate((f, p), want, "psum", "ND", "", span=span)
        table["tensor_copy"](dst=cast, src=out)
        return cast

    return {"transpose": transpose}


NAMES = ("transpose",)
