"""`apdsl.formats`: Ascend data formats (the implementation lives in `apdsl.tensor.formats`)."""

from .tensor.formats import (  # noqa: F401 - the public names of the formats module
    FORMATS,
    Format,
    block_shape,
    c0_for,
    canonical,
    convert,
    dim_modes,
    logical_shape,
    padded_shape,
    storage_shape,
)
