"""The high-level `nl` functions of the NKI language reference (SPEC section 11): each
allocates its result tile where the docs say (SBUF; PSUM for `nl.matmul` and `nl.transpose`)
and issues the instruction of the table that computes it, through the program's own
instruction builtins, so `apdsl lower` shows what ran and check mode checks it.

Which instruction each function issues is documented only for a few (`nl.load`/`nl.store`
are `dma_copy`; `nl.matmul` is a Tensor Engine matmul into PSUM); for the rest apdsl uses the
instruction whose NumPy meaning is the function's (docs/facts/nki_isa.md section 7): creation
functions `memset`, `nl.copy` `tensor_copy`.

These names are NKI's, looked up under `nl.`/`nisa.` only (`nl.load` is this module's,
bare `load` reads an `.npy` file): `make` returns them without the prefix and
`apdsl.semantics.builtins` files them under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError, TargetError
from ..tensor import targets
from ..tensor.dtypes import DType
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host


def _tile(x: Any, fn: str, role: str) -> Tensor:
    if type(x) is not Tensor:
        raise ApdslTypeError(f"nl.{fn}: {role} must be a tensor, not {type(x).__name__}",
                             code="APK152", param=role,
                             help=f"pass a tile or an HBM tensor as {role}")
    return x


def _memory(t: Tensor, fn: str, role: str, allowed: tuple[str, ...], help: str) -> None:
    if t.buffer not in allowed and not (
            "hbm" in allowed and targets.family(t.buffer) == "nki" and not t.onchip):
        where = " or ".join(b.upper() if b in ("sbuf", "psum", "hbm") else b for b in allowed)
        raise TargetError(f"nl.{fn}: {role} {t.name} is in {t.buffer}; nl.{fn} takes it in "
                          f"{where}", code="APK151", param=role, buffer=t.buffer,
                          notes=[f"{role}: shape {tuple(t.shape)} @ {t.buffer}"], help=help)


def _tile_shape(shape: tuple, fn: str, what: str) -> tuple[int, ...]:
    """The shape of an on-chip result tile: a partition dimension of at most pmax and at
    least one free dimension (SPEC 4)."""
    from .tile_size import TILE_SIZE
    pmax = TILE_SIZE.pmax
    if len(shape) < 2 or not all(isinstance(n, int) for n in shape) or shape[0] > pmax:
        raise ApdslTypeError(
            f"nl.{fn}: {what} has shape {tuple(shape)}, which is not a tile: an on-chip tile "
            f"has a partition dimension of at most {pmax} and at least one free dimension",
            code="APK152", notes=[f"shape = {tuple(shape)}"],
            help=f"slice it into tiles first, e.g. t[0:{pmax}, ...] (nl.tile_size.pmax = "
                 f"{pmax})")
    return tuple(shape)


def _dtype(value: Any, default: DType) -> DType:
    return default if value is None else to_dtype(value)


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The `nl` functions bound to one program: `interp` allocates (and names) tiles,
    `table` holds the program's instruction builtins they issue."""

    def alloc(shape: Any, dtype: Any, buffer: Any, name: str = "") -> Tensor:
        return interp.allocate(shape, dtype, buffer, "ND", name, span=interp.call_span)

    def load(src: Any, dtype: Any = None) -> Tensor:
        """`nl.load(src, dtype=None)`: a new SBUF tile holding `src` (from HBM), by
        dma_copy (converting through float32 when `dtype` differs); a 1-D `src` of n
        elements is an (n, 1) tile."""
        src = _tile(src, "load", "src")
        _memory(src, "load", "src", ("hbm",),
                "a tile already on chip needs no load: use it, or nl.copy it")
        shape = tuple(src.shape)
        if len(shape) == 1:
            # a 1-D source is a tile of its partition dimension only, one element a
            # partition (the legacy fused-mamba tutorial loads A[c:c + 128, i] as
            # "A_i: [par_dim(channels)]" for a per-partition operand): apdsl's (n, 1)
            shape = (*shape, 1)
        shape = _tile_shape(shape, "load", f"src {src.name}")
        dst = alloc(shape, _dtype(dtype, src.dtype), "sbuf")
        table["dma_copy"](dst=dst, src=src)
        return dst

    def load_transpose2d(src: Any, dtype: Any = None) -> Tensor:
        """`nl.load_transpose2d(src, dtype=None)`: a new SBUF tile [M, N] holding the 2-D HBM
        tensor `src` [N, M] transposed, by one dma_copy that reads `src` through its
        transposed view (the reference says only that the load transposes; element by
        element is what a DMA access pattern does for it, on every target)."""
        src = _tile(src, "load_transpose2d", "src")
        _memory(src, "load_transpose2d", "src", ("hbm",),
                "transpose a tile already on chip with nl.transpose or nisa.nc_transpose")
        if len(src.shape) != 2:
            raise ApdslTypeError(
                f"nl.load_transpose2d: src {src.name} has shape {tuple(src.shape)}; it takes a "
                "2-D tensor [N, M] and loads it as an [M, N] tile", code="APK152",
                param="src", help="slice src to two dimensions first")
        n, m = src.shape
        shape = _tile_shape((m, n), "load_transpose2d", f"src {src.name} transposed")
        dst = alloc(shape, _dtype(dtype, src.dtype), "sbuf")
        table["dma_copy"](dst=dst, src=src.permute((1, 0)))
        return dst

    def store(dst: Any, value: Any) -> None:
        """`nl.store(dst, value)`: write the SBUF tile `value` (or a number, to every
        element) to `dst` in HBM (dma_copy)."""
        dst = _tile(dst, "store", "dst")
        _memory(dst, "store", "dst", ("hbm",), "store writes HBM; on chip use nl.copy or "
                "nisa.tensor_copy")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # a number stored is every element of dst ("effectively a memset", the SDK's
            # nl.store example): a tile of dst's shape filled by memset, then the DMA
            shape = tuple(dst.shape) if len(dst.shape) > 1 else (*dst.shape, 1)
            filled = alloc(_tile_shape(shape, "store", f"dst {dst.name}"), dst.dtype, "sbuf")
            table["memset"](dst=filled, value=value)
            value = filled
        value = _tile(value, "store", "value")
        _memory(value, "store", "value", ("sbuf",), "copy a PSUM tile to SBUF first "
                "(nl.copy or nisa.tensor_copy), then store it")
        table["dma_copy"](dst=dst, src=value)

    def copy(x: Any, dtype: Any = None) -> Tensor:
        """`nl.copy(x, dtype=None)`: a new SBUF tile with the contents of the SBUF or PSUM
        tile `x` (tensor_copy)."""
        x = _tile(x, "copy", "x")
        _memory(x, "copy", "x", ("sbuf", "psum"), "nl.load brings an HBM tensor on chip")
        dst = alloc(tuple(x.shape), _dtype(dtype, x.dtype), "sbuf")
        table["tensor_copy"](dst=dst, src=x)
        return dst

    def filled(fn: str, shape: Any, dtype: Any, buffer: Any, name: str, value: Any) -> Tensor:
        buf = targets.buffer_name("sbuf" if buffer is None else buffer)
        if not targets.is_onchip(buf) or targets.family(buf) != "nki":
            raise TargetError(
                f"nl.{fn}: buffer {buf}: apdsl fills only SBUF and PSUM tiles (memset); no NKI "
                "instruction fills HBM", code="APK151", buffer=buf,
                help=f"make the tile on chip (nl.{fn}(shape, dtype)) and nl.store it")
        t = alloc(shape, dtype, buf, name)
        table["memset"](dst=t, value=value)
        return t

    def zeros(shape: Any, dtype: Any, buffer: Any = None, name: str = "") -> Tensor:
        """`nl.zeros(shape, dtype, buffer=sbuf, name='')`: a tile of zeros (memset)."""
        return filled("zeros", shape, dtype, buffer, name, 0)

    def ones(shape: Any, dtype: Any, buffer: Any = None, name: str = "") -> Tensor:
        """`nl.ones(shape, dtype, buffer=sbuf, name='')`: a tile of ones (memset)."""
        return filled("ones", shape, dtype, buffer, name, 1)

    def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = None,
             name: str = "") -> Tensor:
        """`nl.full(shape, fill_value, dtype, buffer=sbuf, name='')`: a tile of
        `fill_value`, cast to dtype (memset)."""
        if isinstance(fill_value, bool) or not isinstance(fill_value, (int, float)):
            raise ApdslTypeError(f"nl.full: fill_value must be a number, not "
                                 f"{type(fill_value).__name__}", code="APK152",
                                 param="fill_value")
        return filled("full", shape, dtype, buffer, name, fill_value)

    def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> Tensor:
        """`nl.zeros_like(x, dtype=None, buffer=None, name='')`: zeros of x's shape (and
        dtype and buffer, unless given)."""
        x = _tile(x, "zeros_like", "x")
        return filled("zeros_like", tuple(x.shape), _dtype(dtype, x.dtype),
                      x.buffer if buffer is None else buffer, name, 0)

    def empty_like(x: Any, dtype: Any = None, buffer: Any = None, name: str = "") -> Tensor:
        """`nl.empty_like(x, dtype=None, buffer=None, name='')`: an unwritten tensor of x's
        shape (and dtype and buffer, unless given)."""
        x = _tile(x, "empty_like", "x")
        return alloc(tuple(x.shape), _dtype(dtype, x.dtype),
                     x.buffer if buffer is None else buffer, name)

    def matmul(x: Any, y: Any, transpose_x: bool = False) -> Tensor:
        """`nl.matmul(x, y, transpose_x=False)`: `x @ y` (`x.T @ y` with transpose_x) as a
        new float32 PSUM tile, by nc_matmul (K on the partitions of both inputs)."""
        x = _tile(x, "matmul", "x")
        y = _tile(y, "matmul", "y")
        for role, t in (("x", x), ("y", y)):
            _memory(t, "matmul", role, ("sbuf",), "nl.load (HBM) or nl.copy (PSUM) it into "
                    "SBUF first")
        if len(x.shape) != 2 or len(y.shape) != 2:
            raise ApdslTypeError(f"nl.matmul: x and y must be 2-D tiles, got {tuple(x.shape)} "
                                 f"and {tuple(y.shape)}", code="APK152")
        if not transpose_x:
            stationary = transpose_tile(x, "matmul")
        else:
            stationary = x
        k, m = stationary.shape
        k2, n = y.shape
        if k != k2:
            shown = f"x.T {tuple(x.shape)}" if transpose_x else f"x {tuple(x.shape)}"
            raise ApdslTypeError(
                f"nl.matmul: the contraction sizes differ: {shown} and y {tuple(y.shape)}",
                code="APK153", help="x @ y contracts x's last dimension with y's first"
                + ("" if transpose_x else "; pass transpose_x=True when x is already [K, M]"))
        dst = alloc((m, n), "float32", "psum")
        table["nc_matmul"](dst=dst, stationary=stationary, moving=y)
        return dst

    def transpose_tile(x: Tensor, fn: str) -> Tensor:
        """x transposed into a new SBUF tile (nc_transpose on the Tensor Engine into PSUM,
        then tensor_copy), for nl.matmul's stationary operand."""
        if "nc_transpose" not in table:
            raise ApdslTypeError(
                f"nl.{fn}: transposing x needs nisa.nc_transpose, which this apdsl does not "
                "have yet", code="APK153",
                help="pass x already transposed ([K, M]) with transpose_x=True")
        p, f = x.shape
        psum = alloc((f, p), x.dtype, "psum")
        table["nc_transpose"](dst=psum, data=x)
        out = alloc((f, p), x.dtype, "sbuf")
        table["tensor_copy"](dst=out, src=psum)
        return out

    return {"load": load, "load_transpose2d": load_transpose2d, "store": store,
            "copy": copy, "zeros": zeros, "ones": ones,
            "full": full, "zeros_like": zeros_like, "empty_like": empty_like,
            "matmul": matmul}


# the names `make` returns, known without building them (the checker, completion)
NAMES = ("load", "load_transpose2d", "store", "copy", "zeros", "ones", "full", "zeros_like", "empty_like",
         "matmul")
