"""The Neuron framework packages around NKI kernels, in `apdsl corpus`: apdsl stands in for the
part of torch_xla and torch_neuronx that launching and targeting a kernel takes (the XLA device,
`torch_neuronx.utils.get_platform_target`); a test needing the rest of them (model tracing, XLA
ops, distributed training: neuronx-distributed-inference's model code) is an environment row
naming what it lacks, not apdsl's error, while a missing NKI module stays apdsl's.  The
classification is checked on the errors themselves; the run end to end where torch is
installed (the stand-ins exist only there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_sources import hbm_kernel, kernel_module

from apdsl.nki import torch_neuronx_host, torch_xla_cpu
from apdsl.nki.modules import Finder, NkiModuleError
from apdsl.surfaces.corpus.verdict import classify


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch_xla and torch_neuronx as `install()` provides them where torch has neither."""
    for stand_in in (torch_xla_cpu, torch_neuronx_host):
        for name, module in stand_in.modules().items():
            monkeypatch.setitem(sys.modules, name, module)


def raised(make: type[BaseException], *args: object, **kwargs: object) -> BaseException:
    try:
        raise make(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - kept with its traceback
        return e


def test_what_the_stand_ins_lack_is_the_environment_and_nki_stays_apdsls(stand_ins: None
                                                                          ) -> None:
    traced = raised(NkiModuleError, "apdsl's torch_neuronx has no module "
                    "torch_neuronx.xla_impl.ops", module="torch_neuronx.xla_impl.ops")
    got = classify(traced, "/r")
    assert (got.status, got.code) == ("environment", "NkiModuleError"), got
    assert "torch_neuronx is not installed" in got.detail and "xla_impl.ops" in got.detail
    # `from torch_neuronx import nki_jit` (the API Neuron 2.24 removed)
    name = raised(ImportError, "cannot import name 'nki_jit' from 'torch_neuronx' (unknown "
                  "location)", name="torch_neuronx")
    assert classify(name, "/r").status == "environment"
    # `xm.REDUCE_SUM` (neuronx-distributed's collectives)
    model = sys.modules["torch_xla.core.xla_model"]
    attribute = raised(AttributeError, "module 'torch_xla.core.xla_model' has no attribute "
                       "'REDUCE_SUM'", name="REDUCE_SUM", obj=model)
    assert classify(attribute, "/r").status == "environment"
    # the kernels the compiler bundles (neuronx-distributed's import of FlashConfig)
    bundled = raised(NkiModuleError, "neuronxcc.nki.kernels.attention is the Neuron "
                     "compiler's", module="neuronxcc.nki.kernels.attention")
    got = classify(bundled, "/r")
    assert got.status == "environment" and "neuronx-cc is not installed" in got.detail, got
    # an NKI module apdsl lacks is apdsl's to provide (SPEC 16)
    nki = raised(NkiModuleError, "apdsl.nki has no module nki.compiler.frontend",
                 module="nki.compiler.frontend")
    assert (classify(nki, "/r").status, classify(nki, "/r").code) == ("error", "APK920")
    # an attribute error of any other module is the repository's code's
    other = raised(AttributeError, "no", name="x", obj=json)
    assert classify(other, "/r").status == "raises"


def test_the_finder_names_the_compilers_modules_as_its() -> None:
    finder = Finder(["nki", "neuronxcc.nki"], ("nki", "neuronxcc"))
    for module, said in (("neuronxcc.nki.kernels.attention", "the Neuron compiler's"),
                         ("neuronxcc.nki._pre_prod_kernels", "the Neuron compiler's"),
                         ("neuronxcc.nki.kernelsx", "apdsl.nki has no module")):
        with pytest.raises(NkiModuleError) as e:
            finder.find_spec(module)
        assert said in e.value.message and e.value.code == "APK920", e.value.message


def test_without_the_stand_ins_a_framework_miss_is_what_it_was(monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    monkeypatch.delitem(sys.modules, "torch_neuronx", raising=False)
    missing = raised(ModuleNotFoundError, "No module named 'torch_neuronx'",
                     name="torch_neuronx")
    got = classify(missing, "/r")
    assert got.status == "environment" and "torch_neuronx is not installed" in got.detail
    name = raised(ImportError, "cannot import name 'x' from 'torch_neuronx'",
                  name="torch_neuronx")
    assert classify(name, "/r").status == "raises"


KERNELS = kernel_module(*(hbm_kernel(f"{name}_kernel", "nl.multiply(nl.load(a), 2.0)")
                          for name in ("targeted", "traced")))

# a test in neuronx-distributed-inference's manner: the target from torch_neuronx, the inputs
# on the XLA device; the other needs torch_neuronx's XLA ops
TESTS = '''
import os

import torch
import torch_xla
from torch_neuronx.utils import get_platform_target

from kern import targeted_kernel, traced_kernel


def test_targeted():
    if not os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE"):
        os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = get_platform_target()
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    out = targeted_kernel(x.to(torch_xla.device()))
    torch.testing.assert_close(out.cpu(), 2 * x)


def test_traced():
    from torch_neuronx.xla_impl.ops import xla_hlo_call
    traced_kernel(torch.ones((4, 4)))
'''


def test_a_repository_using_torch_neuronx_runs_as_far_as_the_stand_in_goes(tmp_path: Path
                                                                           ) -> None:
    pytest.importorskip("torch")
    (tmp_path / "kern.py").write_text(KERNELS)
    (tmp_path / "test_kern.py").write_text(TESTS)
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--jsonl",
                           "--timeout", "60"], capture_output=True, text=True, timeout=300)
    rows = {row["kernel"].split("::")[1]: row for row in map(json.loads,
                                                             done.stdout.splitlines())
            if "kernel" in row}
    assert rows["targeted_kernel"]["status"] == "matches", done.stdout
    traced = rows["traced_kernel"]
    assert (traced["status"], traced["where"]) == ("environment", "test_kern.py:20"), traced
    assert "torch_neuronx.xla_impl" in traced["detail"], traced
