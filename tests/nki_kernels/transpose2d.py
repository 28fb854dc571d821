# Re-typed from the NKI transpose2d tutorial, `tensor_transpose2D_kernel_`
# (aws-neuron/aws-neuron-sdk nki/examples/transpose2d/transpose2d_nki_kernels.py,
# NKI_EXAMPLE_33), with its `__main__` block.  `transpose_3x4` (ours) fixes shape2D so the
# command line can run it with array inputs only.
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def tensor_transpose2D_kernel_(in_tensor, shape2D):
    out_tensor = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.shared_hbm)
    sz_p, _ = in_tensor.shape

    in_tile = nl.ndarray(in_tensor.shape, dtype=in_tensor.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=in_tile, src=in_tensor)

    sz_f1, sz_f2 = shape2D

    out_tile = nl.ndarray(shape=(sz_p, sz_f2 * sz_f1), dtype=in_tensor.dtype, buffer=nl.sbuf)
    for i_f1 in nl.affine_range(sz_f1):
        for i_f2 in nl.affine_range(sz_f2):
            nisa.tensor_copy(dst=out_tile[:, nl.ds(i_f2 * sz_f1 + i_f1, 1)],
                             src=in_tile[:, nl.ds(i_f1 * sz_f2 + i_f2, 1)])

    nisa.dma_copy(dst=out_tensor, src=out_tile)
    return out_tensor


@nki.jit
def transpose_3x4(in_tensor):
    return tensor_transpose2D_kernel_(in_tensor, (3, 4))


if __name__ == "__main__":
    P, X, Y = 5, 3, 4
    a = np.arange(P * X * Y, dtype=np.int8).reshape((P, X * Y))
    a_t_nki = tensor_transpose2D_kernel_(a, (X, Y))
    a_t_np = np.transpose(a.reshape(P, X, Y), (0, 2, 1)).reshape(P, X * Y)
    print(np.allclose(a_t_nki, a_t_np))
