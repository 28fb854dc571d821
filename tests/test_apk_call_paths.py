"""The interpreter's fast paths of issue 16 keep behaviour: a builtin instruction called straight
from its call site (no wrapper, no `Interpreter.instruction`), positional and keyword arguments
evaluated without comprehensions, constant slices and tuples built once, builtin names found
without exceptions, and the allocator's first-fit placement and budget.  Each is checked
against an independent oracle: the general path (the same program with every fast path turned
off, `apdsl.options(plans=False)`), the Python API, NumPy, or a reference model of first-fit placement.  No timing here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apdsl
from apdsl.errors import ApdslError
from apdsl.semantics.program import Program
from apdsl.tensor.machine import Accounting

pytestmark = pytest.mark.plans  # (the fast paths on, whatever APDSL_PLANS says)


def _outcome(source: str, kernel: str | None = "k", inputs: dict | None = None,
             *, direct: bool = True, trace: bool = False):
    """What running `source` gives: the result's logical contents, or the error's code,
    message and location."""
    try:
        # plans off: the general path, every instruction through its builtin wrapper
        with apdsl.options(plans=direct):
            result = Program(source, "t.apk").run(kernel, inputs, trace=trace)
    except ApdslError as e:
        s = e.span
        return ("error", e.code, e.message, None if s is None else
                (s.line, s.column, s.end_line, s.end_column),
                tuple((lab.span.line, lab.span.column, lab.message) for lab in e.labels))
    value = result.value
    if value is None:
        return None
    return ("value", value.numpy().tobytes(), value.shape)


def _same_both_ways(source: str, **kw):
    fast = _outcome(source, direct=True, **kw)
    general = _outcome(source, direct=False, **kw)
    assert fast == general
    return fast


A = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)

COPY = """
kernel k(A: f32[8, 16] @ hbm) -> f32[8, 16] @ hbm:
    B = ndarray((8, 16), f32, hbm)
    t = ndarray((8, 16), f32, sbuf)
    {call}
    dma_copy(B, t)
    return B
"""

# the arguments dma_copy takes after dst and src, in order, and values for each: valid ones
# and ones its checks refuse (a wrong hint name, a priority off trn3, a non-string name)
_HINTS = {
    "priority": ["None", "1", "'high'"],
    "oob_mode": ["'error'", "'skip'", "'bogus'"],
    "dge_mode": ["'unknown'", "'swdge'", "'hwdge'", "'sideways'"],
    "engine": ["'unknown'", "'sync'", "'vector'"],
    "name": ["None", "'load'", "3"],
}


@st.composite
def _dma_calls(draw):
    """A dma_copy call written some way: dst and src positional or by keyword, some hints
    positional (in order), some by keyword, perhaps an unknown keyword, a repeated one, a
    missing operand or one positional too many."""
    hints = list(_HINTS)
    n_pos = draw(st.integers(0, 2 + len(hints)))
    ops = ["t", "A"]
    positional: list[str] = []
    keywords: list[str] = []
    for i, (param, value) in enumerate(zip(["dst", "src"], ops)):
        (positional if i < n_pos else keywords).append(value if i < n_pos else
                                                       f"{param}={value}")
    chosen = {}
    for i, h in enumerate(hints):
        if 2 + i < n_pos:
            chosen[h] = draw(st.sampled_from(_HINTS[h]))
            positional.append(chosen[h])
        elif draw(st.booleans()):
            chosen[h] = draw(st.sampled_from(_HINTS[h]))
            keywords.append(f"{h}={chosen[h]}")
    keywords = draw(st.permutations(keywords))
    mistake = draw(st.sampled_from(["none"] * 4 + ["unknown", "twice", "missing", "extra"]))
    if mistake == "unknown":
        keywords.append("colour='red'")
    elif mistake == "twice" and keywords:
        keywords.append(keywords[0])
    elif mistake == "missing" and len(positional) >= 1:
        positional.pop(0) if n_pos == 1 else None
    elif mistake == "extra":
        positional = positional + ["None"] * (2 + len(hints) + 1 - len(positional))
        keywords = []
    return "dma_copy(" + ", ".join(positional + list(keywords)) + ")"


@settings(max_examples=120, deadline=None)
@given(call=_dma_calls(), trace=st.booleans())
def test_instruction_calls_bind_and_fail_as_the_general_path(call, trace):
    # (a call Python itself refuses to parse, a keyword twice, is a syntax error both ways)
    got = _same_both_ways(COPY.format(call=call), inputs={"A": A}, trace=trace)
    if got is not None and got[0] == "value":
        assert np.array_equal(np.frombuffer(got[1], np.float32).reshape(8, 16), A)


def test_binding_matches_the_python_api():
    # the same argument forms through apdsl.dma_copy: the same outcome code
    forms = ["t, A", "dst=t, src=A", "t, src=A", "t, A, None, 'error'", "t, A, name='x'",
             "t, A, oob_mode='bogus'", "t, A, colour=1", "t", "src=A, dst=t, engine='vector'",
             "t, A, None, 'error', 'unknown', 'unknown', None, 1"]
    for form in forms:
        got = _outcome(COPY.format(call=f"dma_copy({form})"), inputs={"A": A})
        ns = {"t": apdsl.ndarray((8, 16), "float32", "sbuf"),
              "A": apdsl.from_numpy(A, "hbm"), "dma_copy": apdsl.dma_copy}
        try:
            eval(f"dma_copy({form})", ns)  # noqa: S307 - the test's own fixed forms
            want = "ok"
        except ApdslError as e:
            want = e.code
        except TypeError:
            want = "APK102"  # the interpreter's code for Python's binding errors
        assert (got[1] if got[0] == "error" else "ok") == want, form


def test_errors_keep_their_codes_and_locations():
    cases = {
        # the keyword the callee lacks, pointed at its name
        "dma_copy(t, A, colour=1)": ("APK102", (5, 20)),
        # a shape mismatch at the call
        "dma_copy(t, A[:, 0:8])": ("APK306", (5, 5)),
        # a slice past the end, at the subscript
        "dma_copy(t, A[:, 0:17])": (None, None),
        "dma_copy(t, A, oob_mode='bogus')": (None, None),
    }
    for call, (code, where) in cases.items():
        got = _same_both_ways(COPY.format(call=call), inputs={"A": A})
        assert got[0] == "error", call
        if code is not None:
            assert got[1] == code and got[3][:2] == where, (call, got)


FREED = """
kernel k(A: f32[8, 16] @ hbm) -> f32[8, 16] @ hbm:
    B = ndarray((8, 16), f32, hbm)
    for i in range(2):
        t: f32[8, 16] @ sbuf
        dma_copy(t, A)
        u = t[:, 0:16]
    dma_copy(B, u)
    return B
