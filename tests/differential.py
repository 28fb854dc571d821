"""The check/run differential (issue 8 item 9): for a program whose data never steers it, `check`
reports an error exactly when `run` does, with the same code at the same place.

`run` stops at its first error and `check` goes on to report every independent one, so the
comparison is: every error a `run` of one of the program's kernels raises is among `check`'s
errors, and when every kernel runs clean `check` reports nothing (a static error in a helper
nothing calls excepted: `run` never reaches it).

What `check` cannot know by contract is left out: an error whose statement uses a host value
or a register `register_load` set (a name assigned from `host`, `load`, `allclose` or `equal`,
or from such a name, or the register itself); an error that runtime index values decide
(APK402, APK403, a local_gather index outside its partition APK491, and a repeated runtime
index on a line that indexes at run time); a register
read before it holds a value (APK410: check mode cannot tell it from one register_load set);
an error that the contents' written state decides, which `check` does not track by design:
unwritten data reaching an observable point (APK404, APK412) and the PSUM accumulation state of `nc_matmul`
(APK330-APK332); the engines' state across instructions (reduce_regs APK382, the PRNG lanes
rand_set_state set APK386); and the values an instruction reads (`nc_matmul(is_transpose=True)` needs a
0/1 selection matrix, APK336).
"""

from __future__ import annotations

import io
import random
import re
from typing import Any

from apdsl.errors import ApdslError
from apdsl.semantics.interpreter import Interpreter
from apdsl.semantics.program import Program, UsageError
from apdsl.syntax import ast

DATA_CODES = frozenset({"APK402", "APK403", "APK410",
                        "APK404", "APK412", "APK330", "APK331", "APK332", "APK463",
                        "APK377",  # nc_match_replace8: a value the data do not hold
                        "APK491",  # local_gather: an index outside its partition
                        "APK358",  # exact integer result past dst: the values decide
                        "APK364",  # a shift amount read from a tile
                        "APK382",  # reduce_regs state, which check mode does not track
                        "APK386",  # PRNG lanes rand_set_state set: not tracked either
                        "APK554",  # asc. integer result out of range: the values decide
                        "APK555",  # asc. input outside ln/sqrt/...'s domain: the values
                        "APK527",  # atomic integer add out of range: the values decide
                        "APK528"})  # a Fixpipe parameter read from L1: the values decide
# errors whose message says the data decided them
DATA_MESSAGES = (("APK336", "selection matrix"), ("APK380", "in the tiles' values"))
RUNTIME_INDEX = frozenset({"vector_select", "select", "indirect", "vector_offset",
                           "scalar_offset"})
RUNTIME_CALLS = frozenset({"host", "load", "allclose", "equal"})


def key(e: ApdslError) -> tuple:
    s = e.span
    return (e.code, None, None, None) if s is None else (e.code, s.file, s.line, s.column)


def _names(node: Any) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _statements(body: list[Any]) -> list[Any]:
    out = []
    for s in body:
        out.append(s)
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, (list, tuple)):
                out.extend(_statements(inner))
    return out


def runtime_names(module: ast.Module) -> set[str]:
    """Names that may hold a host value, or a register `register_load` sets, or a view sized by
    one: assigned from an expression that calls `host`, `load`, `allclose` or `equal` or uses
    such a name (a fixpoint; scopes are merged, which only widens the set)."""
    stmts = _statements(module.body)
    tainted = set(RUNTIME_CALLS)
    for node in ast.walk(module):  # a register register_load sets holds a value from memory
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "register_load" and node.args and \
                isinstance(node.args[0], ast.Name):
            tainted.add(node.args[0].id)
    changed = True
    while changed:
        changed = False
        for s in stmts:
            value = getattr(s, "value", None) if isinstance(s, (ast.Assign, ast.AugAssign)) \
                else getattr(s, "iter", None) if isinstance(s, ast.For) else None
            if value is None or not _names(value) & tainted:
                continue
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                new = set(ast.target_names(t)) - tainted
                if new:
                    tainted |= new
                    changed = True
    return tainted


def _line_words(source: str, line: int) -> set[str]:
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return set(re.findall(r"[A-Za-z_]\w*", text.split("#")[0]))


def data_decided(e: ApdslError, program: Program, tainted: set[str]) -> bool:
    if e.code in DATA_CODES or any(e.code == c and m in e.message for c, m in DATA_MESSAGES):
        return True
    s = e.span
    if s is None:
        return False
    if s.file != program.file:  # in an imported module: its host names are not computed
        return e.code in ("APK901", "APK902")
    words = _line_words(program.source, s.line)
    if e.code == "APK405" and words & RUNTIME_INDEX:
        return True
    return bool(words & tainted)


def _enclosing_function(module: ast.Module, line: int) -> str | None:
    for s in module.body:
        if isinstance(s, (ast.FunctionDef, ast.Kernel)) and s.span.line <= line <= \
                s.span.end_line:
            return s.name
    return None


