"""pyasc's data types (`asc.float16`, `asc.half`, ...): a kernel reads one from a global
address (`x.dtype`) and sizes its buffers with `sizeof()`."""

from __future__ import annotations

import numpy as np

from ..records import record


@record
class DataType:
    """A pyasc element type, by its pyasc name ("float16"); `numpy` is NumPy's name for it."""

    name: str

    def sizeof(self) -> int:
        """Bytes per element."""
        return int(np.dtype(self.name).itemsize)

    @property
    def numpy(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


NAMES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
         "float32", "float64")
TYPES: dict[str, DataType] = {n: DataType(n) for n in NAMES}
ALIASES = {"half": "float16", "float_": "float32", "double": "float64", "int_": "int32",
           "bool_": "int8"}
TYPES.update({a: TYPES[n] for a, n in ALIASES.items()})


def of(value: object) -> DataType:
    """The pyasc type of a NumPy dtype or an apdsl tensor dtype (by its name)."""
    name = getattr(value, "name", None) or str(value)
    return TYPES.get(name) or DataType(name)
