"""`nc_n_gather` (NKI isa docstring; GpSimd; the current name of `nl.gather_flattened`): in
each partition, the free dimensions of `data` are flattened and `dst` takes the elements the
uint32 `indices` of the same partition name; `dst` has indices' elements a partition and
data's dtype.  Every index must lie in [0, data's elements a partition): the docs leave any
other index undefined ("garbage" in the legacy reference), so apdsl refuses it at run time."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import TargetError
from ...tensor.view import Tensor
from ..core import unwritten
from ..table import semantics_movement as sm
from . import reduce_run as rr


def nc_n_gather(dst: Tensor, data: Tensor, indices: Tensor, engine: Any = "unknown",
                name: str | None = None) -> None:
    """Gather each partition's flattened free elements by index (see the module docstring).

    >>> x = apdsl.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 2, 2), "sbuf")
    >>> i = apdsl.from_numpy(np.array([[0, 3, 3], [2, 1, 0]], np.uint32), "sbuf")
    >>> d = apdsl.ndarray((2, 3), "float32", "sbuf")
    >>> apdsl.runtime.nki.gather.nc_n_gather(d, x, i)
    >>> d.numpy()
    array([[0., 3., 3.],
           [6., 5., 4.]], dtype=float32)
    """
    call = rr.begin("nc_n_gather", name, {"dst": dst, "data": data, "indices": indices},
                    engine=engine)
    if call.tensors["dst"].dtype != call.tensors["data"].dtype:
        raise TargetError(f"{call.label}: dst is {call.tensors['dst'].dtype.name} and data "
                          f"{call.tensors['data'].dtype.name}; nc_n_gather's dst has data's "
                          "dtype (the docstring)", code="APK931",
                          help="gather into a tile of data's dtype, then tensor_copy it")
    rr.same_partitions(call, "dst", "data", "indices")
    n = call.free("indices")
    if n is not None:
        rr.elements(call, "dst", n, "holds one gathered element for each index")
    call.record()
    if call.accs is None:
        return
    values = call.read("data")
    index = call.read("indices").astype(np.int64)
    size = call.free("data") or 0
    bad = np.argwhere((index < 0) | (index >= size))
    if bad.size:
        where = tuple(int(v) for v in bad[0])
        raise rr.runtime_error(
            call, f"index {int(index[where])} at {where} is outside [0, {size}), the "
            "elements of data's partition (the docs define no result for it)", "APK931",
            "keep every index below data.size / data.shape[0]", index=int(index[where]))
    parts = values.shape[0]
    flat = index.reshape(parts, -1)
    # an output element is unwritten exactly when the data element it takes is (each
    # partition gathers from its own partition only)
    unwritten.moved_as("data", lambda bad: sm.n_gather(bad.reshape(parts, -1), flat))
    call.write({"dst": sm.n_gather(values.reshape(parts, -1), flat)})
