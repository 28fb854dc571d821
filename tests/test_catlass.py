"""The CATLASS examples (Atlas A2) written for apdsl (examples/catlass/): each runs on several
AI cores with the instructions, buffers, pipes, events and cores of the CATLASS kernel it
follows, passes the race checker, and checks itself against NumPy at its top level (a direct
convolution for the convolutions).  Here each is run, its kernel alone too (with valid inputs
where the kernel reads a group list), and a few of them are mutated: taking out an event, a
sync_all or the atomic add is a race (or a deadlock, or a wrong sum the example's check
catches)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program

FOLDER = Path(__file__).resolve().parents[1] / "examples" / "catlass"
EXAMPLES = sorted(p for p in FOLDER.glob("*.apk") if p.name[0].isdigit())

# the kernels that read a group or problem list: valid lists for their run alone
LISTS = {"02_grouped_matmul_slice_m.apk": {"Ends": np.array([50, 110, 160], np.int32)},
         "05_grouped_matmul_slice_k.apk": {"Ends": np.array([48, 112, 160], np.int32)},
         "08_grouped_matmul.apk": {"Shapes": np.array([[64, 48, 96], [96, 80, 64],
                                                       [32, 64, 128]], np.int32)},
         "10_grouped_matmul_slice_m_per_token_dequant.apk": {
             "Ends": np.array([24, 40, 64], np.int32)},
         "11_grouped_matmul_slice_k_per_token_dequant.apk": {
             "Ends": np.array([64, 128], np.int32)},
         "07_grouped_matmul_slice_m_per_token_dequant_moe.apk": {
             "Counts": np.array([24, 16, 24], np.int32)},
         "16_group_gemm.apk": {"Ends": np.array([24, 64], np.int32),
                               "Alpha": np.array([0.5, 2.0], np.float32),
                               "Beta": np.array([-1.0, 0.25], np.float32)}}


def test_there_are_the_examples():
    assert len(EXAMPLES) >= 30  # of the 35 Atlas A2 examples (notes: which, and why not the rest)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_catlass_example_runs_and_matches_numpy(path):
    res = Program.from_path(str(path)).run(None, LISTS.get(path.name, {}))
    assert res.value is not None


def _mutant(tmp: Path, name: str, old: str, new: str = "") -> Program:
    """The example with one line changed, written beside a copy of the modules it imports."""
    text = (FOLDER / name).read_text()
    assert old in text, old
    for module in FOLDER.glob("*.apk"):
        if not module.name[0].isdigit():
            (tmp / module.name).write_text(module.read_text())
    path = tmp / name
    path.write_text(text.replace(old, new, 1))
    return Program.from_path(str(path))


@pytest.mark.parametrize("name,old,new", [
    ("03_matmul_add.apk", "    asc.sync_all(is_aiv_only=False)\n", ""),
    ("03_matmul_add.apk", '            asc.wait_flag("MTE2_V", s)\n', ""),
    ("17_gemv_aiv.apk", '            asc.wait_flag("V_MTE3", 0)\n', ""),
    ("31_small_matmul.apk", '            asc.wait_flag("M_FIX", 0)\n', ""),
    ("33_basic_conv2d.apk", '            asc.wait_flag("MTE1_M", 0)\n', ""),
    ("25_matmul_full_loadA.apk", '                asc.wait_flag("MTE2_MTE1", 4)\n', ""),
    ("12_quant_matmul.apk", "    asc.sync_all(is_aiv_only=False)\n", ""),
])
def test_catlass_example_without_an_ordering_is_a_race_or_deadlock(tmp_path, name, old, new):
    prog = _mutant(tmp_path, name, old, new)
    with pytest.raises(ApdslError) as e:
        prog.run(None, LISTS.get(name, {}))
    # a race, a deadlock, or (a wait taken out of a ping-pong) its flag set again while set
    assert e.value.code in ("APK570", "APK571", "APK574", "APK575", "APK583", "APK584")


def test_single_core_splitk_without_atomic_add_is_wrong_and_caught(tmp_path):
    prog = _mutant(tmp_path, "34_single_core_splitk_matmul.apk", "                asc.set_atomic_add(f32)",
                   "                pass")
    with pytest.raises(ApdslError) as e:
        prog.run(None)
    assert e.value.code == "APK142" or "assert" in str(e.value).lower()
