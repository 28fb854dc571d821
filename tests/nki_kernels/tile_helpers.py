# Helper module of `matmul_helper.py`: the hoisted loads of the tutorial's
# `nki_matmul_hoist_load_` (aws-neuron/aws-neuron-sdk
# nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py, NKI_EXAMPLE_19).
import nki.isa as nisa
import nki.language as nl


def load_column_tiles(src, col, tile_k, tile_f):
    """The K // tile_k SBUF tiles of columns col*tile_f.. of src (a list)."""
    K = src.shape[0]
    tiles = []
    for k in nl.affine_range(K // tile_k):
        tile = nl.ndarray(shape=(tile_k, tile_f), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=src[k * tile_k:(k + 1) * tile_k,
                                        col * tile_f:(col + 1) * tile_f])
        tiles.append(tile)
    return tiles
