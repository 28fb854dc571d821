"""Every module path of SPEC 16 resolves under `install()`, the pytest plugin and `apdsl run
FILE.py` (the current `nki` tree and the legacy `neuronxcc.nki` one, which is the same
modules), and a module or name apdsl lacks is a located, coded diagnostic naming it, never a
bare ModuleNotFoundError/ImportError/AttributeError.  Each runs in a fresh interpreter, as a
user's does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import apdsl.nki as nki
import apdsl.nki.language as nl
from apdsl.errors import ApdslError
from apdsl.nki.tensor_types import TensorAnnotation

ROOT = Path(__file__).resolve().parent.parent

IMPORTS = """
import nki
import nki.language as nl
import nki.isa as nisa
import nki.isa.constants
from nki.isa import constants
from nki.isa.constants import dge_mode, oob_mode
import nki.typing as nt
from nki.typing import tensor
import nki.compiler as ncc
import nki.collectives
import nki.collectives as ncol
import neuronxcc.nki as lnki
import neuronxcc.nki.language as lnl
import neuronxcc.nki.isa as lnisa
import neuronxcc.nki.typing as lnt
import neuronxcc.nki.compiler as lncc
from neuronxcc import nki as lnki2
from neuronxcc.nki import baremetal, benchmark, jit, profile, simulate_kernel
from neuronxcc.nki.typing import tensor as ltensor
from nki.language import NKIObject
import nki.dtype as ndt
from nki.dtype import float8_e4m3

