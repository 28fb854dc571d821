"""Views against a shadow NumPy array: every view op applied to an apdsl tensor and to
`np.arange(...)` must address the same elements.  The layout's own offsets are the oracle here
(no data moves); tests/test_runtime.py checks the same chains through execution."""

from __future__ import annotations

import einops
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError, TargetError, ViewError
from apdsl.tensor.layout import coalesce


def addressed(t: apdsl.Tensor) -> np.ndarray:
    """What view `t` reads from a storage holding 0, 1, 2, ... (offsets of every element)."""
    return t.layout.offsets()


def seed_ap(pattern: list, offset: int) -> np.ndarray:
    """Seed 000's semantics of an access pattern: nested loops over [step, num] pairs."""
    idx = np.full((), offset, dtype=np.int64)
    for k, (step, num) in enumerate(pattern):
        shape = [1] * len(pattern)
        shape[k] = num
        idx = idx + (np.arange(num) * step).reshape(shape)
    return idx


# -- seed 000 and 001 examples -----------------------------------------------------------------

def test_seed000_slice_equals_ap():
    t = apdsl.ndarray((128, 64), "float32", "sbuf")
    u = t.slice(dim=1, start=8, end=24)
    assert u.get_pattern() == [[64, 128], [1, 16]]
    assert u.offset == 8
    v = t.ap(pattern=[[64, 128], [1, 16]], offset=8)
    assert v.get_pattern() == u.get_pattern() and v.offset == u.offset


def test_seed000_concrete_example():
    t = apdsl.ndarray((16, 16), "float32", "sbuf")
    access = t.ap(pattern=[[16, 16], [1, 8]], offset=8)
    assert access.shape == (16, 8)
    ref = np.arange(256).reshape(16, 16)[0:16, 8:16]
    assert np.array_equal(addressed(access), ref)
    assert np.array_equal(addressed(t[0:16, 8:16]), ref)


def test_seed000_ap_is_not_composable():
    t = apdsl.ndarray((128, 256), "float32", "sbuf")
    inner = t.ap(pattern=[[256, 128], [2, 128]])
    outer = inner.ap(pattern=[[256, 128], [1, 64]])
    direct = t.ap(pattern=[[256, 128], [1, 64]])
    assert np.array_equal(addressed(outer), addressed(direct))


def test_seed000_slices_chain():
    t = apdsl.ndarray((128, 256), "float32", "sbuf")
    t_a = t.slice(dim=0, start=0, end=128).slice(dim=1, start=0, end=256, step=2)
    t_b = t_a.slice(dim=0, start=0, end=64).slice(dim=1, start=0, end=64)
    assert t_b.shape == (64, 64)
    ref = np.arange(128 * 256).reshape(128, 256)[:, ::2][:64, :64]
    assert np.array_equal(addressed(t_b), ref)


def test_seed000_reinterpret_int32_as_bf16():
    t = apdsl.ndarray((128, 256), "int32", "sbuf")
    c = t.ap(pattern=[[512, 128], [1, 512]], offset=0, dtype="bfloat16")
    assert c.shape == (128, 512) and c.dtype.name == "bfloat16"


def test_seed000_partition_stepping_is_refused():
    t = apdsl.ndarray((16, 32), "float32", "sbuf")
    with pytest.raises(TargetError) as e:
        t.ap(pattern=[[64, 8], [1, 32]], offset=0)
    assert e.value.code == "APK303"


def test_seed000_pairs_as_separate_arguments_get_a_hint():
    src = apdsl.ndarray((16, 32), "float32", "sbuf")
    with pytest.raises(ViewError) as e:
        src.ap([32, 16], [1, 32])
    assert e.value.code == "APK219"
    assert "[[32, 16], [1, 32]]" in e.value.help


@pytest.mark.parametrize("make,shape", [
    (lambda t: t.broadcast(1, 8), (128, 8, 64)),
    (lambda t: t.expand_dim(1), (128, 1, 1, 64)),
    (lambda t: t.squeeze_dim(1), (128, 64)),
])
def test_seed001_shapes_on_128_1_64(make, shape):
    assert make(apdsl.ndarray((128, 1, 64), "float32", "sbuf")).shape == shape


