"""Unwritten data propagates (SPEC 4, revised): an instruction's output element is unwritten
when an input it depends on is, and the error is raised where unwritten data reaches an
observable point, naming the tensor nothing wrote, its element, its allocation and the
instruction that first read it.  `init_check="strict"` keeps the first read as the error;
`init_check=False` reads 0.

The oracle for the propagation is a brute-force model: NumPy masks of which elements are
unwritten, propagated by hand per instruction, over random programs (Hypothesis), with plans on
and off."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.runtime.core.execute import resolve
from apdsl.runtime.table import TABLE
from apdsl.runtime.table.operators import OPERATORS as OPS
from apdsl.runtime.table.spec import DEPENDENCY_KINDS
from tests.support import raises_code

P, F = 8, 8


def unwritten(t) -> np.ndarray:
    """The runtime's unwritten elements of view `t` (logical shape)."""
    ok = resolve(t, "test", "view").written()
    return np.zeros(t.shape, bool) if ok is True else ~np.asarray(ok)


def hbm(a):
    return apdsl.from_numpy(np.asarray(a, np.float32), "hbm")


def tile(shape=(P, F), buffer="sbuf"):
    return apdsl.ndarray(shape, "float32", buffer)


# -- the brute-force model against the runtime -------------------------------------------------

box = st.tuples(st.integers(0, P - 1), st.integers(1, P), st.integers(0, F - 1),
                st.integers(1, F))
