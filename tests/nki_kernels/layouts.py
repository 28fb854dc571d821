"""Data-movement kernels written for apdsl's tests: a transpose of the two free dimensions
of each partition by one access pattern, a row gather through an indirect DMA, and iota
patterns."""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swap_free_dims(x, rows=3, cols=4):
    """Each partition holds a rows x cols block (row-major); the result holds its transpose."""
    P, F = x.shape
    assert F == rows * cols
    tile = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    swapped = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    # walk the block column by column: element (r, c) sits at r * cols + c
    nisa.tensor_copy(dst=swapped, src=tile.ap([[F, P], [1, cols], [cols, rows]]))
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=swapped)
    return out


@nki.jit
def swap_free_dims_by_columns(x, rows=3, cols=4):
    """The same transpose, one column at a time (nl.ds views)."""
    P, F = x.shape
    tile = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    swapped = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    for r in nl.affine_range(rows):
        for c in nl.affine_range(cols):
            nisa.tensor_copy(dst=swapped[:, nl.ds(c * rows + r, 1)],
                             src=tile[:, nl.ds(r * cols + c, 1)])
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=swapped)
    return out


@nki.jit
def gather_rows(table, row_ids):
    """out[i] = table[row_ids[i, 0]]: the row numbers live in SBUF and offset the DMA."""
    n, width = row_ids.shape[0], table.shape[1]
    ids = nl.ndarray((n, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=row_ids)
    rows = nl.ndarray((n, width), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=table.ap(pattern=[[width, n], [1, width]], vector_offset=ids,
                                         indirect_dim=0))
    out = nl.ndarray((n, width), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out


def _to_hbm(tile):
    out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out


@nki.jit
def iota_patterns():
    """Four iota tiles: a descending even ramp, 3p + 7 per partition, 4p + f over a grid,
    and a two-level pattern 100 + 16i + j."""
    ramp = nl.ndarray((1, 256), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=ramp, pattern=[[-2, 256]], offset=1000)
    column = nl.ndarray((64, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=column, pattern=[[0, 1]], offset=7, channel_multiplier=3)
    grid = nl.ndarray((32, 128), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=grid, pattern=[[1, 128]], offset=0, channel_multiplier=4)
    nested = nl.ndarray((2, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=nested, pattern=[[16, 4], [1, 16]], offset=100)
    return tuple(_to_hbm(t) for t in (ramp, column, grid, nested))
