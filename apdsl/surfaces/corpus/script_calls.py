"""A launch script's `__main__` block as it drives one kernel: the script that checks each
kernel of a module in turn through one helper (nki-samples' matmul tutorial script:
`check_match(nki_matmul_tiled_)`, then `check_match(nki_matmul_hoist_load_)`, ...) stops at the
first kernel that stops, and every kernel it would check next loses the script's inputs.  When
the block passes the measured kernel to such a call, its calls passing only the module's other
kernels are left out, so the measured kernel gets the script's own inputs and comparison."""

from __future__ import annotations

import ast
import os
from types import CodeType

from .find import kernels, parse


def without_other_kernels(script: str, kernel_file: str, qualname: str) -> CodeType | None:
    """The script compiled with the statements of its `if __name__ == "__main__":` blocks that
    call something with another kernel of `kernel_file` (and not `qualname`) left out, or None
    when no such statement calls anything with `qualname` itself (the script runs as it is)."""
    src, home = parse(script), parse(kernel_file)
    if src is None or home is None or "." in qualname:
        return None
    others = {q for q, _ in kernels(home) if "." not in q} - {qualname}
    found = False

    def keep(stmt: ast.stmt) -> bool:
        nonlocal found
        named = _kernels_passed(stmt)
        if qualname in named:
            found = True
            return True
        return not (named & others)

    tree = src.tree
    for node in tree.body:
        if _is_main_block(node):
            node.body = [s for s in node.body if keep(s)] or [ast.Pass()]
    if not found:
        return None
    return compile(ast.fix_missing_locations(tree), os.path.realpath(script), "exec")


def _is_main_block(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def _kernels_passed(stmt: ast.stmt) -> set[str]:
    """The names a bare call statement passes as arguments (`check(kernel)`), else none."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return set()
    call = stmt.value
    return {a.id for a in (*call.args, *(k.value for k in call.keywords))
            if isinstance(a, ast.Name)}