def compare(source: str, file: str = "t.apk", base_dir: str | None = None) -> list[str]:
    """The differences between `check` and `run` of one program (empty: they agree)."""
    try:
        program = Program(source, file, base_dir)
    except ApdslError:
        return []  # a syntax error: both commands stop at the parse, in one place
    checked = [e for e in program.check() if e.severity == "error"]
    found = {key(e) for e in checked}
    kernels = [k.name for k in program.kernels()] or [None]
    tainted = runtime_names(program.module)
    called: set[str] = set()
    original = Interpreter.call_function

    def recording(self: Interpreter, fn: Any, *args: Any, **kwargs: Any) -> Any:
        called.add(fn.name)
        return original(self, fn, *args, **kwargs)

    problems = []
    clean = True
    clean_kernels = set()
    Interpreter.call_function = recording  # type: ignore[method-assign]
    try:
        for k in kernels:
            try:
                Program(source, file, base_dir).run(k, out=io.StringIO())
                clean_kernels.add(k)
            except UsageError:
                continue
            except ApdslError as e:
                clean = False
                if e.span is None:
                    problems.append(f"unlocated: run of {k} raised {e.code} {e.message!r}")
                if not data_decided(e, program, tainted) and key(e) not in found:
                    problems.append(f"lost: run of {k} raised {key(e)} {e.message!r}; check "
                                    f"reported {sorted(found, key=str)}")
    finally:
        Interpreter.call_function = original  # type: ignore[method-assign]
    if clean:
        for e in checked:
            s = e.span
            static_unreached = s is not None and s.file == file and e.code.startswith("APK10") \
                and _enclosing_function(program.module, s.line) not in called | {None}
            if not static_unreached:
                problems.append(f"invented: check reported {key(e)} {e.message!r}; every run "
                                "is clean")
        return problems
    for e in checked:  # an error inside a kernel whose own run was clean
        s = e.span
        inside = _enclosing_function(program.module, s.line) if s is not None and \
            s.file == file else None
        if inside in clean_kernels - {None} and not e.code.startswith("APK10"):
            problems.append(f"invented: check reported {key(e)} {e.message!r} in kernel "
                            f"{inside}, whose run is clean")
    return problems


# -- mutations --------------------------------------------------------------------------------

_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
SUFFIXES = (".T", "[0]", "[1:]", "[:, 0]", ".permute((1, 0))", ".reshape((-1,))",
            ".ap([[1, 2]])", ".slice(0, 0, 1)")
SWAPS = (("sbuf", "hbm"), ("hbm", "sbuf"), ("psum", "sbuf"), ("sbuf", "psum"), ("f32", "bf16"),
         ("bf16", "f32"), ("i32", "f32"), ("f16", "f32"), ("dst=", "src="), ("l1", "ub"),
         ("gm", "l1"), ("l0a", "l0b"), ("ZZ", "ZN"), ("NZ", "ND"), ("slice", "select"))


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def mutants(source: str, seed: str, per_kind: int) -> list[tuple[str, str]]:
    """Small deterministic variants of a program: an int literal changed, a statement replaced
    by `pass`, repeated or swapped with the next, a name replaced by another of the program's
    or followed by an attribute, index or view call, a buffer, dtype, format or keyword
    swapped; `per_kind` sites of each kind."""
    rng = random.Random(seed)
    out = []
    ints = list(_INT.finditer(source))
    for m in rng.sample(ints, min(len(ints), per_kind)):
        v = int(m.group())
        for w in sorted({v + 1, max(v - 1, 0), 0, 2 * v} - {v}):
            out.append((f"int {v}->{w} at {m.start()}",
                        source[:m.start()] + str(w) + source[m.end():]))
    lines = source.splitlines(True)
    simple = [i for i, text in enumerate(lines) if text.strip() and
              not text.lstrip().startswith("#") and not text.rstrip().endswith(":")]
    for i in rng.sample(simple, min(len(simple), per_kind)):
        out.append((f"line {i + 1} -> pass",
                    "".join(lines[:i] + [_indent(lines[i]) + "pass\n"] + lines[i + 1:])))
    for i in rng.sample(simple, min(len(simple), per_kind)):
        out.append((f"line {i + 1} twice", "".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])))
        j = i + 1
        if j < len(lines) and j in simple and _indent(lines[i]) == _indent(lines[j]):
            out.append((f"lines {i + 1} and {j + 1} swapped",
                        "".join(lines[:i] + [lines[j], lines[i]] + lines[j + 1:])))
    words = list(_WORD.finditer(source))
    names = sorted({w.group() for w in words})
    for w in rng.sample(words, min(len(words), per_kind)):
        other = rng.choice(names)
        out.append((f"{w.group()}->{other} at {w.start()}",
                    source[:w.start()] + other + source[w.end():]))
        suffix = rng.choice(SUFFIXES)
        out.append((f"{suffix} after {w.group()} at {w.end()}",
                    source[:w.end()] + suffix + source[w.end():]))
    for a, b in SWAPS:
        sites = [m.start() for m in re.finditer(re.escape(a), source)]
        for p in rng.sample(sites, min(len(sites), max(1, per_kind // 2))):
            out.append((f"{a}->{b} at {p}", source[:p] + b + source[p + len(a):]))
    return out
