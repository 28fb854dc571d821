"""On-chip allocation by liveness: a tile is live from its first access to its last access, so
a dead tile a Python variable still names takes no space, and neither does a tile declared but
not used yet; a program is refused (APK302, at the declaration of the tile that overflowed)
exactly when the live set at some tile's first access does not fit.  The oracle is a
brute-force model that sees the whole access trace at once."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

UNIT = 32 * 1024  # bytes a partition: trn2's SBUF partition (224 KiB) holds 7
CAP_UNITS = 7


# -- the oracle -------------------------------------------------------------------------------

def oracle(trace: list[tuple], cap: int) -> tuple[int, int, int] | None:
    """None when the live set at every tensor's first access fits `cap`; else where an online
    allocator that learns accesses as they come must refuse: (trace position of the access
    that first makes a live set overflow, the id of the tensor whose first access began the
    earliest live set overflowing then, the id accessed).  Live at the first access of n, at
    position p: n, and every tensor first accessed before p, not dropped before p, used after
    p.  A tensor never accessed is never live."""
    size = {op[1]: op[2] for op in trace if op[0] == "alloc"}
    dropped = {op[1]: p for p, op in enumerate(trace) if op[0] == "drop"}
    first: dict[int, int] = {}
    for p, op in enumerate(trace):
        if op[0] == "use" and op[1] not in first:
            first[op[1]] = p
    starts = sorted((p, n) for n, p in first.items())
    for t, op in enumerate(trace):
        if op[0] != "use":
            continue
        for p, n in starts:
            if p >= t:
                break
            live = {n} | {x for x, f in first.items() if f < p and dropped.get(x, len(trace)) > p
                          and any(trace[q] == ("use", x) for q in range(p + 1, t + 1))}
            if sum(size[x] for x in live) > cap:
                return t, n, op[1]
    return None


def run_trace(trace: list[tuple]) -> None:
    """Run `trace` as an NKI kernel: ("alloc", i, units) an SBUF tile of that many units a
    partition named t<i>; ("use", i) a memset of it; ("drop", i) the last reference dropped."""
    @nki.jit
    def kernel():
        held = {}
        for op in trace:
            if op[0] == "alloc":
                held[op[1]] = nl.ndarray((1, op[2] * UNIT), dtype=nl.uint8, buffer=nl.sbuf,
                                         name=f"t{op[1]}")
            elif op[0] == "use":
                nisa.memset(dst=held[op[1]], value=op[1])
            else:
                del held[op[1]]
    nki.simulate(kernel)()


@st.composite
def traces(draw: st.DrawFn) -> list[tuple]:
    out: list[tuple] = []
    alive: list[int] = []
    n = 0
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["alloc", "alloc", "use", "use", "drop"]))
        if kind == "alloc" or not alive:
            out.append(("alloc", n, draw(st.integers(1, 3))))
            alive.append(n)
            n += 1
        elif kind == "use":
            out.append(("use", draw(st.sampled_from(alive))))
        else:
            gone = draw(st.sampled_from(alive))
            alive.remove(gone)
            out.append(("drop", gone))
    return out


@settings(max_examples=120, deadline=None)
@given(trace=traces())
def test_random_allocations_and_accesses_are_decided_as_the_live_set_oracle_decides(trace):
    want = oracle(trace, CAP_UNITS)
    if want is None:
        run_trace(trace)
        return
    _, new, accessed = want
    with pytest.raises(ApdslError) as e:
        run_trace(trace)
    assert e.value.code == "APK302"
    assert (e.value.facts["tensor"], e.value.facts["accessed"]) == (f"t{new}", f"t{accessed}")


def test_the_oracle_is_not_vacuous():
    # (the cases the property test above relies on, decided by hand)
    assert oracle([("alloc", 0, 4), ("alloc", 1, 4), ("use", 1)], 7) is None  # 0 never used
    assert oracle([("alloc", 0, 4), ("alloc", 1, 4), ("use", 0)], 7) is None  # 1 never used
    assert oracle([("alloc", 0, 4), ("use", 0), ("alloc", 1, 4), ("use", 1), ("use", 0)],
                  7) == (4, 1, 0)
    assert oracle([("alloc", 0, 4), ("alloc", 1, 4), ("use", 0), ("use", 1), ("use", 0)],
                  7) == (4, 1, 0)
    # 0's last use comes before 1's first: never live together, whatever the declarations
    assert oracle([("alloc", 0, 4), ("alloc", 1, 4), ("use", 0), ("use", 1), ("use", 1)],
                  7) is None
    assert oracle([("alloc", 0, 4), ("drop", 0), ("alloc", 1, 4), ("use", 1)], 7) is None


def test_a_least_recently_used_victim_would_be_the_wrong_one():
    # a (3 units) and b (3 units) held, c (3 units) does not fit beside both; a, the least
    # recently used, is accessed again, b never: a and c are live together (6 of 7 units)
    trace = [("alloc", 0, 3), ("use", 0), ("alloc", 1, 3), ("use", 1), ("alloc", 2, 3),
             ("use", 2), ("use", 0)]
    assert oracle(trace, CAP_UNITS) is None
    run_trace(trace)
    for plans in (True, False):
        with apdsl.options(plans=plans):
            run_trace(trace)


# -- kernels in both frontends ----------------------------------------------------------------

@nki.jit
def _psum_tile_kept_by_a_list(a):
    """Nine PSUM tiles of a bank each (PSUM holds eight), each dead once copied out, all kept
    named by a list until the kernel returns."""
    x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    kept = []
    for i in range(9):
        part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=x[:, i * 8:i * 8 + 128], moving=x)
        nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)
        kept.append(part)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


@nki.jit
def _psum_tiles_read_after_the_ninth(a):
    x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    kept = []
    for _ in range(9):
        part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=x[:, 0:128], moving=x)
        kept.append(part)
    for t in kept:  # all nine live across the ninth allocation
        nisa.tensor_copy(dst=x, src=t)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out


def _matmuls(a: np.ndarray) -> np.ndarray:
    a64 = a.astype(np.float64)
    return sum(a64[:, i * 8:i * 8 + 128].T @ a64 for i in range(9))


@pytest.mark.plans
@pytest.mark.parametrize("plans", [True, False])
def test_dead_psum_tiles_named_by_a_list_take_no_space(plans):
    a = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    with apdsl.options(plans=plans):
        got = _psum_tile_kept_by_a_list(a)
    np.testing.assert_allclose(got, _matmuls(a), rtol=1e-4, atol=1e-3)


@pytest.mark.plans
@pytest.mark.parametrize("plans", [True, False])
def test_tiles_live_together_past_capacity_are_refused_at_the_allocation(plans):
    a = np.ones((128, 512), np.float32)
    with apdsl.options(plans=plans), pytest.raises(ApdslError) as e:
        _psum_tiles_read_after_the_ninth(a)
    err = e.value
    assert err.code == "APK302"
    assert err.message.startswith("allocating 2048 bytes per partition in psum exceeds its "
                                  "capacity (16384 bytes per partition on trn2, 16384 already "
                                  "in use)")  # kept[0..7] read again: eight banks
    assert err.span is not None and err.span.file == __file__
    src = open(__file__).read().splitlines()
    assert "part = nl.ndarray" in src[err.span.line - 1]
    assert any(n.startswith("part: float32[128, 512] @ psum") and "accessed again at line "
               f"{_line_of('nisa.tensor_copy(dst=x, src=t)')}" in n for n in err.notes)


def _tiles_declared_up_front(late: bool):
    """Twelve PSUM tiles of a bank each (PSUM holds eight) declared together before any is
    used (nki-library's MoE kernels declare their accumulators so); each is then filled and
    read, either right away (one live at a time) or all after the last is filled (`late`)."""
    @nki.jit
    def kernel(a):
        x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        parts = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(12)]
        for i, part in enumerate(parts):
            nisa.nc_matmul(dst=part, stationary=x[:, i * 8:i * 8 + 128], moving=x)
            if not late:
                nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)
        if late:
            for part in parts:
                nisa.tensor_tensor(dst=acc, data1=part, data2=acc, op=nl.add)
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    return kernel


@pytest.mark.plans
@pytest.mark.parametrize("plans", [True, False])
def test_tiles_declared_up_front_take_space_from_their_first_access(plans):
    # a tile is live from its first access (NKI's allocator gives a tile its address at its
    # first write): used one after the other, the twelve fit in eight banks
    a = np.random.default_rng(3).standard_normal((128, 512)).astype(np.float32)
    a64 = a.astype(np.float64)
    want = sum(a64[:, i * 8:i * 8 + 128].T @ a64 for i in range(12))
    with apdsl.options(plans=plans):
        got = _tiles_declared_up_front(False)(a)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    # all twelve filled before any is read: nine live together at the ninth's first access
    with apdsl.options(plans=plans), pytest.raises(ApdslError) as e:
        _tiles_declared_up_front(True)(a)
    err = e.value
    assert err.code == "APK302" and "16384 already in use" in err.message
    src = open(__file__).read().splitlines()
    assert "parts = [nl.ndarray(" in src[err.span.line - 1]  # at the declaration
    assert any("accessed again at line "
               f"{_line_of('data1=part, data2=acc')}" in n for n in err.notes)


def _line_of(text: str) -> int:
    return next(i for i, s in enumerate(open(__file__).read().splitlines(), 1) if text in s)


APK = """
kernel k(a: f32[128, 512] @ hbm) -> f32[128, 512] @ hbm:
    keep: f32[128, 16384] @ sbuf
    dma_copy(keep[:, 0:512], a)
    acc: f32[128, 512] @ sbuf
    tensor_copy(acc, keep[:, 0:512])
    for i in range(3):
        big: f32[128, 40960] @ sbuf
        memset(big, 1.0)
        tensor_tensor(acc, acc, big[:, 0:512], add)
    out = ndarray((128, 512), f32, hbm)
    dma_copy(out, acc)
    return out
"""


def test_an_apk_program_with_a_dead_top_level_tile_runs():
    # keep (64 KiB a partition) is dead after the copy; big (160 KiB) fits only without it
    a = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    got = Program(APK, "t.apk").run("k", {"a": a}).value.numpy()
    np.testing.assert_allclose(np.asarray(got), a + 3.0, rtol=1e-6)


def test_an_apk_program_reading_the_tile_again_is_refused_at_the_declaration():
    src = APK.replace("    out = ndarray", "    tensor_copy(acc, keep[:, 0:512])\n    out = ndarray")
    with pytest.raises(ApdslError) as e:
        Program(src, "t.apk").run("k", {"a": np.ones((128, 512), np.float32)})
    assert e.value.code == "APK302" and e.value.span.line == 8  # big's declaration
    assert e.value.facts["accessed"] == "keep"
    assert any("accessed again at line 11" in n for n in e.value.notes)


KERNEL = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a):
    x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    kept = []
    for i in range(9):
        part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=part, stationary=x[:, 0:128], moving=x)
        kept.append(part)
    for t in kept[LAST:]:
        nisa.tensor_copy(dst=x, src=t)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out
'''


@pytest.mark.parametrize("last,ok", [(8, True), (0, False)])
def test_check_gives_the_verdict_run_gives(tmp_path, last, ok):
    (tmp_path / "k.py").write_text(KERNEL.replace("LAST", str(last)))
    np.save(tmp_path / "a.npy", np.ones((128, 512), np.float32))
    for cmd in ("run", "check"):
        proc = subprocess.run([sys.executable, "-m", "apdsl", cmd, "k.py", "-i", "a=a.npy"],
                              capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "NO_COLOR": "1"})
        assert (proc.returncode == 0) == ok, (cmd, proc.stderr)
        if not ok:
            assert "k.py:12:16: error[APK302]" in proc.stderr, (cmd, proc.stderr)
            assert "accessed again at line 16" in proc.stderr, (cmd, proc.stderr)


def test_a_dormant_tile_dropped_then_is_forgotten_and_the_buffer_is_whole_again(machine):
    trace = [("alloc", 0, 4), ("use", 0), ("alloc", 1, 4), ("drop", 0), ("use", 1),
             ("alloc", 2, 3), ("use", 1), ("use", 2)]
    assert oracle(trace, CAP_UNITS) is None
    run_trace(trace)
    assert not machine.accounting.shelf and not machine.accounting.watch
