"""The one switch of the fast paths (`apdsl.options(plans=False)`, `APDSL_PLANS=0`): with plans
off nothing is kept on a view or in a plan table and the interpreter compiles no specialised
code, and every program gives what it gives with plans on (the general path is the fast
paths' oracle): the same values, printed output, trace and diagnostics."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import raises_code

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.table.operators import OPERATORS
from apdsl.semantics.program import Program
from apdsl.tensor.machine import Machine, plans_default

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.apk"))

pytestmark = pytest.mark.plans  # (both sides compared here, whatever APDSL_PLANS says)


@pytest.mark.parametrize("value, on", [(None, True), ("", True), ("1", True), ("yes", True),
                                       ("0", False), ("off", False), (" False ", False),
                                       ("no", False)])
def test_the_environment_sets_the_default(value, on):
    environ = {} if value is None else {"APDSL_PLANS": value}
    assert plans_default(environ) is on


def test_the_option_is_a_bool_restored_after_its_block():
    assert apdsl.options().__enter__().plans is True
    with apdsl.options(plans=False) as opts:
        assert opts.plans is False
    assert Machine().options.plans is not None
    with raises_code("APK421"):
        apdsl.options(plans=0)


def test_with_plans_off_nothing_is_kept_on_a_view():
    with apdsl.options(plans=False):
        s = apdsl.from_numpy(np.arange(128 * 64, dtype=np.float32).reshape(128, 64), "sbuf")
        h = apdsl.ndarray((128, 64), "float32", "hbm")
        for _ in range(3):
            apdsl.dma_copy(h[:, 0:32], s[:, 0:32])
        assert h[:, 0:32] is not h[:, 0:32]  # indexing makes a new view every time
        d, x = h[:, 32:64], s[:, 32:64]
        for _ in range(3):
            apdsl.dma_copy(d, x)
        for t in (h, s, d, x):
            for slot in ("memo", "kids", "key", "pair"):
                assert getattr(t, slot, None) is None, slot
    np.testing.assert_array_equal(h.numpy(), s.numpy())
    apdsl.dma_copy(d, x)  # plans on again: kept
    assert h[:, 0:32] is h[:, 0:32]


def test_with_plans_off_a_call_compiles_to_the_general_closure():
    source = "def f(t, A):\n    dma_copy(t, A)\n"
    call = Program(source, "p.apk").module.body[0].body[0].expr
    assert Program(source, "p.apk").interpreter().compile_expr(call).__code__.co_filename \
        == "<apdsl site>"
    with apdsl.options(plans=False):
        interp = Program(source, "p.apk").interpreter()
        assert not interp.plans and not interp.direct_instructions
        assert interp.compile_expr(call).__code__.co_filename != "<apdsl site>"


def _outcome(path: Path, trace: bool):
    """What running the example's first kernel gives: its value, printed output and trace
    records, or its error (code, message, span, labels)."""
    program = Program.from_path(str(path))
    kernels = [k.name for k in program.kernels()]
    out = io.StringIO()
    try:
        r = program.run(kernels[0] if kernels else None, trace=trace, out=out)
    except ApdslError as e:
        return ("error", e.code, e.message, e.span,
                [(lab.span, lab.message) for lab in e.labels], out.getvalue())
    value = r.value.numpy() if hasattr(r.value, "numpy") else r.value
    records = None if r.trace is None else [
        (x.op, x.name, x.location, x.engine, x.event) for x in r.trace.records]
    return ("ok", value, out.getvalue(), records, r.interpreter.budget.used)


@pytest.mark.parametrize("trace", [False, True])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_runs_as_on_the_general_path(path, trace, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fast = _outcome(path, trace)
    with apdsl.options(plans=False):
        slow = _outcome(path, trace)
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        np.testing.assert_array_equal(np.asarray(fast[1]), np.asarray(slow[1]))
        assert fast[2:] == slow[2:]
    else:
        assert fast == slow


# -- dma_copy with views spelled every way, against the general path and NumPy ---------------

SPELLINGS = ("index", "slice", "ap", "reshape", "permute")


def _view(t, spelling: str, lo: int, hi: int, shape: tuple[int, int]):
    """Columns lo:hi of the 2-D view `t` of `shape`, spelled as asked."""
    p, f = shape
    if spelling == "index":
        return t[:, lo:hi]
    if spelling == "slice":
        return t.slice(1, lo, hi)
    if spelling == "ap":
        return t.ap([[f, p], [1, hi - lo]], offset=lo)
    if spelling == "reshape":  # (p, f) -> (p, 1, f), then back through the middle dim
        return t.reshape((p, 1, f))[:, 0, lo:hi]
    return t.reshape((p, 1, f)).permute((0, 2, 1))[:, lo:hi, 0]


def _copies(pairs, init_check: bool):
    """The destination after the copies, or the first error's code."""
    rng = np.random.default_rng(3)
    p, f = 16, 32
    src = apdsl.ndarray((p, f), "float32", "sbuf")
    host = np.zeros((p, f), np.float32)  # NumPy's side: the unwritten columns read as 0
    host[:, 0:f - 4] = rng.standard_normal((p, f - 4)).astype(np.float32)
    write_view(src[:, 0:f - 4], host[:, 0:f - 4])
    dst = apdsl.ndarray((p, f), "float32", "hbm")
    write_view(dst, np.zeros((p, f), np.float32))
    want = np.zeros((p, f), np.float32)
    try:
        with apdsl.options(init_check=init_check):
            for _ in range(2):  # again: a plan is made, then taken
                for (ds, ss), (lo, hi), (lo2, hi2) in pairs:
                    apdsl.dma_copy(_view(dst, ds, lo, hi, (p, f)),
                                   _view(src, ss, lo2, hi2, (p, f)))
                    want[:, lo:hi] = host[:, lo2:hi2]
    except ApdslError as e:  # (storages named by their number: another on each side)
        return ("error", e.code, re.sub(r"%\d+", "%", e.message))
    np.testing.assert_array_equal(dst.numpy(), want)
    return ("ok", dst.numpy())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.tuples(st.sampled_from(SPELLINGS), st.sampled_from(SPELLINGS)),
                          st.tuples(st.integers(0, 31), st.integers(1, 8)),
                          st.integers(0, 31)), min_size=1, max_size=4),
       st.booleans())
