"""Running sum along the last axis of a 2-D or 3-D tensor, tile by tile: partitions in tiles
of 128 rows (with a tail), the free axis in tiles of 512 (with a tail), each free tile's scan
(`tensor_tensor_scan`: r = x * 1 + r) starting from the previous tile's last column."""
import nki
import nki.isa as nisa
import nki.language as nl

from ..util.checks import require
from ..util.spans import spans

FREE_TILE = 512


@nki.jit
def prefix_sum(x, axis=-1):
    require(axis in (-1, len(x.shape) - 1), "prefix_sum runs along the last axis only")
    require(len(x.shape) in (2, 3), "prefix_sum takes 2-D or 3-D tensors")
    flat = x.reshape((x.shape[0] * x.shape[1], x.shape[2])) if len(x.shape) == 3 else x
    rows, width = flat.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out_flat = out.reshape((rows, width)) if len(x.shape) == 3 else out
    for r0, nr in spans(rows, nl.tile_size.pmax):
        carry = nl.ndarray((nl.tile_size.pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=carry[:nr], value=0.0)
        for c0, nc in spans(width, FREE_TILE):
            data = nl.ndarray((nl.tile_size.pmax, FREE_TILE), dtype=nl.float32,
                              buffer=nl.sbuf)
            nisa.dma_copy(dst=data[:nr, :nc], src=flat[r0:r0 + nr, c0:c0 + nc])
            ones = nl.ndarray((nl.tile_size.pmax, FREE_TILE), dtype=nl.float32,
                              buffer=nl.sbuf)
            nisa.memset(dst=ones[:nr, :nc], value=1.0)
            run = nl.ndarray((nl.tile_size.pmax, FREE_TILE), dtype=nl.float32,
                             buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=run[:nr, :nc], data0=ones[:nr, :nc],
                                    data1=data[:nr, :nc], initial=carry[:nr],
                                    op0=nl.multiply, op1=nl.add)
            staged = nl.ndarray((nl.tile_size.pmax, FREE_TILE), dtype=x.dtype,
                                buffer=nl.sbuf)
            nisa.tensor_copy(dst=staged[:nr, :nc], src=run[:nr, :nc])
            nisa.dma_copy(dst=out_flat[r0:r0 + nr, c0:c0 + nc], src=staged[:nr, :nc])
            nisa.tensor_copy(dst=carry[:nr], src=run[:nr, nc - 1:nc])
    return out
