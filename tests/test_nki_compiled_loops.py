"""NKI 0.6's compiled loops, `nl.fori_loop` and `nl.while_loop`: bounds and conditions read
from registers loaded from the kernel's data, the body run once per iteration.  The kernels are
written for these tests; NumPy (the same loop over the array) is the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from support import apdsl_in_process, raises_code, run_nki_file

import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl

RNG = np.random.default_rng(23)


@nki.jit
def doubled_rows(data, count, lower, step):
    """out[i] = 2 * data[i] for i in range(lower, count[0, 0], step), the other rows 0."""
    rows, cols = data.shape
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=count)
    n = nisa.register_alloc()
    nisa.register_load(n, n_sb)
    zeros = nl.ndarray((rows, cols), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)

    def body(i):
        nisa.dma_copy(dst=row, src=data.ap([[cols, 1], [1, cols]], scalar_offset=i,
                                           indirect_dim=0))
        nisa.tensor_scalar(dst=row, data=row, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0),
                      src=row)

    nl.fori_loop(lower, n, body, step=step)
    return out


@pytest.mark.parametrize("lower,step,count", [(0, 1, 5), (1, 2, 8), (3, 1, 2), (0, 1, 0),
                                              (6, 3, 4), (0, 4, 7)])
def test_fori_loop_runs_its_body_over_a_register_bound(lower, step, count):
    data = RNG.standard_normal((8, 16)).astype(np.float32)
    got = doubled_rows(data, np.array([[count]], np.int32), lower, step)
    want = np.zeros_like(data)
    for i in range(lower, count, step):
        want[i] = 2 * data[i]
    np.testing.assert_array_equal(got, want)


@nki.jit
def repeated_sum(value, count):
    """acc = value added count[0, 0] times: the loop runs while the count register, decremented
    on chip and loaded again by the body, is nonzero."""
    acc = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    val = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=val, src=value)
    left = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=left, src=count)
    one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, left)

    def body(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=val, op=nl.add)
        nisa.tensor_tensor(dst=left, data1=left, data2=one, op=nl.subtract)
        nisa.register_load(r, left)
        return r

    nl.while_loop(reg, body)
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


@pytest.mark.parametrize("count", [0, 1, 5, 17])
def test_while_loop_runs_until_the_returned_register_is_zero(count):
    value = np.array([[1.25]], np.float32)
    got = repeated_sum(value, np.array([[count]], np.int32))
    want = np.float32(0.0)
    for _ in range(count):  # float32 additions in the kernel's order
        want = np.float32(want + value[0, 0])
    np.testing.assert_array_equal(got, [[want]])


@nki.jit
def dynamic_rows(data, flags, start, start_in_register):
    """out[i] = data[i] + 1 for i in range(start, flags.sum()), the other rows 0: a
    `dynamic_range` whose stop is a register loaded from an on-chip sum (its start too, when
    asked), the row an SBUF counter the body advances (the shape of nki-library's MoE loop
    over padded blocks)."""
    rows, cols = data.shape
    n = flags.shape[1]
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray((rows, cols), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    f_sb = nl.ndarray((1, n), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=f_sb, src=flags)
    total = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=total, data=f_sb, op=nl.add, axis=1)
    stop = nisa.register_alloc()
    nisa.register_load(stop, total)
    at = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=at, value=start)
    first = nisa.register_alloc(start) if start_in_register else start
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)
    for _ in nl.dynamic_range(first, stop):
        nisa.dma_copy(dst=row, src=data.ap([[cols, 1], [1, cols]], scalar_offset=at,
                                           indirect_dim=0))
        nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=at, indirect_dim=0),
                      src=row)
        nisa.tensor_scalar(dst=at, data=at, op0=nl.add, operand0=1)
    return out


@pytest.mark.parametrize("start,flags,in_register", [
    (0, [1, 1, 0, 1, 0, 1], False), (2, [1, 1, 1, 1, 1, 1, 1, 0], False),
    (3, [1, 1, 0, 0], True), (0, [0, 0, 0], True), (5, [1] * 8, True)])
def test_dynamic_range_reads_its_register_bounds_when_the_loop_starts(start, flags,
                                                                      in_register):
    data = RNG.standard_normal((8, 16)).astype(np.float32)
    f = np.array([flags], np.int32)
    got = dynamic_rows(data, f, start, in_register)
    want = np.zeros_like(data)
    for i in range(start, int(f.sum())):
        want[i] = data[i] + np.float32(1.0)
    np.testing.assert_array_equal(got, want)


def test_dynamic_range_over_an_unloaded_register_is_apk410():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        for _ in nl.dynamic_range(0, nisa.register_alloc()):
            pass
        return out

    with raises_code("APK410") as e:
        k(np.zeros((2, 2), np.float32))
    assert "dynamic_range" in e.value.message


@nki.jit
def misuse(a, how):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    if how == "step":
        nl.fori_loop(0, 4, lambda i: None, step=0)
    elif how == "float bound":
        nl.fori_loop(0, 4.0, lambda i: None)
    elif how == "wide bound":
        nl.fori_loop(0, 2 ** 31, lambda i: None)
    elif how == "unloaded register":
        nl.fori_loop(0, nisa.register_alloc(), lambda i: None)
    elif how == "while init":
        nl.while_loop(3, lambda r: r)
    elif how == "while returns nothing":
        nl.while_loop(nisa.register_alloc(2), lambda r: None)
    elif how == "arithmetic on the index":
        nl.fori_loop(0, 4, lambda i: nisa.dma_copy(dst=out[i * 1], src=a[i * 1]))
    elif how == "a bare while on a register":
        reg = nisa.register_alloc(1)
        while reg:  # a truthy register would loop forever
            pass
    elif how == "range of a register":
        for _ in range(nisa.register_alloc(2)):
            pass
    elif how == "comparing a register":
        nl.fori_loop(0, 4, lambda i: i < 2)
    return out


@pytest.mark.parametrize("how,code", [("step", "APK155"), ("float bound", "APK155"),
                                      ("wide bound", "APK155"),
                                      ("unloaded register", "APK410"),
                                      ("while init", "APK155"),
                                      ("while returns nothing", "APK155"),
                                      ("arithmetic on the index", "APK413"),
                                      ("a bare while on a register", "APK413"),
                                      ("range of a register", "APK413"),
                                      ("comparing a register", "APK413")])
def test_a_misused_loop_is_refused_at_the_call(how, code):
    with raises_code(code):
        misuse(np.ones((4, 4), np.float32), how)


def test_the_command_line_locates_the_refusal(tmp_path):
    proc = run_nki_file(tmp_path, "nl.fori_loop(0, 4, lambda i: None, step=-1)")
    assert proc.returncode == 1
    assert "APK155" in proc.stderr and "kern.py:9" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_python_arithmetic_on_the_loop_index_is_located_in_the_body(tmp_path):
    proc = run_nki_file(tmp_path, "def body(i):", "    row = i * 4",
                        "    nisa.dma_copy(dst=out[row], src=a[row])", "nl.fori_loop(0, 4, body)",
                        rows=16)
    assert proc.returncode == 1
    assert "APK413" in proc.stderr and "kern.py:10" in proc.stderr, proc.stderr
    assert "register i is used as a Python value" in proc.stderr
    assert "Traceback" not in proc.stderr


LOADED_BOUNDS = '''
import apdsl.nki as nki
import apdsl.nki.isa as nisa
import apdsl.nki.language as nl


def register_of(t):
    sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=sb, src=t)
    r = nisa.register_alloc()
    nisa.register_load(r, sb)
    return r


@nki.jit
def counted(data, count):
    """The first count[0, 0] rows plus 1 (a dynamic_range trip count from memory), then the
    first count[0, 0] rows doubled again (a fori_loop bound from memory), the others 0."""
    rows, cols = data.shape
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray((rows, cols), dtype=data.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zeros, value=0.0)
    nisa.dma_copy(dst=out, src=zeros)
    row = nl.ndarray((1, cols), dtype=data.dtype, buffer=nl.sbuf)
    at = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=at, value=0)
    for _ in nl.dynamic_range(register_of(count)):
        nisa.dma_copy(dst=row, src=data.ap([[cols, 1], [1, cols]], scalar_offset=at,
                                           indirect_dim=0))
        nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=at, indirect_dim=0),
                      src=row)
        nisa.tensor_scalar(dst=at, data=at, op0=nl.add, operand0=1)

    def double(i):
        nisa.dma_copy(dst=row, src=out.ap([[cols, 1], [1, cols]], scalar_offset=i,
                                          indirect_dim=0))
        nisa.tensor_scalar(dst=row, data=row, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap([[cols, 1], [1, cols]], scalar_offset=i, indirect_dim=0),
                      src=row)

    nl.fori_loop(0, register_of(count), double)
    return out
'''


def test_check_mode_checks_a_loop_over_bounds_from_memory_once(tmp_path):
    # check mode reads no memory, so a register loaded from it holds no value: the loop body
    # (one copy on the device) is checked once instead of the loop refusing the bound
    # (APK410); run reads the bound and matches NumPy
    (tmp_path / "k.py").write_text(LOADED_BOUNDS)
    data = RNG.standard_normal((6, 4)).astype(np.float32)
    np.save(tmp_path / "d.npy", data)
    np.save(tmp_path / "c.npy", np.array([[3]], np.int32))
    args = ("k.py", "-i", "data=d.npy", "-i", "count=c.npy")
    proc = apdsl_in_process("check", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = apdsl_in_process("run", *args, "-o", "o.npy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = np.zeros_like(data)
    want[:3] = (data[:3] + np.float32(1.0)) * np.float32(2.0)
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), want)


def test_a_single_register_bound_is_named_the_stop():
    @nki.jit
    def one_bound(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        for _ in nl.dynamic_range(nisa.register_alloc()):
            pass
        return out

    with raises_code("APK410") as e:
        one_bound(np.ones((2, 2), np.float32))
    assert "the loop's stop bound" in e.value.message, e.value.message


CHECKED = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(data, count):
    out = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=count)
    n = nisa.register_alloc()
    nisa.register_load(n, n_sb)
    row = nl.ndarray((1, 16), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=out, src=data)
    zero = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0)

    def body(i):
        nisa.dma_copy(dst=row, src=data.ap([[16, 1], [1, 16]], scalar_offset=i,
                                           indirect_dim=0))
        nisa.dma_copy(dst=out.ap([[16, 1], [1, 16]], scalar_offset=i, indirect_dim=0),
                      src=row)
        BAD

    def again(r):
        nisa.register_load(r, zero)  # (one iteration when run)
        BAD
        return r

    def plain():  # (dynamic_range's index is an int)
        nisa.dma_copy(dst=row, src=data[0:1, :])
        BAD

    LOOP
    return out
"""


