# Ported from the nki.isa.iota examples (aws-neuron/aws-neuron-sdk nki/test/test_nki_isa_iota.py,
# `nki_iota`, examples 1-5) to the current API: each `nl.arange` expression becomes the
# `pattern`, `offset` and `channel_multiplier` of `nisa.iota(dst, ...)`, and nl.store a
# dma_copy into an int32 output.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def nki_iota():
    # Example 1: a = [0, 1, ..., 511] in partition 0
    a = nl.ndarray((1, 512), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=a, pattern=[[1, 512]], offset=0)
    # Example 2: b = [[0], [1], ..., [127]], one value per partition
    b = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=b, pattern=[[0, 1]], offset=0, channel_multiplier=1)
    # Example 3: c = [0, -1, ..., -511] in partition 0
    c = nl.ndarray((1, 512), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=c, pattern=[[-1, 512]], offset=0)
    # Example 4: d = [[5], [7], ..., [259]]
    d = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=d, pattern=[[0, 1]], offset=5, channel_multiplier=2)
    # Example 5: e[p, f] = p + f, shape [128, 512]
    e = nl.ndarray((128, 512), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=e, pattern=[[1, 512]], offset=0, channel_multiplier=1)

    outs = []
    for tile in (a, b, c, d, e):
        out = nl.ndarray(tile.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=tile)
        outs.append(out)
    return tuple(outs)
