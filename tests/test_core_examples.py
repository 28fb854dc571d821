"""The examples of cores and queues (SPEC 17): each runs and matches NumPy, and removing any one
flag or cross-core wait from them, or an enque, is reported as a race or a deadlock (a mutation
test; the drains after the loops, which only pair the last sets, warn instead).  The add's
helpers hand tensors on only through the queues, so an enque/deque pair cannot be left out of
it; tests/test_queues.py removes pairs from a kernel written in one piece."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RACE = {"APK570", "APK571", "APK583"}
DEADLOCK = {"APK575", "APK588", "APK596"}


def kernel_only(name, **sizes):
    """The example's kernel without its top-level launch, at smaller sizes."""
    text = (EXAMPLES / name).read_text()
    text = text[:text.index("\n# two AI cores") if "# two AI cores" in text else
                text.index("\n# a launch on 8")]
    for k, v in sizes.items():
        text = re.sub(rf"^{k} = \d+", f"{k} = {v}", text, flags=re.M)
    return text


def run(tmp_path, text, grid, inputs=None):
    (tmp_path / "k.apk").write_text(text)
    return Program.from_path(str(tmp_path / "k.apk")).run(None, inputs or {}, grid=grid)


def test_matmul_leakyrelu_matches_numpy_on_several_cores(tmp_path):
    text = kernel_only("ascend_matmul_leakyrelu.apk", M=256)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    res = run(tmp_path, text, (4,), {"A": a, "B": b})
    p = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(res.value.numpy(), np.where(p >= 0, p, p * np.float32(0.1)),
                               rtol=1e-5, atol=1e-5)
    assert not res.warnings


SYNC = re.compile(r"^\s+asc\.(set_flag|wait_flag|cross_core_set_flag|cross_core_wait_flag)\(")


def _sync_lines(text):
    """The synchronisation statements of a kernel, and which are drains: the waits after a
    core's tile loop that only pair the loop's last sets."""
    lines = text.splitlines()
    found, drains, after_loop = [], set(), False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("if asc.ascend_is_"):
            after_loop = False
        elif stripped.startswith("for t in range(tiles)"):
            after_loop = True
        if SYNC.match(line):
            found.append(i)
            indent = len(line) - len(line.lstrip())
            if after_loop and (indent == 8 or lines[i - 1].strip().startswith(
                    "for t in range(max(")):
                drains.add(i)
    return found, drains


LEAKY = kernel_only("ascend_matmul_leakyrelu.apk", M=256)  # 2 cores: 4 tiles each
LEAKY_SYNC, LEAKY_DRAINS = _sync_lines(LEAKY)


@pytest.mark.parametrize("line", LEAKY_SYNC)
def test_removing_any_one_flag_of_the_matmul_epilogue_is_reported(tmp_path, line):
    lines = LEAKY.splitlines()
    removed = lines[line]
    lines[line] = removed[:len(removed) - len(removed.lstrip())] + "pass"
    rng = np.random.default_rng(0)
    inputs = {"A": rng.standard_normal((256, 64)).astype(np.float16),
              "B": rng.standard_normal((64, 64)).astype(np.float16)}
    try:
        res = run(tmp_path, "\n".join(lines) + "\n", (2,), inputs)
    except ApdslError as e:
        assert line not in LEAKY_DRAINS, (removed, e)
        assert e.code in RACE | DEADLOCK, (removed, e)
        if e.code in RACE:
            assert e.labels, "a race is shown at both lines"
        return
    # a drain after the loops: its set is then never waited for (a warning)
    assert line in LEAKY_DRAINS, removed
    assert {w.code for w in res.warnings} & {"APK578", "APK589"}, removed


def test_the_mutation_covers_the_examples_synchronisation():
    assert len(LEAKY_SYNC) >= 25 and len(LEAKY_DRAINS) == 6


ADD = kernel_only("ascend_add_queues.apk", TOTAL=2048)


def test_add_with_queues_matches_numpy(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(2048).astype(np.float16)
    y = rng.standard_normal(2048).astype(np.float16)
    res = run(tmp_path, ADD, (4,), {"X": x, "Y": y})
    np.testing.assert_array_equal(res.value.numpy(), x + y)


@pytest.mark.parametrize("op", ["    in_x.enque(x)\n", "    out_z.enque(z)\n"])
def test_removing_an_enque_alone_is_a_deadlock(tmp_path, op):
    with pytest.raises(ApdslError) as e:
        run(tmp_path, ADD.replace(op, ""), (2,))
    assert e.value.code in DEADLOCK
