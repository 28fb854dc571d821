"""TPipe/TQue/TBuf (SPEC 17): queues give buffers and order the producer's and consumer's
pipes as AscendC does, so kernels with queues pass the race checker without flags; misuse is
a located error.  Oracles: NumPy for values, a brute-force state model of a queue."""

from __future__ import annotations

import random

import numpy as np
import pytest

from apdsl.errors import ApdslError
from apdsl.runtime.ascend.queues import TPipe, TQue
from apdsl.semantics.program import Program


def run(tmp_path, text, inputs=None, grid=()):
    (tmp_path / "k.apk").write_text(text)
    return Program.from_path(str(tmp_path / "k.apk")).run(None, inputs or {}, grid=grid)


# each core moves its part of A through a double-buffered VECIN queue, a V copy into a
# VECOUT queue, and out (the hello-world add's shape, with a copy for the add)
COPY = """\
kernel qcopy(A: f32[SIZE] @ gm) -> f32[SIZE] @ gm:
    C = ndarray((SIZE,), f32, gm)
    per = SIZE // asc.get_block_num()
    base = asc.get_block_idx() * per
    tile = 64
    pipe = asc.TPipe()
    inq = asc.TQue(asc.TPosition.VECIN, 1)
    outq = asc.TQue(asc.TPosition.VECOUT, 1)
    pipe.init_buffer(inq, 2, tile * 4)
    pipe.init_buffer(outq, 2, tile * 4)
    for i in range(per // tile):
        x = inq.alloc_tensor(f32)
        dma_copy(x, A[base + i * tile:base + (i + 1) * tile])
        inq.enque(x)
        xl = inq.deque(f32)
        y = outq.alloc_tensor(f32)
        dma_copy(y, xl)
        outq.enque(y)
        inq.free_tensor(xl)
        yl = outq.deque(f32)
        dma_copy(C[base + i * tile:base + (i + 1) * tile], yl)
        outq.free_tensor(yl)
    return C
"""


@pytest.mark.parametrize("cores", [1, 2, 4])
def test_queues_order_the_pipes_without_flags(tmp_path, cores):
    n = 512 * cores
    a = np.random.default_rng(cores).standard_normal(n).astype(np.float32)
    res = run(tmp_path, COPY.replace("SIZE", str(n)), {"A": a}, grid=(cores,))
    np.testing.assert_array_equal(res.value.numpy(), a)
    assert not [w for w in res.warnings if w.code.startswith("APK5")]


def _mutant(tmp_path, old, new):
    text = COPY.replace("SIZE", "512").replace(old, new)
    assert text != COPY.replace("SIZE", "512")
    with pytest.raises(ApdslError) as e:
        run(tmp_path, text, {"A": np.zeros(512, np.float32)})
    return e.value


def test_without_enque_and_deque_the_copy_races_at_both_lines(tmp_path):
    e = _mutant(tmp_path, "        inq.enque(x)\n        xl = inq.deque(f32)\n",
                "        xl = x\n")
    assert e.code == "APK570" and "read-after-write" in e.message
    assert e.span.line == 16 and e.labels and e.labels[0].span.line == 13


def test_without_the_output_queue_the_store_races(tmp_path):
    e = _mutant(tmp_path, "        outq.enque(y)\n", "")
    assert e.code == "APK596" and "deadlock" in e.message  # the deque waits forever
    e2 = _mutant(tmp_path, "        outq.enque(y)\n        inq.free_tensor(xl)\n"
                 "        yl = outq.deque(f32)\n", "        inq.free_tensor(xl)\n        yl = y\n")
    assert e2.code == "APK570" and e2.span.line == 20  # MTE3 reads y while V may write it


def test_without_free_tensor_the_buffers_run_out(tmp_path):
    e = _mutant(tmp_path, "        inq.free_tensor(xl)\n", "")
    assert e.code == "APK593" and e.span.line == 12


def test_a_tensor_used_after_free_tensor_is_an_error(tmp_path):
    e = _mutant(tmp_path, "        outq.free_tensor(yl)\n",
                "        outq.free_tensor(yl)\n        dma_copy(C[0:64], yl)\n")
    assert e.code == "APK408"


