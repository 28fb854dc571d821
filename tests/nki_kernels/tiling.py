"""Helpers the GEMM kernels of these tests import (a kernel's own helper module, imported
unchanged by `import nki` code): tile counts and loaders."""
import nki.isa as nisa
import nki.language as nl


def tiles(extent, size, what):
    assert extent % size == 0, f"{what} = {extent} is not a multiple of the tile {size}"
    return extent // size


def load_block(src, row, col, rows, cols):
    """The (rows, cols) block of src at block coordinates (row, col), as an SBUF tile."""
    block = nl.ndarray((rows, cols), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=block, src=src[row * rows:(row + 1) * rows, col * cols:(col + 1) * cols])
    return block


def drain(acc, dst, row, col):
    """PSUM accumulator -> SBUF -> its block of dst in HBM."""
    rows, cols = acc.shape
    staged = nl.ndarray((rows, cols), dtype=dst.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=staged, src=acc)
    nisa.dma_copy(dst=dst[row * rows:(row + 1) * rows, col * cols:(col + 1) * cols],
                  src=staged)
