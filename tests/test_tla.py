"""TLA tiles (seed 004): layouts, tensors, tiles with tails, make_tensor_like, and fractal tiles
lowered to access patterns over the fractal storage.

Oracles: NumPy slicing of the logical array, the clipping formula of SPEC section 5, and
`formats.convert` for where fractal elements live.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.runtime.core import execute
from apdsl.tensor import formats
from apdsl.tensor.tla import (
    get_tile,
    make_layout,
    make_tensor,
    make_tensor_like,
    tile_view,
    valid_view,
)
from apdsl.tensor.view import from_numpy, ndarray


def gm(shape, dtype=np.float32, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return data, from_numpy(data, "gm")


def fractal(data: np.ndarray, buffer: str, fmt: str):
    """A tensor in `buffer` as `fmt` holding `data` (its logical contents)."""
    t = ndarray(data.shape, data.dtype.name, buffer, fmt)
    execute.write_view(t, data)
    return t


# ---------------------------------------------------------------------------- SPEC and seed 004

def test_spec_worked_example():
    A = ndarray((8, 16), "float32", "gm")
    p = make_tensor(A, coord=(1, 5))
    assert p.coord == (1, 5) and p.origin_shape == (8, 16)
    t = get_tile(p, (2, 4), (4, 8))
    assert t.coord == (3, 9) and t.origin_shape == (4, 8) and t.shape == (4, 8)
    tail = get_tile(p, (6, 10), (4, 8))
    assert tail.coord == (7, 15) and tail.origin_shape == (2, 6) and tail.shape == (4, 8)


def test_seed_tail_of_a_plain_matrix_and_its_data():
    data, A = gm((8, 16))
    tail = get_tile(A, (6, 10), (4, 8))
    assert tail.coord == (6, 10) and tail.origin_shape == (2, 6)
    np.testing.assert_array_equal(tail.numpy(), data[6:8, 10:16])


def test_tile_view_is_get_tile_of_tile_coordinates():
    data, A = gm((100, 70))
    a = tile_view(A, (1, 2), (32, 32))
    b = get_tile(A, (32, 64), (32, 32))
    assert (a.coord, a.origin_shape, a.shape) == (b.coord, b.origin_shape, b.shape) \
        == ((32, 64), (32, 6), (32, 32))
    np.testing.assert_array_equal(a.numpy(), data[32:64, 64:70])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_clipping_rule_and_contents(data):
    rows, cols = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    base, A = gm((rows, cols), seed=rows * 41 + cols)
    # a parent view inside A, itself possibly a tile with a tail
    pr, pc = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
    ph, pw = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    parent = get_tile(A, (pr, pc), (ph, pw))
    po = parent.origin_shape
    assert po == (min(ph, rows - pr), min(pw, cols - pc))
    cr, cc = data.draw(st.integers(0, 45)), data.draw(st.integers(0, 45))
    th, tw = data.draw(st.integers(1, 20)), data.draw(st.integers(1, 20))
    t = get_tile(parent, (cr, cc), (th, tw))
    expect = (min(th, max(po[0] - cr, 0)), min(tw, max(po[1] - cc, 0)))
    assert t.origin_shape == expect
    assert t.coord == (pr + cr, pc + cc)
    assert t.shape == (th, tw)
    got = t.numpy()
    want = base[pr + cr:pr + cr + expect[0], pc + cc:pc + cc + expect[1]]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.plans  # (memoised: the fast paths on)
def test_tiles_are_views_sharing_storage_and_are_memoised():
    _, A = gm((64, 64))
    t = tile_view(A, (1, 0), (32, 32))
    assert t.storage is A.storage
    assert tile_view(A, (1, 0), (32, 32)) is t
    assert tile_view(A, [1, 0], [32, 32]) is t
    assert get_tile(A, (32, 0), (32, 32)) is not t  # another call, same view
    assert get_tile(A, (32, 0), (32, 32)).layout == t.layout


def test_coordinate_arguments_are_checked():
    _, A = gm((8, 16))
    with raises_code("APK532"):
        get_tile(A, (0, 0, 0), (4, 4))
    with raises_code("APK532"):
        get_tile(A, (0, -1), (4, 4))
    with raises_code("APK532"):
        tile_view(A, (0, 0), (4, 0))
    with raises_code("APK532"):
        make_tensor(A, coord=(1,))
    with raises_code("APK111"):
        get_tile(A, (0, 1.5), (4, 4))
    with raises_code("APK111"):
        get_tile("A", (0, 0), (4, 4))
    with raises_code("APK111"):
        tile_view(A, (True, 0), (4, 4))


def test_nested_layouts_tile_in_rank_2_only():
    t = ndarray((2, 32, 32), "float16", "l1", "NZ")
    with raises_code("APK533"):
        get_tile(t, (0, 0, 0), (1, 16, 16))
    # index the batch away first
    m = get_tile(t[1, :, :], (16, 16), (16, 16))
    assert m.origin_shape == (16, 16)
    # plain layouts tile in any rank
    _, B = gm((3, 4, 5))
    assert get_tile(B, (1, 1, 1), (2, 2, 9)).origin_shape == (2, 2, 4)


def test_dynamic_views_are_not_tiles():
    _, A = gm((8, 16))
    r = apdsl.register_alloc(1)
    with raises_code("APK539"):
        make_tensor(A.select(0, r))
    with raises_code("APK539"):
        tile_view(A.select(0, r), (0,), (4,))


# ---------------------------------------------------------------------------- layouts

def test_make_layout_plain_and_default_origin():
    lay = make_layout((8, 16), (16, 1))
    assert lay.shape == (8, 16) and lay.stride == (16, 1) and lay.origin_shape == (8, 16)
    assert make_layout([4, 4], [1, 4], origin_shape=(3, 4)).origin_shape == (3, 4)
    assert "origin_shape=(8, 16)" in repr(lay)


@pytest.mark.parametrize("dt,rows,cols", [("float16", 20, 28), ("float16", 32, 32),
                                          ("int8", 20, 70), ("float32", 17, 9)])
def test_nested_make_layout_is_the_zn_layout_of_the_seeds(dt, rows, cols):
    """README: zN of (r, c) is ((16, ceil(r/16)), (C0, ceil(c/C0))) with strides
    ((C0, 16 * C0), (1, roundup(r, 16) * C0)); as a tensor over NZ storage it reads the matrix."""
    c0 = formats.c0_for(dt)
    r1, c1 = -(-rows // 16), -(-cols // c0)
    lay = make_layout(((16, r1), (c0, c1)), ((c0, 16 * c0), (1, r1 * 16 * c0)),
                      origin_shape=(rows, cols))
    data = np.random.default_rng(3).integers(-9, 9, (rows, cols)).astype(dt)
    storage = formats.convert(data, "ND", "NZ")  # oracle for where each element lives
    buf = from_numpy(storage.reshape(-1), "gm")
    t = make_tensor(buf, lay)
    assert t.shape == (r1 * 16, c1 * c0) and t.origin_shape == (rows, cols)
    np.testing.assert_array_equal(t.numpy(), data)


def test_make_layout_errors():
    with raises_code("APK530"):
        make_layout((8, 16), (16,))
    with raises_code("APK530"):
        make_layout((8, 0), (16, 1))
    with raises_code("APK530"):
        make_layout(((16, 2), 8), ((1, 16), (1, 2)))
    with raises_code("APK530"):
        make_layout((), ())
    with raises_code("APK531"):
        make_layout((8, 16), (16, 1), origin_shape=(9, 16))
    with raises_code("APK531"):
        make_layout((8, 16), (16, 1), origin_shape=(8,))


def test_make_tensor_with_layout_and_coord():
    data = np.arange(64, dtype=np.float32)
    buf = from_numpy(data, "gm")
    # an (8, 8) column-major matrix over a flat buffer, seen from (2, 3)
    t = make_tensor(buf, make_layout((8, 8), (1, 8)), coord=(2, 3))
    assert t.coord == (2, 3) and t.origin_shape == (8, 8)
    whole = data.reshape(8, 8).T
    np.testing.assert_array_equal(get_tile(t, (0, 0), (3, 2)).numpy(), whole[2:5, 3:5])
    # the default layout is the tensor's own; a plain tensor's coord starts at 0
    _, A = gm((4, 6))
    u = make_tensor(A)
    assert u.coord == (0, 0) and u.origin_shape == (4, 6) and u.layout == A.layout


# ---------------------------------------------------------------------------- sub-views

def test_indexing_restarts_the_coord_and_projects_the_valid_extent():
    data, A = gm((40, 40))
    tail = tile_view(A, (1, 1), (32, 32))  # valid (8, 8)
    row = tail[3, :]
    assert row.coord == (0,) and row.origin_shape == (8,) and row.shape == (32,)
    np.testing.assert_array_equal(row.numpy(), data[35, 32:40])
    part = tail[2:20:2, 4:]
    assert part.coord == (0, 0) and part.origin_shape == (3, 4) and part.shape == (9, 28)
    np.testing.assert_array_equal(part.numpy(), data[34:40:2, 36:40])
    past = tail[10:, :]
    assert past.origin_shape == (0, 8) and past.numpy().shape == (0, 8)
    sl = tail.slice(1, 0, 6)
    assert sl.origin_shape == (8, 6)


def test_permute_reorders_the_tile_fields():
    data, A = gm((40, 40))
    t = get_tile(A, (32, 30), (16, 16))
    p = t.permute((1, 0))
    assert p.coord == (30, 32) and p.origin_shape == (10, 8)
    np.testing.assert_array_equal(p.numpy(), data[32:40, 30:40].T)


def test_other_view_methods_refuse_a_tail_but_not_a_whole_tile():
    _, A = gm((40, 40))
    tail = tile_view(A, (1, 1), (32, 32))
    with raises_code("APK538"):
        tail.expand_dim(0)
    with raises_code("APK538"):
        tail.view("bfloat16")
    whole = tile_view(A, (0, 0), (32, 32))
    flat = whole.rearrange("a b -> (a b)")
    assert flat.origin_shape is None and flat.coord is None and flat.shape == (1024,)
    raw = tail.ap([[40, 2], [1, 3]])  # the escape hatch: a plain view of the storage
    assert raw.origin_shape is None


def test_valid_view_and_numpy_of_a_tile():
    data, A = gm((20, 20))
    t = tile_view(A, (1, 1), (16, 16))
    v = valid_view(t)
    assert v.shape == (4, 4) and v.origin_shape is None
    assert valid_view(A) is A
    np.testing.assert_array_equal(t.numpy(), data[16:, 16:])
    assert t.valid_shape == (4, 4) and A.valid_shape == (20, 20)
    empty = get_tile(A, (25, 0), (4, 4))
    assert empty.origin_shape == (0, 4) and empty.numpy().shape == (0, 4)
    assert "origin_shape=(4, 4)" in repr(t)


# ---------------------------------------------------------------------------- make_tensor_like

@pytest.mark.parametrize("fmt,buffer,dt,origin,shape", [
    ("NZ", "l1", "float16", (20, 28), (32, 32)),
    ("NZ", "l1", "int8", (20, 40), (32, 64)),
    ("ZZ", "l0a", "float16", (17, 3), (32, 16)),
    ("ZN", "l0b", "float32", (9, 17), (16, 32)),
    ("NZ", "l0c", "float32", (20, 20), (32, 32)),   # L0C: 16 x 16 fractals
    ("ND", "ub", "float16", (20, 28), (20, 28)),
])
def test_make_tensor_like_rounds_up_to_whole_fractals(fmt, buffer, dt, origin, shape):
    like = get_tile(ndarray((64, 64), dt, "gm"), (0, 0), origin)
    t = make_tensor_like(buffer, like, fmt)
    assert t.shape == shape and t.origin_shape == origin and t.coord == (0, 0)
    assert t.buffer == buffer and t.format == fmt and t.dtype.name == dt
    c0 = 16 if buffer == "l0c" else None
    if fmt != "ND":
        assert t.storage.nbytes == np.prod(formats.storage_shape(fmt, shape, dt, c0)) \
            * t.dtype.bits // 8


def test_make_tensor_like_dtype_and_plain_like():
    A = ndarray((20, 28), "float16", "gm")
    acc = make_tensor_like("l0c", A, "NZ", "float32")
    assert acc.dtype.name == "float32" and acc.origin_shape == (20, 28) and acc.shape == (32, 32)
    with raises_code("APK534"):
        make_tensor_like("l1", ndarray((2, 16, 16), "float16", "gm"), "NZ")
    with raises_code("APK510"):
        make_tensor_like("l0a", A, "NZ")
    with raises_code("APK501"):
        make_tensor_like("l1", A, "NQ")
    with raises_code("APK111"):
        make_tensor_like("l1", "A", "NZ")


def test_layout_base_fixes_the_full_tile_layout_in_l1():
    A = ndarray((100, 100), "float16", "gm")
    tail = tile_view(A, (1, 1), (64, 64))            # valid (36, 36)
    plain = make_tensor_like("l1", tail, "NZ")
    assert plain.shape == (48, 48)
    full = make_tensor_like("l1", tail, "NZ", layout_base=(64, 64))
    assert full.shape == (64, 64) and full.origin_shape == (36, 36)
    assert full.layout == ndarray((64, 64), "float16", "l1", "NZ").layout
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    bound = make_tensor_like(buf, tail, "NZ", layout_base=buf)
    assert bound.storage is buf.storage and bound.layout == buf.layout
    custom = make_tensor_like("l1", tail, "ND", layout_base=make_layout((40, 40), (40, 1)))
    assert custom.shape == (40, 40) and custom.strides == (40, 1)
    with raises_code("APK535"):
        make_tensor_like("l0a", tail, "ZZ", layout_base=(64, 64))
    with raises_code("APK535"):
        make_tensor_like(ndarray((64, 64), "float16", "l0a", "ZZ"), tail, "ZZ",
                         layout_base=(64, 64))
    with raises_code("APK536"):
        make_tensor_like("l1", tail, "NZ", layout_base=(32, 64))


def test_binding_to_an_existing_buffer():
    A = ndarray((100, 100), "float16", "gm")
    buf = ndarray((64, 64), "float16", "l1", "NZ")
    tile = make_tensor_like(buf, tile_view(A, (1, 1), (64, 64)), "NZ")
    assert tile.storage is buf.storage and tile.origin_shape == (36, 36)
    # L0 layouts are fixed by the valid extent: a compact NZ of (48, 48) at the buffer's start
    assert tile.layout == ndarray((48, 48), "float16", "l1", "NZ").layout
    with raises_code("APK536"):
        make_tensor_like(ndarray((32, 32), "float16", "l1", "NZ"),
                         tile_view(A, (0, 0), (64, 64)), "NZ")
    with raises_code("APK537"):
        make_tensor_like(ndarray((64, 64), "float16", "l1"), A[0:32, 0:32], "NZ")
    with raises_code("APK537"):
        make_tensor_like(ndarray((64, 64), "float32", "l1", "NZ"), A[0:32, 0:32], "NZ")
    # binding a view of a buffer starts at that view
    second = make_tensor_like(buf[:, 32:64], A[0:32, 0:16], "NZ")
    assert second.layout.offset == buf[:, 32:64].layout.offset


@pytest.mark.plans  # (`again is first`: the fast paths on)
def test_a_bound_tile_starts_unwritten():
    data, A = gm((40, 40), np.float16)
    buf = ndarray((32, 32), "float16", "l1", "NZ")
    first = make_tensor_like(buf, tile_view(A, (0, 0), (32, 32)), "NZ")
    apdsl.dma_copy(first, tile_view(A, (0, 0), (32, 32)))
    assert buf.storage.all_written
    np.testing.assert_array_equal(first.numpy(), data[:32, :32])
    # the next tile in the same buffer holds the previous tile's data, which is not its own
    again = make_tensor_like(buf, tile_view(A, (0, 0), (32, 32)), "NZ")
    assert again is first
    with raises_code("APK404"):
        again.numpy()
    # a smaller tile forgets only what it covers
    apdsl.dma_copy(first, tile_view(A, (0, 0), (32, 32)))
    small = make_tensor_like(buf, tile_view(A, (1, 1), (32, 32)), "NZ")   # valid (8, 8)
    assert small.shape == (16, 16)
    with raises_code("APK404"):
        small.numpy()
    rest = buf.storage.mask.reshape(-1)
    assert rest.sum() == 32 * 32 - 16 * 16
    apdsl.dma_copy(small, tile_view(A, (1, 1), (32, 32)))
    np.testing.assert_array_equal(small.numpy(), data[32:, 32:])


# ---------------------------------------------------------------------------- lowering (issue 1)

def _union_offsets(aps) -> np.ndarray:
    out = []
    for ap in aps:
        off = np.full((), ap.offset, np.int64)
        for s, c in ap.pattern:
            off = off[..., None] + np.arange(c) * s
        out.append(off.reshape(-1))
    return np.sort(np.concatenate(out))


@pytest.mark.parametrize("fmt,buffer", [("NZ", "l1"), ("ZZ", "l0a"), ("ZN", "l0b")])
def test_an_aligned_fractal_tile_is_one_access_pattern(fmt, buffer):
    t = ndarray((64, 64), "float16", buffer, fmt)
    tile = get_tile(t, (16, 32), (32, 32))
    (ap,) = apdsl.lower(tile)
    assert len(ap.pattern) >= 2  # multi-dimensional over the fractals
    expect = np.sort(tile.layout.offsets().reshape(-1))
    np.testing.assert_array_equal(_union_offsets([ap]), expect)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(1, 24), st.integers(1, 24),
       st.sampled_from([("NZ", "l1"), ("ZZ", "l1"), ("ZN", "l1")]))
def test_unaligned_fractal_tiles_split_into_the_fewest_patterns(r, c, h, w, fb):
    fmt, buffer = fb
    t = ndarray((64, 64), "float16", buffer, fmt)
    tile = get_tile(t, (r, c), (h, w))
    aps = apdsl.lower(tile)
    # every element exactly once, over the fractal storage
    np.testing.assert_array_equal(_union_offsets(aps), np.sort(tile.layout.offsets().reshape(-1)))
    # the fewest: a piece per fractal-aligned run of each dimension (head, whole blocks, tail)
    def runs(start, n, block):
        head = (-start) % block
        if head >= n:
            return 1
        return (1 if head else 0) + (1 if (n - head) // block else 0) + (1 if (n - head) % block
                                                                           else 0)
    rows_block, cols_block = formats.block_shape(fmt, 2, "float16")
    assert len(aps) <= runs(r, h, rows_block) * runs(c, w, cols_block)
    assert all(len(ap.pattern) <= 4 for ap in aps)


def test_lower_shows_tile_pieces(tmp_path):
    src = tmp_path / "tiles.apk"
    src.write_text(
        'A: f16[40, 40] @ gm = arange\n'
        'buf = ndarray((48, 48), f16, l1, "NZ")\n'
        'tail = tile_view(A, (1, 1), (32, 32))\n'
        'l1t = make_tensor_like(buf, tail, "NZ")\n'
        'dma_copy(l1t, tail)\n'
        'assert equal(host(l1t), host(A)[32:40, 32:40])\n')
    from apdsl.semantics.program import Program
    result = Program.from_path(str(src)).run(trace=True)
    (rec,) = [r for r in result.trace.records if r.op == "dma_copy"]
    (dst,) = rec.operands["dst"]
    (srcap,) = rec.operands["src"]
    assert dst.buffer == "l1" and dst.format == "NZ" and srcap.pattern == [[40, 8], [1, 8]]


def test_formats_convert_is_public():
    x = np.arange(20 * 28, dtype=np.float16).reshape(20, 28)
    nz = apdsl.formats.convert(x, "ND", "NZ")
    assert nz.shape == (2, 2, 16, 16)
    np.testing.assert_array_equal(apdsl.formats.convert(nz, "NZ", "ND", shape=(20, 28)), x)
