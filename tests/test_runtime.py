"""Shadow-NumPy oracle for the runtime: random view chains applied both to an apdsl tensor and to
the NumPy array it was made from must agree, read through `t.numpy()`, through `dma_copy`, and
through the access-pattern semantics of seed 000 evaluated directly on the flattened storage;
writes through the chain must land where NumPy says (or be refused as double writes)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from math import prod
from typing import Any

import einops
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl.errors import ApdslError, ViewError
from apdsl.runtime.core import execute
from apdsl.runtime.core.options import options
from apdsl.runtime.instructions import dma_copy, tensor_copy
from apdsl.tensor.dtypes import dtype as to_dtype
from apdsl.tensor.view import from_numpy, ndarray

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
VIEW_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"]


# -- the oracle of seed 000 --------------------------------------------------------------------

def ap_eval(flat: np.ndarray, offset: int, pattern: list[list[int]]) -> np.ndarray:
    """`flat[offset + sum(i_k * stride_k)]` over the pattern's index space, loop-free."""
    idx = np.full((), offset, np.int64)
    n = len(pattern)
    for k, (s, c) in enumerate(pattern):
        idx = idx + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    return flat[np.broadcast_to(idx, tuple(c for _, c in pattern))]


def _offsets(offset: int, pattern: list[list[int]]) -> np.ndarray:
    idx = np.full((), offset, np.int64)
    n = len(pattern)
    for k, (s, c) in enumerate(pattern):
        idx = idx + (np.arange(c, dtype=np.int64) * s).reshape((c,) + (1,) * (n - k - 1))
    return np.broadcast_to(idx, tuple(c for _, c in pattern))


def storage_flat(base: np.ndarray, dt: Any) -> np.ndarray:
    """The storage bytes as a flat array of `dt` (whole elements only)."""
    raw = np.ascontiguousarray(base).reshape(-1).view(np.uint8)
    item = np.dtype(dt).itemsize
    return raw[:raw.size - raw.size % item].view(dt)


# -- random view chains -------------------------------------------------------------------------

class Chain:
    """The apdsl view and its NumPy shadow, kept in step."""

    def __init__(self, base: np.ndarray, buffer: str) -> None:
        self.base = base
        self.buffer = buffer
        self.onchip = buffer == "sbuf"
        self.t = from_numpy(base, buffer)
        self.ref = base  # NumPy values of the view
        self.is_view = True  # ref is a NumPy view of base (so NumPy's no-copy rules apply)
        self.steps: list[Callable[[Any], Any]] = []  # replayable on a fresh tensor
        self.plain_dtype = True  # no view(dtype) so far: values are storage offsets
        self.out_of_bounds = False

    def apply(self, step: Callable[[Any], Any], ref: np.ndarray, is_view: bool | None = None
              ) -> None:
        self.t = step(self.t)
        self.steps.append(step)
        self.ref = ref
        if is_view is not None:
            self.is_view = is_view

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.t.shape)