def test_seed001_examples():
    f = "float32"
    assert apdsl.ndarray((128, 2, 3, 4), f, "sbuf").flatten_dims(1, 2).shape == (128, 6, 4)
    assert apdsl.ndarray((128, 4, 8), f, "sbuf").permute((0, 2, 1)).shape == (128, 8, 4)
    t = apdsl.ndarray((128, 24), f, "sbuf")
    assert t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4}).shape == (128, 6, 4)
    t = apdsl.ndarray((128, 4, 6), f, "sbuf")
    assert t.reshape((128, 24)).shape == (128, 24)
    assert t.reshape((128, 2, 12)).shape == (128, 2, 12)
    t = apdsl.ndarray((128, 24), f, "sbuf")
    assert t.reshape_dim(1, (4, 6)).shape == (128, 4, 6)
    assert t.reshape_dim(1, (4, -1)).shape == (128, 4, 6)
    assert apdsl.ndarray((128, 8, 64), f, "sbuf").select(1, 3).shape == (128, 64)
    t = apdsl.ndarray((128, 64), f, "sbuf")
    assert t.slice(1, 8, 24, 1).shape == (128, 16)
    assert t.slice(1, 0, 64, 2).shape == (128, 32)
    assert t.view("uint8").shape == (128, 256)
    assert t.view("int32").shape == (128, 64)
    assert apdsl.ndarray((128, 256), "uint8", "sbuf").view("float32").shape == (128, 64)
    assert t.reinterpret_cast("uint8").shape == (128, 256)
    hbm = apdsl.ndarray((64, 128, 8), f, "shared_hbm")
    offsets = apdsl.ndarray((128, 1), "int32", "sbuf")
    g = hbm.vector_select(0, offsets)
    assert g.shape == (128, 128, 8) and g.is_indirect()
    idx = apdsl.ndarray((1, 1), "uint32", "sbuf")
    h = apdsl.ndarray((4, 128, 8), f, "shared_hbm")
    s = h.select(0, idx)
    assert s.shape == (128, 8) and s.is_indirect()
    reg = apdsl.VirtualRegister(2)
    assert h.select(0, reg).shape == (128, 8)


def test_attributes():
    t = apdsl.ndarray((128, 4, 8), "bfloat16", "sbuf", name="x")
    assert (t.ndim, t.size, t.strides, t.offset, t.buffer, t.name) == (
        3, 128 * 32, (32, 8, 1), 0, "sbuf", "x")
    assert t.dtype.name == "bfloat16" and t.dtype == apdsl.bfloat16
    assert t.is_contiguous() and not t.is_indirect()
    assert not t.slice(2, 0, 8, 2).is_contiguous()
    # on-chip: the partition dim does not count for contiguity
    assert t.slice(0, 0, 64).is_contiguous()


# -- nested modes: merges NumPy cannot do without a copy -------------------------------------------

def test_rearrange_merge_is_a_view_with_longer_pattern():
    a = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    t = apdsl.ndarray((2, 3, 4, 5), "float32", "hbm")
    u = t.rearrange("b c h w -> (b h w) c")
    assert u.shape == (40, 3)
    assert np.array_equal(addressed(u), einops.rearrange(a, "b c h w -> (b h w) c"))
    pattern = u.get_pattern()
    assert len(pattern) > u.ndim and u.strides == (None, 20)
    assert pattern == [[60, 2], [1, 20], [20, 3]]


def test_unaligned_slice_of_nested_dim_is_several_pieces():
    a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    t = apdsl.ndarray((2, 3, 4), "float32", "hbm")
    m = t.rearrange("a b c -> (c a) b")
    s = m.slice(0, 1, 6)
    ref = einops.rearrange(a, "a b c -> (c a) b")[1:6]
    assert np.array_equal(addressed(s), ref)
    with pytest.raises(ViewError) as e:
        s.get_pattern()
    assert e.value.code == "APK223"
    pieces = s.layout.pieces()
    assert len(pieces) > 1
    for p in pieces:
        box = ref[tuple(slice(b, b + n) for b, n in zip(p.start, p.shape))]
        leaf = seed_ap([list(x) for x in p.pattern], p.offset)
        assert np.array_equal(leaf.reshape(box.shape), box)


