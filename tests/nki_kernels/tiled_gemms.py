"""Tiled GEMMs written for apdsl's tests, C = lhsT.T @ rhs in float32, each a different loop
structure over the same tiles (K on partitions, 128 x 128 stationary, 128 x 512 moving):

- gemm_tiled: m, n outer (affine), k inner (sequential) accumulating in one PSUM tile;
- gemm_stationary_resident: every K tile of an M block of lhsT loaded once per m, kept in a
  list across the n loop;
- gemm_wide_moving: rhs loaded `group` moving tiles wide per k, feeding `group` PSUM tiles;
- gemm_first_k_resets: one PSUM tile per block, `accumulate=(k > 0)` on the first product;
- gemm_configured: tile sizes from an nl.NKIObject config whose fields are plain class
  attributes (NKI's data-class rule);
- gemm_column_programs: an SPMD launch, `kernel[n]`, each program computing its columns."""
import nki
import nki.isa as nisa
import nki.language as nl
from tiling import drain, load_block, tiles

TM = nl.tile_size.gemm_stationary_fmax
TK = nl.tile_size.pmax
TN = nl.tile_size.gemm_moving_fmax


@nki.jit
def gemm_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(tiles(M, TM, "M")):
        for n in nl.affine_range(tiles(N, TN, "N")):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.sequential_range(tiles(K, TK, "K")):
                nisa.nc_matmul(dst=acc, stationary=load_block(lhsT, k, m, TK, TM),
                               moving=load_block(rhs, k, n, TK, TN))
            drain(acc, out, m, n)
    return out


@nki.jit
def gemm_stationary_resident(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    kt = tiles(K, TK, "K")
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(tiles(M, TM, "M")):
        resident = [load_block(lhsT, k, m, TK, TM) for k in range(kt)]
        for n in nl.affine_range(tiles(N, TN, "N")):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(kt):
                nisa.nc_matmul(dst=acc, stationary=resident[k],
                               moving=load_block(rhs, k, n, TK, TN))
            drain(acc, out, m, n)
    return out


@nki.jit
def gemm_wide_moving(lhsT, rhs, group=2):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(tiles(M, TM, "M")):
        for g in nl.affine_range(tiles(N, TN * group, "N")):
            accs = [nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for _ in range(group)]
            for k in nl.sequential_range(tiles(K, TK, "K")):
                stationary = load_block(lhsT, k, m, TK, TM)
                wide = load_block(rhs, k, g, TK, TN * group)
                for j in range(group):
                    nisa.nc_matmul(dst=accs[j], stationary=stationary,
                                   moving=wide[:, j * TN:(j + 1) * TN])
            for j in range(group):
                drain(accs[j], out, m, g * group + j)
    return out


@nki.jit
def gemm_first_k_resets(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    assert M <= TM and N <= TN, "one output block"
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.static_range(tiles(K, TK, "K")):
        nisa.nc_matmul(dst=acc, stationary=load_block(lhsT, k, 0, TK, M),
                       moving=load_block(rhs, k, 0, TK, N), accumulate=(k > 0))
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    drain(acc, out, 0, 0)
    return out


class GemmTiles(nl.NKIObject):
    rows = 128
    depth = 128
    cols = 256


@nki.jit
def gemm_configured(lhsT, rhs, cfg=None):
    cfg = cfg if cfg is not None else GemmTiles(cols=512)
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(tiles(M, cfg.rows, "M")):
        for n in nl.affine_range(tiles(N, cfg.cols, "N")):
            acc = nl.ndarray((cfg.rows, cfg.cols), dtype=nl.float32, buffer=nl.psum)
            for k in nl.sequential_range(tiles(K, cfg.depth, "K")):
                nisa.nc_matmul(dst=acc, stationary=load_block(lhsT, k, m, cfg.depth, cfg.rows),
                               moving=load_block(rhs, k, n, cfg.depth, cfg.cols))
            drain(acc, out, m, n)
    return out


@nki.jit
def gemm_column_programs(lhsT, rhs):
    """Program p of n computes the moving-tile column blocks p, p + n, p + 2n, ..."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    stationary = nl.ndarray((K, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=stationary, src=lhsT)
    for block in range(nl.program_id(0), tiles(N, TN, "N"), nl.num_programs(0)):
        acc = nl.ndarray((M, TN), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=stationary, moving=load_block(rhs, 0, block, K, TN))
        drain(acc, out, 0, block)
    return out
