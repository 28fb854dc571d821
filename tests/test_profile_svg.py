"""`apdsl profile --svg`: the timeline picture is well-formed SVG with a bar per scheduled
instruction where the schedule puts it, and the README's picture is what the command draws."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from apdsl.profile import profile
from apdsl.profile.svg import render

ROOT = Path(__file__).resolve().parent.parent
GEMM = ROOT / "examples" / "ascend_gemm.apk"
PICTURE = ROOT / "docs" / "img" / "ascend_gemm_profile.svg"
NS = "{http://www.w3.org/2000/svg}"


def test_a_bar_per_instruction_on_its_row_at_its_time():
    p = profile(str(GEMM))
    root = ET.fromstring(render(p))
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    assert len(bars) == len(p.slots)
    rows = {t.text: float(t.get("y")) for t in root.iter(f"{NS}text")
            if t.text in {s.track for s in p.slots}}
    assert set(rows) == {"MTE2", "MTE1", "M", "FIX"}
    scale = 820 / p.total_ns
    for bar, s in zip(bars, p.slots):
        assert s.op in bar.find(f"{NS}title").text
        assert abs(float(bar.get("x")) - (84 + s.start * scale)) < 0.01
        assert float(bar.get("y")) + 15 == rows[s.track]
        assert float(bar.get("x")) + float(bar.get("width")) <= 84 + 820 + 0.51
    assert "estimate" in root.find(f"{NS}text").text


def test_the_readme_picture_is_what_the_command_draws(tmp_path):
    out = tmp_path / "t.svg"
    r = subprocess.run([sys.executable, "-m", "apdsl", "profile", str(GEMM), "--svg", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}" in r.stdout
    assert out.read_text() == PICTURE.read_text(), (
        "docs/img/ascend_gemm_profile.svg is stale: regenerate it with "
        "`apdsl profile examples/ascend_gemm.apk --svg docs/img/ascend_gemm_profile.svg`")
    assert "docs/img/ascend_gemm_profile.svg" in (ROOT / "README.md").read_text()
