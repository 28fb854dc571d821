"""A kernel nothing in its repository calls runs on inputs made from what its definition says
of its parameters (SPEC 19, issue 24: "otherwise from the signature and docstring"): an
annotation, a comment on the parameter's line, or its line in the docstring.  The sizes and
dtypes it had to assume are said in the verdict."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from apdsl.surfaces.corpus.signature import ASSUMED_SIZE, shape_in, signature_inputs

FUNCTIONS = '''
TILE = 64


def commented(
    query,  # (S, 128) float32 -- raw
    gate: object,  # (S, 1)   bfloat16, one per token
    state,  # (BH * TILE, TILE) int32
    mask,  # [S, n] bool/uint8
    n=16,
):
    """A body comment is not about a parameter."""
    x = 1  # (3, 3) float16


def documented(a, b):
    """Args:
        a: the rows [TILE, 8]
        b (tensor): a (2, 3) uint8 table
    """


def undescribed(a, b):  # (4, 4)
    pass


def header_only(a):
    b = a  # (4, 4) float32
'''


def _module(tmp_path: Path):
    path = tmp_path / "described.py"
    path.write_text(FUNCTIONS)
    spec = importlib.util.spec_from_file_location("described", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shapes_come_from_the_parameter_comments(tmp_path):
    m = _module(tmp_path)
    inputs = signature_inputs(m.commented)
    shapes = [a.shape for a in inputs.args]
    dtypes = [a.dtype.name for a in inputs.args]
    # S and BH are named nowhere: one assumed size each; n is the keyword default, TILE the
    # module's constant
    assert shapes == [(ASSUMED_SIZE, 128), (ASSUMED_SIZE, 1), (ASSUMED_SIZE * 64, 64),
                      (ASSUMED_SIZE, 16)]
    assert dtypes == ["float32", "bfloat16", "int32", "bool"]
    assert inputs.assumed == (f"S = {ASSUMED_SIZE}", f"BH = {ASSUMED_SIZE}")
    assert inputs.source == "comments"


def test_shapes_come_from_the_docstring(tmp_path):
    m = _module(tmp_path)
    inputs = signature_inputs(m.documented)
    assert [a.shape for a in inputs.args] == [(64, 8), (2, 3)]
    assert [a.dtype.name for a in inputs.args] == ["float32", "uint8"]
    assert inputs.assumed == ("float32 for a",)
    assert inputs.source == "docstring"


def test_a_parameter_described_nowhere_gives_no_inputs(tmp_path):
    m = _module(tmp_path)
    assert signature_inputs(m.undescribed) is None  # one comment for two parameters
    assert signature_inputs(m.header_only) is None  # the body's comment does not count


def test_shape_text_reading():
    assumed: dict[str, int] = {}
    assert shape_in("raw Q (NOT cumsum) then (S // 2, 4 + 4)", {}, assumed) == (64, 8)
    assert assumed == {"S": ASSUMED_SIZE}
    assert shape_in("(3 / 2, 1)", {}, {}) is None  # not a whole size
    assert shape_in("(0, 4)", {}, {}) is None
    assert shape_in("no shape here", {}, {}) is None


CHECKOUT_INIT = "import a_package_this_machine_lacks  # the model code around the kernels\n"
KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def doubled(
    x: nl.ndarray,  # (S, 8) float32
    w: nl.ndarray,  # (S, 8) float32
):
    assert tuple(x.shape) == (128, 8), x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=u, src=w)
    nisa.tensor_tensor(dst=t, data1=t, data2=u, op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def wants_512_rows(
    x,  # (N, 8) float32
):
    assert x.shape[0] % 512 == 0, "N must be a multiple of 512"
    return x


@nki.jit
def refused_at_its_size(
    x,  # (128, 65536) float32
):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)  # more than a partition holds
    return x
'''


def test_a_kernel_file_runs_without_the_package_that_cannot_import(tmp_path):
    """The package's `__init__` imports a module the machine lacks, the kernel file does not:
    the kernel runs on its commented shapes, and the verdict says what was assumed."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "src" / "model"
    (pkg / "kernels").mkdir(parents=True)
    (tmp_path / "src" / "__init__.py").write_text(CHECKOUT_INIT)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels" / "__init__.py").write_text("")
    (pkg / "kernels" / "doubled.py").write_text("import numpy as np\n" + KERNEL)
    (pkg / "kernels" / "lacking.py").write_text(
        "import a_package_this_machine_lacks\n" + KERNEL.replace("doubled", "other"))
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", "--json", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {k["kernel"].rpartition("::")[2] + "@" + k["kernel"].split("/")[-1].split(".")[0]:
            k for k in json.loads(done.stdout)["kernels"]}
    ran = rows["doubled@doubled"]
    assert ran["status"] == "runs", ran["detail"]
    assert "inputs from the comments (assumed: S = 128)" in ran["detail"]
    # stopped on a size apdsl made up: not the kernel's verdict
    guessed = rows["wants_512_rows@doubled"]
    assert guessed["status"] == "no inputs", guessed
    assert "N must be a multiple of 512" in guessed["detail"]
    assert "(assumed: N = 128)" in guessed["detail"]
    # on the sizes the comment gives, a refusal is the kernel's
    told = rows["refused_at_its_size@doubled"]
    assert told["status"] == "error" and told["code"].startswith("APK"), told
    # the kernel file's own import of the missing package is still its verdict
    assert rows["other@lacking"]["status"] == "environment", rows["other@lacking"]
    assert "a_package_this_machine_lacks" in rows["other@lacking"]["detail"]


def test_the_data_is_what_the_comment_says():
    """The arrays are random but reproducible: the same kernel gets the same inputs."""
    def k(a):  # pragma: no cover - only its signature is read
        pass
    k.__doc__ = "Args:\n    a: (2, 2) int8"
    one, two = signature_inputs(k), signature_inputs(k)
    assert np.array_equal(one.args[0], two.args[0]) and one.args[0].dtype == np.int8