"""


def test_a_freed_view_is_still_apk408_at_its_call():
    got = _same_both_ways(FREED, inputs={"A": A})
    assert got[1] == "APK408" and got[3][:2] == (8, 5)


UNWRITTEN = """
kernel k(A: f32[8, 16] @ hbm) -> f32[8, 16] @ hbm:
    B = ndarray((8, 16), f32, hbm)
    for i in range(3):
        t = ndarray((8, 16), f32, sbuf)
        if i < 2:
            dma_copy(t, A)
        dma_copy(B, t)
    return B
"""


def test_each_fresh_tile_is_init_checked():
    # the third tile is never written: the init check still fires for it
    got = _same_both_ways(UNWRITTEN, inputs={"A": A})
    assert got[0] == "error" and got[3][0] == 8


_bound = st.one_of(st.none(), st.integers(-20, 20))


@settings(max_examples=150, deadline=None)
@given(rows=st.tuples(_bound, _bound, st.one_of(st.none(), st.integers(-2, 4))),
       cols=st.tuples(_bound, _bound, st.one_of(st.none(), st.integers(-2, 4))),
       computed=st.booleans())
def test_slices_are_numpy_slices(rows, cols, computed):
    """Constant slices are built once, computed ones part by part: the view is NumPy's (or the
    same error both ways)."""
    def text(b: tuple) -> str:
        parts = ["" if v is None else (f"(n + {v})" if computed else str(v)) for v in b]
        return ":".join(parts[:2]) + ("" if b[2] is None else f":{parts[2]}")
    src = f"""
kernel k(A: f32[8, 16] @ hbm) -> f32[8, 16] @ hbm:
    n = 0
    v = A[{text(rows)}, {text(cols)}]
    B = ndarray(v.shape, f32, hbm)
    dma_copy(B, v)
    return B
"""
    got = _same_both_ways(src, inputs={"A": A})
    if got[0] == "value":
        want = A[slice(*rows), slice(*cols)]
        assert got[2] == want.shape and got[1] == want.tobytes()


def test_builtin_names_follow_local_module_builtin_order():
    src = """
ndarray_calls = 0
def dma_copy(dst, src):
    return "module's"
kernel k() -> i32[1, 1] @ hbm:
    first = dma_copy(1, 2)
    cdiv = lambda a, b: "local"
    second = cdiv(1, 2)
    assert first == "module's" and second == "local"
    out = ndarray((1, 1), i32, hbm)
    memset_ = memset
    iota(out, [[1, 1]], offset=int(len(range(7))))
    return out