assert nki.isa.constants is constants and constants.oob_mode is nisa.oob_mode
assert dge_mode is nisa.dge_mode and oob_mode.skip is nisa.oob_mode.skip
assert lnki is nki and lnki2 is nki and lnl is nl and lnisa is nisa and lnt is nt
assert lncc is ncc and ltensor is tensor and ncol is nki.collectives
assert isinstance(nl.float32, nki.dtype) and isinstance(nl.bfloat16, nki.dtype)
assert ndt is nki.dtype and ndt.float8_e4m3 is nl.float8_e4m3 is float8_e4m3
assert not isinstance(3, nki.dtype)
print("resolved")
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_every_path_resolves_under_install(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text("import apdsl.nki\napdsl.nki.install()\n" + IMPORTS)
    proc = _run(["user.py"], tmp_path)
    assert proc.stdout.strip() == "resolved", proc.stderr


def test_every_path_resolves_under_the_pytest_plugin(tmp_path: Path) -> None:
    body = textwrap.indent(IMPORTS, "    ")
    (tmp_path / "test_paths.py").write_text(f"def test_paths():\n{body}\n")
    proc = _run(["-m", "pytest", "-p", "apdsl.nki", "-p", "no:cacheprovider", "-q",
                 "test_paths.py"], tmp_path)
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr


def test_every_path_resolves_under_apdsl_run(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(IMPORTS + textwrap.dedent('''
        @nki.jit
        def double(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, nl.multiply(nl.load(a), 2.0))
            return out
        '''))
    np.save(tmp_path / "a.npy", np.arange(128 * 4, dtype=np.float32).reshape(128, 4))
    proc = _run(["-m", "apdsl", "run", "k.py", "-i", "a=a.npy", "-o", "out.npy"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"),
                                  2 * np.load(tmp_path / "a.npy"))


@pytest.mark.parametrize("line, code, names", [
    ("import neuronxcc.starfish.support.dtype", "APK920", "neuronxcc.starfish"),
    ("from neuronxcc.nki._private_kernels.attention import attention_isa_kernel", "APK920",
     "neuronxcc.nki._private_kernels"),
    ("import nki.kernels", "APK920", "nki.kernels"),
    # a submodule of a module apdsl provides as a plain one (nki-library's kernel tracer)
    ("from nki.compiler.frontend import NKIFrontend", "APK920", "nki.compiler.frontend"),
    ("import neuronxcc.nki.language.internals", "APK920", "neuronxcc.nki.language.internals"),
    ("from nki.collectives import all_reduse", "APK144", "nki.collectives.all_reduse"),
    ("from nki.isa import sendrecv_typo", "APK144", "nisa.sendrecv_typo"),
    ("from nki.isa.constants import frob_mode", "APK144", "nki.isa.constants.frob_mode"),
    ("from nki.dtype import float128", "APK144", "nki.dtype.float128"),
    ("x = nl.float128", "APK144", "nl.float128"),
    ("x = nki.frobnicate", "APK144", "nki.frobnicate"),
    ("from nki import frobnicate", "APK144", "nki.frobnicate"),
    ("x = ncc.multi_buffer(2)", "APK923", "nki.compiler.multi_buffer"),
])
def test_what_is_missing_is_a_located_diagnostic(tmp_path: Path, line: str, code: str,
                                                 names: str) -> None:
    (tmp_path / "k.py").write_text(
        "import nki\nimport nki.language as nl\nimport nki.compiler as ncc\n\n"
        f"{line}\n\n\n@nki.jit\ndef k(a):\n    return a\n")
    proc = _run(["-m", "apdsl", "run", "k.py"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"error[{code}]" in proc.stderr and names in proc.stderr, proc.stderr
    assert "k.py:5" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_missing_nki_names_stay_attribute_errors() -> None:
    """`hasattr`/`getattr(nki, name, default)` keep working on the diagnostic, and
    `nki.cpu_simulate` is the simulator call (the NKI CPU simulator's name)."""
    import apdsl.nki as nki
    assert not hasattr(nki, "frobnicate")
    assert getattr(nki, "frobnicate", 7) == 7
    assert nki.cpu_simulate is nki.simulate


def test_a_missing_module_is_still_an_import_error_for_code_that_falls_back(
        tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(textwrap.dedent('''
        import apdsl.nki
        apdsl.nki.install()
        try:
            from neuronxcc.nki.kernels.attention import attention_isa_kernel
        except ImportError as e:
            print("fell back:", e.name, type(e).__mro__[1].__name__)
        '''))
    proc = _run(["user.py"], tmp_path)
    assert proc.stdout.strip() == "fell back: neuronxcc.nki.kernels ApdslError", proc.stderr


def test_uninstall_removes_every_path(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(textwrap.dedent('''
        import sys
        import apdsl.nki
        apdsl.nki.install()
        import neuronxcc.nki.language, nki.isa.constants
        apdsl.nki.uninstall()
        left = [m for m in sys.modules if m.split(".")[0] in ("nki", "neuronxcc")]
        print(left, [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "Finder"],
              hasattr(apdsl.nki.language, "__path__"))  # made a package by install() only
        '''))
    proc = _run(["user.py"], tmp_path)
    assert proc.stdout.strip() == "[] [] False", proc.stderr


# -- nki.typing, nki.dtype ---------------------------------------------------------------------

def test_tensor_annotations_record_shape_and_dtype() -> None:
    assert nki.typing.tensor[128, 512] == TensorAnnotation((128, 512), None)
    assert nki.typing.tensor[(128, 64), nl.float32] == TensorAnnotation((128, 64), nl.float32)
    assert nki.typing.tensor[64, 1, nl.int32] == TensorAnnotation((64, 1), nl.int32)
    assert nki.tensor is nki.typing.tensor


def test_a_kernel_tensor_is_an_nki_typing_tensor() -> None:
    seen = []

    @nki.jit
    def k(a):
        seen.append(isinstance(a, nki.typing.tensor))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        seen.append(isinstance(t, nki.typing.tensor))
        nl.store(out, t)
        return out

    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(k(x), x)
    assert seen == [True, True] and not isinstance(x, nki.typing.tensor)


def test_nki_dtype_is_the_type_of_every_nl_dtype() -> None:
    for name in ("float32", "bfloat16", "float16", "int8", "uint32", "float8_e4m3"):
        d = getattr(nl, name)
        assert isinstance(d, nki.dtype)
        assert np.dtype(d.np).itemsize * 8 == d.bits
    assert not isinstance(np.float32, nki.dtype)


# -- nl.NKIObject --------------------------------------------------------------------------------

class SectionLike(nl.NKIObject):
    index = None     # class attributes without annotations are constructor fields
    offset = 0
    LIMIT = 128

    def end(self):
        return self.offset + self.LIMIT


class Derived(SectionLike):
    extra: int = 7


@dataclass
class WithDataclass(nl.NKIObject):
    x: int
    y: bool = False
    items: list = field(default_factory=list)

    def toggle(self):
        self.y = not self.y


class Posted(nl.NKIObject):
    a: int = 1
    b: int = 2

    def __post_init__(self):
        self.total = self.a + self.b


class OwnInit(nl.NKIObject):
    x: int = 1

    def __init__(self, value):
        self.x = value * 10


def test_nkiobject_fields_follow_nkis_rules() -> None:
    s = SectionLike(index=3)
    assert (s.index, s.offset, s.LIMIT, s.end()) == (3, 0, 128, 128)
    assert SectionLike(1, 5).end() == 133
    d = Derived(2, extra=9)
    assert (d.index, d.offset, d.extra) == (2, 0, 9)
    assert type(d).__nki_fields__ == ("index", "offset", "LIMIT", "extra")
    c = WithDataclass(1)
    c.toggle()
    assert (c.x, c.y, c.items) == (1, True, [])
    assert WithDataclass(1).items is not c.items
    assert WithDataclass().x is None  # a field without a default takes None (NKI's rule)
    assert Posted(b=5).total == 6
    assert OwnInit(3).x == 30
    assert repr(SectionLike(index=1)) == "SectionLike(index=1, offset=0, LIMIT=128)"


@pytest.mark.parametrize("make", [lambda: SectionLike(depth=2),
                                  lambda: SectionLike(1, 2, 3, 4),
                                  lambda: SectionLike(1, index=2)])
def test_nkiobject_argument_mistakes_are_apk922(make) -> None:
    with pytest.raises(ApdslError) as e:
        make()
    assert e.value.code == "APK922"
    assert e.value.span is not None and e.value.span.file == __file__


def test_a_folder_called_nki_on_the_path_is_not_a_real_nki(tmp_path: Path) -> None:
    """A checkout's docs folder `nki/` (no __init__.py) is a namespace package: install()
    still installs, as it does for the aws-neuron-sdk checkout's root."""
    (tmp_path / "nki").mkdir()
    (tmp_path / "user.py").write_text(textwrap.dedent('''
        import sys
        sys.path.insert(0, ".")
        import apdsl.nki
        print(apdsl.nki.install())
        import nki.language as nl
        import nki.compiler as ncc
        mod = ncc.multi_buffer            # naming a legacy scheduling control is fine
        print(nl.float32, repr(mod))
        '''))
    proc = _run(["-W", "error", "user.py"], tmp_path)
    assert proc.stdout.splitlines()[:2] == [
        "True", "float32 <nki.compiler.multi_buffer: not supported by apdsl>"], proc.stderr
