"""The instruction table is the one source: every list of instructions agrees with it, no limit
in it is a string naming a rule kept elsewhere, every entry names a cost class the profile
prices, and the Ascend pipe choice is entry data, not a test of names."""

import ast
import importlib
import inspect

import numpy as np
import pytest
from support import raises_code

import apdsl
from apdsl.runtime import instructions
from apdsl.runtime.core.limits import bounds
from apdsl.runtime.table import PYTHON_NAMES, TABLE, implementation, spec
from apdsl.runtime.table.spec import COST_CLASSES, Call, Domain, Limit
from apdsl.semantics import dryrun
from apdsl.surfaces import lexer
from apdsl.tensor.targets import TARGETS
from apdsl.tensor.view import from_numpy, ndarray


def test_python_names_are_the_tables_identifiers():
    assert PYTHON_NAMES == tuple(n for n in TABLE if n.isidentifier())
    assert {"dma_copy", "nc_matmul", "mmad", "tensor_tensor"} <= set(PYTHON_NAMES)


def test_runtime_instructions_exports_the_table():
    # the Ascend executors load on first use (`apdsl.mmad`, the builtins)
    assert instructions.__all__ == [n for n in PYTHON_NAMES
                                    if not TABLE[n].module.startswith("ascend.")]
    assert "mmad" not in instructions.__all__ and "nc_matmul" in instructions.__all__
    for name in instructions.__all__:
        assert getattr(instructions, name) is implementation(name)


def test_the_package_exports_the_table():
    public = set(apdsl.__all__)
    assert set(PYTHON_NAMES) <= public and set(PYTHON_NAMES) <= set(dir(apdsl))
    for name in PYTHON_NAMES:
        assert getattr(apdsl, name) is implementation(name)
    # the lazy-import map names no instruction: the table is the only list
    assert not set(apdsl._LAZY) & set(TABLE)


def test_the_lexers_list_is_the_tables():
    # spelled out in the lexer (the table imports NumPy, the lexer must not): kept in step here
    assert len(lexer.INSTRUCTIONS) == len(set(lexer.INSTRUCTIONS))
    assert set(lexer.INSTRUCTIONS) == set(PYTHON_NAMES)


def test_dry_run_writers_are_the_tables():
    assert dryrun.WRITERS == {n for n, e in TABLE.items() if e.writes_dst}
    for name, entry in TABLE.items():
        ascend_dst = any("ascend" in o.memory for o in entry.operands if o.role == "dst")
        assert (name in dryrun.ASCEND_WRITERS) == (entry.writes_dst and ascend_dst), name
    assert {"dma_copy", "memset"} <= dryrun.ASCEND_WRITERS


def test_no_limit_is_a_string():
    for name, entry in TABLE.items():
        for key, value in entry.limits.items():
            assert not isinstance(value, str), (name, key, value)
            if isinstance(value, Limit):
                assert callable(value.bound), (name, key)
            if isinstance(value, Domain):
                assert callable(value.inside) and value.says, (name, key)


def test_every_entry_names_a_cost_class():
    for name, entry in TABLE.items():
        assert entry.cost in COST_CLASSES, name
    assert TABLE["dma_copy"].cost == TABLE["dma_transpose"].cost == "dma"
    assert TABLE["nc_matmul"].cost == TABLE["mmad"].cost == "matmul"
    assert TABLE["register_load"].cost == "register"


