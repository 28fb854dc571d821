"""`apdsl corpus DIR` on a folder of a checkout whose tests live elsewhere in it (kernels in
`src/`, tests in `test/`, as nki-library keeps them): the kernels measured are DIR's, and the
checkout's own tests drive them.  A checkout made here, of kernels and tests written for this
test, run through the command line as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from corpus_sources import hbm_kernel, kernel_module

from apdsl.surfaces.corpus import run

OPS = kernel_module(hbm_kernel("scale_kernel", "nl.multiply(nl.load(a), 3.0)"),
                    hbm_kernel("shift_kernel", "nl.add(nl.load(a), 1.0)"),
                    "@nki.jit\ndef lonely_kernel(a):\n    return a")

OTHER = kernel_module(hbm_kernel("negate_kernel", "nl.negative(nl.load(a))"))

OPS_TESTS = '''
import numpy as np

from mylib.ops.scale import scale_kernel, shift_kernel


def test_scale():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_allclose(scale_kernel(x), 3.0 * x)


def test_shift():
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_allclose(shift_kernel(x), x + 2.0)  # a wrong reference
'''

OTHER_TESTS = '''
import nki
import nki.language as nl
import numpy as np

from mylib.other.neg import negate_kernel


def test_negate():
    x = np.ones((4, 4), np.float32)
    np.testing.assert_allclose(negate_kernel(x), -x)


def test_own_kernel():
    @nki.jit
    def copy_kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        return out

    x = np.ones((4, 4), np.float32)
    np.testing.assert_allclose(copy_kernel(x), x)
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("checkout")
    (top / ".git").mkdir()
    for package in ("mylib", "mylib/ops", "mylib/other"):
        _write(top / "src" / package / "__init__.py", "")
    _write(top / "src" / "mylib" / "ops" / "scale.py", OPS)
    _write(top / "src" / "mylib" / "other" / "neg.py", OTHER)
    _write(top / "test" / "ops" / "test_scale.py", OPS_TESTS)
    _write(top / "test" / "other" / "test_neg.py", OTHER_TESTS)
    # a test importing the kernel from where it no longer is (nki-library's topk_reduce test: the kernel moved to another package)
    _write(top / "test" / "ops" / "test_lonely.py", """
        import inspect

        import numpy as np
        from mylib.subops.scale import lonely_kernel

        def test_lonely():
            # (as nki-library's harness checks the inputs against the kernel's signature)
            assert list(inspect.signature(lonely_kernel).parameters) == ["a"]
            lonely_kernel(np.ones((4, 4), np.float32))
        """)
    _write(top / "test" / "conftest.py", "")
    return top


def test_a_folder_of_kernels_is_driven_by_the_checkouts_tests(checkout: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus",
                           str(checkout / "src" / "mylib" / "ops"), "--json", "--timeout", "120"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    got = {k["kernel"]: k for k in doc["kernels"]}
    # the folder's kernels only (not the other package's, nor a kernel a test defines)
    assert sorted(got) == ["scale.py::lonely_kernel", "scale.py::scale_kernel",
                           "scale.py::shift_kernel"], got
    assert got["scale.py::scale_kernel"]["status"] == "matches", got
    assert got["scale.py::scale_kernel"]["driver"] == "pytest:test/ops/test_scale.py"
    # a test outside the folder comparing with a wrong reference: located in that test
    assert got["scale.py::shift_kernel"]["status"] == "mismatch", got
    assert got["scale.py::shift_kernel"]["where"] == "test/ops/test_scale.py:14"
    assert got["scale.py::lonely_kernel"]["status"] == "no inputs", got
    # ... and the note says why its test could not call it
    assert "it imports mylib.subops.scale, which the checkout lacks" in \
        got["scale.py::lonely_kernel"]["detail"], got


def test_the_checkout_is_measured_not_a_copy_installed_in_the_environment(
        checkout: Path, tmp_path: Path) -> None:
    # another version of the same package, installed where Python finds it before the
    # checkout (as nki-library installed for NxDI's tests): its scale_kernel multiplies by 5
    installed = tmp_path / "site"
    for package in ("mylib", "mylib/ops"):
        _write(installed / package / "__init__.py", "")
    _write(installed / "mylib" / "ops" / "scale.py", OPS.replace("3.0", "5.0"))
    env = {**os.environ, "PYTHONPATH": str(installed)}
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus",
                           str(checkout / "src" / "mylib" / "ops"), "--json", "--timeout", "120"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr
    got = {k["kernel"]: k for k in json.loads(done.stdout)["kernels"]}
    assert got["scale.py::scale_kernel"]["status"] == "matches", got
    assert got["scale.py::scale_kernel"]["driver"] == "pytest:test/ops/test_scale.py"


def test_only_files_that_name_a_kernel_of_the_folder_are_parsed(
        checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real, base = run.parse, os.path.realpath(checkout)

    def spy(path: str, text: str | None = None) -> object:
        parsed.append(os.path.relpath(path, base))
        return real(path, text)

    monkeypatch.setattr(run, "parse", spy)
    entries = run.discover(os.path.join(base, "src", "mylib", "ops"))
    assert sorted(parsed) == ["src/mylib/ops/__init__.py", "src/mylib/ops/scale.py",
                              "test/ops/test_lonely.py", "test/ops/test_scale.py"]
    scale = next(e for e in entries if e.qualname == "scale_kernel")
    assert [(d.kind, os.path.relpath(d.file, base)) for d in scale.drivers] == \
        [("pytest", "test/ops/test_scale.py"), ("signature", "src/mylib/ops/scale.py")]
    assert [t.split("::")[-1] for t in scale.drivers[0].tests] == ["test_scale"]


# double_v3 is a wrong version of the tutorial
TUTORIAL_KERNELS = kernel_module(hbm_kernel("double_v1", "nl.add(nl.load(a), nl.load(a))"),
                                 hbm_kernel("double_v2", "nl.multiply(nl.load(a), 2.0)"),
                                 hbm_kernel("double_v3", "nl.multiply(nl.load(a), 3.0)"))

# the test takes the kernel as a parameter (no fixture gives it: pytest cannot run it), and
# the file calls it at module level with one version; it names no other version
TUTORIAL_TEST = '''
import numpy as np

from tutorial_kernels import *


def test_tutorial(mode, version):
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    if mode == "accuracy":
        assert np.allclose(version(x), 2.0 * x)


test_tutorial("accuracy", double_v1)
'''


def test_a_test_taking_the_kernel_as_a_parameter_drives_every_version(tmp_path: Path) -> None:
    _write(tmp_path / "tutorial_kernels.py", TUTORIAL_KERNELS)
    _write(tmp_path / "test_tutorial.py", TUTORIAL_TEST)
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(tmp_path), "--json",
                           "--timeout", "120"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    got = {k["kernel"].split("::")[-1]: k for k in json.loads(done.stdout)["kernels"]}
    assert got["double_v1"]["status"] == "matches", got
    assert got["double_v2"]["status"] == "matches", got
    assert got["double_v2"]["driver"] == "call:test_tutorial.py"
    # v3 is run by the same test, with its own result compared: a mismatch, not v1's match
    assert got["double_v3"]["status"] == "mismatch", got
    assert got["double_v3"]["where"] == "test_tutorial.py:10"


CLASS_TESTS = '''
import numpy as np

from mylib.ops.scale import scale_kernel, shift_kernel


class TestOps:
    def run_case(self, x):
        np.testing.assert_allclose(scale_kernel(x), 3.0 * x)

    def test_scale(self):
        self.run_case(np.ones((4, 4), np.float32))

    def test_shift(self):
        np.testing.assert_allclose(shift_kernel(np.ones((4, 4), np.float32)), 2.0)
'''


def test_a_test_method_reaching_the_kernel_through_a_method_is_chosen(tmp_path: Path) -> None:
    from apdsl.surfaces.corpus.drivers import find_entry_points
    from apdsl.surfaces.corpus.find import parse
    _write(tmp_path / "mylib" / "ops" / "scale.py", OPS)
    _write(tmp_path / "test_ops.py", CLASS_TESTS)
    sources = [parse(str(p)) for p in (tmp_path / "mylib" / "ops" / "scale.py",
                                       tmp_path / "test_ops.py")]
    entries = {e.qualname: e for e in find_entry_points([s for s in sources if s])}
    # only the test that reaches it (through `run_case`), not the whole file
    assert [t.split("::", 1)[1] for t in entries["scale_kernel"].drivers[0].tests] == \
        ["TestOps::test_scale"]
    assert [t.split("::", 1)[1] for t in entries["shift_kernel"].drivers[0].tests] == \
        ["TestOps::test_shift"]



def test_a_test_importing_the_kernel_from_its_package_drives_it(tmp_path: Path) -> None:
    """nki-library's cross-entropy tests import `from ...loss import cross_entropy_forward`,
    re-exported by the package's `__init__.py`, never naming the kernel's own module."""
    from apdsl.surfaces.corpus.drivers import find_entry_points
    from apdsl.surfaces.corpus.find import parse
    _write(tmp_path / "mylib" / "__init__.py", "from .ops import scale_kernel\n")
    _write(tmp_path / "mylib" / "ops" / "__init__.py", "from .scale import scale_kernel\n")
    _write(tmp_path / "mylib" / "ops" / "scale.py", OPS)
    _write(tmp_path / "test_pkg.py", """
        import numpy as np
        from mylib.ops import scale_kernel

        def test_scale():
            np.testing.assert_allclose(scale_kernel(np.ones((2, 2), np.float32)), 3.0)
        """)
    _write(tmp_path / "test_top.py", """
        import numpy as np
        import mylib

        def test_scale_from_the_top():
            np.testing.assert_allclose(mylib.scale_kernel(np.ones((2, 2), np.float32)), 3.0)
        """)
    # a package that does not re-export it: its tests do not drive the kernel
    _write(tmp_path / "other" / "__init__.py", "")
    _write(tmp_path / "test_other.py", """
        from other import scale_kernel

        def test_unrelated():
            scale_kernel()
        """)
    files = ["mylib/__init__.py", "mylib/ops/__init__.py", "mylib/ops/scale.py", "test_pkg.py",
             "test_top.py", "other/__init__.py", "test_other.py"]
    sources = [s for s in (parse(str(tmp_path / f)) for f in files) if s]
    entries = {e.qualname: e for e in find_entry_points(sources)}
    assert [(d.kind, os.path.basename(d.file), [t.split("::")[-1] for t in d.tests])
            for d in entries["scale_kernel"].drivers] == [
        ("pytest", "test_pkg.py", ["test_scale"]),
        ("pytest", "test_top.py", ["test_scale_from_the_top"]),
        ("signature", "scale.py", [])]
    assert [d.kind for d in entries["shift_kernel"].drivers] == ["signature"]

BLOCKS = kernel_module(
    "@nki.jit\ndef inner_kernel(t):\n    return nl.multiply(t, 2.0)",
    hbm_kernel("outer_kernel", "nl.add(inner_kernel(nl.load(a)), 1.0)"),
    "@nki.jit\ndef late_inner(t):\n    return nl.multiply(t, 3.0)",
    hbm_kernel("late_outer", "late_inner(nl.load(a))"),
    hbm_kernel("never_kernel", "nl.multiply(nl.load(a), 4.0)"))

API = '''
from mylib.ops.blocks import late_outer, never_kernel, outer_kernel


def run_block(a):
    return outer_kernel(a)


def run_late(a):
    return late_outer(a)


def run_never(a):
    return never_kernel(a)
'''

BROKEN = kernel_module(hbm_kernel("broken_kernel", "nl.frobnicate(nl.load(a))"))

BLOCKS_COMMON = '''
import numpy as np

from mylib.ops.api import run_block


def check_block(x):
    np.testing.assert_allclose(run_block(x), 2.0 * x + 1.0)
'''

BLOCKS_TESTS = '''
import numpy as np

from test_blocks_common import check_block


def test_block():
    check_block(np.arange(32, dtype=np.float32).reshape(4, 8))
'''

LATE_TESTS = '''
import numpy as np

from mylib.ops.api import run_late
from mylib.other.broken import broken_kernel


def test_broken_then_late():
    x = np.ones((4, 4), np.float32)
    broken_kernel(x)  # refused: the test stops here
    np.testing.assert_allclose(run_late(x), 3.0 * x)


def test_late_alone():
    x = np.ones((4, 4), np.float32)
    np.testing.assert_allclose(run_late(x), 3.0 * x)
'''

NEVER_TESTS = '''
import numpy as np

from mylib.ops.api import run_never
from mylib.other.broken import broken_kernel


def test_broken_then_never():
    broken_kernel(np.ones((4, 4), np.float32))
    run_never(np.ones((4, 4), np.float32))


def test_broken_again_then_never():
    broken_kernel(np.ones((4, 4), np.float32))
    run_never(np.ones((4, 4), np.float32))


def test_never_alone():  # not run: the tests before stopped twice at the same line
    np.testing.assert_allclose(run_never(np.ones((4, 4), np.float32)), 4.0)
'''


def test_kernels_reached_through_wrappers_and_other_kernels(tmp_path: Path) -> None:
    # the tests call a helper module's function calling a wrapper calling a kernel, which
    # calls another kernel: both kernels are measured by those tests
    (tmp_path / ".git").mkdir()
    for package in ("mylib", "mylib/ops", "mylib/other"):
        _write(tmp_path / "src" / package / "__init__.py", "")
    _write(tmp_path / "src" / "mylib" / "ops" / "blocks.py", BLOCKS)
    _write(tmp_path / "src" / "mylib" / "ops" / "api.py", API)
    _write(tmp_path / "src" / "mylib" / "other" / "broken.py", BROKEN)
    _write(tmp_path / "test" / "test_blocks_common.py", BLOCKS_COMMON)
    _write(tmp_path / "test" / "test_blocks.py", BLOCKS_TESTS)
    _write(tmp_path / "test" / "test_late.py", LATE_TESTS)
    _write(tmp_path / "test" / "test_never.py", NEVER_TESTS)
    folder = os.path.realpath(tmp_path / "src" / "mylib" / "ops")
    entries = {e.qualname: e for e in run.discover(folder)}
    assert [(d.kind, os.path.basename(d.file)) for d in entries["inner_kernel"].drivers] == \
        [("pytest", "test_blocks.py"), ("signature", "blocks.py")]
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", folder, "--json",
                           "--timeout", "120"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    got = {k["kernel"].split("::")[-1]: k for k in json.loads(done.stdout)["kernels"]}
    assert got["outer_kernel"]["status"] == "matches", got
    assert got["inner_kernel"]["status"] == "matches", got
    assert got["inner_kernel"]["driver"] == "pytest:test/test_blocks.py"
    # the first test stopped at another kernel's refusal before reaching these: not their
    # error, and the file's next test measures them
    for name in ("late_outer", "late_inner"):
        assert got[name]["status"] == "matches", got
    # two tests stopping at the same line before the kernel: the rest would too (the file
    # ends there), and what stopped them is said, not taken for the kernel's verdict
    assert got["never_kernel"]["status"] == "no inputs", str(got["never_kernel"])
    assert "APK144" in got["never_kernel"]["detail"], got


def test_a_repository_kept_inside_another_checkout_imports_from_its_own_top(
        tmp_path: Path) -> None:
    """apdsl's own examples/nki_corpus in a clone of apdsl: its tests import `kernels.rows`
    from the folder measured, below the top that holds `.git`."""
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "examples" / "inner"
    _write(inner / "kernels" / "__init__.py", "")
    _write(inner / "kernels" / "neg.py", OTHER)
    _write(inner / "tests" / "test_neg.py", """
        import numpy as np
        from kernels.neg import negate_kernel

        def test_negate():
            x = np.arange(16, dtype=np.float32).reshape(4, 4)
            np.testing.assert_allclose(negate_kernel(x), -x)
        """)
    done = subprocess.run([sys.executable, "-m", "apdsl", "corpus", str(inner), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["kernels"]
    assert row["status"] == "matches", row