step = st.one_of(
    st.tuples(st.just("load"), st.integers(0, 3), box),
    st.tuples(st.just("memset"), st.integers(0, 3), box),
    st.tuples(st.just("add"), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("scale"), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("rowsum"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("copy"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("transpose"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("matmul"), st.integers(0, 3), st.integers(0, 3)),
)


def run_model(steps, store):
    """(the runtime's unwritten masks of the four tiles, the error a final store of box
    `store` of tile 0 raises) and the model's."""
    x = np.arange(P * F, dtype=np.float32).reshape(P, F) / 64
    src = hbm(x)
    tiles = [tile() for _ in range(4)]
    cols = [tile((P, 1)) for _ in range(4)]
    model = [np.ones((P, F), bool) for _ in range(4)]   # True: unwritten
    cmodel = [np.ones((P, 1), bool) for _ in range(4)]
    for s in steps:
        kind = s[0]
        if kind in ("load", "memset"):
            _, d, (p0, pn, f0, fn) = s
            p1, f1 = min(P, p0 + pn), min(F, f0 + fn)
            if kind == "load":
                apdsl.dma_copy(tiles[d][p0:p1, f0:f1], src[p0:p1, f0:f1])
            else:
                apdsl.memset(tiles[d][p0:p1, f0:f1], 1.0)
            model[d][p0:p1, f0:f1] = False
        elif kind == "add":
            _, d, a, b = s
            apdsl.tensor_tensor(tiles[d], tiles[a], tiles[b], OPS["add"])
            model[d] = model[a] | model[b]
        elif kind == "scale":  # by a column: each row by its partition's value
            _, d, a, c = s
            apdsl.tensor_scalar(tiles[d], tiles[a], OPS["multiply"], cols[c])
            model[d] = model[a] | cmodel[c]
        elif kind == "rowsum":
            _, c, a = s
            apdsl.tensor_reduce(cols[c], OPS["add"], tiles[a], axis=1)
            cmodel[c] = model[a].any(axis=1, keepdims=True)
        elif kind == "copy":
            _, d, a = s
            apdsl.tensor_copy(tiles[d], tiles[a])
            model[d] = model[a].copy()
        elif kind == "transpose":  # an (F, P) result of a (P, F) tile (P == F here)
            _, d, a = s
            apdsl.nc_transpose(tiles[d], tiles[a], engine=nisa.engine.vector)
            model[d] = model[a].T.copy()
        elif kind == "matmul":  # dst[m, n] sums over k of a[k, m] * b[k, n]
            _, a, b = s
            ps = tile(buffer="psum")
            apdsl.nc_matmul(ps, tiles[a], tiles[b])
            apdsl.tensor_copy(tiles[3], ps)
            model[3] = model[a].any(axis=0)[:, None] | model[b].any(axis=0)[None, :]
    got = [unwritten(t) for t in tiles] + [unwritten(c) for c in cols]
    want = model + cmodel
    p0, pn, f0, fn = store
    p1, f1 = min(P, p0 + pn), min(F, f0 + fn)
    out = apdsl.ndarray((P, F), "float32", "hbm")
    code = None
    try:
        apdsl.dma_copy(out[p0:p1, f0:f1], tiles[0][p0:p1, f0:f1])
    except apdsl.ApdslError as e:
        code = e.code
    return got, want, code, model[0][p0:p1, f0:f1].any()


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step, max_size=12), store=box, plans=st.booleans())
def test_the_runtime_propagates_unwritten_data_as_the_model_does(steps, store, plans):
    with apdsl.options(plans=plans):
        got, want, code, reaches = run_model(steps, store)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # the store is the observable point: an error exactly when unwritten data reaches it
    assert (code is not None) == bool(reaches)
    assert code in (None, "APK404", "APK412")


def test_plans_on_and_off_give_the_same_written_state_in_a_loop():
    # the fast paths (kept plans, the second round of a loop) keep the same semantics
    x = hbm(np.ones((P, F)))
    for plans in (True, False):
        with apdsl.options(plans=plans):
            a, b = tile(), tile()
            for _ in range(3):
                apdsl.dma_copy(a[0:3], x[0:3])
                apdsl.tensor_tensor(b, a, a, OPS["add"])
                apdsl.dma_copy(b[0:3], x[0:3])  # rows 0-2 written again, 3-7 still not
            expect = np.zeros((P, F), bool)
            expect[3:] = True
            np.testing.assert_array_equal(unwritten(b), expect)


# -- each dependency class ------------------------------------------------------------------

def test_every_table_entry_has_a_known_dependency_class():
    for name, entry in TABLE.items():
        d = entry.depends
        assert d.kind in DEPENDENCY_KINDS, name
        roles = {o.role for o in entry.operands if not o.writes}
        assert set(d.observed) <= roles, (name, d.observed)
        assert set(d.contract) <= roles, (name, d.contract)


def test_element_wise_by_element_and_columns_by_partition():
    a, c, d = tile(), tile((P, 1)), tile()
    apdsl.dma_copy(a[:, 0:5], hbm(np.ones((P, 5))))
    apdsl.dma_copy(c[0:6], hbm(np.ones((6, 1))))
    apdsl.tensor_scalar(d, a, OPS["add"], c)
    want = np.zeros((P, F), bool)
    want[:, 5:] = True
    want[6:, :] = True
    np.testing.assert_array_equal(unwritten(d), want)


def test_a_reduction_by_any_element_it_sums():
    a, r = tile(), tile((P, 1))
    apdsl.dma_copy(a[0:P - 1], hbm(np.ones((P - 1, F))))
    apdsl.dma_copy(a[P - 1:P, 0:F - 1], hbm(np.ones((1, F - 1))))
    apdsl.tensor_reduce(r, OPS["add"], a, axis=1)
    assert unwritten(r).ravel().tolist() == [False] * (P - 1) + [True]


def test_a_matmul_by_any_element_it_sums():
    s, m = tile(), tile()
    apdsl.dma_copy(s, hbm(np.eye(P)))
    apdsl.dma_copy(m[:, 0:3], hbm(np.ones((P, 3))))   # moving columns 3.. never written
    ps = tile(buffer="psum")
    apdsl.nc_matmul(ps, s, m)
    want = np.zeros((P, F), bool)
    want[:, 3:] = True
    np.testing.assert_array_equal(unwritten(ps), want)
    apdsl.dma_copy(s[5:6], hbm(np.ones((1, F))))
    s2 = tile()
    apdsl.dma_copy(s2[0:4], hbm(np.ones((4, F))))      # stationary rows (K) 4.. unwritten
    apdsl.nc_matmul(ps, s2, s)
    assert unwritten(ps).all()  # every output sums over all of K


def test_a_transpose_and_a_copy_element_for_element():
    a, t, c = tile(), tile(), tile()
    apdsl.dma_copy(a[0:2], hbm(np.ones((2, F))))
    apdsl.nc_transpose(t, a, engine=nisa.engine.vector)
    apdsl.tensor_copy(c, t)
    want = np.ones((P, F), bool)
    want[:, 0:2] = False
    np.testing.assert_array_equal(unwritten(t), want)
    np.testing.assert_array_equal(unwritten(c), want)


def test_a_full_write_over_unwritten_data_makes_it_written_again():
    a, b = tile(), tile()
    apdsl.dma_copy(a[0:1], hbm(np.ones((1, F))))
    apdsl.tensor_tensor(b, a, a, OPS["add"])
    assert unwritten(b)[1:].all()
    apdsl.memset(b, 2.0)
    assert not unwritten(b).any()
    np.testing.assert_array_equal(b.numpy(), np.full((P, F), 2.0, np.float32))


# -- observable points: each raises, naming the read that started it ---------------------------

def poisoned_tile():
    """A tile whose rows 2.. hold data computed from `x`, which nothing wrote there."""
    x = apdsl.ndarray((P, F), "float32", "sbuf", name="x")
    apdsl.dma_copy(x[0:2], hbm(np.ones((2, F))))
    y = apdsl.ndarray((P, F), "float32", "sbuf", name="y")
    apdsl.tensor_tensor(y, x, x, OPS["add"])
    return x, y


def assert_names_the_origin(err):
    e = err.value
    assert e.code == "APK412"
    assert "x[2, 0] was never written when tensor_tensor" in str(e), str(e)
    assert e.facts["origin"] == "x"


def test_a_host_read_of_data_computed_from_unwritten_memory():
    _, y = poisoned_tile()
    np.testing.assert_array_equal(y[0:2].numpy(), np.full((2, F), 2.0, np.float32))
    with raises_code("APK412") as err:
        y.numpy()
    assert_names_the_origin(err)


def test_a_store_to_hbm():
    _, y = poisoned_tile()
    out = apdsl.ndarray((P, F), "float32", "hbm")
    with raises_code("APK412") as err:
        apdsl.dma_copy(out, y)
    assert_names_the_origin(err)
    assert err.value.message.startswith("dma_copy: src reads y[2, 0]")


def test_a_direct_store_of_memory_nothing_wrote_is_the_read_error():
    x = tile()
    out = apdsl.ndarray((P, F), "float32", "hbm")
    with raises_code("APK404") as err:
        apdsl.dma_copy(out, x)
    assert "before anything wrote it" in str(err.value)


def test_an_index_a_register_and_a_predicate():
    _, y = poisoned_tile()
    idx = apdsl.ndarray((P, 1), "int32", "sbuf")
    apdsl.tensor_copy(idx, y[:, 0:1])
    table = hbm(np.ones((16, F)))
    rows = tile()
    with raises_code("APK412"):
        apdsl.dma_copy(rows, table.ap([[F, P], [1, F]], 0, vector_offset=idx, indirect_dim=0))
    r = apdsl.register_alloc(0)
    with raises_code("APK412"):
        apdsl.register_load(r, idx[5:6, 0:1])
    pred = apdsl.ndarray((P, F), "uint8", "sbuf")
    apdsl.tensor_copy(pred, y)
    d = tile()
    apdsl.memset(d, 0.0)
    with raises_code("APK412"):
        apdsl.tensor_copy_predicated(d, y, pred)


def test_a_scans_carry_chain():
    _, y = poisoned_tile()
    d, init = tile(), tile((P, 1))
    apdsl.memset(init, 0.0)
    with raises_code("APK412"):
        apdsl.tensor_tensor_scan(d, y, y, init, OPS["multiply"], OPS["add"])


# -- the option ------------------------------------------------------------------------------

def test_strict_init_keeps_the_first_read_as_the_error():
    with apdsl.options(init_check="strict"):
        x = apdsl.ndarray((P, F), "float32", "sbuf", name="x")
        apdsl.dma_copy(x[0:2], hbm(np.ones((2, F))))
        y = tile()
        with raises_code("APK404") as err:
            apdsl.tensor_tensor(y, x, x, OPS["add"])
    assert err.value.message.startswith("tensor_tensor: data1 reads x[2, 0]")


def test_init_check_off_reads_zero():
    with apdsl.options(init_check=False):
        _, y = poisoned_tile()
        got = y.numpy()
    want = np.zeros((P, F), np.float32)
    want[0:2] = 2.0
    np.testing.assert_array_equal(got, want)


def test_a_domain_check_skips_lanes_computed_from_unwritten_data():
    # 1/sum of rows never loaded (they read 0 here) is garbage, not an error: hardware computes
    # it; only the loaded rows are stored
    a, s, r = tile(), tile((P, 1)), tile((P, 1))
    apdsl.dma_copy(a[0:3], hbm(np.ones((3, F))))
    apdsl.tensor_reduce(s, OPS["add"], a, axis=1)
    apdsl.reciprocal(r, s)
    np.testing.assert_allclose(r[0:3].numpy(), np.full((3, 1), 1 / F, np.float32))
    z = tile((P, 1))
    apdsl.memset(z, 0.0)
    with raises_code("APK463"):  # a written zero is still outside the domain
        apdsl.reciprocal(r, z)


# -- the masked tail: load n rows of a 128-row tile, compute on the whole tile, store n rows ----

def rmsnorm_reference(x):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)


