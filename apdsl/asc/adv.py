"""`asc.adv`: the advanced API the published pyasc kernels call -- the Matmul high-level API
(`Matmul`, `MatmulType`, `register_matmul`, `TCubeTiling`, `MatmulConfig`) on apdsl's
`asc.adv.matmul` instruction, and AscendQuant per tensor (`quant`, `QuantConfig`) on
`asc.adv.quant`.  Any other `asc.adv` name (softmax, the math functions, ...) is APK660 at the
user's line, naming it.

A Matmul object computes, on each core that uses it, the core's block C (single_core_m x
single_core_n, or the tail `set_tail` gives) = A @ B (+ bias) from the GM tensors
`set_tensor_a/b` and `set_bias` gave, row pitches those of the whole matrices (`tiling.k_a`,
`tiling.n`, or `set_org_shape`; a transposed A or B is read through its transpose).
`iterate_all(c)` writes the whole block into GM tensor c; `with matmul.iterate() as count:`
runs its body once per base block (base_m x base_n, M first unless the tiling says N first:
`iterate_order` 1), `get_tensor_c(t)` delivering the current one, into a UB LocalTensor as
base_n-wide rows (`en_sequential_write=True`) or to its place in a GM tensor.

Mixed kernels (AIC and AIV, the tutorials' default): the vector cores call the API and the
cube core serves them -- AscendC's REGIST_MATMUL_OBJ ends the kernel on the AIC once it has
served -- so `register_matmul` on a cube core ends that core's run, and the API's blocks are
the AIV's instructions.  With `@asc.jit(matmul_cube_only=True)` the cube core calls the API
itself.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApdslRuntimeError, ApdslTypeError
from ..nki.locate import caller_span
from ..records import record
from .builtin import call_builtin
from .errors import missing
from .memory import GlobalTensor, LocalTensor
from .served import ServedByCube, cube_only

# the asc.adv names apdsl models; every other one is APK660
MODELLED = ("Matmul", "MatmulType", "MatmulConfig", "TCubeTiling", "register_matmul",
            "quant", "QuantConfig")


def _err(message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(message, code="APK674", **kw).replace(span=caller_span(3))


class TilingInt(int):
    """A TCubeTiling field: an int with pyasc's `ceildiv` (`tiling.m.ceildiv(x)`)."""

    def ceildiv(self, other: Any) -> int:
        return -(-int(self) // int(other))


# TCubeTiling's fields in pyasc's order (asc.language.adv.tiling), all 0 until set
TILING_FIELDS = (
    "used_core_num", "m", "n", "k_a", "k_b", "single_core_m", "single_core_n",
    "single_core_k", "base_m", "base_n", "base_k", "depth_a1", "depth_b1", "step_m", "step_n",
    "is_bias", "trans_length", "iterate_order", "share_mode", "share_l1_size",
    "share_l0c_size", "share_ub_size", "batch_m", "batch_n", "single_batch_m",
    "single_batch_n", "step_k_a", "step_k_b", "depth_a_l1_cache_ub", "depth_b_l1_cache_ub",
    "db_l0a", "db_l0b", "db_l0c")


class TCubeTiling:
    """`asc.adv.TCubeTiling()`: the Matmul tiling the host fills (`asc.lib.host`'s
    `get_tiling`) and the kernel reads; fields are ints with `ceildiv`."""

    def __init__(self, **fields: Any) -> None:
        for name in TILING_FIELDS:
            object.__setattr__(self, name, TilingInt(int(fields.pop(name, 0))))
        if fields:
            raise ApdslTypeError(f"TCubeTiling has no field {next(iter(fields))}",
                                 code="APK674", help="fields: " + ", ".join(TILING_FIELDS))

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in TILING_FIELDS:
            raise AttributeError(f"TCubeTiling has no field {name}")
        object.__setattr__(self, name, TilingInt(int(value)))

    def __repr__(self) -> str:
        return "TCubeTiling(" + ", ".join(f"{n}={getattr(self, n)}" for n in TILING_FIELDS
                                          if getattr(self, n)) + ")"


@record
class MatmulType:
    """`asc.adv.MatmulType(position, format, dtype, is_trans, layout)`: one of Matmul's
    matrices (apdsl reads ND matrices in GM; C in GM or in a vector position)."""

    position: Any
    format: Any
    dtype: Any
    is_trans: bool = False
    layout: Any = None


@record
class MatmulConfig:
    """`asc.adv.MatmulConfig(...)`: the API's compile-time options; they choose how the
    device schedules a Matmul, not what it computes, so apdsl keeps them unread."""

    options: Any = None


def _name(value: Any) -> str:
    return str(getattr(value, "name", value)).rpartition(".")[2]


def register_matmul(pipe: Any, workspace: Any, matmul: Matmul, tiling: Any = None) -> None:
    """`asc.adv.register_matmul(pipe, workspace, matmul, tiling)` (REGIST_MATMUL_OBJ): the
    tiling is the Matmul's; on the cube core of a mixed kernel the core's run ends here."""
    if not isinstance(matmul, Matmul):
        raise _err("register_matmul: matmul must be an asc.adv.Matmul")
    if tiling is not None:
        matmul.init(tiling)
    from ..runtime.ascend import core_ops
    if not cube_only() and core_ops.is_aic():
        raise ServedByCube


class Matmul:
    """`asc.adv.Matmul(a, b, c, bias, matmul_config, matmul_policy)` (see the module
    docstring)."""

    def __init__(self, a: Any = None, b: Any = None, c: Any = None, bias: Any = None,
                 matmul_config: Any = None, matmul_policy: Any = 0) -> None:
        for role, t in (("a", a), ("b", b), ("c", c)):
            if not isinstance(t, MatmulType):
                raise _err(f"Matmul: {role} must be an asc.adv.MatmulType")
        for role, t in (("a", a), ("b", b)):
            if _name(t.position) != "GM" or _name(t.format) != "ND":
                raise _err(f"Matmul: {role} in {_name(t.position)} as {_name(t.format)}: apdsl "
                           "models A and B as ND matrices in GM", help="TPosition.GM, "
                           "CubeFormat.ND")
        if _name(c.format) != "ND":
            raise _err(f"Matmul: C as {_name(c.format)}: apdsl models an ND C")
        self.types = (a, b, c, bias)
        self.tiling: TCubeTiling | None = None
        self.a: Any = None
        self.b: Any = None
        self.bias: Any = None
        self.trans = [bool(a.is_trans), bool(b.is_trans)]
        self.tail: list[int] = [-1, -1, -1]
        self.org: tuple[int, int, int, int] | None = None
        self.single: tuple[int, int, int] | None = None
        self.block = -1   # the base block `iterate` stands on

    # -- set-up ---------------------------------------------------------------------------
    def init(self, tiling: Any) -> None:
        if not isinstance(tiling, TCubeTiling):
            raise _err("Matmul.init: the tiling is an asc.adv.TCubeTiling")
        self.tiling = tiling

    def set_tensor_a(self, tensor: Any, transpose: Any = False) -> None:
        self.a = _gm(tensor, "set_tensor_a")
        self.trans[0] = bool(transpose)

    def set_tensor_b(self, tensor: Any, transpose: Any = False) -> None:
        self.b = _gm(tensor, "set_tensor_b")
        self.trans[1] = bool(transpose)

    def set_bias(self, tensor: Any) -> None:
        self.bias = _gm(tensor, "set_bias")

    def disable_bias(self) -> None:
        self.bias = None

    def set_tail(self, tail_m: Any = -1, tail_n: Any = -1, tail_k: Any = -1) -> None:
        self.tail = [int(tail_m), int(tail_n), int(tail_k)]

    def set_org_shape(self, org_m: Any, org_n: Any, org_ka: Any, org_kb: Any = None,
                      org_kc: Any = None) -> None:
        self.org = (int(org_m), int(org_n), int(org_ka), int(org_ka if org_kb is None
                                                             else org_kb))

    def set_single_shape(self, single_m: Any, single_n: Any, single_k: Any) -> None:
        self.single = (int(single_m), int(single_n), int(single_k))

    def end(self) -> None:
        """End: the API's resources go back (nothing to model)."""

    # -- the block --------------------------------------------------------------------------
    def _shape(self) -> tuple[int, int, int, int, int, int]:
        """(m, n, k) of this core's block and the pitches (A's, B's, C's row lengths)."""
        t = self.tiling
        if t is None:
            raise _err("this Matmul has no tiling: register_matmul(pipe, workspace, matmul, "
                       "tiling) or matmul.init(tiling) first")
        if self.a is None or self.b is None:
            raise _err("set_tensor_a and set_tensor_b before computing")
        om, on, oka, okb = self.org or (int(t.m), int(t.n), int(t.k_a), int(t.k_b or t.k_a))
        sm, sn, sk = self.single or (int(t.single_core_m), int(t.single_core_n),
                                     int(t.single_core_k or oka))
        m, n, k = (s if v <= 0 else v for s, v in zip((sm, sn, sk), self.tail))
        return m, n, k, om, on, oka if not self.trans[0] else om, okb

    def _operands(self, r0: int, c0: int, m: int, n: int) -> tuple[Any, Any, Any]:
        """Views of A's rows r0.., B's columns c0.. and the bias for an m x n part."""
        _, _, k, om, on, apitch, okb = self._shape()
        a, b = self.a.tensor, self.b.tensor
        if self.trans[0]:  # A^T in GM: K rows of M
            av = a.ap([[1, m], [om, k]], offset=r0)
        else:
            av = a.ap([[apitch, m], [1, k]], offset=r0 * apitch)
        if self.trans[1]:  # B^T in GM: N rows of K
            bv = b.ap([[1, k], [okb, n]], offset=c0 * okb)
        else:
            bv = b.ap([[on, k], [1, n]], offset=c0)
        bias = None if self.bias is None else self.bias.tensor[c0:c0 + n]
        return av, bv, bias

    def _run(self, dst: Any, r0: int, c0: int, m: int, n: int) -> None:
        from ..runtime.ascend import core_ops
        from ..runtime.ascend.matmul_api import matmul, matmul_cube
        av, bv, bias = self._operands(r0, c0, m, n)
        st = core_ops.core()
        on_cube = st is not None and st.kind == "aic" and dst.buffer == "gm"
        (matmul_cube if on_cube else matmul)(dst, av, bv, bias)

    def iterate_all(self, tensor: Any, en_atomic: Any = 0, sync: Any = True,
                    en_sequential_write: Any = None, wait_iterate_all: Any = None,
                    fake_msg: Any = None) -> None:
        """The whole block into GM tensor `tensor` (row pitch: C's row length)."""
        if en_atomic not in (0, False):
            raise _err("iterate_all(en_atomic=...): atomic accumulation into C is not modelled")
        c = _gm(tensor, "iterate_all")
        m, n, _, _, on, _, _ = self._shape()
        self._run(c.tensor.ap([[on, m], [1, n]], offset=0), 0, 0, m, n)

    def iterate(self, en_partial_sum: Any = False, sync: Any = True,
                local_c_matrix: Any = None) -> MatmulIterator:
        if en_partial_sum not in (False, 0) or local_c_matrix is not None:
            raise _err("iterate(en_partial_sum=True) / local_c_matrix are not modelled")
        return MatmulIterator(self)

    def _blocks(self) -> list[tuple[int, int, int, int]]:
        """The base blocks (r0, c0, rows, cols) in the tiling's order."""
        t = self.tiling
        m, n, _, _, _, _, _ = self._shape()
        bm, bn = int(t.base_m) or m, int(t.base_n) or n
        rows = [(r, min(bm, m - r)) for r in range(0, m, bm)]
        cols = [(c, min(bn, n - c)) for c in range(0, n, bn)]
        if int(t.iterate_order) == 1:  # N first
            return [(r, c, h, w) for r, h in rows for c, w in cols]
        return [(r, c, h, w) for c, w in cols for r, h in rows]

    def get_tensor_c(self, tensor: Any = None, en_atomic: Any = 0,
                     en_sequential_write: Any = False, sync: Any = True,
                     optional_tensor: Any = None) -> None:
        """The current base block into `tensor`: a UB LocalTensor (base_n-wide rows) or its
        place in a GM tensor."""
        if en_atomic not in (0, False):
            raise _err("get_tensor_c(en_atomic=...): atomic accumulation is not modelled")
        if tensor is None:
            raise _err("get_tensor_c() returning the block's GM tensor is not modelled",
                       help="get_tensor_c(tensor) into a LocalTensor or GlobalTensor")
        blocks = self._blocks()
        if not 0 <= self.block < len(blocks):
            raise _err("get_tensor_c outside `with matmul.iterate() as count:`")
        r0, c0, h, w = blocks[self.block]
        t = self.tiling
        if isinstance(tensor, LocalTensor):
            width = int(t.base_n) if en_sequential_write else w
            if not en_sequential_write:
                raise _err("get_tensor_c into a LocalTensor without en_sequential_write: the "
                           "block's layout there is not modelled", help="en_sequential_write"
                           "=True (rows of base_n elements)")
            dst = tensor.tensor.ap([[width, h], [1, w]], offset=0)
        else:
            _, _, _, _, on, _, _ = self._shape()
            dst = _gm(tensor, "get_tensor_c").tensor.ap([[on, h], [1, w]], offset=r0 * on + c0)
        self._run(dst, r0, c0, h, w)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing(f"adv.Matmul.{name}").replace(span=caller_span(2))


class MatmulIterator:
    """`matmul.iterate()`: in pyasc a `with` whose body runs once per base block; apdsl's
    `@asc.jit` rewrites that `with` into a loop over this iterator (`kernel.block_loops`)."""

    def __init__(self, matmul: Matmul) -> None:
        self.matmul = matmul

    def __iter__(self) -> Any:
        mm = self.matmul
        for i in range(len(mm._blocks())):
            mm.block = i
            yield i
        mm.block = -1

    def __enter__(self) -> Any:
        raise ApdslRuntimeError(
            "with matmul.iterate() as count: pyasc runs the body once per base block, and "
            "apdsl could not rewrite this function's `with` into that loop (a nested "
            "function or one without its source)", code="APK674",
            help="write the kernel as a module-level @asc.jit function").replace(
                span=caller_span(2))

    def __exit__(self, *args: Any) -> None:
        return None


@record
class QuantConfig:
    """`asc.adv.QuantConfig(calc_count, offset_count, scale_count, work_local_size)`:
    AscendQuant's compile-time sizes (0: given at run time)."""

    calc_count: int = 0
    offset_count: int = 0
    scale_count: int = 0
    work_local_size: int = 0


def quant(dst: Any, src: Any, scale: Any, offset: Any, count: Any = None,
          temp_buffer: Any = None, reuse_source: Any = False, config: Any = None) -> None:
    """`asc.adv.quant(dst, src, scale, offset, count, temp_buffer)`: AscendQuant per tensor,
    the table's `asc.adv.quant` (`apdsl.runtime.ascend.quant`).  A config's calc_count, when
    set, is the count the kernel was compiled for: another count is APK674."""
    if config is not None:
        if not isinstance(config, QuantConfig):
            raise _err("quant: config must be an asc.adv.QuantConfig")
        fixed = int(config.calc_count)
        if fixed and count is not None and int(count) != fixed:
            raise _err(f"quant: count {count} but the QuantConfig was made for calc_count "
                       f"{fixed}", help="give the same count to both, or calc_count=0")
        count = fixed if count is None and fixed else count
    call_builtin("asc.adv.quant", (dst, src, scale, offset, count, temp_buffer), {})


def _gm(tensor: Any, what: str) -> GlobalTensor:
    if not isinstance(tensor, GlobalTensor):
        raise _err(f"{what}: takes a GlobalTensor (GM), got {type(tensor).__name__}")
    return tensor


def __getattr__(name: str) -> Any:
    """`asc.adv.NAME`: a modelled name, else APK660 at the user's line."""
    if name.startswith("__"):
        raise AttributeError(name)
    raise missing(f"adv.{name}", "apdsl.asc models asc.adv's Matmul API: " +
                  ", ".join(MODELLED)).replace(span=caller_span(2))
