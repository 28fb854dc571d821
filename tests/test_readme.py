"""Every command the README shows prints what the README says it prints.

A README transcript is a fenced block whose lines start with `$ ` (the command, run by bash with
`apdsl` on the PATH, so pipes such as `| head -2` work) followed by the expected output. In the
expected text a line that is only `...` stands for any number of lines, and `...` inside a line
for any text, so the README may elide. A command naming a file that is not in the repository
(`tiles.apk`) runs on the nearest `apk` block above the transcript, written to that name.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def transcripts() -> list[tuple[str, str, str, str | None]]:
    """(command, expected output, first line of the block, the apk block above it)."""
    out = []
    last_apk = None
    for m in FENCE.finditer(README):
        lang, body = m.group(1), m.group(2)
        if lang == "apk":
            last_apk = body
            continue
        if lang or not body.startswith("$ "):
            continue
        command, expected = None, []
        for line in body.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    out.append((command, "\n".join(expected), command, last_apk))
                command, expected = line[2:], []
            else:
                expected.append(line)
        out.append((command, "\n".join(expected), command, last_apk))
    return out


def expected_regex(expected: str) -> re.Pattern:
    parts = []
    for line in expected.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.rstrip().split("...")) + r"\n")
    return re.compile("".join(parts), re.S)


CASES = transcripts()


def test_the_readme_has_transcripts():
    assert len(CASES) >= 6


@pytest.mark.parametrize("command,expected,title,apk", CASES, ids=[c[2][:60] for c in CASES])
def test_readme_transcript(tmp_path, command, expected, title, apk):
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "apdsl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m apdsl "$@"\n')
    (shim / "apdsl").chmod(0o755)
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    for name in re.findall(r"(\S+\.apk)", command):
        if not (work / name).exists():
            assert apk is not None, f"{name} is neither in the repository nor shown above"
            (work / name).write_text(apk, encoding="utf-8")
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1",
               COLUMNS="100", PYTHONPATH=os.pathsep.join(
                   [str(ROOT)] + ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ
                                  else [])))
    proc = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    actual = "\n".join(line.rstrip() for line in proc.stdout.splitlines()) + "\n"
    assert expected_regex(expected).fullmatch(actual), (
        f"README shows for `{command}`:\n{expected}\n\nbut it prints:\n{actual}")


def test_elisions_match_only_what_they_should():
    rx = expected_regex("head\n...\ntail {...} end")
    assert rx.fullmatch("head\ntail {x} end\n")
    assert rx.fullmatch("head\none\ntwo\ntail {\"a\": 1} end\n")
    assert not rx.fullmatch("head\ntail {x} and\n")
    assert not rx.fullmatch("tail {x} end\n")


def built_section() -> str:
    """The README's "How it is built" section, up to the next section."""
    start = README.index("## How it is built")
    return README[start:README.index("\n## ", start + 1)]


def _ends_with(path: Path, parts: tuple[str, ...]) -> bool:
    return path.parts[-len(parts):] == parts


def test_how_it_is_built_names_every_folder_and_only_real_ones():
    """A newcomer finds every package folder described, and every folder or module the
    section names (`runtime/ascend/`, `entries/vector.py`) exists."""
    section = built_section()
    named = set(re.findall(r"`([\w./]+(?:\.py|/))`", section))
    package = ROOT / "apdsl"
    folders = [d for d in package.rglob("*") if d.is_dir() and (d / "__init__.py").exists()]
    assert len(folders) > 15
    named_folders = {n.rstrip("/").rsplit("/", 1)[-1] for n in named if n.endswith("/")}
    assert sorted(d.name for d in folders if d.name not in named_folders) == []
    existing = [*package.rglob("*"), *ROOT.glob("*"), *ROOT.glob("*/*")]
    for name in sorted(named):
        parts = tuple(p for p in name.split("/") if p)
        assert any(_ends_with(e.relative_to(ROOT), parts) and e.is_dir() == name.endswith("/")
                   for e in existing), f"README names `{name}`, which does not exist"