@nki.jit
def masked_tail_current(x):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range((n + 127) // 128):
        rows = min(128, n - i * 128)
        t = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:rows, :], src=x[i * 128:i * 128 + rows, :])
        sq = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=t, scale=1.0 / d ** 0.5,
                        reduce_op=nl.add, reduce_res=ss, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=ss, op0=nl.add, operand0=1e-6)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.rsqrt, data=r)
        y = nl.ndarray((128, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[i * 128:i * 128 + rows, :], src=y[0:rows, :])
    return out


@nki.jit
def masked_tail_legacy(x):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(d)[None, :]
    for i in nl.affine_range((n + 127) // 128):
        t = nl.load(x[i * 128 + i_p, i_f], mask=(i * 128 + i_p < n))
        sq = nl.multiply(t, t)                          # the whole tile, loaded or not
        mean = nl.multiply(nl.sum(sq, axis=[1]), 1.0 / d)
        inv = nl.rsqrt(nl.add(mean, 1e-6))
        y = nl.multiply(t, inv)
        nl.store(out[i * 128 + i_p, i_f], value=y, mask=(i * 128 + i_p < n))
    return out


@pytest.mark.parametrize("kernel", [masked_tail_current, masked_tail_legacy],
                         ids=["current", "legacy"])
@pytest.mark.parametrize("n", [200, 57, 128])
def test_the_masked_tail_runs_and_matches_numpy(kernel, n):
    x = np.random.default_rng(n).standard_normal((n, 32)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), rmsnorm_reference(x), rtol=1e-4, atol=1e-5)


def test_a_masked_tail_that_stores_the_unloaded_rows_names_the_load():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:57, :], src=x[0:57, :])
        y = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=y, op=nl.exp, data=t)
        nisa.dma_copy(dst=out, src=y)                   # all 128 rows: 71 never loaded
        return out

    with raises_code("APK412") as err:
        kernel(np.ones((57, 32), np.float32))
    assert "t[57, 0] was never written when activation" in err.value.message
    assert err.value.span is not None and err.value.span.file == __file__


