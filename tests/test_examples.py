"""Every example runs with no arguments (its own asserts check its results), checks clean, and
lowers; the README's quick-start example prints what the README shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import EXPECTED_TO_FAIL, raises_code

from apdsl.semantics.program import Program

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.apk"))


def test_there_are_examples():
    assert len(EXAMPLES) >= 6


def test_the_readme_lists_every_example():
    import re
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| \[([\w.]+\.apk)\]\(examples/\1\) \|", readme, re.M))
    assert table == {p.name for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_checks(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    program = Program.from_path(str(path))
    if path.name in EXPECTED_TO_FAIL:  # it shows an error: run and check both report it
        code = EXPECTED_TO_FAIL[path.name]
        assert [e.code for e in program.check()] == [code]
        with raises_code(code) as err:
            program.run([k.name for k in program.kernels()][0])
        assert err.value.labels, "the error names the other instruction of the race"
        return
    assert program.check() == []
    kernels = [k.name for k in program.kernels()]
    result = program.run(kernels[0] if kernels else None, trace=True)
    assert result.trace is not None and len(result.trace.records) > 0
    if kernels:
        assert result.value is not None


@pytest.mark.parametrize("path", sorted((ROOT / "stdlib").glob("*.apk")), ids=lambda p: p.name)
def test_stdlib_module_checks(path):
    program = Program.from_path(str(path))
    assert program.check() == []
