"""The NKI hint keywords are recorded (SPEC 4) and shown by `apdsl lower` and `lower --json`
(SPEC 8): each given hint by its enum name, defaults omitted."""

from __future__ import annotations

import json
import subprocess
import sys

from apdsl.runtime.nki import hints

PROGRAM = """\
kernel k(A: f16[16, 64] @ hbm) -> f16[64, 16] @ hbm:
    a: f16[16, 64] @ sbuf
    dma_copy(a, A, dge_mode=nisa.dge_mode.hwdge, engine=nisa.engine.scalar)
    t: f16[64, 16] @ sbuf
    dma_transpose(t, A, dge_mode=nisa.dge_mode.hwdge, name="tr")
    p: f16[64, 16] @ psum
    nisa.nc_transpose(dst=p, data=a, engine=nisa.engine.tensor)
    s: f16[64, 16] @ sbuf
    tensor_copy(s, p, engine="vector")
    memset(a, 0.0, engine=nisa.engine.gpsimd)
    out: f16[64, 16] @ hbm
    dma_copy(out, s, oob_mode=nisa.oob_mode.error)
    return out
"""


def lower(tmp_path, *extra):
    path = tmp_path / "h.apk"
    path.write_text(PROGRAM)
    return subprocess.run([sys.executable, "-m", "apdsl", "lower", str(path), *extra],
                          capture_output=True, text=True)


def test_lower_json_records_the_hints(tmp_path):
    r = lower(tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    got = [(o["op"], o.get("hints")) for o in objs]
    assert got == [("dma_copy", {"dge_mode": "hwdge", "engine": "scalar"}),
                   ("dma_transpose", {"dge_mode": "hwdge"}),
                   ("nc_transpose", {"engine": "tensor"}),
                   ("tensor_copy", {"engine": "vector"}),
                   ("memset", {"engine": "gpsimd"}),
                   ("dma_copy", None)]  # oob_mode=error is the default: nothing to record
    assert objs[1]["name"] == "tr"
    assert set(objs[1]["operands"]) == {"dst", "src"}
    assert set(objs[2]["operands"]) == {"dst", "data"}


def test_lower_table_shows_the_hints(tmp_path):
    r = lower(tmp_path)
    assert r.returncode == 0, r.stderr
    heads = [line.split("  ", 1)[1] for line in r.stdout.splitlines()
             if not line.startswith(" ")]
    assert heads == ["dma_copy  dge_mode=hwdge  engine=scalar", "dma_transpose tr  dge_mode=hwdge",
                     "nc_transpose  engine=tensor", "tensor_copy  engine=vector",
                     "memset  value=0.0  engine=gpsimd", "dma_copy"]


def test_given_names_enum_members_and_drops_defaults():
    class Member:
        name = "swdge"
    assert hints.given(dge_mode=Member(), oob_mode="error", priority=None,
                       engine="unknown") == {"dge_mode": "swdge"}
    assert hints.given(priority=0, oob_mode="skip") == {"priority": 0, "oob_mode": "skip"}
    assert hints.given(engine="unknown") is None


def test_compute_instructions_record_their_engine_hint():
    import numpy as np

    from apdsl.runtime.core import trace
    from apdsl.runtime.instructions import dma_copy, reciprocal
    from apdsl.tensor.view import from_numpy, ndarray
    a = ndarray((4, 4), "float32", "sbuf")
    dma_copy(a, from_numpy(np.full((4, 4), 2.0, np.float32)))
    with trace.tracing() as tr:
        reciprocal(ndarray((4, 4), "float32", "sbuf"), a, engine="vector")
        reciprocal(ndarray((4, 4), "float32", "sbuf"), a)
    assert [r.to_json()[0].get("hints") for r in tr.records] == [{"engine": "vector"}, None]


NUMBERED_KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl

_DGE_MODE_NONE = 3  # the member's number, as published kernels write it


@nki.jit
def copy_twice(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a, dge_mode=_DGE_MODE_NONE)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=2.0, engine=5)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u, dge_mode=DGE)
    return out
"""


def _numbered(tmp_path, dge: str, command: str, *extra: str):
    import numpy as np
    path = tmp_path / "numbered.py"
    path.write_text(NUMBERED_KERNEL.replace("DGE", dge))
    x = np.arange(128 * 6, dtype=np.float32).reshape(128, 6)
    np.save(tmp_path / "a.npy", x)
    r = subprocess.run([sys.executable, "-m", "apdsl", command, str(path), "-i",
                        f"a={tmp_path / 'a.npy'}", *extra], capture_output=True, text=True)
    return x, r


def test_an_enum_hint_given_by_its_number_is_that_member(tmp_path):
    # the NKI reference numbers the members (dge_mode: unknown 0, swdge 1, hwdge 2, none 3;
    # engine: vector 5): 3 is dge_mode.none, recorded (and costed) as the name would be
    import numpy as np
    x, r = _numbered(tmp_path, "2", "run", "-o", str(tmp_path / "out.npy"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), 2.0 * x)
    _, r = _numbered(tmp_path, "2", "lower", "--json")
    assert r.returncode == 0, r.stderr
    got = [json.loads(line).get("hints") for line in r.stdout.splitlines()]
    assert got == [{"dge_mode": "none"}, {"engine": "vector"}, {"dge_mode": "hwdge"}]
    assert hints.given(dge_mode=1, engine=0, oob_mode=1) == {"dge_mode": "swdge",
                                                             "oob_mode": "skip"}


def test_a_number_no_member_has_is_refused(tmp_path):
    _, r = _numbered(tmp_path, "7", "run")
    assert r.returncode != 0
    assert "APK347" in r.stderr and "dge_mode must be one of unknown, swdge, hwdge, none, got 7" \
        in r.stderr, r.stderr
