"""`torch_neuronx` where it is absent: the one name of PyTorch Neuron that kernels' tests use to
pick the target their kernels run on.

neuronx-distributed-inference's kernel tests begin with
`os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = get_platform_target()` (`from
torch_neuronx.utils import get_platform_target`), and skip what a platform lacks (`if
get_platform_target() == "trn1" and lnc == 2`).  The PyTorch Neuron programming guide documents
it as the instance's platform type string (`trn1`, `inf2`, `trn2`); here the instance is apdsl's
simulated NeuronCore, so it is the target a kernel launched now runs on: the one
NEURON_PLATFORM_TARGET_OVERRIDE (or NEURON_CC_FLAGS' `--target`) names, else the run's own NKI
target (`--target`, `apdsl.target(...)`).

The rest of torch_neuronx (tracing a model to a NEFF, its XLA ops, profiler, `nki_jit`, which
the Neuron 2.24 release removed) needs the Neuron compiler and runtime: an import of any other
module of it is a located APK920 naming it (`modules.Finder`), a ModuleNotFoundError still."""

from __future__ import annotations

import types

ROOT = "torch_neuronx"  # the package it stands in for


def get_platform_target() -> str:
    """The platform of the NeuronCore kernels run on here: `trn1`, `trn2` or `trn3`."""
    from ..tensor.machine import current
    from .kernel import environment_platform
    return environment_platform("get_platform_target") or current().targets["nki"]


def modules() -> dict[str, types.ModuleType]:
    """`torch_neuronx` and `torch_neuronx.utils` as module objects."""
    root = types.ModuleType("torch_neuronx", "apdsl's stand-in for torch_neuronx: only "
                            "utils.get_platform_target (apdsl.nki.torch_neuronx_host)")
    utils = types.ModuleType("torch_neuronx.utils", "get_platform_target: the simulated "
                             "NeuronCore's platform")
    root.__path__, utils.__path__ = [], []  # packages: other submodules go through the Finder
    for m in (root, utils):
        m.apdsl_stand_in = True  # (what uninstall() removes)
    root.utils, utils.get_platform_target = utils, get_platform_target
    return {"torch_neuronx": root, "torch_neuronx.utils": utils}