APK_TAIL = """\
N = 200
D = 32

kernel rms(X: f32[N, D] @ hbm) -> f32[N, D] @ shared_hbm:
    out = ndarray((N, D), f32, shared_hbm)
    for i in range(2):
        rows = min(128, N - i * 128)
        t: f32[128, D] @ sbuf
        dma_copy(dst=t[0:rows, :], src=X[i * 128:i * 128 + rows, :])
        sq: f32[128, D] @ sbuf
        ss: f32[128, 1] @ sbuf
        nisa.activation(dst=sq, op=nl.square, data=t, scale=0.17677669529663687,
                        reduce_op=nl.add, reduce_res=ss, reduce_cmd="reset_reduce")
        r: f32[128, 1] @ sbuf
        nisa.tensor_scalar(dst=r, data=ss, op0=nl.add, operand0=0.000001)
        inv: f32[128, 1] @ sbuf
        nisa.activation(dst=inv, op=nl.rsqrt, data=r)
        y: f32[128, D] @ sbuf
        nisa.tensor_scalar(dst=y, data=t, op0=nl.multiply, operand0=inv)
        STORE
    return out
"""


def apdsl_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1"})


def test_the_masked_tail_in_apk_runs_and_matches_numpy_and_strict_init_refuses_it(tmp_path):
    (tmp_path / "rms.apk").write_text(APK_TAIL.replace(
        "STORE", "dma_copy(dst=out[i * 128:i * 128 + rows, :], src=y[0:rows, :])"))
    x = np.random.default_rng(1).standard_normal((200, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = apdsl_cli("run", "rms.apk", "-i", "X=x.npy", "-o", "out.npy", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), rmsnorm_reference(x), rtol=1e-4,
                               atol=1e-5)
    assert apdsl_cli("check", "rms.apk", cwd=tmp_path).returncode == 0
    r = apdsl_cli("run", "rms.apk", "-i", "X=x.npy", "--strict-init", cwd=tmp_path)
    assert r.returncode == 1 and "error[APK404]" in r.stderr, r.stderr
    assert "nisa.activation(dst=sq" in r.stderr  # the first read, where strict reports it


def test_the_apk_tail_storing_every_row_is_apk412_at_the_store(tmp_path):
    (tmp_path / "rms.apk").write_text(APK_TAIL.replace(
        "STORE", "dma_copy(dst=ndarray((128, D), f32, hbm), src=y)"))
    x = np.ones((200, 32), np.float32)
    np.save(tmp_path / "x.npy", x)
    r = apdsl_cli("run", "rms.apk", "-i", "X=x.npy", cwd=tmp_path)
    assert r.returncode == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith("rms.apk:20:9: error[APK412]: dma_copy: src reads y[72, 0]"), first
    assert "t[72, 0] was never written when activation" in first


# -- a kernel's result: APK180 at its return, in run and check, in both frontends ---------------

NEVER = textwrap.dedent("""\
    kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ shared_hbm:
        x: f32[128, 64] @ sbuf
        dma_copy(dst=x, src=A)
        out = ndarray((128, 64), f32, shared_hbm)
        return out
    """)


@pytest.mark.parametrize("command", ["run", "check"])
def test_an_apk_result_never_written_is_apk180_at_its_return(tmp_path, command):
    (tmp_path / "k.apk").write_text(NEVER)
    r = apdsl_cli(command, "k.apk", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines()[0] == "k.apk:5:5: error[APK180]: the kernel's result `out` " \
        "was never written", r.stderr


def test_an_apk_result_partly_written_is_apk180_in_run_and_check(tmp_path):
    (tmp_path / "k.apk").write_text(NEVER.replace(
        "    return out", "    dma_copy(dst=out[0:64, :], src=x[0:64, :])\n    return out"))
    for command in ("run", "check"):
        r = apdsl_cli(command, "k.apk", cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert "error[APK180]: the kernel's result `out` is only partly written" in r.stderr


def test_a_python_result_never_written_is_apk180_in_check_too(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent("""\
        import nki
        import nki.language as nl

        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            return out
        """))
    np.save(tmp_path / "a.npy", np.ones((4, 8), np.float32))
    for command in ("run", "check"):
        r = apdsl_cli(command, "k.py", "-i", "a=a.npy", cwd=tmp_path)
        assert r.returncode == 1, (command, r.stderr)
        assert "error[APK180]: the kernel's result `out` was never written" in r.stderr, r.stderr


def test_a_predicated_copy_leaves_unselected_elements_as_they_were():
    _, y = poisoned_tile()              # rows 2.. computed from unwritten data
    d = tile()
    apdsl.memset(d, 5.0)
    pred = apdsl.ndarray((P, F), "uint8", "sbuf")
    sel = np.zeros((P, F), np.uint8)
    sel[:, 0:3] = 1                     # columns 0-2 take y, the rest keep 5.0
    apdsl.dma_copy(pred, apdsl.from_numpy(sel, "hbm"))
    apdsl.tensor_copy_predicated(d, y, pred)
    want = np.zeros((P, F), bool)
    want[2:, 0:3] = True
    np.testing.assert_array_equal(unwritten(d), want)
    np.testing.assert_array_equal(d[:, 3:].numpy(), np.full((P, F - 3), 5.0, np.float32))
