"""A process that runs a kernel file again after it changed (the Python API, the language
server, a notebook) locates diagnostics in the file as it is now, not in an earlier text:
edited on disk, or given unsaved and then saved.  Oracle: the line of the `return` in the text
that ran."""

from __future__ import annotations

import linecache

import numpy as np
from support import apdsl_in_process

HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n"
RAISES = HEAD + "@nki.jit\ndef k(a):\n    raise ValueError('x')\n"
RETURNS_SBUF = HEAD + """@nki.jit
def k(a):
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return t
"""


def _first_line(tmp_path, text: str) -> str:
    (tmp_path / "kern.py").write_text(text)
    r = apdsl_in_process("run", "kern.py", "-i", "a=a.npy", cwd=tmp_path)
    assert r.returncode == 1
    return r.stderr.splitlines()[0]


def test_each_run_locates_in_the_text_it_ran(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((128, 64), np.float32))
    assert _first_line(tmp_path, RETURNS_SBUF).startswith("kern.py:9:5: error[APK143]")
    assert _first_line(tmp_path, RAISES).startswith("kern.py:7:5: error[APK148]")
    assert _first_line(tmp_path, RETURNS_SBUF).startswith("kern.py:9:5: error[APK143]")
    moved = HEAD + "\n\n\n" + RETURNS_SBUF[len(HEAD):]  # three lines inserted above
    assert _first_line(tmp_path, moved).startswith("kern.py:12:5: error[APK143]")


def test_a_text_equal_to_the_disk_is_checked_against_it_later(tmp_path):
    """What a run leaves in linecache for a saved file goes when the file changes (an
    entry without the file's time would never be checked)."""
    np.save(tmp_path / "a.npy", np.ones((128, 64), np.float32))
    _first_line(tmp_path, RETURNS_SBUF)
    kept = [entry for key, entry in linecache.cache.items()
            if key.endswith("kern.py") and len(entry) == 4 and
            "".join(entry[2]) == RETURNS_SBUF]
    assert kept and all(e[1] is not None and e[0] == len(RETURNS_SBUF) for e in kept)
