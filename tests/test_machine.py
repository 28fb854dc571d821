"""The simulated device (`apdsl.tensor.machine.Machine`): all state a program or a test can
change lives on the current machine, so nothing a program does reaches its caller."""

from __future__ import annotations

import threading

import numpy as np
from support import raises_code

import apdsl
from apdsl.runtime.core import trace
from apdsl.tensor import budget, targets
from apdsl.tensor.machine import Machine, current


def test_each_test_runs_on_its_own_fresh_machine(machine):
    assert current() is machine
    assert machine.targets == {"nki": "trn2", "ascend": "ascend-a2"}
    assert not machine.check and machine.trace is None and machine.warnings == []


def test_machines_do_not_share_targets_options_or_accounting():
    a, b = Machine(), Machine()
    with a.active():
        apdsl.set_target("trn1")
        apdsl.options(init_check=False)
        kept = apdsl.ndarray((128, 1024), "float32", "sbuf")
        assert a.accounting.used("sbuf") == 4096
    with b.active():
        assert targets.target_for("sbuf").name == "trn2"
        assert current().options.init_check is True
        assert b.accounting.used("sbuf") == 0
    assert a.targets["nki"] == "trn1" and b.targets["nki"] == "trn2"
    del kept


def test_a_child_starts_from_its_parent_and_changes_only_itself(machine):
    apdsl.set_target("trn3")
    child = machine.child(check=True)
    with child.active():
        assert targets.target_for("sbuf").name == "trn3"
        apdsl.set_target("trn1")
        apdsl.options(strict_padding=True)
        assert current().check
    assert targets.target_for("sbuf").name == "trn3"
    assert machine.options.strict_padding is False and not machine.check
    assert child.memory is machine.memory  # one memory budget: memory is the process's


def test_a_program_cannot_change_its_callers_machine(machine):
    apdsl.run("set_target(\"trn1\")\n")
    apdsl.check("set_target(\"trn3\")\n")
    assert machine.targets["nki"] == "trn2"


def test_check_mode_is_the_machines_flag(machine):
    with apdsl.options(execute=False):
        assert machine.check
        t = apdsl.ndarray((2, 4), "float32", "sbuf")
        apdsl.memset(t, 1.0)  # validated, nothing written
        assert not t.storage.all_written
    assert not machine.check


def test_warnings_and_trace_belong_to_the_machine(machine):
    other = Machine()
    with other.active(), trace.tracing() as tr:
        t = apdsl.ndarray((2, 4), "float32", "sbuf")
        apdsl.memset(t, 1.0)
        trace.warn(apdsl.errors.Warning_("w", code="APK901"))
    assert len(tr) == 1
    assert len(other.warnings) == 1 and machine.warnings == [] and machine.trace is None


def test_another_thread_starts_on_the_session_machine(machine):
    seen = []
    thread = threading.Thread(target=lambda: seen.append(current()))
    thread.start()
    thread.join()
    assert seen[0] is not machine


def test_storage_returns_its_bytes_to_the_budget_it_came_from():
    a = Machine()
    with a.active():
        t = apdsl.from_numpy(np.zeros((16, 16), np.float32))
        held = budget.live()
        assert held >= 1024
    with Machine().active():
        t.storage.free()
        assert budget.live() == 0
    assert a.memory.bytes == 0


def test_register_error_names_the_instruction_when_raised():
    r = apdsl.register_alloc()
    src = apdsl.from_numpy(np.zeros((4, 4), np.float32))
    dst = apdsl.ndarray((4, 4), "float32", "hbm")
    with raises_code("APK410") as err:
        apdsl.dma_copy(dst, src.ap([[r, 4], [1, 4]]), name="load")
    assert err.value.message.startswith("dma_copy 'load': register ")


def _imports(path):
    import ast
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names], \
                {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            yield 0, "", [a.name for a in node.names], {a.asname or a.name for a in node.names}


def test_the_tensor_layer_never_imports_the_runtime():
    from pathlib import Path
    root = Path(apdsl.__file__).parent
    upward = []
    for path in sorted((root / "tensor").glob("*.py")):
        for level, module, names, _ in _imports(path):
            full = module if level == 0 else ("." * level) + module
            if "runtime" in full.split(".") or any("runtime" in n for n in names if level == 0):
                upward.append(f"{path.name}: {full}")
    assert upward == []
    assert current().device is not None  # the runtime installed itself behind the interface


def test_runtime_modules_use_no_private_name_of_another_module():
    import re
    from pathlib import Path
    root = Path(apdsl.__file__).parent / "runtime"
    found = []
    for path in sorted(root.glob("*.py")):
        text = path.read_text()
        aliases = set()
        for level, _module, names, bound in _imports(path):
            found += [f"{path.name}: imports {n}" for n in names if level and n.startswith("_")
                      and not n.startswith("__")]
            aliases |= bound
        for alias in aliases:
            found += [f"{path.name}: {m}" for m in
                      re.findall(rf"(?<![\w.]){re.escape(alias)}\._[a-z]\w*", text)]
    assert found == []
    assert max(len(p.read_text().splitlines()) for p in root.glob("*.py")) <= 500
