"""A user's kernel file is loaded under a private name (issue 22): a kernel called `copy.py`,
`math.py` or `numpy.py` replaces no module of the process (the REPL, the language server, a
notebook and `apdsl.run` live on after loading it), two files of one stem stay apart, the
file's folder is not left on sys.path, and what Python offers a script still works in it:
its sibling modules import, pickle, dataclasses and `inspect.getsource` find its classes.
The oracle is NumPy and the stdlib modules themselves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apdsl.nki.program import PyProgram

# {name}: the stem; {value}: the constant its sibling `helpers.py` gives
KERNEL = '''\
import copy
import dataclasses
import inspect
import math
import pickle

import numpy as np

import helpers
import nki
import nki.isa as nisa
import nki.language as nl


@dataclasses.dataclass(frozen=True)
class Tile:
    rows: int = 128
    cols: int = 64


SOURCE = inspect.getsource(Tile)
ROUND_TRIP = pickle.loads(pickle.dumps(Tile(cols=32)))
COPIED = copy.deepcopy([Tile()])
ROOT = math.sqrt(16.0)
ONES = np.ones(3)


@nki.jit
def fill():
    import later  # a sibling imported when the kernel runs
    tile = Tile()
    a = nl.ndarray((tile.rows, tile.cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=a, value=helpers.VALUE + later.EXTRA)
    out = nl.ndarray((tile.rows, tile.cols), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
'''


def write(folder: Path, stem: str, value: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helpers.py").write_text(f"VALUE = {value}\n")
    (folder / "later.py").write_text(f"EXTRA = {value / 10}\n")
    path = folder / f"{stem}.py"
    path.write_text(KERNEL)
    return path


def private() -> set[str]:
    return {n for n in sys.modules if n.startswith("_apdsl_user_")}


@pytest.mark.parametrize("stem", ["copy", "math", "numpy", "test"])
def test_a_kernel_named_like_a_module_replaces_nothing(tmp_path, stem):
    import copy
    import math
    before_modules = {n: sys.modules.get(n) for n in ("copy", "math", "numpy", "test",
                                                      "helpers", "later", stem)}
    before_path, before_private = list(sys.path), private()
    program = PyProgram(str(write(tmp_path, stem, 3.0)))
    m = program.module
    assert m.ROUND_TRIP == m.Tile(cols=32) and m.COPIED == [m.Tile()]
    assert m.SOURCE.splitlines()[0] == "@dataclasses.dataclass(frozen=True)"
    assert m.ROOT == 4.0 and m.ONES.tolist() == [1.0, 1.0, 1.0]
    value = program.run().value
    assert np.array_equal(np.asarray(value.numpy() if hasattr(value, "numpy") else value),
                          np.full((128, 64), 3.3, np.float32))
    for name, module in before_modules.items():
        assert sys.modules.get(name) is module, name
    assert copy.deepcopy([1, [2]]) == [1, [2]] and math.sqrt(9.0) == 3.0
    assert sys.path == before_path
    # the load's modules are under private names only: one package and its modules
    new = private() - before_private
    assert len({n.split(".")[0] for n in new}) == 1 and f".{stem}" in "".join(new)


def test_two_files_of_one_stem_stay_apart(tmp_path):
    first = PyProgram(str(write(tmp_path / "a", "kernel", 1.0)))
    second = PyProgram(str(write(tmp_path / "b", "kernel", 2.0)))
    assert first.module.__name__ != second.module.__name__
    assert first.module.helpers.VALUE == 1.0 and second.module.helpers.VALUE == 2.0
    # the first still runs on its own helpers after the second was loaded
    a = first.run().value.numpy()
    b = second.run().value.numpy()
    assert np.array_equal(a, np.full((128, 64), 1.1, np.float32))
    assert np.array_equal(b, np.full((128, 64), 2.2, np.float32))
    assert "helpers" not in sys.modules and "later" not in sys.modules
    # its classes pickle as its own
    import pickle
    tile = pickle.loads(pickle.dumps(first.module.Tile(rows=1)))
    assert type(tile) is first.module.Tile and type(tile) is not second.module.Tile


def test_a_module_already_imported_wins_over_a_sibling(tmp_path):
    """As in Python's module cache: the folder's own `json.py` does not replace the
    `json` every other module of the process uses."""
    import json
    folder = tmp_path / "k"
    write(folder, "kernel", 1.0)
    (folder / "json.py").write_text("raise RuntimeError('the sibling json ran')\n")
    (folder / "kernel.py").write_text("import json\nDUMPED = json.dumps([1])\n" + KERNEL)
    program = PyProgram(str(folder / "kernel.py"))
    assert program.module.DUMPED == "[1]" and sys.modules["json"] is json


def test_a_kernel_named_copy_runs_from_the_command_line(tmp_path):
    # (from another folder: `python -m` puts the working folder first on sys.path)
    path = write(tmp_path / "kernels", "copy", 5.0)
    done = subprocess.run([sys.executable, "-m", "apdsl", "run", str(path), "-o",
                           str(tmp_path / "out.npy")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "out.npy"), np.full((128, 64), 5.5, np.float32))
