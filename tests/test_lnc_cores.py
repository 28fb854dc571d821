"""The two NeuronCores of an LNC=2 launch (`kernel[2]`, `--grid 2`) meet at `nisa.sendrecv` and
`nisa.core_barrier`, as their docstrings say (rank IDs 0 and 1 are the programs of the logical
NeuronCore, sharing HBM): the exchange against NumPy, a program that never arrives is a located
deadlock (APK965) naming the waiting program, and a kernel without them runs its programs in the
order it always did (program 0 to its end, then program 1)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import apdsl
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl
from apdsl.errors import ApdslError


@nki.jit
def swap_halves(x):
    me = nl.program_id(0)
    mine = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[me])
    theirs = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=mine, dst=theirs, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    total = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=mine, data2=theirs, op=nl.add)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[me], src=total)
    nisa.core_barrier(data=out, cores=(0, 1))
    return out


def test_the_two_programs_exchange_and_sum():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 16)).astype(np.float32)
    got = swap_halves[2](x)
    want = np.stack([x[0] + x[1], x[1] + x[0]])
    np.testing.assert_array_equal(got, want)


@nki.jit
def one_sided(x):
    me = nl.program_id(0)
    a = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x[me])
    b = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=b, value=0.0)
    if me == 0:  # program 1 never calls sendrecv
        nisa.sendrecv(src=a, dst=b, send_to_rank=1, recv_from_rank=1, pipe_id=0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[me], src=b)
    return out


def test_a_program_that_never_exchanges_is_a_located_deadlock():
    with pytest.raises(ApdslError) as e:
        one_sided[2](np.ones((2, 4, 8), np.float32))
    err = e.value
    assert err.code == "APK965"
    assert err.message.startswith("deadlock: program 0 waits at sendrecv"), err.message
    assert err.span is not None and err.span.file == __file__
    assert "nisa.sendrecv" in open(__file__).read().splitlines()[err.span.line - 1]
    assert any("program 1 ended without arriving" in n for n in err.notes), err.notes


@nki.jit
def barrier_once(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    if nl.program_id(0) == 1:
        nisa.core_barrier(data=out, cores=(0, 1))
    nisa.dma_copy(dst=out, src=x)
    return out


def test_a_barrier_only_one_program_reaches_is_a_deadlock():
    with pytest.raises(ApdslError) as e:
        barrier_once[2](np.ones((4, 4), np.float32))
    assert e.value.code == "APK965" and "program 1 waits at core_barrier" in e.value.message


@nki.jit
def barrier_on_a_tile(x):
    # each program writes its half of a shared HBM tensor, meets the other at a barrier whose
    # data is an SBUF tile (as nki-library's moe_cte passes its block counter), then reads the
    # other's half: program 0 can only read it if the barrier made it wait for program 1
    me = nl.program_id(0)
    shared = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=shared[me], src=x[me])
    counter = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=counter, value=0)
    nisa.core_barrier(counter, (0, 1))
    t = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=shared[1 - me])
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[me], src=t)
    return out


def test_a_barrier_on_an_sbuf_tile_orders_the_programs():
    x = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    np.testing.assert_array_equal(barrier_on_a_tile[2](x), x[::-1])


@nki.jit
def barrier_on_psum(x):
    acc = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.psum)
    nisa.core_barrier(acc, (0, 1))
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out


def test_a_barrier_on_psum_is_refused():
    with pytest.raises(ApdslError) as e:
        barrier_on_psum[2](np.ones((2, 4, 8), np.float32))
    assert e.value.code == "APK968" and "acc is in psum" in e.value.message, e.value.message


def test_explain_says_where_the_barrier_data_may_live():
    r = subprocess.run([sys.executable, "-m", "apdsl", "explain", "APK968"], capture_output=True,
                       text=True)
    text = " ".join(r.stdout.split())
    assert r.returncode == 0 and "`core_barrier` takes `cores=(0, 1)` and its `data` in HBM or " \
        "SBUF, never PSUM" in text, r.stdout


def test_alone_the_exchange_has_no_partner():
    with pytest.raises(ApdslError) as e:
        swap_halves(np.ones((2, 4, 8), np.float32))
    assert e.value.code == "APK967" and "kernel[2]" in e.value.help


@nki.jit
def halves(x):
    me = nl.program_id(0)
    t = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[me])
    nisa.activation(dst=t, op=nl.exp, data=t)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[me], src=t)
    return out


def test_programs_without_meetings_run_in_program_order():
    from apdsl.runtime.core.trace import tracing
    x = np.linspace(-1, 1, 2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    with tracing() as tr:
        got = halves[2](x)
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-6)
    ops = [r.op for r in tr.records]
    assert ops == ["dma_copy", "activation", "dma_copy"] * 2, ops


KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def exchange(x):
    me = nl.program_id(0)
    a = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x[me])
    b = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=a, dst=b, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
    out = nl.ndarray((2, 4, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[me], src=b)
    return out
'''


def test_the_command_line_runs_an_lnc2_exchange(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.stack([np.full((4, 8), 1.0, np.float32), np.full((4, 8), 2.0, np.float32)])
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(tmp_path / "k.py"), "-i",
                        f"x={tmp_path / 'x.npy'}", "--grid", "2", "-o", str(tmp_path / "o.npy")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), x[::-1])
    assert apdsl.get_target("trn2").name == "trn2"


# -- unwritten data travels with what sendrecv moves (SPEC 4) --------------------------------

def partial_exchange(keep0, keep1):
    """Program 0 loads 6 rows of its 8-row tile, program 1 loads 2; each sends the whole tile
    (rows nothing wrote included, as a kernel sending a scale tile that only some partitions
    hold) and stores the first rows of what it received: program 0 `keep0` of them, program 1
    `keep1`."""
    @nki.jit
    def kernel(x):
        me = nl.program_id(0)
        rows = 6 if me == 0 else 2
        keep = keep0 if me == 0 else keep1
        at = 0 if me == 0 else keep0
        mine = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine[0:rows, :], src=x[me, 0:rows, :])
        theirs = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=mine, dst=theirs, send_to_rank=1 - me, recv_from_rank=1 - me,
                      pipe_id=0)
        out = nl.ndarray((keep0 + keep1, x.shape[2]), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[at:at + keep, :], src=theirs[0:keep, :])
        return out
    return kernel


def test_sendrecv_moves_written_rows_element_for_element():
    # each program stores only rows its peer wrote: no garbage reaches the output, although
    # both tiles sent had unwritten rows (as a whole-tile dependency would have said)
    x = np.arange(2 * 8 * 4, dtype=np.float32).reshape(2, 8, 4)
    got = partial_exchange(2, 5)[2](x)
    np.testing.assert_array_equal(got, np.concatenate([x[1, :2], x[0, :5]]))


def test_the_received_rows_are_unwritten_where_the_sender_never_wrote_them():
    # program 0 wrote its own rows 0..5, but what it received is program 1's tile, whose row 2
    # nothing wrote: storing it is the error, naming that tile and its sendrecv (judged by
    # program 0's own tile, the store would pass and output garbage)
    x = np.ones((2, 8, 4), np.float32)
    with pytest.raises(ApdslError) as e:
        partial_exchange(3, 2)[2](x)
    err = e.value
    assert err.code == "APK412", err.message
    assert err.message.startswith("dma_copy: src reads theirs[2, 0]"), err.message
    assert "mine[2, 0] was never written when sendrecv" in err.message, err.message
