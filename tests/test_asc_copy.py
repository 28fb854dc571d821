"""asc.data_copy and asc.data_copy_pad between GM and UB against NumPy, their rules, and the
vector-add example run as a user runs it (with each of its events removed: a race)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.runtime.ascend.vector.params import (
    DataCopyExtParams,
    DataCopyPadExtParams,
    DataCopyParams,
)
from apdsl.runtime.core.execute import write_view
from apdsl.runtime.table import implementation

ROOT = Path(__file__).resolve().parent.parent
copy, pad = implementation("asc.data_copy"), implementation("asc.data_copy_pad")


def gm(values):
    t = apdsl.ndarray(values.shape, str(values.dtype), "gm")
    write_view(t, values)
    return t


def test_data_copy_count_and_bursts():
    src = np.arange(256, dtype=np.float32)
    x = apdsl.ndarray((128,), "float32", "ub")
    copy(x, gm(src), 128)
    np.testing.assert_array_equal(x.numpy(), src[:128])
    # 4 bursts of 2 blocks (16 floats), skipping 1 block in GM and 2 in UB between bursts
    y = apdsl.ndarray((4 * 32,), "float32", "ub")
    apdsl.memset(y, -1.0)
    copy(y, gm(src), DataCopyParams(4, 2, 1, 2))
    want = np.full(128, -1.0, np.float32)
    for i in range(4):
        want[i * 32:i * 32 + 16] = src[i * 24:i * 24 + 16]
    np.testing.assert_array_equal(y.numpy(), want)
    out = apdsl.ndarray((128,), "float32", "gm")
    copy(out, x, 128)
    np.testing.assert_array_equal(out.numpy(), src[:128])


def test_data_copy_of_a_partial_block_points_at_data_copy_pad():
    x = apdsl.ndarray((16,), "float32", "ub")
    with pytest.raises(ApdslError) as e:
        copy(x, gm(np.zeros(10, np.float32)), 10)
    assert e.value.code == "APK557" and "data_copy_pad" in e.value.help


@pytest.mark.parametrize("left,right,is_pad", [(0, 0, False), (0, 0, True), (2, 3, True),
                                               (1, 0, False)])
def test_data_copy_pad_gm_to_ub(left, right, is_pad):
    src = np.arange(40, dtype=np.float32) + 1
    x = apdsl.ndarray((3 * 16,), "float32", "ub")
    # 3 bursts of 5 floats (20 bytes), 4 bytes apart in GM
    pad(x, gm(src), DataCopyExtParams(3, 20, 4, 0),
        DataCopyPadExtParams("float32", is_pad, left, right, -7.0))
    with apdsl.options(init_check=False):  # undefined filler reads as 0
        got = x.numpy()
    blocks = -(-(left + 5 + right) // 8)
    for i in range(3):
        row = got[i * blocks * 8:(i + 1) * blocks * 8]
        np.testing.assert_array_equal(row[left:left + 5], src[i * 6:i * 6 + 5])
        rest = np.concatenate([row[:left], row[left + 5:]])
        if left or right:
            assert (rest == -7.0).all() if is_pad else (rest == 0).all()
        else:  # no pad: the filler is the burst's first element (the AscendC page)
            assert (rest == src[i * 6]).all()


def test_data_copy_pad_ub_to_gm_moves_exact_bytes():
    x = apdsl.ndarray((32,), "float32", "ub")
    write_view(x, np.arange(32, dtype=np.float32))
    out = gm(np.full(20, -1.0, np.float32))
    pad(out, x, DataCopyExtParams(2, 12, 1, 8))  # 3 floats per burst; UB skips 1 block
    want = np.full(20, -1.0, np.float32)
    want[0:3] = [0, 1, 2]
    want[5:8] = [16, 17, 18]  # UB burst 2 starts at block 2; GM 3 + 2 floats further
    np.testing.assert_array_equal(out.numpy(), want)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "apdsl", *args], capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1"})


def test_vector_add_example_runs_and_every_event_matters(tmp_path):
    path = ROOT / "examples" / "ascend_vector_add.apk"
    ok = run_cli("run", str(path))
    assert ok.returncode == 0, ok.stderr
    source = path.read_text()
    waits = [m.start() for m in re.finditer(r"asc\.wait_flag\(asc\.HardEvent\.\w+, 0\)",
                                            source)]
    assert len(waits) == 4
    for i, at in enumerate(waits[:3]):  # the last wait only drains the final flag
        end = source.index(")", at) + 1
        mutated = source[:at] + "pass" + source[end:]
        f = tmp_path / f"m{i}.apk"
        f.write_text(mutated)
        got = run_cli("run", str(f))
        assert got.returncode == 1, mutated
        assert re.search(r"error\[APK57\d\]", got.stderr), got.stderr
        assert "^^^" in got.stderr and "---" in got.stderr  # both lines shown
    no_barrier = source.replace("asc.add(z, x, y, TILE)",
                                "asc.add(z, x, y, TILE)\n        asc.muls(z, z, 2.0, TILE)")
    f = tmp_path / "barrier.apk"
    f.write_text(no_barrier)
    got = run_cli("run", str(f))
    assert "error[APK571]" in got.stderr  # two dependent V instructions need a barrier


def test_softmax_example_runs_and_every_barrier_matters(tmp_path):
    path = ROOT / "examples" / "ascend_softmax.apk"
    ok = run_cli("run", str(path))
    assert ok.returncode == 0, ok.stderr
    source = path.read_text()
    barrier = "    asc.pipe_barrier(asc.PipeID.PIPE_V)\n"
    count = source.count(barrier)
    assert count == 6
    for i in range(count):
        parts = source.split(barrier)
        mutated = barrier.join(parts[:i + 1]) + "".join(
            [parts[i + 1]] if i + 1 < len(parts) else []) + \
            (barrier.join([""] + parts[i + 2:]) if i + 2 < len(parts) else "")
        f = tmp_path / f"b{i}.apk"
        f.write_text(mutated)
        got = run_cli("run", str(f))
        assert "error[APK571]" in got.stderr, (i, got.stderr)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["float16", "float32", "int8", "int32"]), st.integers(1, 4),
       st.integers(1, 40), st.integers(0, 3), st.integers(0, 2), st.data())
def test_data_copy_pad_gm_to_ub_against_a_byte_model(dtype, count, n, gap, ub_gap, data):
    """Random bursts: each burst's data lands at its UB burst start + left, bursts are whole
    32-byte runs plus ub_gap blocks apart, pads hold the value (an independent model)."""
    item = np.dtype(dtype).itemsize
    per_block = 32 // item
    left = data.draw(st.integers(0, per_block))
    right = data.draw(st.integers(0, per_block))
    src = (np.arange(count * (n + gap)) % 100 + 1).astype(dtype)
    width = -(-(left + n + right) // per_block) * per_block
    stride = width + ub_gap * per_block
    x = apdsl.ndarray((count * stride,), dtype, "ub")
    pad(x, gm(src), DataCopyExtParams(count, n * item, gap * item, ub_gap),
        DataCopyPadExtParams(dtype, True, left, right, 7))
    with apdsl.options(init_check=False):
        got = x.numpy()
    for i in range(count):
        row = got[i * stride:i * stride + width]
        np.testing.assert_array_equal(row[left:left + n], src[i * (n + gap):i * (n + gap) + n])
        rest = np.concatenate([row[:left], row[left + n:]])
        if left or right:
            assert (rest == 7).all()
        else:  # no pads: the filler repeats the burst's first element
            assert (rest == src[i * (n + gap)]).all()
