"""Fractal-format tensors: a format's nested modes (from `formats.dim_modes`) become the
tensor's layout, so views, slices and tiles stay logical and lowering walks the fractal storage."""

from __future__ import annotations

from math import prod

from . import formats
from .dtypes import DType
from .layout import Layout

L0C_FRACTAL = 16  # L0C holds 16 x 16 fractals whatever the accumulator dtype


def fractal_c0(fmt: str, buffer: str, c0: int | None) -> int | None:
    if c0 is not None:
        return c0
    return L0C_FRACTAL if buffer == "l0c" and fmt == "NZ" else None


def fractal_layout(fmt: str, shape: tuple[int, ...], dtype: DType, buffer: str,
                   c0: int | None = None) -> tuple[Layout, int]:
    """The layout of a tensor of logical `shape` stored in `fmt`, and its storage elements."""
    formats.check_buffer(fmt, buffer)
    c = fractal_c0(fmt, buffer, c0)
    modes = formats.dim_modes(fmt, shape, dtype, c)
    elements = prod(formats.storage_shape(fmt, shape, dtype, c))
    return Layout.from_modes(shape, modes), elements
