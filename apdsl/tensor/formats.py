"""Ascend data formats, as the rest of apdsl reads them: the registry (`format_registry`: names,
logical axes, storage order, buffers, C0), each format's plan and layout for a logical shape
(`format_plan`; `stored` is the one place a format, a shape, a dtype and a buffer become a
layout and a storage size) and conversion between formats (`format_convert`).

Pure NumPy; the rest of the tensor model builds on it, not the other way round.
"""

from __future__ import annotations

from .format_convert import convert
from .format_plan import (
    Stored,
    block_shape,
    dim_modes,
    logical_shape,
    offsets,
    padded_shape,
    storage_shape,
    stored,
)
from .format_registry import (
    ALL_BUFFERS,
    ALL_NAMES,
    ASCEND_BUFFERS,
    CONV4,
    CONV5,
    FORMATS,
    FRACTAL_BYTES,
    FRACTAL_ROWS,
    L0C_FRACTAL,
    MATRIX,
    NKI_BUFFERS,
    Format,
    Modes,
    accepts,
    buffer_c0,
    c0_for,
    canonical,
    check_buffer,
    lookup,
)

__all__ = ["ALL_BUFFERS", "ALL_NAMES", "ASCEND_BUFFERS", "CONV4", "CONV5", "FORMATS",
           "FRACTAL_BYTES", "FRACTAL_ROWS", "L0C_FRACTAL", "MATRIX", "NKI_BUFFERS", "Format",
           "Modes", "Stored", "accepts", "block_shape", "buffer_c0", "c0_for", "canonical",
           "check_buffer", "convert", "dim_modes", "logical_shape", "lookup", "offsets",
           "padded_shape", "storage_shape", "stored"]
