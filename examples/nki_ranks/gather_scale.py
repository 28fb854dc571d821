"""A kernel for a group of ranks: every rank gathers the others' rows (`ncc.all_gather`),
then scales the whole by its own rank + 1 (`ncc.rank_id`).  Each rank is its own device with
its own HBM; they meet at the collective.  Run: apdsl run gather_scale.py -i x=x.npy --ranks 2."""

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather_scale(x):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    whole = nl.ndarray((x.shape[0] * 2, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[whole], replica_group=ncc.ReplicaGroup([[0, 1]]),
                   collective_dim=0)
    t = nl.ndarray(whole.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=whole)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id().value + 1))
    out = nl.ndarray(whole.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
