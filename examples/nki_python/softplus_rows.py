"""A kernel in the legacy NKI API (the `neuronxcc.nki` of the Neuron SDK before the `nki`
package): index grids, a mask for the tail tile, instructions that return their tiles.

softplus(x) = log(1 + exp(x)) of an [N, F] tensor for any N: 128-row tiles, the last one
masked to the rows that exist.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softplus_rows(x):
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(f)[None, :]
    for t in nl.affine_range((n + 127) // 128):
        rows = t * 128 + i_p
        tile = nl.load(x[rows, i_f], mask=(rows < n))
        e = nisa.activation(op=nl.exp, data=tile, mask=(rows < n))
        one_plus = nisa.tensor_scalar(e, nl.add, 1.0, mask=(rows < n))
        y = nisa.activation(op=nl.log, data=one_plus, mask=(rows < n))
        nl.store(out[rows, i_f], value=y, mask=(rows < n))
    return out