# the cube path with queues only: A1/B1 (MTE2 -> MTE1), A2/B2 (MTE1 -> M), CO1 (M -> FIX)
CUBE = """\
kernel mmq(A: f16[32, 32] @ gm, B: f16[32, 32] @ gm) -> f32[32, 32] @ gm:
    C = ndarray((32, 32), f32, gm)
    pipe = asc.TPipe()
    qa1 = asc.TQue(asc.TPosition.A1, 1)
    qb1 = asc.TQue(asc.TPosition.B1, 1)
    qa2 = asc.TQue(asc.TPosition.A2, 1)
    qb2 = asc.TQue(asc.TPosition.B2, 1)
    qc = asc.TQue(asc.TPosition.CO1, 1)
    pipe.init_buffer(qa1, 1, 2048)
    pipe.init_buffer(qb1, 1, 2048)
    pipe.init_buffer(qa2, 1, 2048)
    pipe.init_buffer(qb2, 1, 2048)
    pipe.init_buffer(qc, 1, 4096)
    a1 = qa1.alloc_tensor(f16, (32, 32), "NZ")
    b1 = qb1.alloc_tensor(f16, (32, 32), "NZ")
    dma_copy(a1, A)
    dma_copy(b1, B)
    qa1.enque(a1)
    qb1.enque(b1)
    a1 = qa1.deque()
    b1 = qb1.deque()
    a0 = qa2.alloc_tensor(f16, (32, 32), "ZZ")
    b0 = qb2.alloc_tensor(f16, (32, 32), "ZN")
    dma_copy(a0, a1)
    dma_copy(b0, b1)
    qa2.enque(a0)
    qb2.enque(b0)
    qa1.free_tensor(a1)
    qb1.free_tensor(b1)
    a0 = qa2.deque()
    b0 = qb2.deque()
    c0 = qc.alloc_tensor(f32, (32, 32), "NZ")
    mmad(c0, a0, b0)
    qc.enque(c0)
    qa2.free_tensor(a0)
    qb2.free_tensor(b0)
    c0 = qc.deque()
    dma_copy(C, c0)
    qc.free_tensor(c0)
    return C
"""


def test_cube_queues_carry_formats_and_order_the_cube_pipes(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    res = run(tmp_path, CUBE, {"A": a, "B": b})
    np.testing.assert_allclose(res.value.numpy(), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-5)
    e = None
    try:
        # (either of the A2/B2 queues alone orders both copies: its enque is issued after
        # both, on the same pipe; without both, mmad reads what MTE1 may still write)
        run(tmp_path, CUBE.replace("    qb2.enque(b0)\n", "").replace(
            "    b0 = qb2.deque()\n", "").replace("    qa2.enque(a0)\n", "").replace(
            "    a0 = qa2.deque()\n", ""), {"A": a, "B": b})
    except ApdslError as err:
        e = err
    assert e is not None and e.code == "APK570" and "pipe M" in e.message


# -- a brute-force model of one queue's states ----------------------------------------------

def _model(ops, num, depth):
    """The expected error code (None: fine) of each op on a queue of `num` buffers."""
    state = ["free"] * num
    nxt, queue, out = 0, [], []
    for op, k in ops:
        if op == "alloc":
            order = [(nxt + j) % num for j in range(num)]
            free = [i for i in order if state[i] == "free"]
            if not free:
                out.append("APK593")
                continue
            state[free[0]] = "held"
            nxt = (free[0] + 1) % num
            out.append(None)
        elif op == "enque":  # (AscendC's EnQue takes a buffer allocated or dequeued)
            if state[k] not in ("held", "dequeued"):
                out.append("APK595")
            elif depth and len(queue) >= depth:
                out.append("APK594")
            else:
                state[k] = "queued"
                queue.append(k)
                out.append(None)
        elif op == "deque":
            if not queue:
                out.append("APK596")
            else:
                state[queue.pop(0)] = "dequeued"
                out.append(None)
        else:  # free
            if state[k] in ("free", "queued"):
                out.append("APK595")
            else:
                state[k] = "free"
                out.append(None)
    return out


@pytest.mark.parametrize("seed", range(25))
def test_queue_states_match_a_brute_force_model(seed):
    rng = random.Random(seed)
    num, depth = rng.randint(1, 3), rng.randint(0, 2)
    ops = [(rng.choice(["alloc", "enque", "deque", "free"]), rng.randrange(num))
           for _ in range(rng.randint(1, 14))]
    q = TQue("VECIN", depth)
    TPipe().init_buffer(q, num, 64)
    tensors = {}  # buffer -> its tensor
    got = []
    for op, k in ops:
        try:
            if op == "alloc":
                t = q.alloc_tensor("float32")
                tensors[int(t.storage.name.split("[")[1][:-1])] = t
            elif op == "enque":
                q.enque(tensors.get(k))
            elif op == "deque":
                q.deque()
            else:
                q.free_tensor(tensors.get(k))
            got.append(None)
        except ApdslError as e:
            got.append(e.code)
    assert got == _model(ops, num, depth), ops
