"""Thousands of generated and mutated programs never crash apdsl: parsing, checking and running
end in a result or an ApdslError with a code, never another exception."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apdsl.errors import ApdslError
from apdsl.semantics.program import Program, UsageError

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [p.read_text() for p in sorted((ROOT / "examples").glob("*.apk"))]

NAMES = ["t", "u", "v", "A", "x", "offsets", "out", "i"]
DTYPES = ["f32", "bf16", "i32", "u8", "int4", "f16", "float8_e4m3"]
BUFFERS = ["sbuf", "psum", "hbm", "shared_hbm", "gm", "l1"]
METHODS = [
    "slice({d}, {a}, {b})", "slice({d}, {a}, {b}, {s})", "select({d}, {a})", "permute(({d}, 0))",
    "permute((0, {d}))", "expand_dim({d})", "squeeze_dim({d})", "broadcast({d}, {b})",
    "reshape(({a}, {b}))", "reshape_dim({d}, ({a}, -1))", "flatten_dims(0, {d})",
    "view({dt})", "ap([[{a}, {b}], [1, {s}]])", "ap([[{a}, {b}]], offset={s})",
    "rearrange('p (a b) -> p b a', a={s})", "rearrange('a b -> (b a)')", "get_pattern()",
    "is_contiguous()", "vector_select(0, {n})", "select(0, {n})", "[{a}:{b}, ::{s}]",
    "[{a}]", "[..., {d}]",
]
INSTRUCTIONS = [
    "dma_copy({n}, {m})", "tensor_copy({n}, {m})", "memset({n}, {a})",
    "iota({n}, [[1, {a}]], 0, {s})", "nc_matmul({n}, {m}, {n})", "dma_copy(dst={n}, src={m})",
    "mmad({n}, {m}, {n})",
]

small = st.integers(-2, 130)


@st.composite
def statement(draw) -> str:
    kind = draw(st.integers(0, 5))
    n, m = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
    fill = {"n": n, "m": m, "d": draw(st.integers(-1, 3)), "a": draw(small),
            "b": draw(small), "s": draw(st.integers(0, 4)), "dt": draw(st.sampled_from(DTYPES))}
    if kind == 0:
        dims = ", ".join(str(draw(st.integers(1, 130))) for _ in range(draw(st.integers(1, 3))))
        return f"{n}: {fill['dt']}[{dims}] @ {draw(st.sampled_from(BUFFERS))}" + draw(
            st.sampled_from(["", " = 0", " = arange", " = random(1)", " = zeros"]))
    if kind == 1:
        chain = ".".join(draw(st.sampled_from(METHODS)).format(**fill)
                         for _ in range(draw(st.integers(1, 3))))
        return f"{n} = {m}.{chain}".replace(".[", "[")
    if kind == 2:
        return draw(st.sampled_from(INSTRUCTIONS)).format(**fill)
    if kind == 3:
        return f"assert {n}.shape == [{fill['a']}, {fill['b']}]"
    if kind == 4:
        return f"for i in range({fill['s']}):\n    {n} = {m}[{fill['a']}]"
    return f"{n} = ndarray(({fill['a']}, {fill['b']}), {fill['dt']}, " \
           f"{draw(st.sampled_from(BUFFERS))})"


def exercise(source: str) -> None:
    """Parse, check and run; only ApdslError (or the command-line UsageError) may escape."""
    try:
        program = Program(source, "fuzz.apk")
        program.check()
        kernels = program.kernels()
        program.run(kernels[0].name if len(kernels) == 1 else None)
    except (ApdslError, UsageError):
        pass


FAST = settings(max_examples=int(__import__("os").environ.get("APDSL_FUZZ", "250")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@FAST
@given(st.lists(statement(), min_size=1, max_size=8))
def test_generated_programs_never_crash(stmts):
    exercise("\n".join(stmts) + "\n")


@FAST
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_examples_never_crash(seed, data):
    lines = seed.splitlines()
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        how = data.draw(st.integers(0, 4))
        line = lines[i]
        if how == 0:  # change a number
            lines[i] = re.sub(r"\d+", lambda m: str(data.draw(small)), line, count=1)
        elif how == 1:  # drop a line
            del lines[i]
        elif how == 2:  # swap two names
            lines[i] = line.replace(data.draw(st.sampled_from(NAMES)),
                                    data.draw(st.sampled_from(NAMES)))
        elif how == 3:  # insert a generated statement at the same indentation
            indent = line[:len(line) - len(line.lstrip())]
            stmt = data.draw(statement()).replace("\n", "\n" + indent)
            lines.insert(i, indent + stmt)
        else:  # cut a line short
            lines[i] = line[:data.draw(st.integers(0, len(line)))]
        if not lines:
            lines = ["x = 1"]
    exercise("\n".join(lines) + "\n")
