"""Every error code has a catalogue entry, and every entry's example triggers its code."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import apdsl
from apdsl.catalogue import all_entries
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = all_entries()

# Files some examples need next to them, and kernel inputs some examples run with.
EXTRA_FILES = {
    "APK604": {"_apk604_self.apk": "import _apk604_self\n"},
    "APK605": {"corrupt.npy": "this is not an array\n"},
    "APK108": {"helpers.apk": "TILE = 128\n"},
    # a header claiming a 4 TB array, then 16 bytes of data
    "APK608": {"short.npy": b"\x93NUMPY\x01\x00v\x00" + (
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
        .ljust(117) + b"\n") + bytes(16)},
    "APK609": {"objects.npy": b"\x93NUMPY\x01\x00v\x00" + (
        b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n")
        + bytes(16)},
}
# raised by the command line, not the program
CLI_ONLY = {"APK170": ["--ranks", "2"], "APK607": ["-o", "out.npy"], "APK610": ["-o", "."], "APK611": ["-o", "out.npy"],
            "APK612": ["-o", "out.npy"]}
INPUTS = {"APK131": {"A": np.zeros((4, 8), np.float32), "B": np.zeros((5, 3), np.float32)}}


def raised_codes() -> set[str]:
    codes = set()
    for path in (ROOT / "apdsl").rglob("*.py"):
        if "catalogue" in path.parts:
            continue
        codes.update(re.findall(r'"(APK\d{3})"', path.read_text()))
    return codes


def test_every_raised_code_has_an_entry():
    missing = sorted(raised_codes() - set(ENTRIES) - {"APK000", "APK200", "APK300", "APK400",
                                                      "APK500", "APK600", "APK700", "APK900",
                                                      "APK001", "APK101", "APK110"}
                     - set(ENTRIES))
    assert not missing, f"codes raised but not in the catalogue: {missing}"


def test_entries_are_complete():
    for code, e in ENTRIES.items():
        assert re.fullmatch(r"APK\d{3}", code)
        assert e.title and e.explanation and e.example, code


def codes_of(code: str, example: str, tmp_path: Path) -> set[str]:
    for name, text in EXTRA_FILES.get(code, {}).items():
        if isinstance(text, bytes):
            (tmp_path / name).write_bytes(text)
        else:
            (tmp_path / name).write_text(text)
    if example.lower().startswith("# python"):  # a Python API example (and its warnings)
        from apdsl.runtime.sync.warn import collect_warnings
        with collect_warnings() as warned:
            try:
                exec(compile(example, code, "exec"), {"apdsl": apdsl, "np": np})
            except ApdslError as e:
                return {e.code}
        return {w.code for w in warned}
    path = tmp_path / "example.apk"
    path.write_text(example + "\n")
    if code in CLI_ONLY:
        import subprocess
        import sys
        proc = subprocess.run([sys.executable, "-m", "apdsl", "run", str(path), *CLI_ONLY[code]],
                              capture_output=True, text=True, cwd=tmp_path)
        return set(re.findall(r"error\[(APK\d{3})\]", proc.stderr))
    found: set[str] = set()
    try:
        program = Program.from_path(str(path))
    except ApdslError as e:
        return {e.code}
    found.update(e.code for e in program.check())
    try:
        kernels = [k.name for k in program.kernels()]
        program.run(kernels[0] if kernels else None, INPUTS.get(code))
    except ApdslError as e:
        found.add(e.code)
    return found


@pytest.mark.parametrize("code", sorted(ENTRIES))
def test_example_triggers_its_code(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    example = ENTRIES[code].example
    if "import torch" in example:  # a launch from PyTorch: where torch is installed
        pytest.importorskip("torch")
    assert code in codes_of(code, example, tmp_path), example


def test_a_code_is_found_however_it_is_typed_and_a_near_miss_names_real_neighbours():
    from apdsl.catalogue import lookup, suggest
    table = all_entries()
    code = next(iter(table))
    assert lookup(code.lower()) is lookup(f"  {code} ") is lookup(code[3:]) is table[code]
    # a prefix names its group, in order, and only codes of that group
    group = code[:5]
    assert [e.code for e in suggest(group)] == sorted(c for c in table if c.startswith(group))[:5]
    # a number outside the catalogue names its numeric neighbours (brute force over the table)
    for typed in ("APK9999", "APK0", "APK2035"):
        width = len(code) - 3
        n = int(typed[3:][:width].ljust(width, "0"))
        best = min(abs(int(c[3:]) - n) for c in table)
        got = suggest(typed)
        assert got and abs(int(got[0].code[3:]) - n) == best
    assert suggest("XYZ") == ()
