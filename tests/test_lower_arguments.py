"""`apdsl lower` shows every instruction's non-tensor operands (operators, numbers, flags,
enums, patterns, registers) in the text and in `--json` (`arguments`), by one mechanism over
the instruction table (`apdsl.runtime.core.arguments`): checked for every table instruction, on
`.apk` programs and on a Python kernel through the command line."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from apdsl.runtime.core import arguments
from apdsl.runtime.table import TABLE, implementation
from apdsl.runtime.table.operators import OPERATORS
from apdsl.tensor.registers import VirtualRegister
from apdsl.tensor.view import ndarray

HINTS = {"engine", "dge_mode", "oob_mode", "priority"}


def lower(path, *extra):
    return subprocess.run([sys.executable, "-m", "apdsl", "lower", str(path), *extra],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


def _parameters(name):
    entry = TABLE[name]
    roles = {o.role for o in entry.operands}
    sig = inspect.signature(implementation(name))
    return roles, [p for p in sig.parameters.values() if p.name != "name"]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_non_tensor_parameter_of_every_instruction_is_reported(name):
    """For each instruction of the table, each parameter given a value other than its
    default is reported, by keyword and by position; a tensor is not (it is an operand)."""
    roles, params = _parameters(name)
    fn = implementation(name)
    t = ndarray((4, 4), "float32", "sbuf")
    for i, p in enumerate(params):
        value = 12345 if p.default != 12345 else 54321
        assert arguments.given(fn, (), {p.name: value}) == {p.name: value}, p.name
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        if positional and all(q.kind == p.POSITIONAL_OR_KEYWORD for q in params[:i]):
            args = tuple(t for _ in params[:i]) + (value,)
            got = arguments.given(fn, args, {}) or {}
            assert got.get(p.name) == value
            assert set(got) == {p.name}  # the tensors before it are operands
        if p.name in roles:
            assert arguments.given(fn, (), {p.name: t}) is None
        if p.default is not p.empty:
            assert arguments.given(fn, (), {p.name: p.default}) is None  # says nothing


def test_values_are_made_plain_when_the_instruction_runs():
    reg = VirtualRegister(7, name="n")
    plain = arguments.plain
    assert plain(OPERATORS["add"]) == "nl.add"
    assert plain((1, (2, 3))) == [1, [2, 3]]
    assert plain(np.float32(1.5)) == 1.5 and plain(np.int64(3)) == 3
    assert plain(float("-inf")) == "-inf" and plain(True) is True
    assert plain(reg) == {"register": "n", "value": 7}
    got = arguments.given(implementation("register_store"), (), {"src": reg})
    reg.value = 9  # a later change of the register does not change what was recorded
    assert got == {"src": {"register": "n", "value": 7}}


PROGRAM = """\
kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ sbuf:
    x = nl.load(A)
    y = ndarray((128, 64), f32, sbuf)
    nisa.tensor_scalar(dst=y, data=x, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=-1.5, reverse1=True)
    z = ndarray((128, 64), f32, sbuf)
    nisa.activation(dst=z, op=nl.exp, data=y, scale=1.5)
    w = ndarray((128, 64), f32, sbuf)
    nisa.tensor_tensor(dst=w, data1=z, data2=y, op=nl.subtract)
    r = ndarray((128, 1), f32, sbuf)
    nisa.tensor_reduce(r, nl.add, w, (1,), keepdims=True)
    nisa.tensor_copy(dst=y, src=w, engine=nisa.engine.gpsimd)
    nisa.memset(dst=y, value=0.25)
    i = ndarray((1, 1), i32, sbuf)
    register_store(i, register_alloc(7))
    nisa.tensor_scalar(dst=y, data=x, op0=nl.multiply, operand0=r, reverse0=False)
    return w
"""

EXPECTED = [
    ("dma_copy", None, None),
    ("tensor_scalar", {"op0": "nl.multiply", "operand0": 2.0, "op1": "nl.add",
                       "operand1": -1.5, "reverse1": True}, None),
    ("activation", {"op": "nl.exp", "scale": 1.5}, None),
    ("tensor_tensor", {"op": "nl.subtract"}, None),
    ("tensor_reduce", {"op": "nl.add", "axis": [1], "keepdims": True}, None),
    ("tensor_copy", None, {"engine": "gpsimd"}),
    ("memset", {"value": 0.25}, None),
    ("register_store", {"src": {"register": "r0", "value": 7}}, None),
    ("tensor_scalar", {"op0": "nl.multiply"}, None),  # operand0 is a tensor: an operand
]


def test_lower_json_and_text_show_the_non_tensor_operands(tmp_path):
    f = tmp_path / "k.apk"
    f.write_text(PROGRAM)
    js = lower(f, "--json")
    assert js.returncode == 0, js.stderr
    objs = [json.loads(line) for line in js.stdout.splitlines()]
    got = [(o["op"], o.get("arguments"), o.get("hints")) for o in objs]
    register = got[7][1]["src"]
    assert register["value"] == 7
    EXPECTED[7][1]["src"]["register"] = register["register"]  # the register's own name
    assert got == EXPECTED
    assert "operand0" in objs[-1]["operands"] and "operand0" not in objs[1]["operands"]
    text = lower(f)
    heads = [line for line in text.stdout.splitlines() if line.startswith(str(f))]
    assert heads[1] == (f"{f}:4  tensor_scalar  op0=nl.multiply  operand0=2.0  op1=nl.add  "
                        "operand1=-1.5  reverse1=True")
    assert heads[4] == f"{f}:10  tensor_reduce  op=nl.add  axis=[1]  keepdims=True"
    assert heads[5] == f"{f}:11  tensor_copy  engine=gpsimd"
    assert heads[0] == f"{f}:2  dma_copy"  # nothing but tensors: the line as before
    for head, obj in zip(heads, objs):  # the text shows what the JSON says, in its order
        shown = "".join(f"  {k}={arguments.text(v)}"
                        for k, v in (obj.get("arguments") or {}).items())
        shown += "".join(f"  {k}={v}" for k, v in (obj.get("hints") or {}).items())
        assert head == f"{f}:{obj['line']}  {obj['op']}{shown}"


def test_the_nl_functions_and_a_python_kernel_show_theirs(tmp_path):
    f = tmp_path / "r.apk"
    f.write_text("kernel k() -> f32[8, 8] @ sbuf:\n    return nl.rand((8, 8), nl.float32)\n")
    objs = [json.loads(line) for line in lower(f, "--json").stdout.splitlines()]
    assert [(o["op"], o.get("arguments")) for o in objs] == [
        ("rng", None),
        ("tensor_scalar", {"op0": "nl.right_shift", "operand0": 8}),
        ("tensor_scalar", {"op0": "nl.multiply", "operand0": 2.0 ** -24})]
    py = tmp_path / "kernel.py"
    py.write_text(
        "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
        "def k(a):\n    t = nl.load(a)\n    r = nl.ndarray((128, 1), dtype=nl.float32)\n"
        "    nisa.tensor_reduce(r, nl.maximum, t, (1,), True)\n"
        "    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    nl.store(out, r)\n    return out\n")
    res = lower(py, "--json", "-i", f"a={_npy(tmp_path)}")
    assert res.returncode == 0, res.stderr
    objs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [o.get("arguments") for o in objs if o["op"] == "tensor_reduce"] == [
        {"op": "nl.maximum", "axis": [1], "negate": True}]


def _npy(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.ones((128, 16), np.float32))
    return path
