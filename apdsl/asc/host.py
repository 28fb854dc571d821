"""`asc.lib.host`: the host-side tiling of the Matmul API the pyasc tutorials call
(`MultiCoreMatmulTiling(get_ascendc_platform())`, its setters, `get_tiling(tiling)`), which
fills an `asc.adv.TCubeTiling` for the kernel.  Any other name is APK660 at the user's line.

CANN computes its tiling in a library apdsl does not have; any tiling whose fields agree
describes the same product, so apdsl computes one of its own (kernels that read the fields
compute the same C from it, on as many cores as it uses):

- base block: `set_fix_split(base_m, base_n, base_k)` where given (-1: not fixed), else 128 x
  256 x 64 clipped to the matrix rounded up to 16 (C0 for K);
- split over the `set_dim` cores: the (mc, nc) grid with mc * nc <= dim that uses the most
  cores, each core's block (single_core_m x single_core_n) a whole number of base blocks,
  preferring grids without a tail block, then more rows than columns;
- `used_core_num` = the blocks the split makes; `single_core_k` = K; `iterate_order` 0 (M first)
  or 1 (N first) from `set_traverse`; `is_bias` from `enable_bias`.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..errors import ApdslTypeError
from ..nki.locate import caller_span
from .errors import missing

# the L0 sizes a base block must fit on Atlas A2 (L0A/L0B 64 KiB, L0C 128 KiB)
L0AB_BYTES = 64 * 1024
L0C_BYTES = 128 * 1024


class TPosition(Enum):
    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11


class CubeFormat(Enum):
    ND = 0
    NZ = 1
    ZN = 2
    ZZ = 3
    NN = 4
    ND_ALIGN = 5
    SCALAR = 6
    VECTOR = 7


class DataType(Enum):
    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_INT8 = 2
    DT_INT32 = 3
    DT_BF16 = 27


class MatrixTraverse(Enum):
    NOSET = 0
    FIRSTM = 1
    FIRSTN = 2


_BYTES = {"DT_FLOAT": 4, "DT_FLOAT16": 2, "DT_INT8": 1, "DT_INT32": 4, "DT_BF16": 2}


class PlatformInfo:
    """`get_ascendc_platform()`: the Atlas A2 part apdsl models."""

    def __repr__(self) -> str:
        return "<Ascend910B1 (Atlas A2)>"


def get_ascendc_platform() -> PlatformInfo:
    return PlatformInfo()


def _up(v: int, q: int) -> int:
    return -(-v // q) * q


class MultiCoreMatmulTiling:
    """`MultiCoreMatmulTiling(platform)`: the setters pyasc's tutorials call, then
    `get_tiling(tiling)` (see the module docstring)."""

    def __init__(self, platform: Any = None) -> None:
        self.types: dict[str, tuple[Any, Any, Any, bool]] = {}
        self.dim = 1
        self.org: tuple[int, int, int] | None = None
        self.shape: tuple[int, int, int] | None = None
        self.bias = False
        self.fixed = (-1, -1, -1)
        self.order = 0

    def set_a_type(self, pos: Any, fmt: Any, dtype: Any, is_trans: bool = False) -> None:
        self.types["a"] = (pos, fmt, dtype, bool(is_trans))

    def set_b_type(self, pos: Any, fmt: Any, dtype: Any, is_trans: bool = False) -> None:
        self.types["b"] = (pos, fmt, dtype, bool(is_trans))

    def set_c_type(self, pos: Any, fmt: Any, dtype: Any) -> None:
        self.types["c"] = (pos, fmt, dtype, False)

    def set_bias_type(self, pos: Any, fmt: Any, dtype: Any) -> None:
        self.types["bias"] = (pos, fmt, dtype, False)

    def set_dim(self, dim: int) -> None:
        self.dim = _positive(dim, "set_dim")

    def set_org_shape(self, m: int, n: int, k: int, kb: int | None = None) -> None:
        self.org = (_positive(m, "m"), _positive(n, "n"), _positive(k, "k"))

    def set_shape(self, m: int, n: int, k: int) -> None:
        self.shape = (_positive(m, "m"), _positive(n, "n"), _positive(k, "k"))

    def enable_bias(self, enable: bool) -> None:
        self.bias = bool(enable)

    def set_buffer_space(self, l1: int = -1, l0c: int = -1, ub: int = -1,
                         bt: int = -1) -> None:
        """The buffer sizes the tiling may use (-1: all); they change how the device tiles,
        not the product."""

    def set_traverse(self, traverse: Any) -> None:
        self.order = 1 if getattr(traverse, "name", traverse) == "FIRSTN" else 0

    def set_fix_split(self, base_m: int = -1, base_n: int = -1, base_k: int = -1) -> None:
        self.fixed = (int(base_m), int(base_n), int(base_k))

    def get_tiling(self, tiling: Any) -> int:
        """Fill `tiling` (an asc.adv.TCubeTiling); 0, as CANN's GetTiling on success."""
        from .adv import TCubeTiling
        if not isinstance(tiling, TCubeTiling):
            raise ApdslTypeError("get_tiling takes an asc.adv.TCubeTiling", code="APK674")
        m, n, k = self.shape or self.org or (0, 0, 0)
        if not m:
            raise ApdslTypeError("get_tiling before set_shape / set_org_shape", code="APK674",
                                 help="matmul_tiling.set_shape(m, n, k) first")
        om, on, ok = self.org or (m, n, k)
        a = self.types.get("a", (None, None, "DT_FLOAT16", False))
        size = _BYTES.get(getattr(a[2], "name", str(a[2])), 2)
        c0 = 32 // size
        bm, bn, bk = self._base(m, n, k, c0, size)
        mc, nc = self._split(m, n, bm, bn)
        scm, scn = _up(-(-m // mc), bm), _up(-(-n // nc), bn)
        used = -(-m // scm) * -(-n // scn)
        for field, value in (("used_core_num", used), ("m", om), ("n", on), ("k_a", ok),
                             ("k_b", ok), ("single_core_m", scm), ("single_core_n", scn),
                             ("single_core_k", k), ("base_m", bm), ("base_n", bn),
                             ("base_k", bk), ("depth_a1", 1), ("depth_b1", 1), ("step_m", 1),
                             ("step_n", 1), ("is_bias", int(self.bias)),
                             ("iterate_order", self.order), ("step_k_a", 1), ("step_k_b", 1),
                             ("db_l0a", 1), ("db_l0b", 1), ("db_l0c", 1)):
            setattr(tiling, field, value)
        return 0

    def _base(self, m: int, n: int, k: int, c0: int, size: int) -> tuple[int, int, int]:
        fm, fn, fk = self.fixed
        bm = fm if fm > 0 else min(128, _up(m, 16))
        bn = fn if fn > 0 else min(256, _up(n, 16))
        bk = fk if fk > 0 else min(64, _up(k, c0))
        while fk <= 0 and bk > c0 and (bm * bk * size > L0AB_BYTES // 2
                                       or bk * bn * size > L0AB_BYTES // 2):
            bk //= 2
        if bm * bn * 4 > L0C_BYTES:
            raise ApdslTypeError(f"set_fix_split({bm}, {bn}, ...): a {bm} x {bn} float32 "
                                 "block does not fit L0C (128 KiB)", code="APK674")
        return bm, bn, bk

    def _split(self, m: int, n: int, bm: int, bn: int) -> tuple[int, int]:
        best: tuple[Any, ...] = ()
        for mc in range(1, min(self.dim, -(-m // bm)) + 1):
            for nc in range(1, min(self.dim // mc, -(-n // bn)) + 1):
                scm, scn = _up(-(-m // mc), bm), _up(-(-n // nc), bn)
                used = -(-m // scm) * -(-n // scn)
                tail = m % scm != 0 or n % scn != 0
                key = (used, not tail, mc, -nc)
                if not best or key > best[0]:
                    best = (key, mc, nc)
        return best[1], best[2]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing(f"lib.host.MultiCoreMatmulTiling.{name}").replace(span=caller_span(2))


def _positive(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ApdslTypeError(f"{what} is {v!r}; it is a positive int", code="APK674")
    return v


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"lib.host.{name}", "apdsl.asc's host API is the Matmul tiling: "
                  "MultiCoreMatmulTiling, get_ascendc_platform").replace(span=caller_span(2))
