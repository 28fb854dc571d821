"""The `asc.` names of `.apk` programs: pyasc's enums and parameter objects, the instructions,
the fallback to bare builtins, an unknown `asc.` name, and the REPL's completion of them."""

from __future__ import annotations

import pytest

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program
from apdsl.surfaces.repl_complete import ApkCompleter


def run(tmp_path, source):
    path = tmp_path / "p.apk"
    path.write_text(source)
    program = Program.from_path(str(path))
    assert program.check() == []
    return program.run(None)


def test_enums_params_and_fallbacks(tmp_path, capsys):
    run(tmp_path, "print(asc.RoundMode.CAST_RINT, asc.PipeID.PIPE_V, asc.HardEvent.MTE2_V)\n"
                  "p = asc.BinaryRepeatParams(1, 1, 0, 8, 8, 1)\n"
                  "print(p.src1_blk_stride, asc.TPosition.VECIN, asc.CMPMODE.GE)\n"
                  "print(asc.float16, asc.ub)\n")
    out = capsys.readouterr().out.split()
    assert out[:3] == ["CAST_RINT", "V", "MTE2_V"]
    assert out[3:6] == ["0", "VECIN", "GE"]
    assert out[6:] == ["float16", "ub"]


def test_an_unknown_asc_name_is_located(tmp_path):
    path = tmp_path / "p.apk"
    path.write_text("x = asc.addz\n")
    errors = Program.from_path(str(path)).check()
    assert [e.code for e in errors] == ["APK101"]
    with pytest.raises(ApdslError) as e:
        Program.from_path(str(path)).run(None)
    assert e.value.code == "APK101" and "asc.add" in (e.value.help or "")


def test_the_repl_completes_asc_names():
    class Session:
        def names(self):
            return []

    c = ApkCompleter(Session())
    assert ("add", -2, "asc") in c.candidates("asc.ad")
    assert ("BinaryRepeatParams", -3, "asc") in c.candidates("asc.Bin")
    assert ("asc", -2, "Ascend prefix") in c.candidates("as")


def test_lower_shows_the_mask_form_arguments(tmp_path):
    import os
    import subprocess
    import sys
    path = tmp_path / "m.apk"
    path.write_text("x = ndarray((128,), f32, ub)\nasc.duplicate(x, 1.0, 128)\n"
                    "asc.muls(x, x, 0.5, 64, 2, asc.UnaryRepeatParams(1, 1, 8, 8))\n")
    out = subprocess.run([sys.executable, "-m", "apdsl", "lower", str(path)],
                         capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert out.returncode == 0, out.stderr
    assert "asc.muls  [pipe V]  scalar=0.5  count=64  repeat_times=2  repeat_params=" \
        "UnaryRepeatParams(dst_blk_stride=1" in out.stdout
