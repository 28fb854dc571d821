"""pyasc's enums and parameter objects of the cube path: Fixpipe (`asc.FixpipeParamsV220`,
`asc.FixpipeConfig`, `asc.QuantModes`, `asc.CO2Layout`) and the convolution LoadData
(`asc.LoadData3DParamsV2`).

Names, member names and parameter names and orders are pyasc's (`asc.language.core.types`,
`asc.language.core.enums`); what each field means is the AscendC docs' (Fixpipe, "随路量化",
"随路ReLU", LoadData 3D v2).  Members are strings (`StrEnum`), as the vector unit's enums are.
The records are immutable; the instructions check their fields where they use them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ...records import record


def _members(cls_name: str, names: tuple[str, ...]) -> type[StrEnum]:
    return StrEnum(cls_name, [(n, n) for n in names])  # type: ignore[return-value]


# Fixpipe's conversions on the way out of L0C (Atlas A2: the first nine; the rest are 950's)
QuantModes = _members("QuantModes", ("NoQuant", "F322F16", "F322BF16", "DEQF16", "VDEQF16",
                                     "QF322B8_PRE", "VQF322B8_PRE", "REQ8", "VREQ8"))
# Fixpipe's output layout: NZ as in L0C, or row-major (NZ -> ND on the way)
CO2Layout = _members("CO2Layout", ("NZ", "ROW_MAJOR"))


@record
class FixpipeConfig:
    """Fixpipe's output layout (`asc.FixpipeConfig.cfg_row_major()` is the default)."""

    layout: Any = "ROW_MAJOR"

    @classmethod
    def cfg_nz(cls) -> FixpipeConfig:
        return cls("NZ")

    @classmethod
    def cfg_row_major(cls) -> FixpipeConfig:
        return cls("ROW_MAJOR")


@record
class FixpipeParamsV220:
    """One Fixpipe (L0C -> GM / L1) on Atlas A2: `n_size` columns and `m_size` rows of the
    L0C matrix; `src_stride` the L0C matrix's rows (the distance between its fractal columns,
    in rows), `dst_stride` the destination's row pitch in elements (ND) or its rows (NZ);
    `quant_pre` the conversion (`asc.QuantModes`), `deq_scalar` its 64-bit parameter when it
    is one per tensor; `relu_en` ReLU on the way; `unit_flag` 2 or 3 to read L0C under the
    unit flag instead of an M_FIX event."""

    n_size: int = 0
    m_size: int = 0
    src_stride: int = 0
    dst_stride: int = 0
    quant_pre: Any = "NoQuant"
    deq_scalar: int = 0
    nd_num: int = 1
    src_nd_stride: int = 0
    dst_nd_stride: int = 0
    relu_en: bool = False
    unit_flag: int = 0
    is_channel_split: bool = False


@record
class LoadData3DParamsV2:
    """LoadData 3D v2 (img2col, L1 -> L0A): the feature map in L1 (`l1_h` x `l1_w`,
    `channel_size` channels, NC1HWC0), the kernel (`filter_h` x `filter_w`, strides,
    dilations, `pad_list` = [left, right, top, bottom] of `pad_value`), and the window of the
    unrolled matrix it moves: `m_extension` rows (output positions) from `m_start_pt` and
    `k_extension` columns (channel x kernel position) from `k_start_pt`."""

    pad_list: Any = (0, 0, 0, 0)
    l1_h: int = 1
    l1_w: int = 1
    channel_size: int = 1
    k_extension: int = 1
    m_extension: int = 1
    k_start_pt: int = 0
    m_start_pt: int = 0
    stride_w: int = 1
    stride_h: int = 1
    filter_w: int = 1
    filter_h: int = 1
    dilation_filter_w: int = 1
    dilation_filter_h: int = 1
    en_transpose: bool = False
    pad_value: Any = 0
    filter_size_w: bool = False
    filter_size_h: bool = False
    f_matrix_ctrl: bool = False


@record
class Nd2NzParams:
    """DataCopy GM -> L1 with the ND -> NZ conversion (`data_copy(dst, src, params)`):
    `nd_num` ND matrices of `n_value` rows and `d_value` columns, `src_nd_matrix_stride`
    elements apart in GM, rows `src_d_value` elements long; in L1 each row of a matrix is cut
    into C0-element pieces (32 bytes), piece j of row r at `j * dst_nz_c0_stride + r *
    dst_nz_n_stride` 32-byte blocks from the matrix's start, the matrices
    `dst_nz_matrix_stride` elements apart; a row's last piece is padded with zeros."""

    nd_num: int
    n_value: int
    d_value: int
    src_nd_matrix_stride: int
    src_d_value: int
    dst_nz_c0_stride: int
    dst_nz_n_stride: int
    dst_nz_matrix_stride: int