def test_copies_of_views_spelled_every_way_are_the_general_paths(raw, init_check):
    pairs = [(sp, (lo, min(lo + n, 32)), (lo2, min(lo2 + min(lo + n, 32) - lo, 32)))
             for sp, (lo, n), lo2 in raw]
    fast = _copies(pairs, init_check)
    with apdsl.options(plans=False):
        slow = _copies(pairs, init_check)
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        np.testing.assert_array_equal(fast[1], slow[1])
    else:
        assert fast == slow


# -- view methods keep their children, as indexing does ----------------------------------------

CALLS = [("slice", (1, 2, 5), {}), ("slice", (1, 0, 6, 3), {}), ("select", (1, 3), {}),
         ("permute", ((0, 2, 1),), {}), ("permute", ([0, 2, 1],), {}),
         ("expand_dim", (1,), {}), ("reshape", ((8, 2, 3, 4),), {}),
         ("reshape_dim", (1, (3, 2)), {}), ("flatten_dims", (1, 2), {}),
         ("rearrange", ("p a b -> p (a b)",), {}), ("rearrange", ("p (x y) b -> p x y b",),
                                                       {"x": 2}),
         ("view", ("int32",), {}), ("ap", ([[24, 8], [1, 6]],), {"offset": 2}),
         ("ap", ([[24, 8], [4, 3], [1, 2]], 5), {})]


@pytest.mark.parametrize("name, args, kwargs", CALLS, ids=lambda c: str(c))
def test_a_view_method_returns_the_view_it_made_before(name, args, kwargs):
    t = apdsl.ndarray((8, 6, 4), "float32", "sbuf")
    with apdsl.options(plans=False):
        general = getattr(t, name)(*args, **kwargs)
        assert getattr(t, name)(*args, **kwargs) is not general
    view = getattr(t, name)(*args, **kwargs)
    assert getattr(t, name)(*args, **kwargs) is view
    assert (view.layout, view.dtype, view.storage) == \
        (general.layout, general.dtype, general.storage)


@pytest.mark.parametrize("name, args, code", [("slice", (1, 4, 9), "APK203"),
                                              ("permute", ((1, 0, 2),), "APK202"),
                                              ("reshape", ((5, 5),), "APK208"),
                                              ("select", (0, 1), "APK228")])
