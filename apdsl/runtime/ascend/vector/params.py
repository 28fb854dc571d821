"""pyasc's enums and parameter objects (`asc.RoundMode`, `asc.BinaryRepeatParams`, ...).

Names, member names and parameter names and orders are pyasc's (`asc.language.core.enums` and
`asc.language.core.types`).  Enum members are strings (`StrEnum`): an instruction takes the
member or its name, and `asc.PipeID.PIPE_V` is the pipe name `"V"` that `pipe_barrier` takes,
`asc.HardEvent.MTE2_V` the event name `"MTE2_V"` that `set_flag` takes.  Parameter objects are
immutable records; strides and counts are checked where an instruction uses them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ....records import record
from ...sync.pipes import HARD_EVENTS
from ..cube_params import CUBE_ENUMS, CUBE_PARAMS


def _members(cls_name: str, names: tuple[str, ...]) -> type[StrEnum]:
    return StrEnum(cls_name, [(n, n) for n in names])  # type: ignore[return-value]


RoundMode = _members("RoundMode", ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                   "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"))
CMPMODE = _members("CMPMODE", ("LT", "GT", "EQ", "LE", "GE", "NE"))
SelMode = _members("SelMode", ("VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE",
                               "VSEL_TENSOR_TENSOR_MODE"))
TPosition = _members("TPosition", ("GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2",
                                   "VECIN", "VECOUT", "VECCALC"))
ReduceOrder = _members("ReduceOrder", ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE",
                                       "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX"))
HardEvent = _members("HardEvent", HARD_EVENTS)
TransposeType = _members("TransposeType", (
    "TRANSPOSE_TYPE_NONE", "TRANSPOSE_NZ2ND_0213", "TRANSPOSE_NZ2NZ_0213",
    "TRANSPOSE_NZ2NZ_012_WITH_N", "TRANSPOSE_NZ2ND_012_WITH_N", "TRANSPOSE_NZ2ND_012_WITHOUT_N",
    "TRANSPOSE_NZ2NZ_012_WITHOUT_N", "TRANSPOSE_ND2ND_ONLY", "TRANSPOSE_ND_UB_GM",
    "TRANSPOSE_GRAD_ND_UB_GM", "TRANSPOSE_ND2ND_B16", "TRANSPOSE_NCHW2NHWC",
    "TRANSPOSE_NHWC2NCHW"))
# pyasc's PipeID: each member is the pipe name the synchronisation builtins take
PipeID = StrEnum("PipeID", [("PIPE_S", "S"), ("PIPE_V", "V"), ("PIPE_M", "M"),  # type: ignore[misc]
                            ("PIPE_MTE1", "MTE1"), ("PIPE_MTE2", "MTE2"), ("PIPE_MTE3", "MTE3"),
                            ("PIPE_ALL", "ALL"), ("PIPE_FIX", "FIX")])

ENUMS: dict[str, type[StrEnum]] = {
    "RoundMode": RoundMode, "CMPMODE": CMPMODE, "SelMode": SelMode, "TPosition": TPosition,
    "ReduceOrder": ReduceOrder, "HardEvent": HardEvent, "PipeID": PipeID,
    "TransposeType": TransposeType, **CUBE_ENUMS}


@record
class BinaryRepeatParams:
    """Block and repeat strides (in 32-byte blocks) of a two-input vector instruction."""

    dst_blk_stride: int = 1
    src0_blk_stride: int = 1
    src1_blk_stride: int = 1
    dst_rep_stride: int = 8
    src0_rep_stride: int = 8
    src1_rep_stride: int = 8

    def strides(self) -> dict[str, tuple[Any, Any]]:
        return {"dst": (self.dst_blk_stride, self.dst_rep_stride),
                "src0": (self.src0_blk_stride, self.src0_rep_stride),
                "src1": (self.src1_blk_stride, self.src1_rep_stride)}


@record
class UnaryRepeatParams:
    """Block and repeat strides (in 32-byte blocks) of a one-input vector instruction."""

    dst_blk_stride: int = 1
    src_blk_stride: int = 1
    dst_rep_stride: int = 8
    src_rep_stride: int = 8

    def strides(self) -> dict[str, tuple[Any, Any]]:
        return {"dst": (self.dst_blk_stride, self.dst_rep_stride),
                "src": (self.src_blk_stride, self.src_rep_stride)}


@record
class BrcbRepeatParams:
    """Brcb's destination block and repeat strides (in 32-byte blocks)."""

    dst_blk_stride: int = 1
    dst_rep_stride: int = 8


@record
class DataCopyParams:
    """DataCopy's bursts: `block_count` bursts of `block_len` 32-byte blocks, with gaps of
    `src_stride` / `dst_stride` blocks between them."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@record
class DataCopyExtParams:
    """DataCopyPad's bursts: `block_len` in bytes; the GM side's stride in bytes, the UB
    side's in 32-byte blocks."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0
    rsv: int = 0


@record
class DataCopyPadExtParams:
    """DataCopyPad's padding (GM -> UB): `left_padding`/`right_padding` elements of
    `padding_value` around each burst when `is_pad`."""

    dtype: Any = None
    is_pad: bool = False
    left_padding: int = 0
    right_padding: int = 0
    padding_value: Any = 0


@record
class DataCopyPadParams:
    """The older DataCopyPad padding parameters (no dtype)."""

    is_pad: bool = False
    left_padding: int = 0
    right_padding: int = 0
    padding_value: Any = 0


@record
class TransDataTo5HDParams:
    """TransDataTo5HD's parameters."""

    dst_high_half: bool = False
    src_high_half: bool = False
    repeat_times: int = 1
    dst_rep_stride: int = 0
    src_rep_stride: int = 0


@record
class CopyRepeatParams:
    """Copy's block strides and repeat strides (in 32-byte blocks; 0 unless given, as in
    pyasc)."""

    dst_stride: int = 0
    src_stride: int = 0
    dst_repeat_size: int = 0
    src_repeat_size: int = 0


@record
class TransposeParamsExt:
    """Transpose's extended form: the [N, C, H, W] sizes and the transpose type."""

    n_size: int = 0
    c_size: int = 0
    h_size: int = 0
    w_size: int = 0
    transpose_type: Any = "TRANSPOSE_ND2ND_B16"


PARAMS: dict[str, type] = {
    "BinaryRepeatParams": BinaryRepeatParams, "UnaryRepeatParams": UnaryRepeatParams,
    "BrcbRepeatParams": BrcbRepeatParams, "DataCopyParams": DataCopyParams,
    "DataCopyExtParams": DataCopyExtParams, "DataCopyPadExtParams": DataCopyPadExtParams,
    "DataCopyPadParams": DataCopyPadParams, "TransDataTo5HDParams": TransDataTo5HDParams,
    "TransposeParamsExt": TransposeParamsExt, "CopyRepeatParams": CopyRepeatParams,
    **CUBE_PARAMS}