@record
class LoadData2DParams:
    """LoadData 2D (L1 or GM -> L0A/L0B): `repeat_times` 512-byte fractals, the first the
    source's fractal `start_index`, the next ones `src_stride` fractals on; in the destination
    one after the other with `dst_gap` fractals between; `if_transpose` transposes each
    (16-bit data only, from L1)."""

    start_index: int = 0
    repeat_times: int = 1
    src_stride: int = 0
    sid: int = 0
    dst_gap: int = 0
    if_transpose: bool = False
    addr_mode: int = 0


# MmadParams' two flag sets (pyasc's two overloads): a kernel gives one of them whole
MMAD_LEGACY = ("is_bias", "fm_offset", "en_ssparse", "en_winograd_a", "en_winograd_b")
MMAD_FLAGS = ("unit_flag", "cmatrix_source", "cmatrix_init_val")


@record
class MmadParams:
    """Mmad's parameters (`mmad(dst, fm, filter[, bias], params)`): `m` x `k` by `k` x `n`,
    and what L0C starts from.  `given` is the flag set the kernel gave (pyasc's overloads:
    "legacy" `is_bias, fm_offset, en_ssparse, en_winograd_a, en_winograd_b`, "flags"
    `unit_flag, cmatrix_source, cmatrix_init_val`, or None); pyasc passes m, n and k to the
    device only with one of them (`make_mmad_params`)."""

    m: int = 0
    n: int = 0
    k: int = 0
    is_bias: bool = False
    unit_flag: int = 0
    cmatrix_source: bool = False
    cmatrix_init_val: bool = True
    given: Any = None


def make_mmad_params(m: Any = 0, n: Any = 0, k: Any = 0, is_bias: Any = None,
                     fm_offset: Any = None, en_ssparse: Any = None, en_winograd_a: Any = None,
                     en_winograd_b: Any = None, unit_flag: Any = None,
                     cmatrix_source: Any = None, cmatrix_init_val: Any = None) -> MmadParams:
    """`asc.MmadParams(...)` with pyasc's parameters in pyasc's order.  pyasc builds the
    struct from m, n, k and one whole flag set; with neither set whole it builds an empty
    `MmadParams` (AscendC's defaults, m = n = k = 0), which `mmad` refuses when m, n or k
    was given (APK670): what the device would run is not what the kernel says."""
    values = {"is_bias": is_bias, "fm_offset": fm_offset, "en_ssparse": en_ssparse,
              "en_winograd_a": en_winograd_a, "en_winograd_b": en_winograd_b,
              "unit_flag": unit_flag, "cmatrix_source": cmatrix_source,
              "cmatrix_init_val": cmatrix_init_val}
    legacy = all(values[f] is not None for f in MMAD_LEGACY) and \
        all(values[f] is None for f in MMAD_FLAGS)
    flags = all(values[f] is not None for f in MMAD_FLAGS) and is_bias is None
    if legacy:
        return MmadParams(m, n, k, is_bias=is_bias, given="legacy")
    if flags:
        return MmadParams(m, n, k, unit_flag=unit_flag, cmatrix_source=cmatrix_source,
                          cmatrix_init_val=cmatrix_init_val, given="flags")
    return MmadParams(m, n, k, given=None)


class _ConfigMaker:
    """`asc.FixpipeConfig` as programs spell it: called, a config of the layout given;
    `.cfg_nz()` and `.cfg_row_major()`, pyasc's two ready-made configs."""

    __slots__ = ()
    APK_ATTRS = frozenset({"cfg_nz", "cfg_row_major"})  # what `.apk` programs may read
    __name__ = "FixpipeConfig"

    def __call__(self, layout: Any = "ROW_MAJOR") -> FixpipeConfig:
        return FixpipeConfig(layout)

    @staticmethod
    def cfg_nz() -> FixpipeConfig:
        return FixpipeConfig("NZ")

    @staticmethod
    def cfg_row_major() -> FixpipeConfig:
        return FixpipeConfig("ROW_MAJOR")


CUBE_ENUMS: dict[str, type[StrEnum]] = {"QuantModes": QuantModes, "CO2Layout": CO2Layout}
CUBE_PARAMS: dict[str, Any] = {"FixpipeConfig": _ConfigMaker(),
                                "FixpipeParamsV220": FixpipeParamsV220,
                                "LoadData3DParamsV2": LoadData3DParamsV2,
                                "Nd2NzParams": Nd2NzParams, "LoadData2DParams": LoadData2DParams,
                                "MmadParams": make_mmad_params}
