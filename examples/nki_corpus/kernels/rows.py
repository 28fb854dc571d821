"""Three small NKI kernels, a repository's worth for `apdsl corpus` to measure: one its test
checks against NumPy, one that reduces across two ranks (a corpus run is one rank: it needs `--ranks 2`), and
one nothing calls."""
import nki
import nki.collectives as cc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_rows(x, w):
    """out[p, :] = x[p, :] * w[p, 0]"""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    s = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=s, src=w)
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=s)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=y)
    return out


@nki.jit
def summed_over_ranks(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    cc.all_reduce(srcs=[x], dsts=[out], replica_group=cc.ReplicaGroup([[0, 1]]), op=nl.add)
    return out


@nki.jit
def negate(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.negative(nl.load(x)))
    return out