@pytest.mark.parametrize("loop", ["nl.while_loop(n, again)", "nl.fori_loop(n, 8, body)",
                                  "for _ in nl.dynamic_range(2, n):\n        plain()"])
def test_check_mode_checks_a_register_bounded_body_once(loop, tmp_path):
    # `apdsl check` moves no data: the loaded count (a while_loop's condition, a lower
    # bound) is unknown, and the body is checked once: clean, then with a shape error the
    # check must find inside it
    np.save(tmp_path / "data.npy", np.ones((8, 16), np.float32))
    np.save(tmp_path / "count.npy", np.array([[3]], np.int32))
    args = ("check", "kern.py", "-i", "data=data.npy", "-i", "count=count.npy")
    (tmp_path / "kern.py").write_text(CHECKED.replace("LOOP", loop).replace("BAD", "pass"))
    proc = apdsl_in_process(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    bad = "nisa.tensor_copy(dst=row, src=n_sb)"  # (1, 16) from (1, 1): refused
    (tmp_path / "kern.py").write_text(CHECKED.replace("LOOP", loop).replace("BAD", bad))
    proc = apdsl_in_process(*args, cwd=tmp_path)
    assert proc.returncode == 1 and "tensor_copy" in proc.stderr, proc.stderr
    # and a run of the same kernel runs
    (tmp_path / "kern.py").write_text(CHECKED.replace("LOOP", loop).replace("BAD", "pass"))
    assert apdsl_in_process("run", *args[1:], cwd=tmp_path).returncode == 0