"""
    with pytest.raises(ApdslError):  # iota writes SBUF only: an error, the same one both ways
        Program(src, "t.apk").run("k")
    _same_both_ways(src)


def test_constant_tuples_are_the_literals_values():
    src = """
kernel k() -> i32[1, 3] @ hbm:
    xs = []
    for i in range(3):
        xs.append((1, 2))
    s = (128, 64)
    t = ndarray(s, f32, sbuf)
    assert t.shape == (128, 64) and xs == [(1, 2)] * 3
    w = ndarray((1, 3), i32, sbuf)
    memset(w, len(xs) + sum(xs[2]))
    out = ndarray((1, 3), i32, hbm)
    dma_copy(out, w)
    return out
"""
    got = _same_both_ways(src)
    assert got[0] == "value" and got[1] == np.full((1, 3), 6, np.int32).tobytes()


# -- the allocator ------------------------------------------------------------------------------

def _first_fit(live: list[tuple[int, int, int]], size: int, capacity: int | None,
               bank: int | None) -> int:
    """Reference first fit: the lowest address where `size` bytes overlap no live block (and,
    for a tile of at most a bank, stay inside one bank), or -1 past capacity."""
    taken = sorted((start, start + n) for _, start, n in live)
    addr = 0
    while True:
        if bank and size <= bank and addr // bank != (addr + size - 1) // bank:
            addr = -(-addr // bank) * bank
        clash = [end for start, end in taken if start < addr + size and addr < end]
        if not clash:
            break
        addr = max(clash)
    if capacity is not None and addr + size > capacity:
        return -1
    return addr


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(1, 3000)), min_size=1, max_size=30),
       psum=st.booleans())
def test_placement_is_first_fit(ops, psum):
    acc = Accounting()
    model: list[tuple[int, int, int]] = []
    capacity, bank = (16384, 2048) if psum else (8192, None)
    for sid, (alloc, size) in enumerate(ops):
        if not alloc and model:
            victim = model[size % len(model)]
            acc.release(victim[0], "b")
            model.remove(victim)
            continue
        want = _first_fit(model, size, capacity, bank)
        got = acc.place(sid, "b", size, capacity, bank)
        assert got == want
        if got >= 0:
            model.append((sid, got, size))
        assert acc.used("b") == sum(n for _, _, n in model)


def test_tiles_declared_in_a_loop_reuse_their_space_and_refuse_past_capacity(machine):
    a = apdsl.ndarray((128, 1024), "float32", "sbuf")
    b = apdsl.ndarray((128, 1024), "float32", "sbuf")
    assert (a.storage.address, b.storage.address) == (0, 4096)
    a.storage.free()
    c = apdsl.ndarray((128, 512), "float32", "sbuf")
    assert c.storage.address == 0  # into the gap a left
    # the whole partition: it fits only if b and c are dead (never accessed again), and it
    # takes its space at its first access
    apdsl.memset(b, 1.0)
    whole = apdsl.ndarray((128, 224 * 256), "float32", "sbuf")
    apdsl.memset(whole, 0.0)  # c, never used, is not live; b, used before, may be
    with pytest.raises(ApdslError) as e:
        b.numpy()  # b is accessed after whole's first access: the two are live together
    assert e.value.code == "APK302" and "4096 already in use" in e.value.message
    assert e.value.facts["accessed"] == b.storage.name
    del b, c, whole


def test_the_memory_budget_still_refuses_at_the_allocation():
    with apdsl.options(max_memory=1 << 20):
        apdsl.ndarray((128, 512), "float32", "hbm")  # 256 KiB and its bookkeeping fit
        with pytest.raises(ApdslError) as e:
            apdsl.ndarray((1024, 1024), "float32", "hbm")
        assert e.value.code == "APK430"
    src = """
kernel k() -> f32[4, 4] @ hbm:
    for i in range(3):
        t = ndarray((1024, 1024), f32, hbm)
    return t