# -- shadow NumPy oracle: random view chains --------------------------------------------------------

@st.composite
def chains(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    ops = draw(st.lists(st.tuples(st.sampled_from(
        ["slice", "select", "permute", "expand", "squeeze", "broadcast", "reshape", "split",
         "flatten", "merge", "index"]), st.randoms(use_true_random=False)), max_size=6))
    return shape, ops


def apply(op: str, rnd, t, x):
    """Apply one random op to both; returns (t, x) or None when the op does not apply."""
    nd = x.ndim
    if op == "slice" and nd:
        d = rnd.randrange(nd)
        n = x.shape[d]
        start = rnd.randrange(n)
        end = rnd.randrange(start + 1, n + 1)
        step = rnd.randrange(1, 4)
        sl = [slice(None)] * nd
        sl[d] = slice(start, end, step)
        return t.slice(d, start, end, step), x[tuple(sl)]
    if op == "select" and nd > 1:
        d = rnd.randrange(nd)
        i = rnd.randrange(x.shape[d])
        return t.select(d, i), x[(slice(None),) * d + (i,)]
    if op == "permute" and nd:
        order = list(range(nd))
        rnd.shuffle(order)
        return t.permute(order), x.transpose(order)
    if op == "expand":
        d = rnd.randrange(nd + 1)
        return t.expand_dim(d), np.expand_dims(x, d)
    if op == "squeeze":
        ones = [d for d in range(nd) if x.shape[d] == 1]
        if ones and nd > 1:
            d = rnd.choice(ones)
            return t.squeeze_dim(d), np.squeeze(x, d)
    if op == "broadcast":
        ones = [d for d in range(nd) if x.shape[d] == 1]
        if ones:
            d = rnd.choice(ones)
            n = rnd.randrange(1, 4)
            shape = list(x.shape)
            shape[d] = n
            return t.broadcast(d, n), np.broadcast_to(x, tuple(shape))
    if op == "reshape" and nd:
        total = x.size
        divisors = [k for k in range(1, total + 1) if total % k == 0]
        a = rnd.choice(divisors)
        new = (a, total // a) if rnd.random() < 0.5 else (total,)
        try:
            ref = np.reshape(x, new, copy=False)
        except ValueError:
            ref = None
        if _same_strides(t, x):  # NumPy decides on the same strides: the same answer
            if ref is None:
                with pytest.raises(ViewError) as e:
                    t.reshape(new)
                assert e.value.code == "APK209"
                return None
            return t.reshape(new), ref
        try:  # after a merge NumPy copied; ours is a nested view and may refuse
            return t.reshape(new), x.reshape(new)
        except ViewError as e:
            assert e.code in ("APK209", "APK214")
            return None
    if op == "split" and nd:
        d = rnd.randrange(nd)
        n = x.shape[d]
        divisors = [k for k in range(1, n + 1) if n % k == 0]
        a = rnd.choice(divisors)
        new_shape = x.shape[:d] + (a, n // a) + x.shape[d + 1:]
        try:
            u = t.reshape_dim(d, (a, n // a))
        except ViewError as e:
            assert e.code == "APK209"
            return None
        return u, x.reshape(new_shape) if x.flags.c_contiguous else _split_ref(x, d, a)
    if op == "flatten" and nd > 1:
        a = rnd.randrange(nd - 1)
        b = rnd.randrange(a + 1, nd)
        new = x.shape[:a] + (int(np.prod(x.shape[a:b + 1])),) + x.shape[b + 1:]
        try:
            ref = np.reshape(x, new, copy=False)
        except ValueError:
            with pytest.raises(ViewError):
                t.flatten_dims(a, b)
            return None
        try:
            return t.flatten_dims(a, b), ref
        except ViewError:
            # NumPy may merge through size-1 or broadcast dims we keep apart; never the reverse
            return None
    if op == "merge" and nd > 1:
        names = [f"d{i}" for i in range(nd)]
        order = names[:]
        rnd.shuffle(order)
        k = rnd.randrange(2, nd + 1)
        rhs = " ".join(order[:nd - k]) + " (" + " ".join(order[nd - k:]) + ")"
        pattern = " ".join(names) + " -> " + rhs
        try:
            u = t.rearrange(pattern)
        except ViewError as e:
            assert e.code == "APK214"
            return None
        return u, einops.rearrange(x, pattern)
    if op == "index" and nd:
        d = rnd.randrange(nd)
        n = x.shape[d]
        a, b = sorted(rnd.sample(range(-n, n + 1), 2)) if n > 1 else (0, 1)
        key = [slice(None)] * nd
        key[d] = slice(a, b)
        try:
            ref = x[tuple(key)]
        except IndexError:
            return None
        if ref.size == 0 or (a < 0 <= b and b > 0) or (a >= 0 and b < 0):
            return None
        return t[tuple(key)], ref
    return None


def _same_strides(t, x) -> bool:
    """Whether NumPy array `x` has the view's strides (size-1 dims aside), so that NumPy's
    no-copy rule decides for the same layout (after a merge `x` is a copy, laid out anew)."""
    if not t.layout.is_plain:
        return False
    return all(n == 1 or s * x.itemsize == xs
               for n, s, xs in zip(t.shape, t.strides, x.strides))


def _split_ref(x, d, a):
    n = x.shape[d]
    return x.reshape(x.shape[:d] + (a, n // a) + x.shape[d + 1:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_random_view_chains_address_what_numpy_does(case):
    shape, ops = case
    x = np.arange(int(np.prod(shape))).reshape(shape)
    t = apdsl.ndarray(shape, "float32", "hbm")
    for op, rnd in ops:
        out = apply(op, rnd, t, x)
        if out is None:
            continue
        t, x = out
        assert t.shape == x.shape, op
        assert np.array_equal(addressed(t), x), op
        if t.layout.is_regular:
            assert np.array_equal(seed_ap(t.get_pattern(), t.offset).reshape(x.shape), x)
        for p in t.layout.pieces():
            box = x[tuple(slice(b, b + n) for b, n in zip(p.start, p.shape))]
            got = seed_ap([list(q) for q in p.pattern], p.offset)
            assert np.array_equal(got.reshape(box.shape), box)
            co = coalesce([list(q) for q in p.pattern])
            assert np.array_equal(seed_ap(co, p.offset).ravel(), box.ravel())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4), st.data())
def test_reshape_follows_numpy_no_copy_rule(shape, data):
    x = np.arange(int(np.prod(shape))).reshape(shape)
    t = apdsl.ndarray(tuple(shape), "float32", "hbm")
    order = data.draw(st.permutations(range(len(shape))))
    x, t = x.transpose(order), t.permute(order)
    d = data.draw(st.integers(0, len(shape) - 1))
    if x.shape[d] > 1:
        x, t = x[(slice(None),) * d + (slice(0, None, 2),)], t.slice(d, 0, x.shape[d], 2)
    total = x.size
    a = data.draw(st.sampled_from([k for k in range(1, total + 1) if total % k == 0]))
    new = (a, total // a)
    try:
        ref = np.reshape(x, new, copy=False)
    except ValueError:
        with pytest.raises(ViewError):
            t.reshape(new)
        return
    assert np.array_equal(addressed(t.reshape(new)), ref)


# -- every constraint is refused with its code --------------------------------------------------

def sb(shape=(128, 64), dtype="float32"):
    return apdsl.ndarray(shape, dtype, "sbuf")


def hbm(shape=(4, 128, 64), dtype="float32"):
    return apdsl.ndarray(shape, dtype, "hbm")


def idx(shape=(1, 1), dtype="int32"):
    return apdsl.ndarray(shape, dtype, "sbuf")


REFUSED = [
    ("APK201", lambda: sb().slice(2, 0, 8)),
    ("APK202", lambda: sb((128, 4, 8)).permute((1, 0, 2))),
    ("APK202", lambda: sb().broadcast(0, 2)),
    ("APK202", lambda: sb((128, 1)).squeeze_dim(0)),
    ("APK202", lambda: sb().expand_dim(0)),
    ("APK202", lambda: sb((128, 4, 8)).flatten_dims(0, 1)),
    ("APK202", lambda: sb().slice(0, 0, 128, 2)),
    ("APK202", lambda: sb((128, 24)).reshape_dim(0, (2, 64))),
    ("APK202", lambda: sb((128, 24)).rearrange("p f -> (p f)")),
    ("APK202", lambda: apdsl.ndarray((128,), "float32", "sbuf")),
    ("APK203", lambda: sb().slice(1, 8, 80)),
    ("APK203", lambda: sb().slice(1, 8, 8)),
    ("APK203", lambda: sb().slice(1, -1, 8)),
    ("APK204", lambda: sb().slice(1, 0, 8, 0)),
    ("APK205", lambda: sb((128, 2, 64)).broadcast(1, 8)),
    ("APK206", lambda: sb((128, 2, 64)).squeeze_dim(1)),
    ("APK207", lambda: sb((128, 4, 8)).permute((0, 1, 1))),
    ("APK208", lambda: sb((128, 4, 6)).reshape((128, 25))),
    ("APK209", lambda: sb((128, 4, 8)).permute((0, 2, 1)).reshape((128, 32))),
    ("APK210", lambda: sb((128, 4, 8)).permute((0, 2, 1)).flatten_dims(1, 2)),
    ("APK211", lambda: sb().slice(1, 0, 64, 2).view("bfloat16")),
    ("APK212", lambda: sb((128, 6), "uint8").view("float32")),
    ("APK213", lambda: hbm().select(0, idx()).view("bfloat16")),
    ("APK214", lambda: hbm((4, 6, 8)).rearrange("a b c -> (b a) c").slice(0, 1, 6)
     .rearrange("x c -> (c x)")),
    ("APK215", lambda: sb((128, 8, 64)).select(1, 8)),
    ("APK215", lambda: sb()[:, 64]),
    ("APK216", lambda: hbm().select(0, idx()).select(0, idx())),
    ("APK217", lambda: sb().vector_select(0, idx((128, 1)))),
    ("APK217", lambda: hbm().vector_select(1, idx((128, 1)))),
    ("APK218", lambda: hbm((128, 64)).vector_select(0, idx((32, 1))).slice(0, 0, 8)),
    ("APK219", lambda: sb((16, 32)).ap([[32, 16], [1, 0]])),
    ("APK219", lambda: sb((16, 32)).ap([[32, 16, 3]])),
    ("APK221", lambda: sb((16, 32)).ap([[32, 16], [1, 32]], 1.5)),
    ("APK222", lambda: hbm((128, 512)).ap([[512, 64], [1, 512]], 0, vector_offset=idx((64, 1)),
                                          indirect_dim=1)),
    ("APK222", lambda: hbm((128, 512)).ap([[512, 64], [1, 512]], 0, scalar_offset=idx(),
                                          vector_offset=idx((64, 1)))),
    ("APK225", lambda: sb((128, 24)).reshape_dim(1, (5, -1))),
    ("APK225", lambda: sb((128, 24)).reshape((128, -1, -1))),
    ("APK227", lambda: hbm().select(0, idx(dtype="float32"))),
    ("APK227", lambda: hbm().select(0, idx((2, 1)))),
    ("APK228", lambda: sb().select(0, 3)),
    ("APK229", lambda: sb().reshape((64, 128))),
    ("APK230", lambda: sb()[0, 1, 2]),
    ("APK230", lambda: sb()[..., ...]),
    ("APK301", lambda: apdsl.ndarray((256, 64), "float32", "sbuf")),
    ("APK303", lambda: sb((16, 32)).ap([[64, 8], [1, 32]])),
    ("APK310", lambda: sb().indirect(idx((128, 4)))),
]


@pytest.mark.parametrize("code,make", REFUSED, ids=[f"{c}-{i}" for i, (c, _) in
                                                    enumerate(REFUSED)])
def test_constraint_refused(code, make):
    with pytest.raises(ApdslError) as e:
        make()
    assert e.value.code == code, e.value.message


def test_capacity_per_target():
    with apdsl.target("trn1"):
        apdsl.ndarray((128, 192 * 1024 // 4), "float32", "sbuf")
        with pytest.raises(TargetError) as e:
            apdsl.ndarray((128, 192 * 1024 // 4 + 1), "float32", "sbuf")
        assert e.value.code == "APK302"
    with apdsl.target("trn3"):
        apdsl.ndarray((128, 256 * 1024 // 4), "float32", "sbuf")
    with pytest.raises(TargetError):
        apdsl.ndarray((128, 16 * 1024 // 4 + 1), "float32", "psum")


def test_indirect_on_trn3_shape():
    with apdsl.target("trn3"):
        t = sb((128, 64))
        u = t.indirect(idx((128, 4)), num_elem=100)
        assert u.shape == (128, 100) and u.is_indirect()


def test_onchip_integer_indexing_keeps_partition_and_one_free_dim():
    t = sb((64, 64, 64))
    assert t[0, 0, 10].shape == (1, 1)
    assert t[:, 0, 10].shape == (64, 1)
    assert t[0, ...].shape == (1, 64, 64)
    assert t[-1, -2:].shape == (1, 2, 64)
    h = hbm((4, 8, 16))
    assert h[1].shape == (8, 16) and h[1, 2].shape == (16,)
    assert np.array_equal(addressed(h[1, 2:5, ::3]),
                          np.arange(4 * 8 * 16).reshape(4, 8, 16)[1, 2:5, ::3])


def _slice_by_slice(t, key):
    """`t[key]` for a key of slices, made the long way: one `Tensor.slice` per dimension cut,
    last dimension first (negative bounds counted from the end, as indexing does)."""
    items = list(key) + [slice(None)] * (t.ndim - len(key))
    for d in reversed(range(t.ndim)):
        start, stop, step = items[d].indices(t.shape[d])
        if (start, stop, step) != (0, t.shape[d], 1):
            t = t.slice(d, start, stop, step)
    return t


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=3), st.data())
def test_a_key_of_slices_is_one_view_equal_to_slicing_dimension_by_dimension(shape, data):
    # indexing by slices alone makes its view in one step (no view per dimension): it must be
    # the view slicing dimension by dimension gives, and address what NumPy's indexing does
    x = np.arange(int(np.prod(shape))).reshape(shape)
    onchip = data.draw(st.booleans())
    t = apdsl.ndarray(tuple(shape), "float32",
                      "sbuf" if onchip and len(shape) > 1 else "hbm")
    key = []
    for d in range(data.draw(st.integers(1, len(shape)))):
        n = shape[d]
        a = data.draw(st.one_of(st.none(), st.integers(-n, n - 1)))
        lo = 0 if a is None else (a + n if a < 0 else a)
        b = data.draw(st.one_of(st.none(), st.integers(lo + 1, n), st.integers(lo + 1 - n, -1)
                                if lo + 1 - n <= -1 else st.none()))
        step = data.draw(st.sampled_from([None, 1, 2, 3])) if d or not t.onchip else None
        key.append(slice(a, b, step))
    key = tuple(key) if len(key) > 1 or data.draw(st.booleans()) else key[0]
    got = t[key]
    want = _slice_by_slice(t, key if type(key) is tuple else (key,))
    assert got.layout == want.layout and got.dtype == want.dtype and got.storage is t.storage
    assert (got.label, got.coord, got.origin_shape, got.dynamic) == \
        (want.label, want.coord, want.origin_shape, want.dynamic)
    assert np.array_equal(addressed(got), x[key])


@pytest.mark.parametrize("key, code", [
    ((slice(3, 3),), "APK203"),            # empty
    ((slice(5, 2),), "APK203"),            # backwards
    ((slice(0, 70),), "APK215"),           # past the end
    ((slice(-70, 2),), "APK215"),          # before the start
    ((slice(0, 4, 0),), "APK204"),         # step 0
    ((slice(0, 8, 2),), "APK202"),         # stepping over partitions
    ((slice(0, 4), slice(0, 4), slice(0, 1)), "APK230"),  # too many
])
def test_a_key_of_slices_refused_as_before(key, code):
    from support import raises_code
    with raises_code(code):
        sb((64, 64))[key]
