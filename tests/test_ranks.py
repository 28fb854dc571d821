"""Groups of ranks (SPEC 16): `nki.collectives`, `nisa.sendrecv`, `nisa.core_barrier` on a
simulated group, each rank its own program and device, results per rank against NumPy; a rank
that never arrives is a located deadlock naming the waiting ranks; a rank whose call differs is
a located error on that rank; `apdsl run|check|lower|profile FILE.py --ranks N`."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import apdsl.nki as nki
import apdsl.nki.collectives as ncc
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError

RNG = np.random.default_rng(0)


def _hbm_copy(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=t, src=x)
    return t


@nki.jit
def reduce_k(x, op, groups):
    src = _hbm_copy(x)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup(groups), op=op)
    return dst


@nki.jit
def gather_k(x, k):
    src = _hbm_copy(x)
    dst = nl.ndarray((x.shape[0] * k, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([list(range(k))]),
                   collective_dim=0)
    return dst


@nki.jit
def gather_sbuf_k(x, k):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=src, src=x)
    dst = nl.ndarray((x.shape[0], x.shape[1] * k), dtype=x.dtype, buffer=nl.sbuf)
    ncc.all_gather(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([list(range(k))]),
                   collective_dim=1)
    out = nl.ndarray(dst.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=dst)
    return out


@nki.jit
def scatter_k(x, k):
    src = _hbm_copy(x)
    dst = nl.ndarray((x.shape[0] // k, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.reduce_scatter(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([list(range(k))]),
                       collective_dim=0, op=nl.add)
    return dst


@nki.jit
def a2a_k(x, k):
    src = _hbm_copy(x)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_to_all(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([list(range(k))]),
                   collective_dim=0)
    return dst


@nki.jit
def permute_k(x, pairs):
    src = _hbm_copy(x)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=dst, src=x)  # ranks nobody sends to keep their own
    ncc.collective_permute(srcs=[src], dsts=[dst], source_target_pairs=pairs)
    return dst


@nki.jit
def ring_k(x, y, k, reduce):
    a, b = _hbm_copy(x), _hbm_copy(y)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = ncc.ReplicaGroup([list(range(k))])
    if reduce:
        ncc.collective_permute_implicit_reduce([[a]], [[b]], [[dst]], g, nl.maximum)
    else:
        ncc.collective_permute_implicit([[a]], [[dst]], g)
    seen = [ncc.collective_permute_implicit_current_processing_rank_id(i, g).value
            for i in range(k)]
    ids = nl.ndarray((1, k), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, k), dtype=nl.int32, buffer=nl.sbuf)
    for i, s in enumerate(seen):
        nisa.memset(dst=t[0:1, i:i + 1], value=s)
    nisa.dma_copy(dst=ids, src=t)
    return dst, ids


def _per_rank(arrays):
    return lambda r: ((arrays[r],), {})


@pytest.mark.parametrize("op,np_op", [(nl.add, np.add), (nl.maximum, np.maximum),
                                      (nl.minimum, np.minimum)])
def test_all_reduce_per_rank(op, np_op):
    xs = [RNG.standard_normal((8, 16)).astype(np.float32) for _ in range(3)]
    got = nki.simulate_ranks(reduce_k, 3, per_rank=lambda r: ((xs[r], op, [[0, 1, 2]]), {}))
    want = np_op.reduce(np.stack(xs).astype(np.float64), axis=0).astype(np.float32)
    for r in range(3):
        np.testing.assert_array_equal(got[r], want)


def test_replica_subgroups_reduce_apart():
    xs = [np.full((4, 4), 10.0 ** r, np.float32) for r in range(4)]
    got = nki.simulate_ranks(reduce_k, 4, per_rank=lambda r: ((xs[r], nl.add,
                                                               [[0, 2], [1, 3]]), {}))
    for r in range(4):
        np.testing.assert_array_equal(got[r], xs[r % 2] + xs[r % 2 + 2])


def test_all_gather_hbm_and_sbuf():
    xs = [RNG.standard_normal((4, 8)).astype(np.float32) for _ in range(4)]
    got = nki.simulate_ranks(gather_k, 4, per_rank=lambda r: ((xs[r], 4), {}))
    for r in range(4):
        np.testing.assert_array_equal(got[r], np.concatenate(xs, axis=0))
    got = nki.simulate_ranks(gather_sbuf_k, 2, per_rank=lambda r: ((xs[r], 2), {}))
    for r in range(2):
        np.testing.assert_array_equal(got[r], np.concatenate(xs[:2], axis=1))


def test_reduce_scatter_and_all_to_all():
    xs = [RNG.standard_normal((6, 5)).astype(np.float32) for _ in range(3)]
    got = nki.simulate_ranks(scatter_k, 3, per_rank=lambda r: ((xs[r], 3), {}))
    total = np.sum(np.stack(xs).astype(np.float64), axis=0).astype(np.float32)
    for r in range(3):
        np.testing.assert_array_equal(got[r], total[2 * r:2 * r + 2])
    got = nki.simulate_ranks(a2a_k, 3, per_rank=lambda r: ((xs[r], 3), {}))
    for r in range(3):
        np.testing.assert_array_equal(got[r], np.concatenate([x[2 * r:2 * r + 2] for x in xs]))


def test_collective_permute_and_the_ring():
    xs = [np.full((2, 3), r, np.float32) for r in range(3)]
    got = nki.simulate_ranks(permute_k, 3, per_rank=lambda r: ((xs[r], [(0, 1), (1, 0)]), {}))
    assert [g[0, 0] for g in got] == [1.0, 0.0, 2.0]
    ys = [np.full((2, 3), 10 - r, np.float32) for r in range(3)]
    got = nki.simulate_ranks(ring_k, 3, per_rank=lambda r: ((xs[r], ys[r], 3, False), {}))
    for r in range(3):
        np.testing.assert_array_equal(got[r][0], xs[(r - 1) % 3])  # from the predecessor
        assert list(got[r][1][0]) == [r, (r - 1) % 3, (r - 2) % 3]
    got = nki.simulate_ranks(ring_k, 3, per_rank=lambda r: ((xs[r], ys[r], 3, True), {}))
    for r in range(3):
        np.testing.assert_array_equal(got[r][0], np.maximum(xs[(r - 1) % 3], ys[(r - 1) % 3]))


@nki.jit
def rank_k(stack):
    out = nl.ndarray(stack.shape[1:], dtype=stack.dtype, buffer=nl.shared_hbm)
    h, w = stack.shape[1:]
    nisa.dma_copy(dst=out, src=stack.ap(pattern=[[w, h], [1, w]], scalar_offset=ncc.rank_id(),
                                        indirect_dim=0))
    return out


def test_rank_id_selects_each_ranks_slice():
    stack = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    got = nki.simulate_ranks(rank_k, 3, stack)
    for r in range(3):
        np.testing.assert_array_equal(got[r], stack[r])
    np.testing.assert_array_equal(rank_k(stack), stack[0])  # alone: rank 0 of 1


@nki.jit
def swap_k(x):
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    me = ncc.rank_id().value
    nisa.sendrecv(src=a, dst=b, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=b)
    nisa.core_barrier(data=out, cores=(0, 1))
    return out


def test_sendrecv_swaps_and_the_barrier_meets():
    xs = [np.full((4, 8), r + 1, np.float32) for r in range(2)]
    got = nki.simulate_ranks(swap_k, 2, per_rank=_per_rank(xs))
    np.testing.assert_array_equal(got[0], xs[1])
    np.testing.assert_array_equal(got[1], xs[0])
    with pytest.raises(ApdslError) as e:
        swap_k(xs[0])  # alone: send_to_rank 1 names a rank the run does not have
    assert e.value.code == "APK967"


# -- deadlocks and mismatches ------------------------------------------------------------------

@nki.jit
def crossed_pipes_k(x):
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    me = ncc.rank_id().value
    nisa.sendrecv(src=a, dst=b, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=me)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=b)
    return out


def test_sendrecv_on_different_pipes_is_a_deadlock_naming_both_ranks():
    with pytest.raises(ApdslError) as e:
        nki.simulate_ranks(crossed_pipes_k, 2, np.ones((4, 8), np.float32))
    assert e.value.code == "APK965"
    assert "ranks 0, 1 wait at sendrecv" in e.value.message, e.value.message


@nki.jit
def skip_k(x):
    src = _hbm_copy(x)
    if ncc.rank_id().value != 1:
        dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=ncc.ReplicaGroup([[0, 1, 2]]),
                       op=nl.add)
        return dst
    return src


def test_a_rank_that_never_arrives_is_a_located_deadlock():
    with pytest.raises(ApdslError) as e:
        nki.simulate_ranks(skip_k, 3, np.ones((2, 2), np.float32))
    err = e.value
    assert err.code == "APK965"
    assert "ranks 0, 2 wait at all_reduce" in err.message, err.message
    assert err.span is not None and err.span.file == __file__
    assert "ncc.all_reduce" in open(__file__).read().splitlines()[err.span.line - 1]
    assert any("rank 1 ended without arriving" in n for n in err.notes), err.notes


def test_a_rank_with_other_shapes_is_the_one_located():
    xs = [np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), np.ones((4, 6), np.float32)]
    with pytest.raises(ApdslError) as e:
        nki.simulate_ranks(reduce_k, 3, per_rank=lambda r: ((xs[r], nl.add, [[0, 1, 2]]), {}))
    err = e.value
    assert err.code == "APK966" and err.facts["rank"] == 2
    assert "rank 2's all_reduce" in err.message and "float32[4, 6]" in err.message
    assert err.span is not None and err.span.file == __file__


def test_a_different_op_is_a_mismatch_too():
    xs = [np.ones((2, 2), np.float32)] * 2
    ops = [nl.add, nl.maximum]
    with pytest.raises(ApdslError) as e:
        nki.simulate_ranks(reduce_k, 2, per_rank=lambda r: ((xs[r], ops[r], [[0, 1]]), {}))
    assert e.value.code == "APK966" and e.value.facts["rank"] == 1


def test_a_failing_rank_stops_the_group_with_its_own_error():
    @nki.jit
    def bad(x):
        if ncc.rank_id().value == 1:
            nisa.dma_copy(dst=x, src=nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf))
        return reduce_k.fn(x, nl.add, [[0, 1]])
    with pytest.raises(ApdslError) as e:
        nki.simulate_ranks(bad, 2, np.ones((2, 2), np.float32))
    assert e.value.code == "APK404" and "on rank 1 of 2" in e.value.notes


def test_simulate_ranks_arguments():
    for bad in (lambda: nki.simulate_ranks(reduce_k, 0, np.ones(2)),
                lambda: nki.simulate_ranks(reduce_k, 2, np.ones(2), per_rank=lambda r: ((), {})),
                lambda: nki.simulate_ranks(reduce_k, 2, per_rank=lambda r: [r])):
        with pytest.raises(ApdslError) as e:
            bad()
        assert e.value.code == "APK971"


# -- the command line ------------------------------------------------------------------------

KERNEL = '''
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather(x):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    g = nl.ndarray((x.shape[0] * 2, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[g], replica_group=ncc.ReplicaGroup([[0, 1]]),
                   collective_dim=0)
    t = nl.ndarray(g.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=g)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(ncc.rank_id().value + 1))
    out = nl.ndarray(g.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=tmp_path)


def test_cli_run_lower_profile_check_with_ranks(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "x.npy", x)
    r = _cli(tmp_path, "run", "k.py", "-i", "x=x.npy", "--ranks", "2", "-o", "o.npz")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "o.npz")
    assert sorted(out) == ["rank0", "rank1"]
    np.testing.assert_array_equal(out["rank0"], np.concatenate([x, x]))
    np.testing.assert_array_equal(out["rank1"], 2 * np.concatenate([x, x]))
    assert "rank 1: gather -> float32[6, 4]" in r.stdout
    r = _cli(tmp_path, "lower", "k.py", "-i", "x=x.npy", "--ranks", "2")
    assert r.returncode == 0 and "== rank 1 ==" in r.stdout and "ncc.all_gather" in r.stdout
    assert "operand0=2.0" in r.stdout.split("== rank 1 ==")[1]
    r = _cli(tmp_path, "profile", "k.py", "-i", "x=x.npy", "--ranks", "2")
    assert r.returncode == 0, r.stderr
    assert "group of 2 ranks: estimated" in r.stdout and "== rank 0 ==" in r.stdout
    r = _cli(tmp_path, "check", "k.py", "-i", "x=x.npy", "--ranks", "2")
    assert r.returncode == 0, r.stderr
    r = _cli(tmp_path, "run", "k.py", "-i", "x=x.npy", "--ranks", "2", "-o", "o.npy")
    assert r.returncode == 1 and "APK612" in r.stderr
    r = _cli(tmp_path, "run", "k.py", "-i", "x=x.npy")
    assert r.returncode == 1 and "APK967" in r.stderr and "k.py:13" in r.stderr, r.stderr
    (tmp_path / "k.apk").write_text("kernel k(A: f32[4, 4] @ hbm) -> f32[4, 4] @ hbm:\n"
                                    "    return A\n")
    r = _cli(tmp_path, "run", "k.apk", "--ranks", "2")
    assert r.returncode == 1 and "APK170" in r.stderr


def test_a_ranks_profile_starts_a_collective_after_its_producer_and_before_its_reader(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    r = _cli(tmp_path, "profile", "k.py", "-i", "x=x.npy", "--ranks", "2", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["ranks"]) == 2
    for rank in doc["ranks"]:
        slots = {s["where"]: s for s in rank["scheduled"]}
        load, gather, read = slots["k.py:11"], slots["k.py:13"], slots["k.py:16"]
        assert gather["op"] == "ncc.all_gather"
        assert load["end_ns"] <= gather["start_ns"] and gather["end_ns"] <= read["start_ns"]
    assert doc["total_ns"] == max(rank["total_ns"] for rank in doc["ranks"])
