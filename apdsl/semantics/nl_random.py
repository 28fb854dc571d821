"""The random functions of the NKI language reference (`nki/api/nki/language/__init__.py`):
`nl.random_seed(seed)`, `nl.rand(shape, dtype, buffer=sbuf, name='')` and
`nl.dropout(x, rate, dtype=None)` (SPEC section 11).

They draw from the same generator as the isa instructions (`apdsl.runtime.nki.rng.state`: the
Vector Engine's `Generator(PCG64(seed))` of the device), and each issues table instructions
through the program's builtins, so `apdsl lower` shows them and check mode checks them:
- `nl.random_seed(seed)`: `set_rng_seed(src_seeds=seed)`; the reference takes a [1, 1] tensor
  on SBUF or PSUM holding a 32-bit seed (a plain number is refused: APK580).
- `nl.rand`: `rng` draws 32 random bits an element into a uint32 tile, `tensor_scalar` keeps
  the top 24 (`right_shift` 8) and a second `tensor_scalar` scales them by 2**-24, so each
  value is k / 2**24 for an integer k in [0, 2**24): uniform in [0, 1), exactly what NumPy's
  `Generator.random(dtype=float32)` draws from the same state.  The reference says "uniform
  between 0 and 1" and nothing of integer dtypes: an integer dtype is refused (APK581).  A
  narrower float dtype is the float32 value cast by the cast rule (round to nearest even, so
  in bfloat16 a value just below 1 can round to 1.0).
- `nl.dropout`: `dropout(dst, data=x, prob=rate)`; `rate` is "the probability of zeroing each
  element": a number in [0, 1] (APK582 otherwise) or a (x.shape[0], 1) tile of per-partition
  probabilities.  Survivors keep their value (neither the reference nor the isa docs describe
  a rescaling).  With `dtype` other than x's, the dropped tile is converted by `tensor_copy`
  (the instruction's dst has data's dtype).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import ApdslTypeError, TargetError
from ..runtime.table.operators import OPERATORS
from ..tensor import targets
from ..tensor.dtypes import dtype as to_dtype
from ..tensor.view import Tensor
from .host import Host

NAMES = ("random_seed", "rand", "dropout")
# the top 24 of 32 random bits, scaled into [0, 1): every value exact in float32
KEPT_BITS = 24


def _on_chip_tile(x: Any, fn: str, role: str, help: str) -> Tensor:
    if type(x) is not Tensor:
        raise ApdslTypeError(f"nl.{fn}: {role} must be a tile, not {type(x).__name__}",
                             code="APK152", param=role, help=help)
    if not x.onchip or targets.family(x.buffer) != "nki":
        raise TargetError(f"nl.{fn}: {role} {x.name} is in {x.buffer}; nl.{fn} takes a tile "
                          "in SBUF or PSUM", code="APK151", param=role, buffer=x.buffer,
                          notes=[f"{role}: shape {tuple(x.shape)} @ {x.buffer}"], help=help)
    return x


def make(interp: Host, table: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The random `nl` functions bound to one program (`interp` allocates tiles, `table`
    holds the instruction builtins they issue)."""

    def alloc(shape: Any, dtype: Any, buffer: Any, name: str = "") -> Tensor:
        return interp.allocate(shape, dtype, buffer, "ND", name, span=interp.call_span)

    def random_seed(seed: Any) -> None:
        """`nl.random_seed(seed)`: seed the generator `nl.rand` and `nl.dropout` draw from
        with the 32-bit value of the [1, 1] SBUF or PSUM tensor `seed` (set_rng_seed)."""
        if type(seed) is not Tensor:
            raise ApdslTypeError(
                f"nl.random_seed: seed must be a [1, 1] tensor on SBUF or PSUM holding a "
                f"32-bit value, not {type(seed).__name__}", code="APK580", param="seed",
                help="put the seed in a tile: nl.random_seed(nl.full((1, 1), 42, "
                     "dtype=nl.int32, buffer=nl.sbuf))")
        table["set_rng_seed"](src_seeds=seed)

    def rand(shape: Any, dtype: Any = "float32", buffer: Any = None, name: str = ""
             ) -> Tensor:
        """`nl.rand(shape, dtype, buffer=sbuf, name='')`: a new tile of values uniform in
        [0, 1) (rng, then two tensor_scalar: the top 24 bits times 2**-24).  `dtype` is
        float32 when not given, as in the legacy reference (`rand(shape, dtype=np.float32)`)."""
        dt = to_dtype(dtype)
        if dt.kind != "f":
            raise ApdslTypeError(
                f"nl.rand: dtype {dt.name} is not a float type; nl.rand fills a tile with "
                "values uniform in [0, 1), which an integer type cannot hold (the NKI "
                "reference does not say what it would give)", code="APK581", dtype=dt.name,
                help="draw float32 (nl.rand(shape, nl.float32)), or random integer bits "
                     "with nisa.rng")
        buf = targets.buffer_name("sbuf" if buffer is None else buffer)
        if not targets.is_onchip(buf) or targets.family(buf) != "nki":
            raise TargetError(
                f"nl.rand: buffer {buf}: the random instructions write SBUF and PSUM tiles "
                "only", code="APK151", buffer=buf,
                help="draw the tile on chip (nl.rand(shape, dtype)) and nl.store it")
        bits = alloc(shape, "uint32", "sbuf")
        table["rng"](dst=bits)
        table["tensor_scalar"](dst=bits, data=bits, op0=OPERATORS["right_shift"],
                               operand0=32 - KEPT_BITS)
        out = alloc(shape, dt, buf, name)
        table["tensor_scalar"](dst=out, data=bits, op0=OPERATORS["multiply"],
                               operand0=2.0 ** -KEPT_BITS)
        return out

    def dropout(x: Any, rate: Any, dtype: Any = None) -> Tensor:
        """`nl.dropout(x, rate, dtype=None)`: a new SBUF tile of x with each element zeroed
        with probability `rate` (a number in [0, 1], or a (x.shape[0], 1) tile), survivors
        unchanged (the dropout instruction; tensor_copy when dtype differs from x's)."""
        x = _on_chip_tile(x, "dropout", "x", "nl.load an HBM tensor into SBUF first")
        if type(rate) is not Tensor:
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
                    math.isnan(rate) or not 0 <= rate <= 1:
                raise ApdslTypeError(
                    f"nl.dropout: rate is {rate!r}; it is the probability of zeroing each "
                    "element: a number in [0, 1] or a (x.shape[0], 1) tile", code="APK582",
                    param="rate", help="pass a probability, e.g. rate=0.1")
        dt = x.dtype if dtype is None else to_dtype(dtype)
        shape = tuple(x.shape)
        dropped = alloc(shape, x.dtype, "sbuf")
        table["dropout"](dst=dropped, data=x, prob=rate)
        if dt == x.dtype:
            return dropped
        out = alloc(shape, dt, "sbuf")
        table["tensor_copy"](dst=out, src=dropped)
        return out

    return {"random_seed": random_seed, "rand": rand, "dropout": dropout}
