"""apdsl.nki.locate.is_user_file: which frames are the user's, answered once per file (it is
asked for every frame of every traced instruction)."""

from __future__ import annotations

import os
from pathlib import Path

import apdsl
from apdsl.nki import locate


def test_user_files_apdsl_files_and_python_machinery(tmp_path):
    mine = tmp_path / "kernel.py"
    mine.write_text("")
    assert locate.is_user_file(str(mine))
    assert not locate.is_user_file(apdsl.__file__)
    assert not locate.is_user_file(str(Path(locate.__file__)))
    assert not locate.is_user_file("<frozen importlib._bootstrap>")
    # a path into apdsl spelled another way is still apdsl's
    assert not locate.is_user_file(str(Path(apdsl.__file__).parent / ".." / "apdsl" / "__init__.py"))


def test_a_file_is_resolved_once(tmp_path, monkeypatch):
    mine = tmp_path / "once.py"
    mine.write_text("")
    calls = []
    real = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a, **k: calls.append(self) or
                        real(self, *a, **k))
    for _ in range(5):
        assert locate.is_user_file(str(mine))
    assert len(calls) == 1


def test_a_relative_name_is_resolved_in_the_working_directory(tmp_path, monkeypatch):
    """The same relative name in apdsl's folder and in the user's is two answers."""
    package = Path(apdsl.__file__).parent
    monkeypatch.chdir(package)
    assert not locate.is_user_file("__init__.py")
    monkeypatch.chdir(tmp_path)
    assert locate.is_user_file("__init__.py")
    assert os.getcwd() == str(tmp_path)
