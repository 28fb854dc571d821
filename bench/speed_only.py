"""Count apdsl's speed-only lines (issue 23: "speed-only code at least 1,000 lines smaller").

    python bench/speed_only.py [--root DIR]

What counts.  A line is speed-only when the code it belongs to exists only to make a call
faster: with the `plans` option off (`apdsl.options(plans=False)`, `APDSL_PLANS=0`) it is not
reached, or it does nothing the general path would not do itself, and the general path gives the
same values, traces and diagnostics without it.  Counted are physical lines, as `wc -l` counts
them (docstrings, comments and blank lines inside the counted code included), of

- whole modules that are only that (`WHOLE`);
- in other modules, named top-level definitions (functions, classes, assignments; `Class.name`
  for a method), decorators included;
- statements inside a named function whose first line contains a given text
  (`"function: text"`): a fast path's lookup, guard or call in the middle of general code.

A line is counted once however many entries cover it.  An entry that no longer matches is
reported (so the list cannot silently go stale) and makes the script exit 1.  Not counted:
the general code a fast path calls, tests, the one-line keyword or decorator that names a
fast path in general code (`@viewcache.derived`), and the operator closures of
`semantics/arith.py` (`FAST_BINOPS`): they run with plans off too and are the only code with
`%`'s width check and the located APK430 of `+`, so they are the operators' meaning, not a
second copy of it (switched off, their rows do not move: interpreter loop 7.14x / 7.15x,
`.apk` tile loop 8.26x / 7.98x, GEMM 1.86x / 1.90x, 3 December).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Modules that exist only for speed.
WHOLE = (
    "apdsl/runtime/plans/__init__.py",
    "apdsl/runtime/plans/table.py",  # the plan table, view keys, the planned-call executor
    "apdsl/runtime/plans/dmaplan.py",  # NKI dma_copy plans
    "apdsl/runtime/plans/ascend_plans.py",  # Ascend copy and mmad plans
    "apdsl/runtime/nki/tile_plans.py",  # NKI compute-instruction plans
    "apdsl/semantics/callsites.py",  # the interpreter's generated code
    "apdsl/tensor/view/cache.py",  # the children a view keeps
)

# Parts of modules that are otherwise general code: a top-level name, or "function: text".
PARTS: dict[str, tuple[str, ...]] = {
    "apdsl/runtime/plans/matmul_run.py": (
        "_matrix", "_in_place", "execute: if adding and _in_place(d)"),
    "apdsl/runtime/core/blas.py": ("_ROW_MAJOR", "_sgemm", "MAX_K", "add_product"),
    "apdsl/runtime/nki/matmul.py": (
        "_Plan", "_plan_key", "_plannable", "nc_matmul: key = _plan_key(",
        "nc_matmul: plan = None if key is None", "nc_matmul: if plan is not None:",
        "nc_matmul: planned = key is not None", "nc_matmul: if planned:"),
    "apdsl/runtime/nki/elementwise.py": (
        "tensor_tensor: key = tile_plans.key(", "tensor_tensor: plan = tile_plans.find(",
        "tensor_tensor: p = None if plan is None", "tensor_tensor: if p is not None:",
        "tensor_tensor: if key is not None:"),
    "apdsl/runtime/copies.py": (
        "dma_copy: planned = m.options.plans", "dma_copy: if planned and ascend_plans.run_kept",
        "dma_copy: if defaults and planned and",
        "dma_copy: if defaults and planned:"),
    "apdsl/runtime/ascend/dma.py": (
        "_aligned", "_regions", "region_cached", "_whole",
        "dma_copy: plan = plans.lookup(", "dma_copy: if plan is not None:",
        "dma_copy: plan = plans.by_value(", "dma_copy: made = ", "dma_copy: if made:",
        "dma_copy: plans.keep(", "COPY_PLANS"),
    "apdsl/runtime/ascend/mmad.py": (
        "PLANS", "_fast_parts", "run_fast", "mmad: kept = ", "mmad: got = ",
        "mmad: if got is not None"),
    "apdsl/runtime/core/resolve.py": (
        "_keep", "_row_plans", "_ROW_PLANS_PER_STORAGE", "_rows_plan", "_new_rows_plan",
        "_bind_rows", "_resolve: if plan is not None and current().options.plans"),
    "apdsl/runtime/core/access.py": ("RowsPlan", "Rows"),
    "apdsl/runtime/core/operands.py": (
        "resolve_operands: if not m.check and m.options.plans:",),
    "apdsl/runtime/sync/sync_facts.py": (
        "_facts", "PLANS", "_PLAN_LIMIT", "facts_of: if planned:",
        "plan_of: if all(t.dynamic is None for t in views) and"),
    "apdsl/semantics/builtins.py": ("direct_instructions",),
    "apdsl/semantics/blocks.py": ("BlockCompiler.compile_block: inner = (straight_block(",),
    "apdsl/semantics/calls.py": ("CallCompiler._expr_Call: site = None if spread",),
    "apdsl/semantics/assignments.py": (
        "AssignmentCompiler._stmt_Assign: if not self.dry and self.plans:",),
    "apdsl/semantics/interpreter.py": ("Interpreter.__init__: self.direct_instructions",),
}


def _defs(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level definitions and assignments by name, methods as `Class.name`."""
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out[f"{node.name}.{sub.name}"] = sub
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for name in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(name, ast.Name):
                        out[name.id] = node
    return out


def _span(node: ast.AST) -> range:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return range(first, node.end_lineno + 1)  # type: ignore[attr-defined]


def _statements(fn: ast.AST, text: str, lines: list[str]) -> list[ast.stmt]:
    """The outermost statements inside `fn` whose first line contains `text`."""
    found: list[ast.stmt] = []

    def walk(body: list[ast.stmt]) -> None:
        for st in body:
            if text in lines[st.lineno - 1]:
                found.append(st)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                walk(getattr(st, field, []))

    walk(fn.body)  # type: ignore[attr-defined]
    return found


def _matched(def_name: str, defs: dict[str, ast.AST]) -> ast.AST | None:
    # a method may be named without its class when the name is unique
    if def_name in defs:
        return defs[def_name]
    hits = [n for k, n in defs.items() if k.endswith("." + def_name)]
    return hits[0] if len(hits) == 1 else None


def count(root: Path) -> tuple[dict[str, int], list[str]]:
    """(speed-only lines per file, entries that matched nothing)."""
    per: dict[str, int] = {}
    stale: list[str] = []
    for path in WHOLE:
        f = root / path
        if f.exists():
            per[path] = len(f.read_text().splitlines())
        else:
            stale.append(path)
    for path, entries in PARTS.items():
        f = root / path
        if not f.exists():
            stale.extend(f"{path}: {e}" for e in entries)
            continue
        source = f.read_text()
        lines = source.splitlines()
        defs = _defs(ast.parse(source))
        counted: set[int] = set()
        for entry in entries:
            name, _, text = entry.partition(": ")
            node = _matched(name, defs)
            if node is None:
                stale.append(f"{path}: {entry}")
                continue
            if not text:
                counted.update(_span(node))
                continue
            found = _statements(node, text, lines)
            if not found:
                stale.append(f"{path}: {entry}")
            for st in found:
                counted.update(_span(st))
        per[path] = len(counted)
    return per, stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the apdsl checkout to count")
    args = ap.parse_args(argv)
    per, stale = count(args.root)
    width = max(map(len, per), default=0)
    for path, n in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{path:<{width}}  {n:5d}")
    print(f"{'total':<{width}}  {sum(per.values()):5d}")
    for entry in stale:
        print(f"stale entry (matches nothing): {entry}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