def test_a_view_method_that_failed_fails_again(name, args, code):
    t = apdsl.ndarray((8, 6, 4), "float32", "sbuf")
    for _ in range(2):
        with raises_code(code):
            getattr(t, name)(*args)


def test_arguments_of_other_types_are_not_kept_but_give_the_same_view():
    t = apdsl.ndarray((8, 6, 4), "float32", "hbm")
    a = t.slice(np.int64(1), 2, 5)
    assert a is not t.slice(np.int64(1), 2, 5)
    assert a.layout == t.slice(1, 2, 5).layout


def test_with_plans_off_no_plan_table_keeps_anything_of_a_run():
    """The Ascend tile steps (Nd2Nz, LoadData, mmad, Fixpipe), an Ascend GEMM kernel (the sync
    checker on) and an NKI tile loop (dma_copy, tensor_tensor, nc_matmul), all with plans off:
    no table of the plan layer has an entry for any of their views or storages."""
    from test_ascend_fast import _run_steps

    from apdsl.runtime.ascend import dma as ascend_dma
    from apdsl.runtime.ascend import mmad
    from apdsl.runtime.core import resolve
    from apdsl.runtime.plans import table
    from apdsl.runtime.sync import sync_facts

    planned = set(sync_facts.PLANS)
    kept = set(table.PLANS)
    with apdsl.options(plans=False):
        views = list(_run_steps(32, 64, 48, 5).values())
        program = Program.from_path(str(ROOT / "examples" / "ascend_gemm.apk"))
        program.run([k.name for k in program.kernels()][0])  # (a kernel: the sync checker on)
        a = apdsl.from_numpy(np.ones((128, 64), np.float32), "sbuf")
        b = apdsl.ndarray((128, 64), "float32", "sbuf")
        p = apdsl.ndarray((64, 64), "float32", "psum")
        h = apdsl.ndarray((128, 64), "float32", "hbm")
        for _ in range(3):
            apdsl.tensor_tensor(b, a, a, OPERATORS["add"])
            apdsl.nc_matmul(p, a, b)
            apdsl.dma_copy(h, b)
        views += [a, b, p, h]
    tables = [ascend_dma.COPY_PLANS,
              ascend_dma._aligned, ascend_dma._regions, ascend_dma._whole, mmad.PLANS,
              sync_facts._facts]
    storages = [resolve._row_plans]
    for t in views:
        for slot in ("memo", "kids", "key", "pair"):
            assert getattr(t, slot, None) is None, slot
        for weak in tables:
            assert t not in weak
        for weak in storages:
            assert t.storage not in weak
    assert set(sync_facts.PLANS) <= planned
    assert set(table.PLANS) <= kept


# The test files CI runs again with plans off (SPEC 10's oracle for the fast paths): at least
# the instruction, view, Ascend, pipes and corpus tests.  A new file of one of these families
# goes into `.ci/run`'s list, unless it is the fast paths' own (marked `plans` as a whole).
PLANS_OFF_FAMILIES = ("test_instructions", "test_compute_", "test_movement_", "test_reduce_",
                      "test_mmad", "test_views", "test_indirect_views", "test_layout_",
                      "test_nki_matmul", "test_ascend_", "test_asc_vector", "test_asc_copy",
                      "test_asc_cube", "test_asc_transpose", "test_asc_quant", "test_queues",
                      "test_cores", "test_pipes", "test_sync_program_order",
                      "test_corpus_command", "test_corpus_pyasc")


def plans_off_files() -> list[str]:
    """The files `.ci/run` runs with APDSL_PLANS=0: every `tests/....py` after the variable."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return re.findall(r"tests/\w+\.py", text[text.index("APDSL_PLANS=0"):])


def test_ci_runs_the_instruction_view_ascend_pipes_and_corpus_tests_with_plans_off():
    listed = plans_off_files()
    assert len(listed) == len(set(listed)) and len(listed) > 30
    assert all((ROOT / f).exists() for f in listed)
    missing = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if not path.stem.startswith(PLANS_OFF_FAMILIES):
            continue
        whole_file_plans = re.search(r"^pytestmark = pytest\.mark\.plans", path.read_text(),
                                     re.M)
        if not whole_file_plans and f"tests/{path.name}" not in listed:
            missing.append(path.name)
    assert missing == []