"""
    program = Program(src, "t.apk")
    with apdsl.options(max_memory=6 << 20):
        with pytest.raises(ApdslError) as e:
            program.run("k")
    assert e.value.code == "APK430" and e.value.span.line == 4


# -- integer arithmetic on names ------------------------------------------------------------------

def _run_outcome(source: str):
    try:
        Program(source, "t.apk").run(None)
    except ApdslError as e:
        return (e.code, e.message)
    return "ok"


_operand = st.one_of(
    st.integers(-5, 5), st.integers(-(2 ** 70), 2 ** 70),
    st.sampled_from([2 ** 1023, -(2 ** 1023), 2 ** 1024 - 1, 0]),
    st.floats(-4, 4, allow_nan=False), st.booleans(), st.sampled_from(["'ab'", "None"]))


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["+", "-", "*", "%", "//"]), a=_operand, b=_operand,
       const=st.booleans(), where=st.sampled_from(["top", "def", "loop"]))
def test_name_arithmetic_is_the_general_arithmetic(op, a, b, const, where):
    """`a OP b` on names (the inline int path, stored or as an expression) against the same
    operation on values the general closure computes (read out of tuples)."""
    right = repr(b) if const and not isinstance(b, str) else "b"
    body = [f"a = {a!r}" if not isinstance(a, str) else f"a = {a}",
            f"b = {b!r}" if not isinstance(b, str) else f"b = {b}",
            "xs = (a, b)"]
    fast = body + [f"r = a {op} {right}", f"s = str(a {op} {right})"]
    slow = body + [f"r = xs[0] {op} xs[1]", "s = str(r)"]

    def program(lines: list[str], check: str) -> str:
        lines = lines + [check]
        if where == "top":
            return "\n".join(lines) + "\n"
        if where == "def":
            return "def f():\n" + "".join(f"    {x}\n" for x in lines) + "f()\n"
        return "for i in range(2):\n" + "".join(f"    {x}\n" for x in lines)

    want = _run_outcome(program(slow, "print_ = 0"))
    if want != "ok":
        assert _run_outcome(program(fast, "print_ = 0")) == want
        return
    # both succeed: the same value and type
    value = f"xs[0] {op} xs[1]"
    kinds = " and ".join(f"isinstance(r, {k}) == isinstance({value}, {k})"
                         for k in ("bool", "int", "float"))
    check = f"assert r == {value} and s == str({value}) and {kinds}"
    assert _run_outcome(program(fast, check)) == "ok"


# -- allocation in a loop ---------------------------------------------------------------------------

def test_repeated_allocations_validate_as_the_first():
    """The arguments an allocation was validated with are kept; any other value (a bool size,
    a list shape, another spelling of the buffer) is validated afresh, and every allocation
    is a new storage with its own name and capacity."""
    src = """
kernel k() -> f32[1, 1] @ hbm:
    names = []
    for i in range(3):
        t = ndarray((1, 64), f32, sbuf)
        u = ndarray([1, 64], "float32", "SBUF")
        names.append(t.name)
        assert t.shape == u.shape and t.buffer == u.buffer == "sbuf"
    assert len(names) == 3
    v = ndarray(({size}, 64), f32, sbuf)
    out = ndarray((1, 1), f32, hbm)
    return out
"""
    with pytest.raises(ApdslError) as e:
        Program(src.format(size="True"), "t.apk").run("k")
    assert e.value.code == "APK111" and e.value.span.line == 10
    with pytest.raises(ApdslError) as e:
        Program(src.format(size="129"), "t.apk").run("k")
    assert e.value.code == "APK301"
    # the capacity of the target in force, every time: 192 KiB a partition on trn1
    big = """
kernel k() -> f32[1, 1] @ hbm:
    for i in range(2):
        if i == 1:
            set_target("trn1")
        t = ndarray((1, 49153), f32, sbuf)
    out = ndarray((1, 1), f32, hbm)
    return out
"""
    with pytest.raises(ApdslError) as e:
        Program(big, "t.apk").run("k")
    assert e.value.code == "APK302" and e.value.span.line == 6


def test_names_read_inline_fall_back_to_module_and_unknown_names():
    """A call's first argument and a subscripted value are read from the locals inline; a
    module name is still found, and an unknown one is still APK101 at the name."""
    src = """
G = (1, 2, 3)
kernel k(A: f32[8, 16] @ hbm) -> f32[8, 16] @ hbm:
    t = ndarray((8, 16), f32, sbuf)
    dma_copy(t, A[0:G[2] + 5, :])
    assert len(G) == 3 and G[1] == 2
    B = ndarray((8, 16), f32, hbm)
    dma_copy(B, t)
    return B
"""
    got = _same_both_ways(src, inputs={"A": A})
    assert got[0] == "value" and got[1] == A.tobytes()
    got = _same_both_ways(src.replace("dma_copy(B, t)", "dma_copy(Bx, t)"), inputs={"A": A})
    assert got[1] == "APK101" and got[3][:2] == (8, 14)
    got = _same_both_ways(src.replace("G[1] == 2", "Gx[1] == 2"), inputs={"A": A})
    assert got[1] == "APK101" and got[3][:2] == (6, 28)
