"""`apdsl lower` cuts an instruction at the piece boundaries of all its operands.

The oracle is NumPy: a view is mirrored by the same einops rearrange and slices of an array of
storage offsets, and `dst.flat[i] = src.flat[i]` is the correspondence a copy must make.  Each
lowered piece's access patterns are evaluated with seed 000's formula (offset + sum i_k *
stride_k, flattened in row-major order), independently of apdsl's layouts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from math import isqrt, prod
from pathlib import Path

import einops
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl import dma_copy, from_numpy, ndarray, tensor_copy
from apdsl.runtime.core import trace

ROOT = Path(__file__).resolve().parent.parent


def evaluate(ap: dict) -> np.ndarray:
    """Seed 000: the storage offsets an AP touches, in its order."""
    idx = np.full((), ap["offset"], np.int64)
    pattern = ap["pattern"]
    for k, (s, c) in enumerate(pattern):
        idx = idx + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (len(pattern) - k - 1))
    return idx.reshape(-1)


def traced(fn, *args):
    with trace.tracing() as tr:
        trace.set_location("k.apk", 1)
        fn(*args)
    (rec,) = tr.records
    return rec.to_json()


def pairs_of(objs: list[dict]) -> list[tuple[int, int]]:
    """(dst offset, src offset) of every element the pieces move; every piece's operands have
    equal element counts."""
    out = []
    for o in objs:
        d = evaluate(o["operands"]["dst"])
        s = evaluate(o["operands"]["src"])
        assert d.size == s.size, o
        out.extend(zip(d.tolist(), s.tolist()))
    return out


def check_against_numpy(objs: list[dict], dst_offsets: np.ndarray, src_offsets: np.ndarray):
    n = len(objs)
    if n > 1:
        assert [o["piece"] for o in objs] == [[i, n] for i in range(n)]
    expect = sorted(zip(dst_offsets.reshape(-1).tolist(), src_offsets.reshape(-1).tolist()))
    assert sorted(pairs_of(objs)) == expect


# -- views and their NumPy mirrors -------------------------------------------------------------

@st.composite
def nested_view(draw, n: int | None = None, buffer: str = "hbm"):
    """A view made by a merge NumPy can only copy and a slice across its blocks, with the same
    view of an array of storage offsets.  With `n`, the view has n elements."""
    rank = draw(st.integers(2, 3))
    names = "abc"[:rank]
    if n is None:
        shape = draw(st.lists(st.integers(2, 5), min_size=rank, max_size=rank))
    else:  # a merged dim of at least the rows we need, and columns that divide n
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        cols = draw(st.sampled_from(divisors))
        rows = n // cols
        inner = draw(st.integers(2, 4))
        outer = -(-rows // inner) + draw(st.integers(1, 2))
        shape = [outer, cols, inner] if rank == 3 else [rows + draw(st.integers(0, 3)), cols]
        if rank == 2:
            names = "ab"
    perm = draw(st.permutations(range(rank)))
    if n is not None:
        perm = [0, 2, 1] if rank == 3 else [0, 1]
    k = draw(st.integers(2, rank)) if n is None else (2 if rank == 3 else 1)
    merged = " ".join(names[i] for i in perm[:k])
    rest = " ".join(names[i] for i in perm[k:])
    pattern = f"{' '.join(names)} -> ({merged}) {rest}"
    storage = np.arange(prod(shape), dtype=np.int64).reshape(shape)
    base = from_numpy(storage.astype(np.float32), buffer)
    view, mirror = base.rearrange(pattern), einops.rearrange(storage, pattern)
    size0 = mirror.shape[0]
    want = size0 if n is None else n // mirror.shape[1]
    start = draw(st.integers(0, size0 - want)) if n is not None else draw(
        st.integers(0, size0 - 1))
    end = start + want if n is not None else draw(st.integers(start + 1, size0))
    view, mirror = view.slice(0, start, end), mirror[start:end]
    if n is None and mirror.ndim > 1 and draw(st.booleans()):
        a = draw(st.integers(0, mirror.shape[1] - 1))
        b = draw(st.integers(a + 1, mirror.shape[1]))
        view, mirror = view.slice(1, a, b), mirror[:, a:b]
    return view, mirror


@st.composite
def destination(draw, n: int):
    """A destination of n elements: plain of another shape, a column slice of a wider
    tile (on chip or in HBM), or a nested view of several pieces."""
    kind = draw(st.sampled_from(["plain", "columns", "sbuf", "nested"]))
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    cols = draw(st.sampled_from(divisors))
    rows = n // cols
    if kind == "nested":
        return draw(nested_view(n))
    if kind == "plain":
        t = ndarray((rows, cols), "float32", "hbm")
        return t, np.arange(n, dtype=np.int64).reshape(rows, cols)
    extra = draw(st.integers(1, 3))
    at = draw(st.integers(0, extra))
    buffer = "sbuf" if kind == "sbuf" and rows <= 128 else "hbm"
    t = ndarray((rows, cols + extra), "float32", buffer)
    storage = np.arange(rows * (cols + extra), dtype=np.int64).reshape(rows, cols + extra)
    return t[:, at:at + cols], storage[:, at:at + cols]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(st.data())
def test_dma_copy_pieces_reproduce_numpy_correspondence(data):
    src, src_mirror = data.draw(nested_view())
    dst, dst_mirror = data.draw(destination(src_mirror.size))
    objs = traced(dma_copy, dst, src)
    check_against_numpy(objs, dst_mirror, src_mirror)


def test_issue_example_splits_the_destination_with_the_source():
    x = from_numpy(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
    src = x.rearrange("b c h w -> (b h w) c").slice(0, 15, 25)
    y = ndarray((10, 3), "float32", "hbm")
    objs = traced(dma_copy, y, src)
    assert [(o["operands"]["dst"]["offset"], o["operands"]["dst"]["pattern"]) for o in objs] == [
        (0, [[1, 15]]), (15, [[1, 15]])]
    assert [(o["operands"]["src"]["offset"], o["operands"]["src"]["pattern"]) for o in objs] == [
        (15, [[1, 5], [20, 3]]), (60, [[1, 5], [20, 3]])]
    check_against_numpy(objs, np.arange(30).reshape(10, 3),
                        einops.rearrange(np.arange(120).reshape(2, 3, 4, 5),
                                         "b c h w -> (b h w) c")[15:25])


def test_a_cut_that_is_not_one_pattern_in_the_other_operand_splits_further():
    # src pieces are column blocks; in a (3, 8) destination a block's rows straddle dst rows
    storage = np.arange(4 * 2 * 5, dtype=np.int64).reshape(4, 2, 5)
    s = from_numpy(storage.astype(np.float32)).rearrange("a b c -> a (c b)").slice(1, 1, 7)
    mirror = einops.rearrange(storage, "a b c -> a (c b)")[:, 1:7]
    wide = ndarray((3, 10), "float32", "hbm")
    objs = traced(dma_copy, wide[:, 1:9], s)
    check_against_numpy(objs, np.arange(30).reshape(3, 10)[:, 1:9], mirror)
    assert len(objs) > len(s.layout.pieces())


def test_tensor_copy_pieces_keep_partitions():
    storage = np.arange(8 * 2 * 4, dtype=np.int64).reshape(8, 2, 4)
    src = from_numpy(storage.astype(np.float32), "sbuf").rearrange("p a b -> p (b a)")
    src = src.slice(1, 1, 7)
    mirror = einops.rearrange(storage, "p a b -> p (b a)")[:, 1:7]
    dst = ndarray((8, 6), "float32", "sbuf")
    objs = traced(tensor_copy, dst, src)
    check_against_numpy(objs, np.arange(48).reshape(8, 6), mirror)
    assert len(objs) > 1
    for o in objs:  # the partition entry first, partitions of 6 elements
        assert o["operands"]["dst"]["pattern"][0] == [6, 8]
        assert o["operands"]["src"]["pattern"][0] == [8, 8]


def test_mmad_pieces_are_blocks_of_m_n_and_k():
    from apdsl.semantics.program import Program
    result = Program.from_path(str(ROOT / "examples" / "ascend_gemm.apk")).run(trace=True)
    mm = [r for r in result.trace.records if r.op == "mmad"]
    assert any(len(r.pieces) > 1 for r in mm)
    for rec in mm:
        own = {role: set(np.concatenate([evaluate(ap.to_json()) for ap in aps]).tolist())
               for role, aps in rec.operands.items()}
        got: dict[str, set[int]] = {role: set() for role in rec.operands}
        for obj in rec.to_json():
            ca, cb, cd = (evaluate(obj["operands"][r]).size for r in ("a", "b", "dst"))
            m, k, n = isqrt(ca * cd // cb), isqrt(ca * cb // cd), isqrt(cb * cd // ca)
            assert (m * k, k * n, m * n) == (ca, cb, cd)  # a (M, K) @ b (K, N) -> dst (M, N)
            for role in got:
                got[role].update(evaluate(obj["operands"][role]).tolist())
        assert got == own  # together the pieces are the instruction


def lower_json(path: Path) -> list[dict]:
    r = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(path), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_every_ascend_gemm_record_moves_equal_counts():
    objs = lower_json(ROOT / "examples" / "ascend_gemm.apk")
    copies = [o for o in objs if o["op"] == "dma_copy"]
    # the GEMM's tail copies (GM -> L1 and L0C -> GM) are cut into pieces
    assert len(copies) >= 100 and sum(1 for o in copies if o.get("piece")) >= 20
    for o in copies:
        d, s = (evaluate(o["operands"][r]) for r in ("dst", "src"))
        assert d.size == s.size, o


def test_nc_matmul_pieces_are_blocks_matching_numpy():
    from apdsl import nc_matmul
    k, m = 128, 64
    mov_storage = np.arange(k * 2 * 8, dtype=np.int64).reshape(k, 2, 8)
    moving = from_numpy(mov_storage.astype(np.float32), "sbuf").rearrange("p a b -> p (b a)")
    moving, mov_mirror = moving.slice(1, 1, 15), einops.rearrange(
        mov_storage, "p a b -> p (b a)")[:, 1:15]
    stat_storage = np.arange(k * m, dtype=np.int64).reshape(k, m)
    stationary = from_numpy(stat_storage.astype(np.float32), "sbuf")
    dst = ndarray((m, 14), "float32", "psum")
    dst_mirror = np.arange(m * 14, dtype=np.int64).reshape(m, 14)
    objs = traced(nc_matmul, dst, stationary, moving)
    assert len(objs) > 1
    where = {int(o): divmod(i, 14) for i, o in enumerate(dst_mirror.reshape(-1))}
    covered = []
    for obj in objs:
        d = evaluate(obj["operands"]["dst"])
        rows = sorted({where[o][0] for o in d.tolist()})
        cols = sorted({where[o][1] for o in d.tolist()})
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        # each piece is dst[r0:r1, c0:c1] = stationary[:, r0:r1].T @ moving[:, c0:c1]
        np.testing.assert_array_equal(d, dst_mirror[r0:r1, c0:c1].reshape(-1))
        np.testing.assert_array_equal(evaluate(obj["operands"]["moving"]),
                                      mov_mirror[:, c0:c1].reshape(-1))
        np.testing.assert_array_equal(evaluate(obj["operands"]["stationary"]),
                                      stat_storage[:, r0:r1].reshape(-1))
        covered.extend(d.tolist())
    assert sorted(covered) == list(range(m * 14))  # the blocks tile dst exactly once


@settings(max_examples=40, deadline=None, derandomize=True)
@given(rows=st.integers(1, 3), cols=st.integers(1, 3), data=st.data())
def test_copy_into_an_nz_tile_pairs_elements_as_numpy(rows, cols, data):
    import apdsl
    R, C = 16 * rows, 16 * cols
    r0 = data.draw(st.integers(0, R - 1))
    r1 = data.draw(st.integers(r0 + 1, R))
    c0 = 16 * data.draw(st.integers(0, cols - 1))  # L1 operands start 32-byte aligned
    c1 = data.draw(st.integers(c0 + 1, C))
    transpose = data.draw(st.booleans())
    # the seed formula of NZ: 16 x 16 float16 fractals row-major inside, fractals column-major
    r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    nz = ((c // 16) * rows + r // 16) * 256 + (r % 16) * 16 + c % 16
    h, w = r1 - r0, c1 - c0
    gm = np.arange(h * w, dtype=np.int64).reshape((w, h) if transpose else (h, w))
    src = apdsl.from_numpy(gm.astype(np.float16), "gm")
    src, src_mirror = (src.permute((1, 0)), gm.T) if transpose else (src, gm)
    dst = apdsl.ndarray((R, C), "float16", "l1", "NZ")[r0:r1, c0:c1]
    objs = traced(dma_copy, dst, src)
    check_against_numpy(objs, nz[r0:r1, c0:c1], src_mirror)


def test_nc_matmul_double_row_pieces_keep_k_whole():
    import apdsl
    from apdsl import nc_matmul
    storage = np.arange(64 * 2 * 2 * 8, dtype=np.int64).reshape(64, 2, 2, 8)
    mirror = einops.rearrange(storage, "p k a b -> p k (b a)")[:, :, 1:15]
    with apdsl.target("trn2"):
        stationary = from_numpy(np.ones((64, 2, 8), np.float32), "sbuf", dtype="float8_e4m3")
        moving = from_numpy(storage.astype(np.float32), "sbuf", dtype="float8_e4m3")
        moving = moving.rearrange("p k a b -> p k (b a)").slice(2, 1, 15)
        dst = ndarray((8, 14), "float32", "psum")
        objs = traced(lambda d, s, m: nc_matmul(d, s, m, perf_mode="double_row"),
                      dst, stationary, moving)
    assert len(objs) == 3
    cols = 0
    for obj in objs:
        d = evaluate(obj["operands"]["dst"])
        width = d.size // 8
        c0 = int(d[0])
        assert d.tolist() == (np.arange(8 * 14).reshape(8, 14)[:, c0:c0 + width]).reshape(-1).tolist()
        assert evaluate(obj["operands"]["moving"]).tolist() == mirror[:, :, c0:c0 + width].reshape(
            -1).tolist()  # all of K = 64 partitions x 2 in every piece
        assert evaluate(obj["operands"]["stationary"]).size == 64 * 2 * 8
        cols += width
    assert cols == 14
