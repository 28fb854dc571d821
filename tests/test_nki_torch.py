"""Kernels launched from PyTorch: torch tensors in (read and written in place), torch tensors
out, and `torch_xla` where it is absent (its device the CPU), with torch_neuronx's
`utils.get_platform_target` (the simulated NeuronCore's platform), so a tutorial's launch script
runs unchanged.  Oracles: torch's own matmul and arithmetic on the same tensors.  Needs torch (not a
dependency of apdsl): skipped where it is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import apdsl.nki as nki  # noqa: E402
import apdsl.nki.isa as nisa  # noqa: E402
import apdsl.nki.language as nl  # noqa: E402
from apdsl.tensor import torch_arrays  # noqa: E402
from tests.support import raises_code  # noqa: E402


@nki.jit
def matmul_kernel(lhs_t, rhs):
    out = nl.ndarray((lhs_t.shape[1], rhs.shape[1]), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray(out.shape, dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(acc, nl.load(lhs_t), nl.load(rhs))
    res = nl.ndarray(out.shape, dtype=lhs_t.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(res, acc)
    nl.store(out, res)
    return out


@nki.jit
def scale_into(x, out):
    nl.store(out, nl.multiply(nl.load(x), 3.0))


def test_a_bfloat16_matmul_takes_and_returns_torch_tensors():
    g = torch.Generator().manual_seed(0)
    lhs = torch.rand((64, 128), dtype=torch.bfloat16, generator=g)
    rhs = torch.rand((128, 256), dtype=torch.bfloat16, generator=g)
    got = matmul_kernel(lhs.T, rhs)  # a transposed (strided) view, as the tutorial passes
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    want = (lhs.float() @ rhs.float()).to(torch.bfloat16)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_an_output_argument_is_written_in_place():
    x = torch.arange(128 * 8, dtype=torch.float32).reshape(128, 8)
    out = torch.zeros_like(x)
    scale_into(x, out)
    torch.testing.assert_close(out, x * 3)


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float16",
                                   "int32"])
def test_a_tensor_is_read_through_its_own_memory(dtype):
    t = torch.zeros((3, 4), dtype=getattr(torch, dtype))
    a = torch_arrays.as_numpy(t)
    a[1, 2] = 2  # exactly representable in every one of these dtypes
    assert t[1, 2].item() == 2.0 and a.dtype.name == dtype
    back = torch_arrays.to_torch(a)
    assert back.dtype == t.dtype and torch.equal(back, t)


def test_a_tensor_apdsl_cannot_read_is_apk171():
    with raises_code("APK171"):
        scale_into(torch.zeros((128, 8), device="meta"), torch.zeros((128, 8)))
    quantized = torch.quantize_per_tensor(torch.zeros((128, 8)), 0.1, 0, torch.qint8)
    with raises_code("APK171"):  # NumPy has no quantized tensors
        scale_into(quantized, torch.zeros((128, 8)))


LAUNCH = """\
import torch
from torch_xla.core import xla_model as xm
import torch_xla

import nki
import nki.language as nl


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


if __name__ == "__main__":
    device = xm.xla_device()
    assert torch_xla.device() == device
    a = torch.rand((128, 512), dtype=torch.bfloat16, device=device)
    b = torch.rand((128, 512), dtype=torch.bfloat16, device=device)
    out = add_kernel(a, b)
    xm.mark_step()
    torch_xla.sync()
    xm.master_print("match:", torch.allclose(out.to(torch.device("cpu")), a + b),
                    xm.xrt_world_size(), xm.get_ordinal(), xm.is_master_ordinal())
    from torch_neuronx.utils import get_platform_target
    xm.master_print("platform:", get_platform_target())
    import torch_xla.distributed.xla_multiprocessing
"""


def test_a_launch_script_on_an_xla_device_runs_unchanged(tmp_path: Path):
    (tmp_path / "launch.py").write_text(LAUNCH)
    proc = subprocess.run([sys.executable, "-m", "apdsl", "script", "launch.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "match: True 1 0 True" in proc.stdout, proc.stdout + proc.stderr
    # a torch_xla module apdsl does not stand in for: a located diagnostic naming it
    assert proc.returncode == 1, proc.stderr
    assert "platform: trn2" in proc.stdout, proc.stdout
    assert "error[APK920]" in proc.stderr and "launch.py:28:5" in proc.stderr, proc.stderr
    assert "torch_xla.distributed" in proc.stderr, proc.stderr


def test_install_provides_the_stand_in_and_uninstall_removes_it(tmp_path: Path):
    (tmp_path / "user.py").write_text(textwrap.dedent("""
        import sys
        import apdsl.nki
        apdsl.nki.install()
        import torch_xla.core.xla_model as xm
        from torch_neuronx.utils import get_platform_target
        print(xm.xla_device(), xm.apdsl_stand_in, get_platform_target())
        apdsl.nki.uninstall()
        print([m for m in sys.modules if m.startswith(("torch_xla", "torch_neuronx"))])
        """))
    proc = subprocess.run([sys.executable, "user.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.stdout.split("\n")[:2] == ["cpu True trn2", "[]"], proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stderr
