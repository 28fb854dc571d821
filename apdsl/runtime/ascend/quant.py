"""`asc.adv.quant`: AscendC's AscendQuant, per-tensor (pyasc's `asc.adv.quant(dst, src,
scale, offset, count, temp_buffer)`), on pipe V.

The AscendQuant page (Atlas A2): every step runs on the vector unit -- a float src (and the
float scale and offset) are converted to half first, then Muls by scale and Adds of offset in
half, then the half result is cast to int8 rounding half to even.  apdsl computes the same,
each vector step as its own instruction does (float32 arithmetic rounded to half, as the
`asc.muls`/`asc.adds` model), the last cast saturating as Cast does.  The count form: `count`
elements from each tensor's start (all of src when absent).  The shared temporary buffer is
the API's scratch: it must be a uint8 UB tensor; what the API leaves in it is not modelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ..core.operands import check_operand, instruction_label, tensor_arg
from ..table import TABLE
from ..table.semantics_vector import ascend_quant
from .vector import run

OP = "asc.adv.quant"


def quant(dst: Any, src: Any, scale: Any, offset: Any, count: Any = None,
          temp_buffer: Any = None, name: str | None = None) -> None:
    """dst = int8(rint(half(half(src) * scale) + offset)) for `count` elements (see the module
    docstring)."""
    label = instruction_label(OP, name)
    if temp_buffer is not None:
        check_operand(TABLE[OP], label, "temp_buffer", tensor_arg(temp_buffer, label,
                                                                   "temp_buffer"))
    for what, v in (("scale", scale), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ApdslRuntimeError(f"{label}: {what} must be a number, got {v!r}",
                                    code="APK550", help="the per-tensor form takes two floats")
    if count is None:
        count = tensor_arg(src, label, "src").shape[0]

    def make(lbl: str, tensors: dict[str, Any]) -> Any:
        return run.form_of(lbl, run.lanes_of(tensors), count, None, None, None, True, None)

    inst = run.prepare(OP, {"dst": dst, "src": src}, name, make)
    if inst is None:
        return
    inst.write(ascend_quant(inst.raw("src"), float(scale), float(offset)).astype(np.int64))
