"""`asc.lib.host`: the host-side tiling of the Matmul API the pyasc tutorials call
(`MultiCoreMatmulTiling(get_ascendc_platform())`, its setters, `get_tiling(tiling)`), which
fills an `asc.adv.TCubeTiling` for the kernel.  Any other name is APK660 at the user's line.

CANN computes its tiling in a library apdsl does not have; any tiling whose fields agree
describes the same product, so apdsl computes one of its own (kernels that read the fields
compute the same C from it, on as many cores as it uses):

- base block: `set_fix_split(base_m, base_n, base_k)` where given (-1: not fixed), else the
  docs' recommended 128 x 256 x 64 clipped to the matrix rounded up to its alignment, then
  halved (base_n first, then base_m; base_k for L0A/L0B) until it meets the constraints of the
  AscendC TCubeTiling page (table 2, for the double-buffered L0A/L0B the docs recommend:
  dbL0A = dbL0B = 2): base_m * base_k * sizeof(A) * 2 <= L0A, base_k * base_n * sizeof(B) * 2
  <= L0B, base_m * base_n * 4 <= L0C, base_n * sizeof(bias) <= the bias table (the page writes
  `<`, but its own recommended block fills L0B exactly, so apdsl reads `<=`); base_m and
  base_n multiples of 16, base_k of 16 (of C0 when A is not transposed and B is).  A C in a
  vector position (VECIN, VECOUT, VECCALC) also keeps two base blocks of C within UB: the
  published kernels take it there through a queue of depth 2 of base_m * base_n elements
  (apdsl's choice, not a documented limit: a fixed split is not held to it).  A fixed value
  that breaks a documented constraint is APK674;
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
from ..tensor.targets import get_target
from .errors import missing

# the buffers a base block must fit on Atlas A2 (the target's capacities: L0A/L0B 64 KiB,
# L0C 128 KiB, UB 192 KiB, the bias table 1 KiB)
_A2 = get_target("ascend-a2").capacity
L0AB_BYTES = _A2["l0a"]
L0C_BYTES = _A2["l0c"]
UB_BYTES = _A2["ub"]
BT_BYTES = _A2["bt"]
_VECTOR = frozenset({"VECIN", "VECOUT", "VECCALC"})


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
        bm, bn, bk = self._base(m, n, k)
        mc, nc = self._split(m, n, bm, bn)
        scm, scn = _up(-(-m // mc), bm), _up(-(-n // nc), bn)
        used = -(-m // scm) * -(-n // scn)
        for field, value in (("used_core_num", used), ("m", om), ("n", on), ("k_a", ok),
                             ("k_b", ok), ("single_core_m", scm), ("single_core_n", scn),
                             ("single_core_k", k), ("base_m", bm), ("base_n", bn),
                             ("base_k", bk), ("depth_a1", 1), ("depth_b1", 1), ("step_m", 1),
                             ("step_n", 1), ("is_bias", int(self.bias)),
                             ("iterate_order", self.order), ("step_k_a", 1), ("step_k_b", 1),
                             ("db_l0a", 2), ("db_l0b", 2), ("db_l0c", 1)):
            setattr(tiling, field, value)
        return 0

    def _bytes(self, role: str, default: str) -> int:
        dtype = self.types.get(role, (None, None, default, False))[2]
        return _BYTES.get(_name(dtype), 2)

    def _base(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        """The base block (see the module docstring)."""
        sa, sb, sc = self._bytes("a", "DT_FLOAT16"), self._bytes("b", "DT_FLOAT16"), 4
        c_out = self._bytes("c", "DT_FLOAT")
        sbias = self._bytes("bias", "DT_FLOAT") if self.bias else 0
        ub_c = _name(self.types.get("c", ("GM",))[0]) in _VECTOR
        trans_a = self.types.get("a", (0, 0, 0, False))[3]
        trans_b = self.types.get("b", (0, 0, 0, False))[3]
        kq = 32 // sa if not trans_a and trans_b else 16
        fm, fn, fk = self.fixed
        bm = fm if fm > 0 else min(128, _up(m, 16))
        bn = fn if fn > 0 else min(256, _up(n, 16))
        bk = fk if fk > 0 else min(64, _up(k, kq))

        def c_fits(bm: int, bn: int, ub: bool = True) -> list[str]:
            # (the UB clause is apdsl's choice for a free block, not a documented limit: a
            # fixed split past it is the kernel's to fit, as tutorial 05's 256 x 128 does)
            return [why for bad, why in (
                (bm * bn * sc > L0C_BYTES, f"{bm} x {bn} float32 exceeds L0C (128 KiB)"),
                (bn * sbias > BT_BYTES, f"{bn} bias values exceed the bias table (1 KiB)"),
                (ub and ub_c and 2 * bm * bn * c_out > UB_BYTES,
                 f"two {bm} x {bn} blocks of C exceed UB (192 KiB)")) if bad]

        def ab_fits(bk: int) -> list[str]:
            return [why for bad, why in (
                (bm * bk * sa * 2 > L0AB_BYTES, f"two {bm} x {bk} A blocks exceed L0A (64 KiB)"),
                (bk * bn * sb * 2 > L0AB_BYTES, f"two {bk} x {bn} B blocks exceed L0B (64 KiB)"))
                if bad]

        while c_fits(bm, bn):
            if fn <= 0 and bn > 16 and (bn >= bm or fm > 0):
                bn = _up(bn // 2, 16)
            elif fm <= 0 and bm > 16:
                bm = _up(bm // 2, 16)
            else:
                break
        while fk <= 0 and bk > kq and ab_fits(bk):
            bk = _up(bk // 2, kq)
        broken = c_fits(bm, bn, ub=False) + ab_fits(bk)
        if broken:
            raise ApdslTypeError(f"set_fix_split({fm}, {fn}, {fk}): base block {bm} x {bn} x "
                                 f"{bk}: " + "; ".join(broken), code="APK674",
                                 help="a smaller base block, or -1 to let the tiling choose")
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


def _name(value: Any) -> str:
    return str(getattr(value, "name", value)).rpartition(".")[2]


def _positive(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ApdslTypeError(f"{what} is {v!r}; it is a positive int", code="APK674")
    return v


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"lib.host.{name}", "apdsl.asc's host API is the Matmul tiling: "
                  "MultiCoreMatmulTiling, get_ascendc_platform").replace(span=caller_span(2))
