"""`apdsl corpus` on a repository whose tests hand kernels to a test orchestrator (as
nki-library's do) instead of calling them, and whose harness imports modules the checkout
leaves out: a repository made here, with kernels and a harness written for this test.  The
orchestrator's own `execute` needs hardware (it raises); the corpus runs the kernel on apdsl
with the test's inputs and compares with the test's golden output by the harness's "max"
criterion."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus.harness import within
from apdsl.surfaces.corpus.standins import AbsentFromCheckout, StandInFinder, neuron_dtypes
from apdsl.surfaces.corpus.verdict import classify

KERNELS = '''
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), 2.0))
    return out


@nki.jit
def negate_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), -1.0))
    return out


@nki.jit
def square_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, nl.multiply(t, t))
    return out


@nki.jit
def mx_copy_kernel(x):
    # the packed MX input arrives as the packed dtype, not as its uint32 bits
    assert x.dtype == nl.float8_e4m3fn_x4, x.dtype
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out


@nki.jit
def trn3_sum_kernel(x, replica_group):
    # the sum over the ranks plus the NeuronCore version: 4 on trn3, 3 on trn2
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    ncc.all_reduce(dsts=[dst], srcs=[src], op=nl.add, replica_group=replica_group)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(dst), float(nisa.get_nc_version())))
    return out


@nki.jit
def cache_update_kernel(x, cache):
    # writes one of its inputs too (as a KV-cache update does): apdsl writes it back into
    # the caller's array after the run, which is not a comparison of a result
    t = nl.load(x)
    nisa.dma_copy(dst=cache, src=t)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(t, 1.0))
    return out


@nki.jit
def env_kernel(x):
    return x


@nki.jit
def marked_trn3_kernel(x):
    # reached only by a test marked for trn3 (the other test naming it runs double_kernel)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), 3.0))
    return out


@nki.jit
def skipped_trn3_kernel(x):
    # reached only by a test that skips itself elsewhere than on trn3
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), 4.0))
    return out


@nki.jit
def cores_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), float(nl.num_programs(0))))
    return out
'''

# the harness: its orchestrator runs on hardware only, and it imports a module the public
# checkout leaves out and the Neuron SDK's dtype helpers
ORCHESTRATOR = '''
from dataclasses import dataclass, field
from typing import Any, Callable

from .hardware_private import HostLock   # not in the checkout


class Orchestrator:
    def execute(self, kernel_args):
        HostLock()   # needs a Trainium host
        raise RuntimeError("no hardware")


@dataclass(frozen=True)
class Platform:
    value: str


@dataclass
class CompilerArgs:
    logical_nc_config: int = 1
    platform_target: Platform = Platform("trn2")


@dataclass
class InferenceArgs:
    collective_ranks: int = 1


@dataclass
class PerRank:
    generator: Callable

    def for_rank(self, rank_id):
        return self.generator(rank_id=rank_id)


@dataclass
class Lazy:
    output_ndarray: dict
    lazy_golden_generator: Callable = None

    @property
    def golden(self):
        return None if self.lazy_golden_generator is None else self.lazy_golden_generator()


@dataclass
class WithValidator:
    validator: Any
    output_ndarray: Any


@dataclass
class Validation:
    golden_output: Any
    relative_accuracy: float = 1e-5
    absolute_accuracy: float = 1e-8


@dataclass
class KernelArgs:
    kernel_func: Callable
    compiler_input: CompilerArgs
    kernel_input: Any
    validation_args: Validation = None
    inference_args: InferenceArgs = field(default_factory=InferenceArgs)
'''

# the platform option becomes the mark expression, and each test is marked with the platforms
# it does not exclude: a run for trn2 deselects the trn3-only tests
CONFTEST = '''
import pytest

from hx.utils.orchestrator import Orchestrator, Platform

PLATFORMS = ("trn1", "trn2", "trn3")


def pytest_addoption(parser):
    parser.addoption("--platform-target", default="trn2")


def pytest_configure(config):
    config.option.markexpr = config.getoption("platform_target")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker("platforms")
        excluded = set(marker.kwargs.get("exclude") or []) if marker else set()
        for p in PLATFORMS:
            if p not in excluded:
                item.add_marker(getattr(pytest.mark, p))


@pytest.fixture
def test_manager():
    return Orchestrator()


@pytest.fixture
def platform_target(request):
    return Platform(request.config.getoption("platform_target"))
'''

# a conftest that imports a package this environment lacks
ABSENT_CONFTEST = '''
import os

import apdsl_corpus_test_absent_package.extras
'''

ENV_TESTS = '''
from pkg.kern import env_kernel


def test_env():
    env_kernel(1)
'''

TESTS = '''
import neuron_dtypes as dt
import numpy as np
import pytest

from nki.collectives import ReplicaGroup

from hx.utils.orchestrator import (CompilerArgs, InferenceArgs, KernelArgs, Lazy, PerRank,
                                   Validation, WithValidator)
from pkg.kern import (cache_update_kernel, cores_kernel, double_kernel, marked_trn3_kernel,
                      mx_copy_kernel, negate_kernel, skipped_trn3_kernel, square_kernel,
                      trn3_sum_kernel)

SEEN = []


def _args(kernel, x, golden, cores=1, rtol=1e-5):
    return KernelArgs(kernel, CompilerArgs(cores), {"x.must_alias_input": x},
                      Validation(golden, rtol, 1e-6))


@pytest.mark.parametrize("rows", [8, 16, 32])
def test_double(test_manager, rows):
    x = dt.static_cast(np.linspace(-1, 1, rows * 4).reshape(rows, 4), np.float32)
    SEEN.append(rows)
    assert SEEN == [8], "the first test of the sweep measures the kernel"
    test_manager.execute(_args(double_kernel, x, Lazy({"out": x}, lambda: {"out": 2 * x})))


def test_negate_wrong_reference(test_manager):
    x = np.ones((4, 4), np.float32)
    test_manager.execute(_args(negate_kernel, x, Lazy({"out": x}, lambda: {"out": x})))


class Positive:
    def __init__(self, logfile):
        self.logfile = logfile

    def validate(self, out):
        return bool((out >= 0).all())


def test_square_by_validator(test_manager):
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(8, 4)
    test_manager.execute(_args(square_kernel, x, {"out": WithValidator(Positive, x)}))


def test_mx_copy(test_manager):
    x = dt.static_cast(np.linspace(-6, 6, 128, dtype=np.float32).reshape(8, 16),
                       dt.float8_e4m3fn_x4)
    test_manager.execute(_args(mx_copy_kernel, x, Lazy({"out": x}, lambda: {"out": x})))


@pytest.mark.platforms(exclude=["trn1", "trn2"])
def test_trn3_sum_on_four_ranks(test_manager, platform_target):
    xs = np.arange(4 * 8 * 4, dtype=np.float32).reshape(4, 8, 4)
    group = ReplicaGroup([[0, 1, 2, 3]])
    test_manager.execute(KernelArgs(
        trn3_sum_kernel, CompilerArgs(1, platform_target),
        PerRank(lambda rank_id: {"x": xs[rank_id], "replica_group": group}),
        Validation(PerRank(lambda rank_id: {"out": xs.sum(axis=0) + 4.0}), 1e-6, 1e-6),
        InferenceArgs(collective_ranks=4)))


def test_cache_update(test_manager):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    test_manager.execute(KernelArgs(cache_update_kernel, CompilerArgs(1),
                                    {"x": x, "cache": np.zeros((4, 4), np.float32)},
                                    Validation(Lazy({"out": x}, lambda: {"out": x + 1}),
                                               1e-6, 1e-6)))


def _scaled(test_manager, kernel, factor):
    x = np.ones((8, 4), np.float32)
    test_manager.execute(_args(kernel, x, Lazy({"out": x}, lambda: {"out": factor * x})))


def _by_format(test_manager, mx):
    _scaled(test_manager, *((marked_trn3_kernel, 3.0) if mx else (double_kernel, 2.0)))


def test_by_format_plain(test_manager):
    _by_format(test_manager, False)


@pytest.mark.platforms(exclude=["trn1", "trn2"])
def test_by_format_mx(test_manager):
    _by_format(test_manager, True)


@pytest.mark.parametrize("mx", [True, False])
def test_skips_elsewhere(test_manager, platform_target, mx):
    if mx and platform_target.value != "trn3":
        pytest.skip("MX is only supported on TRN3.")
    _scaled(test_manager, *((skipped_trn3_kernel, 4.0) if mx else (double_kernel, 2.0)))


def test_cores(test_manager):
    x = np.zeros((4, 4), np.float32)
    test_manager.execute(_args(cores_kernel, x, Lazy({"out": x}, lambda: {"out": x + 2}),
                               cores=2))
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("harness_repo")
    files = {"pkg/__init__.py": "", "pkg/kern.py": KERNELS, "hx/__init__.py": "",
             "hx/utils/__init__.py": "", "hx/utils/orchestrator.py": ORCHESTRATOR,
             "hx/conftest.py": CONFTEST, "hx/test_kern.py": TESTS,
             "hy/__init__.py": "", "hy/conftest.py": ABSENT_CONFTEST,
             "hy/test_env.py": ENV_TESTS}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


@pytest.fixture(scope="module")
def measured(repo: Path) -> dict[str, dict]:
    out = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(repo), "--json",
                          "--timeout", "300"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    return {k["kernel"].split("::")[-1]: k for k in doc["kernels"]}


def test_kernels_run_on_the_tests_inputs_and_match_their_golden(measured: dict) -> None:
    assert measured["double_kernel"]["status"] == "matches", measured["double_kernel"]
    assert measured["square_kernel"]["status"] == "matches", measured["square_kernel"]
    # a packed MX input and output (neuron_dtypes' float8_e4m3fn_x4), compared as values
    assert measured["mx_copy_kernel"]["status"] == "matches", measured["mx_copy_kernel"]
    # two logical cores, as the test's compiler arguments ask
    assert measured["cores_kernel"]["status"] == "matches", measured["cores_kernel"]
    # an input the kernel writes is no failed comparison (it was a false mismatch)
    assert measured["cache_update_kernel"]["status"] == "matches", \
        measured["cache_update_kernel"]


def test_a_trn3_only_collective_test_runs_every_rank_on_trn3(measured: dict) -> None:
    # deselected on the option's default platform (trn2), it runs once the harness asks for
    # trn3; the four ranks each get their own input and their golden holds trn3's version
    v = measured["trn3_sum_kernel"]
    assert v["status"] == "matches", v


def test_a_kernel_only_tests_for_another_platform_reach_is_measured_by_them(
        measured: dict) -> None:
    # the tests naming it run on trn2 first (one of them is for trn2) and reach only
    # double_kernel; then the test for trn3 only, deselected there, runs on trn3
    v = measured["marked_trn3_kernel"]
    assert v["status"] == "matches", v
    # likewise a test that skips itself at run time with a reason naming trn3
    v = measured["skipped_trn3_kernel"]
    assert v["status"] == "matches", v


def test_a_conftest_needing_an_absent_package_is_an_environment_stop(measured: dict) -> None:
    v = measured["env_kernel"]
    assert (v["status"], v["code"], v["where"]) == ("environment", "ModuleNotFoundError",
                                                    "hy/conftest.py:4"), v
    assert "apdsl_corpus_test_absent_package" in v["detail"], v


def test_a_result_the_golden_disagrees_with_is_a_mismatch(measured: dict) -> None:
    v = measured["negate_kernel"]
    assert v["status"] == "mismatch", v
    # which output, how many elements and how far: -1 everywhere against a golden of 1
    assert "output out: outside rtol 1e-05 / atol 1e-06 of the test's golden output " \
        "(16 of 16 elements differ, the largest by 2; the first at [0, 0]: -1, golden 1)" \
        in v["detail"], v


def test_the_checkout_is_left_as_it_was(repo: Path, measured: dict) -> None:
    made = sorted(str(p.relative_to(repo)) for p in repo.rglob("*")
                  if "__pycache__" not in p.parts)
    assert made == sorted(["pkg", "pkg/__init__.py", "pkg/kern.py", "hx", "hx/__init__.py",
                           "hx/utils", "hx/utils/__init__.py", "hx/utils/orchestrator.py",
                           "hx/conftest.py", "hx/test_kern.py", "hy", "hy/__init__.py",
                           "hy/conftest.py", "hy/test_env.py"])


def test_within_is_the_max_criterion() -> None:
    golden = np.array([100.0, 1.0, -3.0], np.float32)
    # 0.5 off on an element of magnitude 1: inside rtol 1e-2 of the largest magnitude (100)
    assert within(golden + np.array([0, 0.5, 0], np.float32), golden, 1e-2, 0.0)
    assert not within(golden + np.array([0, 1.5, 0], np.float32), golden, 1e-2, 0.0)
    assert not within(golden[:2], golden, 1.0, 1.0)  # shapes differ
    inf = np.array([np.inf, 1.0], np.float32)
    assert within(inf, inf, 0.0, 0.0)
    assert not within(np.array([np.nan, 1.0], np.float32), np.array([0.0, 1.0]), 1.0, 1.0)


def test_absent_repository_modules_import_and_refuse_use(tmp_path: Path) -> None:
    (tmp_path / "rp").mkdir()
    (tmp_path / "rp" / "__init__.py").write_text("")
    finder = StandInFinder(str(tmp_path))
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.append(finder)
    try:
        import importlib
        mod = importlib.import_module("rp.private.deeper")
        made = mod.Thing
        assert issubclass(made, object) and made is mod.Thing
        with pytest.raises(AbsentFromCheckout, match="rp.private.deeper.Thing is not in the "
                           "checkout") as e:
            made()
        # what the repository's code needs and its checkout lacks: not apdsl's fault
        v = classify(e.value, str(tmp_path))
        assert (v.status, v.code) == ("environment", "AbsentFromCheckout"), v
        assert v.detail.startswith("rp.private.deeper.Thing is not in the checkout"), v
        # it has no file: pytest importing a test file under a name a stand-in holds (NxDI's
        # two `test` packages, driven one after the other) reports the mismatch, rather than
        # an AttributeError from apdsl
        assert mod.__file__ is None
        from _pytest.pathlib import ImportPathMismatchError, import_path
        (tmp_path / "rp" / "private").mkdir()
        for name in ("__init__.py", "deeper.py"):
            (tmp_path / "rp" / "private" / name).write_text("")
        with pytest.raises(ImportPathMismatchError):
            import_path(tmp_path / "rp" / "private" / "deeper.py", root=tmp_path,
                        consider_namespace_packages=False)
        # a module outside the checkout is not stood in for
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("json.no_such_module")
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "rp" or n.startswith("rp.")]:
            del sys.modules[name]
    assert finder.used == ["rp.private", "rp.private.deeper"]


def test_neuron_dtypes_stand_in_against_numpy() -> None:
    import ml_dtypes
    dt = neuron_dtypes()
    x = np.array([1.0, 1.00390625, 1.01171875, -2.5, 3e38], np.float32)
    got = dt.static_cast(x, dt.bfloat16)
    assert got.dtype == ml_dtypes.bfloat16
    # round to nearest even, as ml_dtypes' own conversion
    np.testing.assert_array_equal(got.astype(np.float32),
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert dt.is_float_type(np.float16) and dt.is_float_type(dt.bfloat16)
    assert not dt.is_float_type(np.int32)
    assert dt.sizeinbytes(dt.bfloat16) == 2 and dt.sizeinbytes(np.float32) == 4
    assert dt.finfo(dt.bfloat16).dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("name, element, width", [
    ("float8_e4m3fn_x4", "float8_e4m3fn", 8), ("float8_e5m2_x4", "float8_e5m2", 8),
    ("float4_e2m1fn_x4", "float4_e2m1fn", 4)])
def test_packed_mx_stand_ins_pack_four_values_first_lowest(name: str, element: str,
                                                           width: int) -> None:
    import ml_dtypes
    dt = neuron_dtypes()
    rng = np.random.default_rng(7)
    values = (rng.standard_normal((8, 16)) * 2).astype(np.float32)
    packed = dt.static_cast(values, getattr(dt, name))
    assert packed.shape == (8, 4) and packed.itemsize * 8 == 4 * width
    # brute force: value k of a group of four in bits [k * width, (k + 1) * width)
    codes = values.astype(getattr(ml_dtypes, element)).view(np.uint8).astype(np.uint64)
    expected = np.zeros((8, 4), np.uint64)
    for k in range(4):
        expected |= (codes[:, k::4] & ((1 << width) - 1)) << (k * width)
    np.testing.assert_array_equal(np.asarray(packed).astype(np.uint64), expected)
    # static_cast back unpacks to the rounded values; the packed array has no plain cast
    np.testing.assert_array_equal(dt.static_cast(packed, np.float32),
                                  values.astype(getattr(ml_dtypes, element)).astype(np.float32))
    with pytest.raises(TypeError):
        packed.astype(np.float32)
    assert dt.sizeinbytes(getattr(dt, name)) == 4 * width // 8
    assert dt.is_float_type(getattr(dt, name))
    # nl's own packed dtype packs the same (nki-library's goldens cast to nl.float8_e4m3fn_x4)
    import apdsl.nki.language as nl
    np.testing.assert_array_equal(np.asarray(dt.static_cast(values, getattr(nl, name))),
                                  np.asarray(packed))


TORCH_DRIVEN = kernel_module(hbm_kernel("{name}", "nl.multiply(nl.load(a), {factor})"), after='''

if __name__ == "__main__":
    import numpy as np
    import torch
    x = np.linspace(-1, 1, 512, dtype=np.float32).reshape(128, 4)
    print(torch.allclose(torch.from_numpy({name}(x)), torch.from_numpy(2 * x)))
''')


GOES_ON = kernel_module(hbm_kernel("once_kernel", "nl.add(nl.load(a), 1.0)"), after='''

if __name__ == "__main__":
    import numpy as np
    x = np.ones((128, 4), np.float32)
    print(np.allclose(once_kernel(x), x + 1))
    while True:   # a benchmark that outlasts the limit
        pass
''')


def _corpus(root: Path, timeout: int) -> dict[str, dict]:
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(root), "--json",
                           "--timeout", str(timeout)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    return {k["kernel"].split("::")[-1]: k for k in json.loads(done.stdout)["kernels"]}


def test_torch_comparisons_decide_as_numpys_do(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    # the reference says twice: right for twice_kernel, wrong for thrice_kernel
    (tmp_path / "tk2.py").write_text(TORCH_DRIVEN.format(name="twice_kernel", factor="2.0"))
    (tmp_path / "tk3.py").write_text(TORCH_DRIVEN.format(name="thrice_kernel", factor="3.0"))
    got = _corpus(tmp_path, 300)
    assert got["twice_kernel"]["status"] == "matches", got
    assert got["thrice_kernel"]["status"] == "mismatch", got


def test_a_driver_going_on_past_the_limit_keeps_the_kernels_verdict(tmp_path: Path) -> None:
    (tmp_path / "on.py").write_text(GOES_ON)
    # the limit is CPU time: the kernel needs well under a second of it however loaded the machine
    # is; the loop after its return never ends, and has five times the limit
    v = _corpus(tmp_path, 4)["once_kernel"]
    assert v["status"] == "matches", v
    assert "went on past the limit (no end within 20 s of CPU time after the kernel returned)" \
        in v["detail"], v


EXPECTED_FALSE = kernel_module(hbm_kernel("noise_kernel", "nl.add(nl.load(a), 1.0)"),
                               before="import numpy as np\n\n", after='''

def test_not_all_zero():
    out = noise_kernel(np.ones((8, 8), np.float32))
    assert not np.allclose(out, np.zeros((8, 8)))   # used as meant: expected to differ
''')


def test_a_passing_tests_false_comparison_is_no_mismatch(tmp_path: Path) -> None:
    (tmp_path / "test_noise.py").write_text(EXPECTED_FALSE)
    v = _corpus(tmp_path, 300)["noise_kernel"]
    assert v["status"] == "matches", v


SUB_FOLDER_TEST = '''
import numpy as np

import nki
import nki.language as nl
from mylib.factors import FACTOR


@nki.jit
def scaled_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), FACTOR))
    return out


def test_scaled():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(scaled_kernel(x), 3.0 * x)
'''


def test_a_sub_folder_of_a_checkout_imports_the_checkouts_own_packages(tmp_path: Path) -> None:
    # the kernels measured are the sub-folder's; its tests import the checkout's src/ package
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "mylib").mkdir(parents=True)
    (tmp_path / "src" / "mylib" / "__init__.py").write_text("")
    (tmp_path / "src" / "mylib" / "factors.py").write_text("FACTOR = 3.0\n")
    sub = tmp_path / "tests" / "ops"
    sub.mkdir(parents=True)
    (sub / "test_scaled.py").write_text(SUB_FOLDER_TEST)
    (tmp_path / "other.py").write_text(GOES_ON)  # outside the sub-folder: not measured
    got = _corpus(sub, 60)
    assert list(got) == ["scaled_kernel"], got
    assert got["scaled_kernel"]["status"] == "matches", got