def _names_compared(source: str) -> set[str]:
    """String constants an `op == "..."`, `op != "..."` or `op.startswith("...")` test uses."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and getattr(node.left, "id", None) in ("op", "name"):
            found |= {c.value for c in node.comparators if isinstance(c, ast.Constant)}
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "startswith" \
                and getattr(node.func.value, "id", None) == "op":
            found |= {a.value for a in node.args if isinstance(a, ast.Constant)}
    return found


def test_the_profile_prices_by_cost_class_not_by_name():
    # `apdsl.profile` first: importing the package through a submodule would bind the module,
    # not the function, to the name (the lazy attribute sets the function only when asked)
    assert callable(apdsl.profile)
    model = importlib.import_module("apdsl.profile.model")
    assert _names_compared(inspect.getsource(model)) == set()
    assert model.cost_class("mmad") == "matmul"
    assert model.cost_class("not an instruction") == "vector"


def test_the_pipe_choice_names_no_instruction():
    source = inspect.getsource(spec)
    literals = {n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant)}
    assert not literals & set(TABLE)
    for name in ("dma_copy", "memset"):
        entry = TABLE[name]
        dst = entry.operand("dst").memory["ascend"]
        src = entry.operand("src").memory["ascend"] if entry.routes.by == "path" else None
        for key, pipe in entry.routes.pipes.items():
            taken = key[0] in src and key[1] in dst if src is not None else key in dst
            assert not taken or pipe in entry.engines["ascend"], (name, key, pipe)


@pytest.mark.parametrize("path", sorted(spec.ASCEND_COPY_PIPES))
def test_copies_take_the_pipe_of_their_path(path):
    src = ndarray((16, 16), "float16", path[0])
    dst = ndarray((16, 16), "float16", path[1])
    for name in ("dma_copy", "asc.data_copy"):
        entry = TABLE.get(name)
        if entry is not None:
            assert entry.engine("ascend", {"dst": dst, "src": src}) == \
                spec.ASCEND_COPY_PIPES[path]


@pytest.mark.parametrize("buffer", sorted(spec.ASCEND_MEMSET_PIPES))
def test_memset_takes_the_pipe_of_its_buffer(buffer):
    dst = ndarray((16, 16), "float16", buffer)
    assert TABLE["memset"].engine("ascend", {"dst": dst}) == spec.ASCEND_MEMSET_PIPES[buffer]


@pytest.mark.parametrize("target", [t for t in TARGETS.values() if t.family == "nki"],
                         ids=lambda t: t.name)
def test_nc_matmul_bounds_come_from_the_entry(target):
    entry = TABLE["nc_matmul"]
    for dst, transpose, n in (("float32", False, target.matmul_max_n),
                              ("bfloat16", False, 2 * target.matmul_max_n),
                              ("bfloat16", True, target.matmul_max_n)):
        call = Call(target, {"dst": dst}, {"rows": 128, "cols": 96, "transpose": transpose})
        assert bounds(entry, call) == {"K": 128, "M": 96, "N": n}


def _bf16(shape):
    return from_numpy(np.ones(shape, np.float32), "sbuf", dtype="bfloat16")


def test_nc_matmul_refuses_past_its_bound():
    with apdsl.target("trn2"), raises_code("APK314") as info:
        instructions.nc_matmul(ndarray((128, 1024), "float32", "psum"), _bf16((128, 128)),
                               _bf16((128, 1024)))
    assert "N = 1024 exceeds 512 on trn2" in info.value.message
    assert list(info.value.notes) == ["limits on trn2: K <= 128, M <= 128, N <= 512"]


def test_nc_matmul_takes_a_bfloat16_dst_twice_as_wide():
    with apdsl.target("trn3"):  # the one target whose dst may be bfloat16
        out = ndarray((128, 8192), "bfloat16", "psum")  # N = 2 * matmul_max_n
        instructions.nc_matmul(out, _bf16((128, 128)), _bf16((128, 8192)))
        assert np.allclose(out.numpy(), 128.0)


def test_the_profiles_per_instruction_figures_are_of_vector_class_instructions():
    # the ISA's per-instruction figures (`apdsl.profile.costs`) are read where the model prices
    # an element-wise pass on an NKI engine: a key that is no such instruction is a figure
    # never read, silently
    costs = importlib.import_module("apdsl.profile.costs")
    keyed = {*costs.VECTOR_MODES, *costs.ISA_CYCLES_PER_ELEMENT, *costs.ISA_EXTRA_CYCLES,
             *costs.FAST_PATHS, *costs.SPLIT_READS}
    assert keyed
    for name in keyed:
        assert name in TABLE and TABLE[name].cost == "vector", name
        assert TABLE[name].engines.get("nki"), name


def test_the_legacy_forms_are_of_nki_instructions():
    forms = importlib.import_module("apdsl.nki.legacy_forms").FORMS
    assert {"nc_matmul", "tensor_tensor"} <= set(forms)
    for name in forms:
        assert name in TABLE and TABLE[name].engines.get("nki"), name


def test_pyascs_bare_instruction_names_are_the_tables():
    names = importlib.import_module("apdsl.asc.names")
    for name in names.PLAIN:
        assert name in TABLE and "ascend" in TABLE[name].engines, name


def test_lowering_cuts_a_matrix_instruction_by_its_entrys_contraction():
    # `apdsl lower` cuts a matrix instruction along the axes its entry's dependency class sums
    # over (`Depends.contract`: per input, the axis summed into K and the dst axis the other
    # becomes); the model layer cannot read the table, so the two are kept in step here
    lowering = importlib.import_module("apdsl.tensor.lowering")
    assert set(lowering.MATRIX_AXES) == {n for n, e in TABLE.items() if e.depends.kind == "matmul"}
    for name, axes in lowering.MATRIX_AXES.items():
        contract = TABLE[name].depends.contract
        assert axes["dst"] == ("M", "N") and set(axes) == {*contract, "dst"}, name
        for role, (summed, into) in contract.items():
            assert axes[role][summed] == "K" and axes[role][1 - summed] == "MN"[into], (name, role)
    for name in lowering.ELEMENTWISE:
        assert TABLE[name].depends.kind == "element", name
