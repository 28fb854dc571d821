"""`asc.adv.matmul`: one block of AscendC's Matmul high-level API (pyasc's `asc.adv.Matmul`),
`dst = a @ b (+ bias)`, as `IterateAll` and `GetTensorC` deliver it.

The API runs the whole cube pipeline itself (GM -> L1 -> L0A/L0B, Mmad, Fixpipe) and orders
its own pipes (the AscendC Matmul pages: its calls need no events around them), so apdsl runs
a block as one instruction: it reads the block's rows of A (`a`, M x K) and columns of B (`b`,
K x N) from GM -- any strided views, transposed ones too -- multiplies them in the cube unit's
accumulator (float32 for float16, bfloat16 and float32 inputs, int32 for int8: `mmad`'s
product), adds the bias row (`bias`, N values), converts to dst's dtype by the one cast rule
(Fixpipe's float32 -> float16/bfloat16 rounding to nearest even) and writes `dst`: the block's
place in a GM matrix, or a UB tensor.  It is recorded on the pipe that delivers the result on
the core that asks: on a vector core (`asc.adv.matmul`) MTE3 for GM and V for UB, whose
instructions after `GetTensorC` read the block in order; on the cube core itself
(`asc.adv.matmul_cube`, a `matmul_cube_only` kernel) FIX.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.machine import current
from ..core import execute as ex
from ..core import trace
from ..core.blas import product
from ..core.operands import check_operand, instruction_label, resolve_operands, tensor_arg
from ..sync.pipes import PIPE_INDEX
from ..table import TABLE, engine_of
from .mmad import ACCUMULATOR

OP = "asc.adv.matmul"
CUBE = "asc.adv.matmul_cube"
# the output dtypes the API writes from each accumulator (Matmul's C types on Atlas A2)
OUTPUTS = {"float32": ("float32", "float16", "bfloat16"), "int32": ("int32",)}


def _err(label: str, message: str, **kw: Any) -> ApdslRuntimeError:
    return ApdslRuntimeError(f"{label}: {message}", code="APK674", **kw)


def matmul(dst: Any, a: Any, b: Any, bias: Any = None, name: str | None = None) -> None:
    """`dst = a @ b (+ bias)` for one Matmul block asked for on a vector core (see the module
    docstring): recorded on MTE3 (C in GM) or V (C in UB)."""
    _block(OP, dst, a, b, bias, name)


def matmul_cube(dst: Any, a: Any, b: Any, bias: Any = None, name: str | None = None) -> None:
    """The same on the cube core itself (`matmul_cube_only`): recorded on FIX."""
    _block(CUBE, dst, a, b, bias, name)


def _block(op: str, dst: Any, a: Any, b: Any, bias: Any, name: str | None) -> None:
    label = instruction_label(op, name)
    ops = {"dst": tensor_arg(dst, label, "dst"), "a": tensor_arg(a, label, "a"),
           "b": tensor_arg(b, label, "b")}
    if bias is not None:
        ops["bias"] = tensor_arg(bias, label, "bias")
    for role, t in ops.items():
        check_operand(TABLE[op], label, role, t)
    d, x, y = ops["dst"], ops["a"], ops["b"]
    acc = ACCUMULATOR.get(x.dtype.name)
    if x.dtype != y.dtype or acc is None or d.dtype.name not in OUTPUTS[acc]:
        raise _err(label, f"A is {x.dtype}, B is {y.dtype}, C is {d.dtype}: the Matmul API "
                   "multiplies two inputs of one dtype into float32 (int32 for int8) and "
                   "writes that or, for float32, float16 or bfloat16",
                   help="declare the MatmulTypes with the dtypes of the GM data")
    (m, k), (k2, n) = x.shape, y.shape
    if k != k2 or d.shape != (m, n):
        raise _err(label, f"A is {m} x {k}, B {k2} x {n}, C {d.shape[0]} x {d.shape[1]}: the "
                   "block's sizes do not fit")
    pairs = [("a", x), ("b", y), ("dst", d)]
    if "bias" in ops:
        if ops["bias"].shape != (n,):
            raise _err(label, f"the bias holds {ops['bias'].shape}; the block takes {n} values")
        pairs.append(("bias", ops["bias"]))
    accs = resolve_operands(label, ex.TI_GROUP, *pairs)
    trace.record(op, name, dict(pairs))
    _settled(op, dict(pairs))
    if accs is None:
        return
    work = np.float32 if acc == "float32" else np.float64
    out = product(ex.read(accs[0], label, "a").astype(work),
                  ex.read(accs[1], label, "b").astype(work))
    if "bias" in ops:
        out = out + ex.read(accs[3], label, "bias").astype(work).reshape(1, n)
    if acc == "int32":
        out = np.rint(out).astype(np.int64).astype(np.int32)
    ex.prepare_write(accs[2], label, "dst")
    ex.store(accs[2], out)


def _settled(op: str, operands: dict[str, Any]) -> None:
    """The API returns once its block is delivered (sync=True: IterateAll and GetTensorC wait
    for their own events): every pipe of the core is ordered after the block's write on its
    pipe (a V write as a pipe_barrier(V) would order it)."""
    sync = current().sync
    if sync is None:
        return
    pipe = engine_of(op, operands)
    sync.join_all(sync.snapshot(PIPE_INDEX[pipe]))
    if pipe == "V":
        sync.barrier("V")
