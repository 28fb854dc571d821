"""The corpus (issue 12 item 5): public NKI kernels from the tutorials and API docs, re-typed
faithfully as `.apk` files in tests/apk_corpus/ (each file cites its source and commit), each
run unchanged on NumPy inputs and compared with NumPy.

A kernel that cannot run yet is listed in BLOCKED with the diagnostic it stops at and the
missing piece that diagnostic names: its test checks that it still stops there (so a
regression elsewhere is not hidden) and fails once it runs, so that its entry is removed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import apdsl
from apdsl.errors import ApdslError

CORPUS = Path(__file__).parent / "apk_corpus"
RNG = np.random.default_rng(12)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _bf16_round(x: np.ndarray) -> np.ndarray:
    return x.astype(ml_dtypes.bfloat16).astype(np.float32)


def _rmsnorm(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    rms_inv = 1.0 / np.sqrt(np.mean(a.astype(np.float64) ** 2, axis=1, keepdims=True))
    return a * rms_inv * g[None, :]


def _scatter_inputs() -> dict[str, np.ndarray]:
    rows = RNG.permutation(256)[:128].astype(np.uint32).reshape(128, 1)
    return {"src_data": _f32(128, 64), "indices": rows,
            "output": np.zeros((256, 64), np.float32)}


def _scattered(src_data: np.ndarray, indices: np.ndarray, output: np.ndarray) -> np.ndarray:
    out = output.copy()
    out[indices[:, 0]] = src_data
    return out


@dataclass(frozen=True)
class Case:
    file: str
    kernel: str
    inputs: Callable[[], dict[str, np.ndarray]]
    expect: Callable[..., np.ndarray]
    rtol: float = 1e-5
    atol: float = 1e-5


CASES = [
    Case("matmul_basic.apk", "nki_matmul_basic_",
         lambda: {"lhsT": _f32(128, 64), "rhs": _f32(128, 512)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-4),
    Case("matmul_tiled.apk", "nki_matmul_tiled_",
         lambda: {"lhsT": _f32(256, 256), "rhs": _f32(256, 1024)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("matmul_hoist_load.apk", "nki_matmul_hoist_load_",
         lambda: {"lhsT": _f32(256, 256), "rhs": _f32(256, 1024)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("matmul_block_free.apk", "nki_matmul_block_free_dimension_",
         lambda: {"lhsT": _f32(256, 512), "rhs": _f32(256, 2048)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("matmul_fully_optimized.apk", "nki_matmul_fully_optimized_",
         lambda: {"lhsT": _f32(1024, 2048), "rhs": _f32(1024, 1024)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("tensor_addition.apk", "nki_tensor_add",
         lambda: {"a_input": _f32(256, 1024), "b_input": _f32(256, 1024)},
         lambda a_input, b_input: a_input + b_input),
    Case("transpose2d.apk", "transpose_3x4",
         lambda: {"in_tensor": np.arange(5 * 12, dtype=np.int8).reshape(5, 12)},
         lambda in_tensor: np.transpose(in_tensor.reshape(5, 3, 4), (0, 2, 1)).reshape(5, 12)),
    Case("average_pool2d.apk", "avgpool_2",
         lambda: {"in_tensor": np.arange(2 * 6 * 6, dtype=np.float16).reshape(2, 6, 6)},
         lambda in_tensor: in_tensor.astype(np.float32).reshape(2, 3, 2, 3, 2).mean(
             axis=(2, 4)), rtol=1e-3, atol=1e-2),
    Case("rmsnorm.apk", "nki_rmsnorm_kernel_isa",
         lambda: {"a": _f32(256, 512), "g": _f32(512)},
         _rmsnorm, rtol=1e-4, atol=1e-4),
    Case("nc_matmul_accumulate.apk", "nc_matmul_accumulate_kernel",
         lambda: {"lhsT": _f32(512, 128), "rhs": _f32(512, 512)},
         lambda lhsT, rhs: lhsT.T @ rhs, rtol=1e-4, atol=1e-3),
    Case("dma_copy_indirect_gather.apk", "indirect_gather_kernel",
         lambda: {"data": _f32(256, 64),
                  "indices": RNG.integers(0, 256, (128, 1)).astype(np.uint32)},
         lambda data, indices: data[indices[:, 0]]),
    Case("dma_copy_indirect_scatter.apk", "indirect_scatter_kernel", _scatter_inputs,
         _scattered),
    Case("iota_gather_rows.apk", "run_gather_rows", lambda: {"A": _f32(128, 512)},
         lambda A: A[0:128:2]),
    Case("iota_vector_dynamic_dma.apk", "run_indirect_vector_dynamic_dma",
         lambda: {"A": _f32(128, 512)}, lambda A: A[0:128:2]),
    Case("activation_exp.apk", "tensor_exp_kernel_isa",
         lambda: {"in_tensor": _f32(4, 4096)},
         lambda in_tensor: _bf16_round(np.exp(_bf16_round(in_tensor))), rtol=1e-2, atol=1e-2),
    Case("activation_exp_trn2.apk", "tensor_exp_kernel_isa",
         lambda: {"in_tensor": _f32(128, 128)},
         lambda in_tensor: _bf16_round(np.exp(_bf16_round(in_tensor))), rtol=1e-2, atol=1e-2),
    Case("activation_legacy.apk", "nki_activation",
         lambda: {"a_tensor": _f32(128, 1024), "b_tensor": _f32(128, 512),
                  "c_tensor": _f32(128, 1)},
         lambda a_tensor, b_tensor, c_tensor: (np.exp(a_tensor),
                                               np.square(b_tensor * 2 + c_tensor))),
    Case("quickstart_tensor_add.apk", "nki_tensor_add_kernel",
         lambda: {"a_input": _f32(4, 3).astype(np.float16),
                  "b_input": _f32(4, 3).astype(np.float16)},
         lambda a_input, b_input: (a_input + b_input).astype(np.float32), rtol=1e-3,
         atol=1e-3),
    Case("tiling_loop.apk", "tensor_exp_kernel_",
         lambda: {"in_tensor": (RNG.random((256, 512)) + 0.5).astype(np.float32)},
         lambda in_tensor: 1.0 / in_tensor, rtol=1e-6),
    Case("tiling_any_shape.apk", "tensor_exp_kernel_",
         lambda: {"in_tensor": (RNG.random((384, 96)) + 0.5).astype(np.float32)},
         lambda in_tensor: 1.0 / in_tensor, rtol=1e-6),
    Case("iota_legacy.apk", "nki_iota", dict,
         lambda: (np.arange(512)[None, :], np.arange(128)[:, None], -np.arange(512)[None, :],
                  5 + 2 * np.arange(128)[:, None],
                  np.arange(512)[None, :] + np.arange(128)[:, None])),
]

# file -> (what the run stops at: an error code and a piece of its message, why: the missing
# piece).  Remove an entry when its kernel runs.
BLOCKED: dict[str, tuple[str, str, str]] = {
    "activation_legacy.apk": ("APK102", "'dst'",
                              "legacy neuronxcc API: nisa.activation returning its tile (no "
                              "dst=), op=np.square, nl.load/nl.store of whole tensors"),
    "iota_legacy.apk": ("APK102", "dtype",
                        "legacy neuronxcc API in .apk: nisa.iota(expr, dtype) returning its "
                        "tile (the Python frontend runs it)"),
}


def _run(case: Case) -> tuple[dict[str, np.ndarray], object]:
    inputs = case.inputs()
    return inputs, apdsl.run(CORPUS / case.file, case.kernel, inputs)


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_corpus_kernel_runs_unchanged(case):
    blocked = BLOCKED.get(case.file)
    if blocked is None:
        inputs, got = _run(case)
        expect = case.expect(**inputs)
        if isinstance(expect, tuple):
            assert isinstance(got, tuple) and len(got) == len(expect)
            pairs = list(zip(got, expect))
        else:
            pairs = [(got, expect)]
        for g, e in pairs:
            g = np.asarray(g, dtype=np.float32)
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol)
        return
    code, words, reason = blocked
    try:
        _run(case)
    except ApdslError as e:
        assert e.code == code and words in str(e), (
            f"{case.file} now stops elsewhere: {e.code} {e}; update BLOCKED")
        pytest.xfail(reason)
    pytest.fail(f"{case.file} now runs: remove its BLOCKED entry ({reason})")


def test_every_corpus_file_has_a_case_and_a_source():
    files = sorted(p.name for p in CORPUS.glob("*.apk"))
    assert files == sorted(c.file for c in CASES)
    assert len(files) >= 12
    for name in files:
        head = (CORPUS / name).read_text().splitlines()[:2]
        assert "aws-neuron/" in head[0] and "@" in head[0], name  # repository@commit
        assert len(head[0].split("@")[1].split()[0]) == 40, name


def test_corpus_kernel_runs_from_the_command_line(tmp_path):
    case = next(c for c in CASES if c.file == "nc_matmul_accumulate.apk")
    if case.file in BLOCKED:
        pytest.skip("blocked (see BLOCKED)")
    inputs = case.inputs()
    args = []
    for name, arr in inputs.items():
        np.save(tmp_path / f"{name}.npy", arr)
        args += ["-i", f"{name}={tmp_path / f'{name}.npy'}"]
    out = tmp_path / "out.npy"
    r = subprocess.run([sys.executable, "-m", "apdsl", "run", str(CORPUS / case.file), *args,
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out), case.expect(**inputs), rtol=1e-4, atol=1e-3)
    r = subprocess.run([sys.executable, "-m", "apdsl", "check", str(CORPUS / case.file), *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("case", [c for c in CASES if c.file not in BLOCKED],
                         ids=[c.file for c in CASES if c.file not in BLOCKED])
def test_corpus_kernel_checks_clean(case):
    from apdsl.semantics.program import Program
    errors = Program.from_path(str(CORPUS / case.file)).check(kernel=case.kernel,
                                                               inputs=case.inputs())
    assert [e for e in errors if e.severity == "error"] == []


def test_readme_counts_are_the_corpus():
    # the README's claim says how many of the corpus run unchanged: it must stay exact
    import re
    text = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
    held = re.search(r"holds (\d+) public kernels", text)
    ran = re.search(r"(\d+) run unchanged and match", text)
    assert held and ran, "README no longer states the corpus counts"
    assert int(held.group(1)) == len(CASES)
    assert int(ran.group(1)) == len(CASES) - len(BLOCKED)
