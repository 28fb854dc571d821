"""bench/speed_only.py counts issue 23's speed-only lines by its written rule: whole modules,
named definitions and the statements of a function that contain a text, each line once, and
an entry that matches nothing fails the count (so the list cannot go stale unnoticed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import speed_only  # noqa: E402

FAST = '''\
"""fast module"""


def lookup(x):
    return x
'''

MIXED = '''\
import os

CACHE = {}


@staticmethod
def helper(a):
    # keeps a
    return a


class Engine:
    def run(self, x):
        y = x + 1
        if x in CACHE:  # the fast path
            return CACHE[x]
        for i in range(3):
            if x in CACHE:
                y += i
        return y
'''


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/fast.py").write_text(FAST)
    (tmp_path / "pkg/mixed.py").write_text(MIXED)
    monkeypatch.setattr(speed_only, "WHOLE", ("pkg/fast.py",))
    return tmp_path


def test_whole_modules_definitions_and_statements_are_counted_once(tree, monkeypatch):
    monkeypatch.setattr(speed_only, "PARTS", {"pkg/mixed.py": (
        "CACHE", "helper", "run: if x in CACHE", "Engine.run: if x in CACHE")})
    per, stale = speed_only.count(tree)
    assert stale == []
    assert per["pkg/fast.py"] == 5
    # CACHE 1 line; helper 4 with its decorator and comment; the two `if` statements (2 + 2
    # lines, the second inside the loop), named twice but counted once
    assert per["pkg/mixed.py"] == 1 + 4 + 2 + 2


def test_an_entry_that_matches_nothing_is_reported(tree, monkeypatch):
    monkeypatch.setattr(speed_only, "PARTS", {"pkg/mixed.py": ("gone", "run: while True"),
                                              "pkg/missing.py": ("x",)})
    per, stale = speed_only.count(tree)
    assert per["pkg/mixed.py"] == 0
    assert stale == ["pkg/mixed.py: gone", "pkg/mixed.py: run: while True",
                     "pkg/missing.py: x"]


def test_the_repository_count_has_no_stale_entry_and_adds_up():
    done = subprocess.run([sys.executable, str(BENCH / "speed_only.py")], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line.rsplit(None, 1) for line in done.stdout.splitlines()]
    assert rows[-1][0] == "total"
    assert int(rows[-1][1]) == sum(int(n) for _, n in rows[:-1]) > 0