def factorize(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def draw_shape_of_size(data: Any, n: int, max_dims: int = 4) -> tuple[int, ...]:
    k = data.draw(st.integers(1, max_dims))
    dims = [1] * k
    for f in factorize(n):
        dims[data.draw(st.integers(0, k - 1))] *= f
    return tuple(dims)


def step_slice(c: Chain, data: Any) -> None:
    d = data.draw(st.integers(0, len(c.shape) - 1))
    n = c.shape[d]
    start = data.draw(st.integers(0, n - 1))
    end = data.draw(st.integers(start + 1, n))
    step = 1 if (c.onchip and d == 0) else data.draw(st.integers(1, 3))
    key = (slice(None),) * d + (slice(start, end, step),)
    c.apply(lambda t: t.slice(d, start, end, step), c.ref[key])


def step_select(c: Chain, data: Any) -> None:
    lo = 1 if c.onchip else 0
    if len(c.shape) < (3 if c.onchip else 2):
        return
    d = data.draw(st.integers(lo, len(c.shape) - 1))
    i = data.draw(st.integers(0, c.shape[d] - 1))
    c.apply(lambda t: t.select(d, i), c.ref[(slice(None),) * d + (i,)])


def step_permute(c: Chain, data: Any) -> None:
    nd = len(c.shape)
    rest = data.draw(st.permutations(range(1 if c.onchip else 0, nd)))
    order = ((0,) if c.onchip else ()) + tuple(rest)
    c.apply(lambda t: t.permute(order), c.ref.transpose(order))


def step_expand(c: Chain, data: Any) -> None:
    if len(c.shape) >= 5:
        return
    d = data.draw(st.integers(1 if c.onchip else 0, len(c.shape)))
    c.apply(lambda t: t.expand_dim(d), np.expand_dims(c.ref, d))


def step_squeeze(c: Chain, data: Any) -> None:
    ones = [d for d, n in enumerate(c.shape) if n == 1 and (d > 0 or not c.onchip)]
    if not ones or len(c.shape) < 2:
        return
    d = data.draw(st.sampled_from(ones))
    c.apply(lambda t: t.squeeze_dim(d), np.squeeze(c.ref, d))


def step_broadcast(c: Chain, data: Any) -> None:
    ones = [d for d, n in enumerate(c.shape) if n == 1 and (d > 0 or not c.onchip)]
    if not ones:
        return
    d = data.draw(st.sampled_from(ones))
    size = data.draw(st.integers(1, 4))
    shape = list(c.shape)
    shape[d] = size
    c.apply(lambda t: t.broadcast(d, size), np.broadcast_to(c.ref, tuple(shape)))


def numpy_nocopy(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        return None


def step_reshape(c: Chain, data: Any) -> None:
    if c.onchip and len(c.shape) < 2:
        return
    if c.onchip:
        rest = draw_shape_of_size(data, prod(c.shape[1:]), 3)
        shape = (c.shape[0],) + rest
    else:
        shape = draw_shape_of_size(data, prod(c.shape), 4)
    _reshape_like(c, lambda t: t.reshape(shape), shape)


def step_reshape_dim(c: Chain, data: Any) -> None:
    lo = 1 if c.onchip else 0
    if len(c.shape) - 1 < lo:
        return
    d = data.draw(st.integers(lo, len(c.shape) - 1))
    sizes = draw_shape_of_size(data, c.shape[d], 3)
    shape = c.shape[:d] + sizes + c.shape[d + 1:]
    if len(shape) > 6:
        return
    _reshape_like(c, lambda t: t.reshape_dim(d, sizes), shape)


def step_flatten(c: Chain, data: Any) -> None:
    lo = 1 if c.onchip else 0
    if len(c.shape) - 1 < lo + 1:
        return
    a = data.draw(st.integers(lo, len(c.shape) - 2))
    b = data.draw(st.integers(a, len(c.shape) - 1))
    shape = c.shape[:a] + (prod(c.shape[a:b + 1]),) + c.shape[b + 1:]
    _reshape_like(c, lambda t: t.flatten_dims(a, b), shape)


def _reshape_like(c: Chain, step: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
    try:
        new = step(c.t)
    except ViewError as e:
        assert e.code in ("APK209", "APK210", "APK214"), e
        new = None
    if c.is_view:
        expect = numpy_nocopy(c.ref, shape)
        assert (new is None) == (expect is None), (str(c.t), shape, c.ref.strides)
    else:
        expect = c.ref.reshape(shape)
    if new is not None:
        c.apply(lambda t: step(t), expect)


def step_rearrange(c: Chain, data: Any) -> None:
    nd = len(c.shape)
    names = [f"a{k}" for k in range(nd)]
    sizes: dict[str, int] = {}
    inputs: list[str] = []
    elementary: list[str] = []
    split = data.draw(st.integers(-1, nd - 1))
    for k, nm in enumerate(names):
        n = c.shape[k]
        fs = factorize(n)
        if k == split and not (c.onchip and k == 0) and len(fs) >= 2:
            x = prod(fs[:data.draw(st.integers(1, len(fs) - 1))])
            inputs.append(f"({nm}x {nm}y)")
            sizes[f"{nm}x"] = x
            elementary += [f"{nm}x", f"{nm}y"]
        else:
            inputs.append(nm)
            elementary.append(nm)
    head = [elementary[0]] if c.onchip else []
    body = [e for e in elementary if e not in head]
    body = list(data.draw(st.permutations(body)))
    groups: list[str] = []
    i = 0
    while i < len(body):
        g = data.draw(st.integers(1, min(3, len(body) - i)))
        part = body[i:i + g]
        groups.append(part[0] if g == 1 else "(" + " ".join(part) + ")")
        i += g
    pattern = " ".join(inputs) + " -> " + " ".join(head + groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect = einops.rearrange(c.ref, pattern, **sizes)
    try:
        new = c.t.rearrange(pattern, **sizes)
    except ViewError as e:
        # one cause, one code: a dim sliced across its blocks (APK214) or modes that do not
        # divide where the pattern cuts (APK209), which needs no slice
        assert e.code == "APK209" or (e.code == "APK214" and not c.t.layout.is_regular), e
        return
    c.apply(lambda t: t.rearrange(pattern, **sizes), expect,
            is_view=bool(np.shares_memory(expect, c.base)))
    assert new.shape == expect.shape


def step_view(c: Chain, data: Any) -> None:
    dt = data.draw(st.sampled_from(VIEW_DTYPES))
    try:
        new = c.t.view(dt)
    except ViewError:
        return
    try:
        expect = c.ref.view(to_dtype(dt).np)
    except ValueError:
        return  # NumPy's rule differs (e.g. a size-1 last dim): no oracle
    assert new.shape == expect.shape
    c.apply(lambda t: t.view(dt), expect)
    c.plain_dtype = c.plain_dtype and to_dtype(dt).bits == 32


def onchip_key(items: list[Any], ndim: int) -> list[Any]:
    """NumPy key for apdsl's on-chip indexing: dim 0 and at least one free dim stay."""
    ints = [d for d, k in enumerate(items) if isinstance(k, int)]
    keep = {0}
    if ndim > 1 and not [d for d in range(1, ndim) if d not in ints]:
        keep.add(max(d for d in ints if d > 0))
    out = []
    for d, k in enumerate(items):
        if isinstance(k, int) and d in keep:
            out.append(slice(k, k + 1 if k != -1 else None))
        else:
            out.append(k)
    return out


def step_index(c: Chain, data: Any) -> None:
    nd = len(c.shape)
    items: list[Any] = []
    for d in range(nd):
        n = c.shape[d]
        kind = data.draw(st.sampled_from(["int", "slice", "all"]))
        ints = sum(isinstance(k, int) for k in items)
        if kind == "int" and (c.onchip or ints < nd - 1):  # HBM: keep at least one dim
            items.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            a = data.draw(st.integers(-n, n - 1))
            a_pos = a % n
            b = data.draw(st.integers(a_pos + 1, n))
            step = 1 if (c.onchip and d == 0) else data.draw(st.integers(1, 3))
            items.append(slice(a, b, step))
        else:
            items.append(slice(None))
    cut = data.draw(st.integers(0, nd))
    use_ellipsis = data.draw(st.booleans()) and all(k == slice(None) for k in items[cut:])
    key = tuple(items[:cut]) + ((Ellipsis,) if use_ellipsis else tuple(items[cut:]))
    np_key = onchip_key(items, nd) if c.onchip else items
    c.apply(lambda t: t[key], c.ref[tuple(np_key)])


def step_ap(c: Chain, data: Any) -> None:
    """`.ap` addresses the storage directly; the shadow evaluates the pattern on it."""
    dt = c.t.dtype
    flat = storage_flat(c.base, dt.np)
    limit = flat.size
    base = c.t.offset
    k = data.draw(st.integers(1, 3))
    pattern = []
    if c.onchip:
        free = limit // c.base.shape[0]
        pattern.append([free, data.draw(st.integers(1, c.base.shape[0]))])
        k -= 1
    for _ in range(k):
        pattern.append([data.draw(st.integers(-3, 8)), data.draw(st.integers(1, 4))])
    off = data.draw(st.one_of(st.none(), st.integers(0, 6)))
    start = base + (off or 0)
    offs = _offsets(start, pattern)
    new_step = (lambda t: t.ap(pattern)) if off is None else (lambda t: t.ap(pattern, off))
    if offs.min() < 0 or offs.max() >= limit:
        c.apply(new_step, np.zeros(offs.shape, dt.np), is_view=False)
        c.out_of_bounds = True
        return
    c.apply(new_step, flat[offs], is_view=False)


# rearrange and slice twice: a merge that NumPy could only copy followed by a slice across its
# blocks is what makes layouts of several pieces
STEPS = [step_slice, step_slice, step_select, step_permute, step_expand, step_squeeze,
         step_broadcast, step_reshape, step_reshape_dim, step_flatten, step_rearrange,
         step_rearrange, step_view, step_index, step_ap]


def build_chain(data: Any, onchip: bool) -> Chain:
    if onchip:
        parts = data.draw(st.integers(1, 8))
        free = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=2)))
        shape = (parts,) + free
    else:
        shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    base = np.arange(prod(shape), dtype=np.int32).reshape(shape)
    c = Chain(base, "sbuf" if onchip else "hbm")
    for _ in range(data.draw(st.integers(0, 7))):
        if c.out_of_bounds:
            break
        step = data.draw(st.sampled_from(STEPS))
        step(c, data)
    return c


# -- the checks ---------------------------------------------------------------------------------

def check_reads(c: Chain) -> None:
    t, ref = c.t, c.ref
    assert tuple(t.shape) == ref.shape
    if c.out_of_bounds:
        with pytest.raises(ApdslError) as info:
            t.numpy()
        assert info.value.code == "APK401"
        return
    got = t.numpy()
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(got, ref)
    # the access-pattern semantics of seed 000 over the flattened storage
    flat = storage_flat(c.base, t.dtype.np)
    if t.layout.is_regular:
        via_ap = ap_eval(flat, t.offset, t.get_pattern()).reshape(ref.shape)
        np.testing.assert_array_equal(via_ap, ref)
    else:
        for p in t.layout.pieces():
            box = tuple(slice(a, a + n) for a, n in zip(p.start, p.shape))
            via_ap = ap_eval(flat, p.offset, [list(x) for x in p.pattern]).reshape(p.shape)
            np.testing.assert_array_equal(via_ap, ref[box])
    if not ref.shape:
        return
    # through dma_copy into fresh HBM, same shape and flattened
    out = ndarray(ref.shape, t.dtype, "hbm")
    dma_copy(out, t)
    np.testing.assert_array_equal(out.numpy(), ref)
    flat_out = ndarray((ref.size,), t.dtype, "hbm")
    dma_copy(flat_out, t)
    np.testing.assert_array_equal(flat_out.numpy(), ref.reshape(-1))


def check_writes(c: Chain, data: Any) -> None:
    """Write distinct values through the replayed chain on fresh storage."""
    if c.out_of_bounds or not c.plain_dtype or not c.ref.shape or c.t.dtype.name != "int32":
        return
    fresh = from_numpy(np.full(c.base.shape, -1, np.int32), c.buffer)
    t = fresh
    for step in c.steps:
        t = step(t)
    offsets = np.asarray(c.ref).reshape(-1).astype(np.int64)  # values of an arange are offsets
    seed = data.draw(st.integers(0, 2**16))
    vals = (np.random.default_rng(seed).permutation(offsets.size) + 1000).astype(np.int32)
    src = from_numpy(vals.reshape(c.ref.shape), "hbm")
    if np.unique(offsets).size < offsets.size:
        with pytest.raises(ApdslError) as info:
            dma_copy(t, src)
        assert info.value.code == "APK405"
        np.testing.assert_array_equal(fresh.numpy(), np.full(c.base.shape, -1))  # untouched
        return
    dma_copy(t, src)
    expect = np.full(c.base.size, -1, np.int64)
    expect[offsets] = vals
    np.testing.assert_array_equal(fresh.numpy().reshape(-1), expect)


@given(st.data())
@SETTINGS
def test_hbm_view_chains_match_numpy(data):
    c = build_chain(data, onchip=False)
    check_reads(c)
    check_writes(c, data)


@given(st.data())
@SETTINGS
def test_sbuf_view_chains_match_numpy(data):
    c = build_chain(data, onchip=True)
    check_reads(c)
    check_writes(c, data)
    if c.out_of_bounds or len(c.ref.shape) < 2 or c.ref.dtype != np.int32:
        return
    # on chip, tensor_copy keeps each partition's data in its partition
    parts = c.ref.shape[0]
    dst = ndarray((parts, prod(c.ref.shape[1:])), "int32", "sbuf")
    try:
        tensor_copy(dst, c.t)
    except ApdslError as e:
        assert e.code == "APK304"  # more than 4 free entries after coalescing
        return
    np.testing.assert_array_equal(dst.numpy(), c.ref.reshape(parts, -1))


@given(st.data())
@SETTINGS
def test_nested_dims_sliced_across_blocks(data):
    """Merges NumPy can only copy, then slices across their blocks: layouts of several pieces."""
    shape = tuple(data.draw(st.lists(st.integers(2, 6), min_size=3, max_size=3)))
    base = np.arange(prod(shape), dtype=np.int32).reshape(shape)
    c = Chain(base, "hbm")
    outer = data.draw(st.sampled_from(["(a c) b", "(c a) b", "b (a c)", "(b a c)", "(c b) a"]))
    pattern = f"a b c -> {outer}"
    c.apply(lambda t: t.rearrange(pattern), einops.rearrange(base, pattern), is_view=False)
    for _ in range(data.draw(st.integers(1, 3))):
        data.draw(st.sampled_from([step_slice, step_slice, step_index, step_permute,
                                   step_expand]))(c, data)
    check_reads(c)
    check_writes(c, data)


# -- focused runtime properties -----------------------------------------------------------------

@given(st.integers(1, 64), st.integers(1, 64), st.sampled_from(["float32", "bfloat16", "int8"]),
       st.sampled_from(["float32", "float16", "int32"]))
@settings(max_examples=40, deadline=None)
def test_transposing_and_converting_copies(m, n, sdt, ddt):
    a = np.random.default_rng(m * 100 + n).standard_normal((m, n)).astype(np.float32) * 50
    src = ndarray((m, n), sdt, "hbm")
    execute.write_view(src, a)
    dst = ndarray((n, m), ddt, "hbm")
    dma_copy(dst, src.permute((1, 0)))
    want = ndarray((n, m), ddt, "hbm")
    execute.write_view(want, src.numpy().T)
    np.testing.assert_array_equal(dst.numpy(), want.numpy())


def test_tiled_transpose_large_and_in_place():
    a = np.arange(600 * 520, dtype=np.float32).reshape(600, 520)
    A = from_numpy(a)
    D = ndarray((520, 600), "float32", "hbm")
    dma_copy(D, A.permute((1, 0)))
    np.testing.assert_array_equal(D.numpy(), a.T)
    # source and destination overlap: the tiles must not read what they already overwrote
    sq = np.arange(512 * 512, dtype=np.float32).reshape(512, 512)
    S = from_numpy(sq)
    dma_copy(S, S.permute((1, 0)))
    np.testing.assert_array_equal(S.numpy(), sq.T)
    # a batch of transposes in three dims
    b = np.arange(3 * 300 * 200, dtype=np.int32).reshape(3, 300, 200)
    B = from_numpy(b)
    E = ndarray((3, 200, 300), "int32", "hbm")
    dma_copy(E, B.permute((0, 2, 1)))
    np.testing.assert_array_equal(E.numpy(), b.transpose(0, 2, 1))


def test_copy_between_shapes_without_a_common_refinement():
    a = np.arange(6 * 35, dtype=np.float32).reshape(6, 35)
    A = from_numpy(a)
    D = ndarray((10, 21), "float32", "hbm")
    dma_copy(D, A[:, :])
    np.testing.assert_array_equal(D.numpy(), a.reshape(10, 21))
    E = ndarray((35, 6), "float32", "hbm")
    dma_copy(E, A.permute((1, 0)).slice(0, 0, 35))
    np.testing.assert_array_equal(E.numpy(), a.T)


def test_read_view_is_a_copy_and_write_view_casts():
    t = from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    x = t.numpy()
    x[:] = -1
    np.testing.assert_array_equal(t.numpy(), np.arange(12).reshape(3, 4))
    execute.write_view(t[1:3, 1:3], np.array([[0.5, 1.5], [2.5, -0.5]]))
    assert t.numpy()[1:3, 1:3].tolist() == [[0.5, 1.5], [2.5, -0.5]]
    u = ndarray((2, 2), "int8", "hbm")
    execute.write_view(u, np.array([[0.5, 1.5], [300, np.nan]]))
    assert u.numpy().tolist() == [[0, 2], [127, 0]]


def test_partial_writes_collapse_to_all_written():
    t = ndarray((64, 64), "float32", "hbm")
    for i in range(0, 64, 16):
        assert not t.storage.all_written
        execute.write_view(t[i:i + 16, :], np.ones((16, 64)))
    assert t.storage.all_written
    with options(init_check=True):
        np.testing.assert_array_equal(t.numpy(), np.ones((64, 64)))


def test_nested_layout_pieces_read_and_write():
    a = np.arange(4 * 6 * 5, dtype=np.int32).reshape(4, 6, 5)
    A = from_numpy(a)
    merged = A.rearrange("b c h -> (b h) c")  # a nested dimension: a view, not a copy
    expect = einops.rearrange(a, "b c h -> (b h) c")
    np.testing.assert_array_equal(merged.numpy(), expect)
    part = merged.slice(0, 3, 17)  # not aligned to the blocks of 5: several pieces
    assert len(part.layout.pieces()) > 1
    np.testing.assert_array_equal(part.numpy(), expect[3:17])
    vals = -np.arange(part.size, dtype=np.int32).reshape(part.shape) - 1
    dma_copy(part, from_numpy(vals))
    expect[3:17] = vals
    np.testing.assert_array_equal(merged.numpy(), expect)
