"""The fuzzing harness: generated and mutated programs, bad `.npy` files and command lines.

Run it as a script (`python tests/fuzzer.py -n 30000 --seed 7`) or through `tests/test_fuzz.py`
(a fixed-seed sample in CI; `APDSL_FUZZ=N` runs N programs). A *finding* is any of:

- a Python exception other than `ApdslError` (or the command line's `UsageError`) escaping
  parse, check, run or the rendering of a diagnostic;
- an `ApdslError` whose code is not in the catalogue (an uncoded diagnostic);
- a hang: a program that does not finish within the per-program time limit (the step and
  memory budgets of SPEC section 15 must end every program well before it);
- a command line that exits outside 0/1/2, prints a traceback or an "internal error".

Programs run in a worker subprocess with an address-space cap, so a runaway allocation or a hang
kills only the worker, which is restarted. Everything is derived from one `random.Random(seed)`,
so a finding reproduces from its seed and index; each finding is also written to `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# -- the corpus --------------------------------------------------------------------------------


def seed_programs() -> list[str]:
    """Every example, stdlib module and catalogue example: correct and deliberately wrong code."""
    texts = [p.read_text(encoding="utf-8") for folder in ("examples", "stdlib")
             for p in sorted((ROOT / folder).rglob("*.apk"))]
    from apdsl.catalogue import all_entries
    texts += [e.example + "\n" for e in all_entries().values() if e.example.strip()]
    return texts


def grammar_tokens() -> list[str]:
    """The grammar's literal terminals ("if", "->", "**", ...): material for token splicing."""
    text = (ROOT / "grammar" / "apk.lark").read_text(encoding="utf-8")
    return sorted(set(re.findall(r'"([^"\\\s]{1,8})"', text)))


NAMES = ["t", "u", "v", "A", "B", "x", "offsets", "out", "i", "r", "tile", "f"]
DTYPES = ["f32", "bf16", "i32", "u8", "int4", "f16", "float8_e4m3", "int64", "uint16", "tfloat32"]
BUFFERS = ["sbuf", "psum", "hbm", "shared_hbm", "gm", "l1", "l0a", "l0b", "l0c", "ub"]
FORMATS = ["", " as NZ", " as ZZ", " as ZN", " as ND_ALIGN", " as COLUMN_MAJOR"]
METHODS = [
    "slice({d}, {a}, {b})", "slice({d}, {a}, {b}, {s})", "select({d}, {a})", "permute(({d}, 0))",
    "permute((0, {d}))", "expand_dim({d})", "squeeze_dim({d})", "broadcast({d}, {b})",
    "reshape(({a}, {b}))", "reshape_dim({d}, ({a}, -1))", "flatten_dims(0, {d})",
    "view({dt})", "ap([[{a}, {b}], [1, {s}]])", "ap([[{a}, {b}]], offset={s})",
    "ap([[{a}, {b}]], offset={n})", "ap([[{a}, {b}]], dtype={dt})",
    "rearrange('p (a b) -> p b a', a={s})", "rearrange('a b -> (b a)')",
    "rearrange('a (b c) -> (c a) b', c={s})", "get_pattern()", "is_contiguous()",
    "vector_select(0, {n})", "select(0, {n})", "[{a}:{b}, ::{s}]", "[{a}]", "[..., {d}]",
    "[{a}:{b}]", "[:, {a}]", "T", "numpy()",
]
INSTRUCTIONS = [
    "dma_copy({n}, {m})", "tensor_copy({n}, {m})", "memset({n}, {a})", "memset({n}, {big})",
    "iota({n}, [[1, {a}]], 0, {s})", "nc_matmul({n}, {m}, {n})", "dma_copy(dst={n}, src={m})",
    "mmad({n}, {m}, {n})", "mmad({n}, {m}, {n}, accumulate=True)",
    "nc_matmul({n}, {m}, {m}, accumulate=True)", "register_load({n}, {m})",
    "{n} = register_alloc({a})", "save({n}, 'out.npy')", "{n} = load('{npy}')",
    "print({n})", "{n} = host({m})", "assert allclose(host({n}), host({m}))",
]
HOSTILE = [
    "for i in range(10**12):\n    x = i", "x = 10**10**10", "x = 'a' * 10**10",
    "x = [0] * 10**9", "def f(n):\n    return f(n + 1)\nf(0)", "x = " + "(" * 300 + "1" + ")" * 300,
    "x = " + "+".join(["1"] * 800), "x = 1" + "0" * 5000, "x: i32[1] @ sbuf = 2**63",
    "t: f32[100000, 100000] @ hbm = zeros", "x = float(3)", "x = int('7')",
    "t: f32[4, 4] @ hbm\nu = t.rearrange('" + " ".join(["1"] * 3000) + " a b -> a b')",
    "s = '" + "y" * 200_000 + "'", "while True:\n    x = 1", "x = 2 ** 5000",
    "\n".join(" " * i + "if True:" for i in range(250)) + "\n" + " " * 250 + "x = 1",
    "t: f32[128, 64] @ sbuf\nu = t" + ".slice(1, 0, 64)" * 400,
    "x = [[[[[[[[[[1]]]]]]]]]]" * 3, "import os", "x = ().__class__", "x = save",
    "save(x, '/etc/passwd.npy')", "save(x, '../up.npy')", "x = load('/etc/passwd')",
    "x = load('../x.npy')", "set_target('trn1')", "set_target('nope')",
]

# The Python layer's own hazards (issue 22): a dict or set changed while a loop walks it,
# format widths and precisions past the size limit (every formatting form), and loops whose
# body fails on every iteration, which `check` must report once and leave.
PYTHON = [
    "d = {'a': 1, 'b': 2}\nfor k in d:\n    d[k + 'x'] = @A@",
    "s = {1, 2, 3}\nfor v in s:\n    s.add(v + @A@)",
    "d = {'a': 1, 'b': 2}\nfor k, v in d.items():\n    del d[k]",
    "s = {1, 2}\nfor v in s:\n    s.discard(v)",
    "d = {'a': 1}\nfor k in d.keys():\n    d.update({k * 2: 0})",
    "d = {'a': 1}\nfor v in d.values():\n    d.pop('a')\n    d['b'] = v",
    "d = {'a': 1}\nxs = [d.setdefault(k + 'y', 0) for k in d]",
    "d = {1: 2}\nn = sum(d.setdefault(k + 1, 0) for k in d)",
    "s = {1}\nys = {v for v in s if s.add(v + 1) is None}",
    "d = {'a': 1}\nfor k in list(d):\n    d[k + 'x'] = 1",
    "x = '{:>@W@}'.format(@A@)", "x = '{:>{}}'.format(1, @W@)",
    "x = '{:.{}f}'.format(1.5, @W@)", "x = '{0:^@W@}{0:@W@}'.format('a')",
    "x = '{:>@W@}{:>@W@}'.format(1, 2)", "x = f'{@A@:>@W@}'", "x = f'{@A@:.@W@f}'",
    "w = @W@\nx = f'{1:>{w}}'", "x = '%*d' % (@W@, 1)", "x = '%@W@d' % @A@",
    "x = '%.@W@f' % 1.5", "x = '%(a)@W@s' % {'a': 1}", "x = str(@A@).center(@W@)",
    "x = str(@A@).zfill(@W@)", "x = 'a'.ljust(@W@, '-')", "x = 'a'.rjust(@W@)",
    "c = 0\nwhile True:\n    c += 1\n    v = @BAD@",
    "for i in range(@W@):\n    v = @BAD@",
    "for i in range(3):\n    for j in range(@A@):\n        v = [0, 1][j]",
    "xs = [[0] * @W@ for _ in range(@A@)]",
]
FORMAT_WIDTHS = ["0", "7", "64", "4097", "99999999", "100000001", "1000000000", "2147483648",
                 "-5"]
FAILING = ["nosuchname", "f'{\"a\":.3f}'", "len(1, 2)", "c._x", "'a' + c", "[1, 2][c + 5]",
           "'{0.real}'.format(c)", "1 // 0", "{'a': 1}['b']", "int('x')"]


def python_hazard(rng: random.Random) -> str:
    return (rng.choice(PYTHON).replace("@W@", rng.choice(FORMAT_WIDTHS)).replace("@A@", str(_small(rng)))
            .replace("@BAD@", rng.choice(FAILING)))


def statement(rng: random.Random, npy_names: list[str]) -> str:
    """One generated statement over a small vocabulary of names, dtypes, buffers and methods."""
    n, m = rng.choice(NAMES), rng.choice(NAMES)
    fill = {"n": n, "m": m, "d": rng.randint(-1, 3), "a": _small(rng), "b": _small(rng),
            "s": rng.randint(0, 4), "dt": rng.choice(DTYPES),
            "big": rng.choice(["2**64 - 1", "2**63", "-2**80", "1e40", "float('nan')", "-1"]),
            "npy": rng.choice(npy_names) if npy_names else "x.npy"}
    kind = rng.randrange(9)
    if kind == 0:
        dims = ", ".join(str(rng.randint(1, 130)) for _ in range(rng.randint(1, 3)))
        return (f"{n}: {fill['dt']}[{dims}] @ {rng.choice(BUFFERS)}{rng.choice(FORMATS)}"
                + rng.choice(["", " = 0", " = arange", " = random(1)", " = zeros", " = ones",
                              f" = load('{fill['npy']}')", f" = {fill['big']}"]))
    if kind == 1:
        chain = ".".join(rng.choice(METHODS).format(**fill) for _ in range(rng.randint(1, 3)))
        return f"{n} = {m}.{chain}".replace(".[", "[")
    if kind == 2:
        return rng.choice(INSTRUCTIONS).format(**fill)
    if kind == 3:
        return f"assert {n}.shape == [{fill['a']}, {fill['b']}]"
    if kind == 4:
        return f"for i in range({fill['s']}):\n    {n} = {m}[{fill['a']}]"
    if kind == 5:
        return rng.choice(HOSTILE)
    if kind == 8:
        return python_hazard(rng)
    if kind == 6:
        return f"kernel k({n}: {fill['dt']}[{fill['a']}, {fill['b']}] @ {rng.choice(BUFFERS)}):" \
               f"\n    return {n}"
    return f"{n} = ndarray(({fill['a']}, {fill['b']}), {fill['dt']}, {rng.choice(BUFFERS)})"


def _small(rng: random.Random) -> int:
    return rng.choice([rng.randint(-2, 130), rng.choice([0, 1, 16, 32, 64, 128, 129, 512, 2**31])])


def mutate(rng: random.Random, text: str, corpus: list[str], tokens: list[str],
           npy_names: list[str]) -> str:
    """Apply one to four line- or token-level mutations to a seed program."""
    lines = text.splitlines() or ["x = 1"]
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4])):
        i = rng.randrange(len(lines))
        line = lines[i]
        how = rng.randrange(10)
        if how == 0:  # change a number
            lines[i] = re.sub(r"\d+", lambda _m: str(_small(rng)), line, count=1)
        elif how == 1:  # drop a line
            del lines[i]
        elif how == 2:  # swap two names
            lines[i] = line.replace(rng.choice(NAMES), rng.choice(NAMES))
        elif how == 3:  # insert a generated statement at the same indentation
            indent = line[:len(line) - len(line.lstrip())]
            lines.insert(i, indent + statement(rng, npy_names).replace("\n", "\n" + indent))
        elif how == 4:  # cut a line short
            lines[i] = line[:rng.randint(0, len(line))]
        elif how == 5:  # splice a line from another seed
            other = rng.choice(corpus).splitlines() or [""]
            lines.insert(i, rng.choice(other))
        elif how == 6:  # splice a grammar token into the line
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + rng.choice(tokens) + line[at:]
        elif how == 7:  # duplicate a line
            lines.insert(i, line)
        elif how == 8:  # re-indent
            lines[i] = " " * rng.choice([0, 1, 3, 4, 8]) + line.lstrip()
        else:  # a random character
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + rng.choice("()[]{}:,.'\"#\\@=*-+<>!~\t\x00\u00e9\u2028") \
                + line[at:]
        if not lines:
            lines = ["x = 1"]
    return "\n".join(lines) + "\n"


def program(rng: random.Random, corpus: list[str], tokens: list[str],
            npy_names: list[str]) -> str:
    """The i-th program: generated from scratch, or a mutated seed."""
    if rng.random() < 0.45:
        stmts = prelude(rng) + [statement(rng, npy_names) for _ in range(rng.randint(1, 8))]
        return "\n".join(stmts) + "\n"
    return mutate(rng, rng.choice(corpus), corpus, tokens, npy_names)


def prelude(rng: random.Random) -> list[str]:
    """Declarations of most of the generator's names, mostly valid ones (a format its buffer
    holds, a rank the format takes), so statements reach the model rather than stopping at an
    unknown name or a bad declaration."""
    out = []
    for name in rng.sample(NAMES, rng.randint(3, len(NAMES))):
        if name == "i":
            continue
        buffer = rng.choice(BUFFERS)
        fmt = rng.choice(BUFFER_FORMATS.get(buffer, [""]))
        rank = 2 if fmt else rng.randint(1, 3)
        dims = [rng.choice([1, 4, 16, 32, 64, 128, 130]) for _ in range(rank)]
        init = rng.choice(["", " = 0", " = arange", " = random(3)", " = ones"])
        dtype = rng.choice(["f16", "f32", "bf16", "i8", "i32"] if fmt else DTYPES)
        out.append(f"{name}: {dtype}[{', '.join(map(str, dims))}] @ {buffer}{fmt}{init}")
    return out


BUFFER_FORMATS = {"gm": ["", "", " as NZ", " as ND_ALIGN", " as COLUMN_MAJOR", " as ZZ"],
                  "l1": ["", " as NZ", " as ZZ", " as ZN"], "l0a": [" as ZZ"],
                  "l0b": [" as ZN"], "l0c": [" as NZ"], "ub": ["", " as NZ"]}


# -- bad .npy files ----------------------------------------------------------------------------


def npy_files(folder: Path) -> list[str]:
    """Write good, odd and hostile `.npy` files into `folder`; return their names."""
    import numpy as np
    made: dict[str, bytes] = {}

    def save(name: str, array) -> None:
        path = folder / name
        np.save(path, array, allow_pickle=True)
        made[name] = path.read_bytes()

    save("f32.npy", np.arange(128 * 64, dtype=np.float32).reshape(128, 64))
    save("f64.npy", np.ones((4, 4)))
    save("i64.npy", np.array([[2**62, -2**62], [1, 2]], dtype=np.int64))
    save("u64.npy", np.array([[2**64 - 1, 0]], dtype=np.uint64))
    save("bool.npy", np.array([[True, False]]))
    save("c64.npy", np.ones((2, 2), dtype=np.complex64))
    save("fortran.npy", np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)))
    save("zero_d.npy", np.array(3.5, dtype=np.float32))
    save("empty.npy", np.zeros((0, 4), dtype=np.float32))
    save("big_endian.npy", np.arange(8, dtype=">f4").reshape(2, 4))
    save("object.npy", np.array([{"a": 1}, None], dtype=object))
    good = made["f32.npy"]
    header_end = good.index(b"\n") + 1
    raw = {
        "truncated.npy": good[: header_end + 100],
        "huge_shape.npy": _npy_header("<f4", (200_000, 1_000_000)) + b"\0" * 64,
        "overflow_shape.npy": _npy_header("<f4", (2**62, 2**62)) + b"\0" * 64,
        "negative_shape.npy": _npy_header("<f4", (-1, 4)) + b"\0" * 64,
        "bad_magic.npy": b"\x93NUMPX" + good[6:],
        "bad_header.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': __import__}  \n",
        "garbage.npy": bytes(range(256)) * 3,
        "empty_file.npy": b"",
        "text.npy": b"1 2 3\n4 5 6\n",
        "v3.npy": b"\x93NUMPY\x03\x00" + good[8:],
    }
    for name, data in raw.items():
        (folder / name).write_bytes(data)
        made[name] = data
    (folder / "a_dir.npy").mkdir(exist_ok=True)
    return sorted(made) + ["a_dir.npy", "missing.npy"]


def _npy_header(descr: str, shape: tuple) -> bytes:
    body = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    pad = 64 - (10 + len(body) + 1) % 64
    body += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


# -- the worker: one program at a time ---------------------------------------------------------


def exercise(source: str, base_dir: str) -> dict:
    """Parse, check, run and render one program in this process; return its outcome."""
    from apdsl.catalogue import all_entries
    from apdsl.errors import ApdslError
    from apdsl.semantics.program import Program, UsageError
    from apdsl.surfaces.diagnostics import render, to_json
    known = _KNOWN.setdefault("codes", set(all_entries()))
    codes: list[str] = []

    def note(errors) -> None:
        for e in errors:
            codes.append(e.code)
            render(e, getattr(e, "sources", None) or {"fuzz.apk": source}, color=False)
            json.dumps(to_json(e))

    try:
        prog = Program(source, "fuzz.apk", base_dir=base_dir)
        note(prog.check())
        kernels = prog.kernels()
        prog.run(kernels[0].name if len(kernels) == 1 else None)
    except UsageError:
        codes.append("usage")
    except ApdslError as e:
        note([e])
    except BaseException as e:  # noqa: BLE001 - this is what the harness looks for
        import traceback
        return {"finding": "exception", "detail": "".join(traceback.format_exception(e))[-4000:]}
    unknown = [c for c in codes if c != "usage" and c not in known]
    if unknown:
        return {"finding": "uncatalogued code", "detail": ", ".join(sorted(set(unknown)))}
    return {"codes": codes}


_KNOWN: dict[str, set] = {}


def worker_main() -> None:
    """Read JSON lines `{"source", "base_dir"}` from stdin, answer one JSON line each."""
    import resource
    cap = int(os.environ.get("APDSL_FUZZ_MEMORY", str(6 * 2**30)))
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    import apdsl
    budget = getattr(apdsl, "options", None)
    try:  # the harness wants finished programs fast; the limits themselves are under test
        budget(max_steps=2_000_000, max_memory=2**30)  # type: ignore[misc]
    except Exception:  # noqa: BLE001 - an older tree without the budgets
        pass
    # Answers go on a private copy of stdout: a program's own print() output must not mix in.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the worker
    answers.write(json.dumps({"ready": True}) + "\n")  # its start-up is no program's time
    answers.flush()
    for line in sys.stdin:
        job = json.loads(line)
        out = exercise(job["source"], job["base_dir"])
        answers.write(json.dumps(out) + "\n")
        answers.flush()


STARTUP_TIMEOUT = 300.0  # seconds a worker may take to import apdsl


class Worker:
    """A worker subprocess with a per-program time limit; restarted after a hang or a crash."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
        return subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, bufsize=1)

    def run(self, source: str, base_dir: str) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
            assert self.proc.stdout
            # start-up (imports) on a busy machine is not a hang of the first program
            ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_TIMEOUT)
            if not ready or not self.proc.stdout.readline():
                return self._died("the worker did not start")
        proc = self.proc
        assert proc.stdin and proc.stdout
        try:
            proc.stdin.write(json.dumps({"source": source, "base_dir": base_dir}) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._died("the worker died before the program was sent")
        ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
        if not ready:
            self.stop()
            return {"finding": "hang", "detail": f"no answer within {self.timeout:.0f} s"}
        line = proc.stdout.readline()
        if not line:
            return self._died("the worker died")
        return json.loads(line)

    def _died(self, what: str) -> dict:
        err = ""
        if self.proc is not None:
            self.proc.kill()
            err = (self.proc.stderr.read() if self.proc.stderr else "")[-3000:]
        self.proc = None
        return {"finding": "crash", "detail": f"{what}: {err}"}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


# -- command lines -----------------------------------------------------------------------------


def command_line(rng: random.Random, files: list[str], npy_names: list[str]) -> list[str]:
    """A random, mostly plausible `apdsl` command line over the fuzz folder's files."""
    cmd = rng.choice(["run", "check", "lower", "show", "explain", "profile", "repl", "bogus",
                      "run", "check", "lower"])
    argv = [cmd]
    if cmd == "explain":
        return argv + [rng.choice(["APK203", "--list", "nope", "APK", "", "apk203"])]
    if cmd == "repl":
        return argv
    argv.append(rng.choice(files))
    if rng.random() < 0.3:
        argv.append(rng.choice(["k", "main", "gather_rows", "nope", "-", ""]))
    if cmd == "show":
        argv.append(rng.choice(["t", "u", "x", "k.t", "nope", "k.nope", "..", ""]))
    opts = [
        lambda: ["-i", f"{rng.choice(NAMES)}={rng.choice(npy_names)}"],
        lambda: ["-i", rng.choice(["A", "=x.npy", "A=", "A=missing.npy", "A=a_dir.npy"])],
        lambda: ["-o", rng.choice(["out.npy", "out.npz", "a_dir.npy", "sub/missing/out.npy",
                                   "out.txt", "/dev/null", "link.npy"])],
        lambda: ["--json"], lambda: ["--steps"], lambda: ["--svg", "pic.svg"],
        lambda: ["--target", rng.choice(["trn1", "trn2", "trn3", "ascend-a2", "gpu", ""])],
        lambda: ["--sync", rng.choice(["on", "off", "maybe"])],
        lambda: ["--max-steps", rng.choice(["0", "1", "100", "-5", "abc", "10**3"])],
        lambda: ["--max-memory", rng.choice(["0", "1", "1000000", "-1", "1G"])],
        lambda: ["--grid", rng.choice(["1", "2", "0", "-1", "x"])],
        lambda: ["--no-init-check"], lambda: ["--strict-padding"],
        lambda: ["--trace", "trace.json"], lambda: [rng.choice(["--nope", "-x", "--", "-"])],
    ]
    for _ in range(rng.randint(0, 3)):
        argv += rng.choice(opts)()
    return argv


def run_cli(argv: list[str], cwd: Path, timeout: float) -> dict:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    env.pop("APDSL_DEBUG", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "apdsl", *argv], cwd=cwd, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, preexec_fn=_cap_memory, errors="replace")
    except subprocess.TimeoutExpired:
        return {"finding": "hang", "detail": f"no exit within {timeout:.0f} s"}
    if proc.returncode not in (0, 1, 2):
        return {"finding": f"exit status {proc.returncode}", "detail": proc.stderr[-3000:]}
    if "Traceback" in proc.stderr or "internal error" in proc.stderr:
        return {"finding": "traceback", "detail": proc.stderr[-3000:]}
    if "--json" in argv and proc.returncode in (0, 1):
        for line in proc.stdout.splitlines():
            try:
                json.loads(line)
            except ValueError:
                return {"finding": "non-JSON stdout with --json", "detail": line[:500]}
    return {"status": proc.returncode, "stderr": proc.stderr}


def _cap_memory() -> None:
    import resource
    cap = 4 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


# -- the campaign ------------------------------------------------------------------------------


@dataclass
class Report:
    programs: int = 0
    cli: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    findings: list[dict] = field(default_factory=list)

    def count(self, key: str) -> None:
        self.outcomes[key] = self.outcomes.get(key, 0) + 1

    def summary(self) -> str:
        top = sorted(self.outcomes.items(), key=lambda kv: -kv[1])[:12]
        return (f"fuzz: {self.programs} programs, {self.cli} command lines, "
                f"{len(self.findings)} findings; most frequent outcomes: "
                + ", ".join(f"{k} {v}" for k, v in top))


def campaign(n_programs: int, n_cli: int, seed: int, timeout: float = 20.0,
             out: Path | None = None, log=None, share: tuple[int, int] | None = (0, 1),
             command_lines: bool = True) -> Report:
    """Run `n_programs` programs and `n_cli` command lines from `seed`; collect findings.

    A campaign can be run in parts that together make the whole (the suite's workers take one
    each): `share=(k, n)` runs only the programs whose index is k mod n (None: none of them),
    `command_lines=False` leaves the command lines out.  Every program is still generated, so
    each index is the same program and the command lines the same lines however it is shared."""
    rng = random.Random(seed)
    corpus = seed_programs()
    tokens = grammar_tokens()
    report = Report()
    with tempfile.TemporaryDirectory(prefix="apdsl-fuzz-") as tmp:
        folder = Path(tmp)
        npy_names = npy_files(folder)
        worker = Worker(timeout)
        started = time.monotonic()
        try:
            for i in range(n_programs):
                source = program(rng, corpus, tokens, npy_names)
                if share is None or i % share[1] != share[0]:
                    continue
                result = worker.run(source, str(folder))
                report.programs += 1
                if "finding" in result:
                    _found(report, out, {"kind": "program", "index": i, "seed": seed,
                                         "source": source, **result})
                else:
                    codes = result["codes"]
                    report.count(codes[0] if codes else "ok")
                if log and (i + 1) % 1000 == 0:
                    log(f"{i + 1} programs, {len(report.findings)} findings, "
                        f"{time.monotonic() - started:.0f} s")
        finally:
            worker.stop()
        if not command_lines:
            return report
        files = _cli_files(folder, rng, corpus, tokens, npy_names)
        for j in range(n_cli):
            argv = command_line(rng, files, npy_names)
            result = run_cli(argv, folder, timeout=max(timeout, 60.0))
            report.cli += 1
            if "finding" in result:
                _found(report, out, {"kind": "cli", "index": j, "seed": seed, "argv": argv,
                                     **result})
            else:
                report.count(f"exit {result['status']}")
        for name in odd_raises_files(folder):  # each once, under a random command
            argv = [rng.choice(["run", "check", "lower", "profile"]), name]
            result = run_odd_raise(argv, folder, timeout=max(timeout, 60.0))
            report.cli += 1
            if "finding" in result:
                _found(report, out, {"kind": "cli", "index": name, "seed": seed, "argv": argv,
                                     **result})
            else:
                report.count(f"exit {result['status']}")
    return report


def _cli_files(folder: Path, rng: random.Random, corpus: list[str], tokens: list[str],
               npy_names: list[str]) -> list[str]:
    """Program files for command lines: examples, mutants and hostile files."""
    names = []
    for k in range(6):
        name = f"prog{k}.apk"
        (folder / name).write_text(program(rng, corpus, tokens, npy_names), encoding="utf-8")
        names.append(name)
    for p in sorted((ROOT / "examples").glob("*.apk")):
        names.append(str(p))
    (folder / "bad_utf8.apk").write_bytes(b"x = 1\n\xff\xfe = 2\n")
    (folder / "nul.apk").write_bytes(b"x = 1\0\n")
    (folder / "empty.apk").write_text("")
    (folder / "dir.apk").mkdir(exist_ok=True)
    (folder / "kernel.py").write_text("import nki\n@nki.jit\ndef k(a):\n    return a\n")
    try:
        os.symlink("/etc/hostname", folder / "link.npy")
    except OSError:
        pass
    return names + ["bad_utf8.apk", "nul.apk", "empty.apk", "dir.apk", "missing.apk",
                    "kernel.py", "f32.npy"]


# Python kernels that raise odd exceptions: each must end in APK148 with exit 1, whatever the
# exception's class (SystemExit, GeneratorExit, BaseException subclasses, a raised
# KeyboardInterrupt) or however its __str__/__repr__ fail
ODD_RAISES = {
    "raises_base.py": ("class Stop(BaseException):\n    pass\n", "raise Stop('halt')"),
    "raises_genexit.py": ("", "raise GeneratorExit()"),
    "raises_exit0.py": ("", "raise SystemExit(0)"),
    "raises_exit3.py": ("", "raise SystemExit(3)"),
    "raises_exit_str.py": ("", "raise SystemExit('bye')"),
    "raises_kbd.py": ("", "raise KeyboardInterrupt()"),
    "raises_badstr.py": ("class E(Exception):\n    def __str__(self):\n        raise E()\n",
                         "raise E()"),
    "raises_badrepr.py": ("class E(BaseException):\n    def __str__(self):\n"
                          "        raise SystemExit(5)\n    def __repr__(self):\n"
                          "        raise KeyboardInterrupt\n", "raise E()"),
    "raises_notstr.py": ("class E(Exception):\n    def __str__(self):\n        return 3\n",
                         "raise E()"),
    "raises_nested.py": ("def helper():\n    try:\n        raise ValueError('inner')\n"
                         "    finally:\n        raise GeneratorExit('outer')\n", "helper()"),
}
ODD_RAISES_TOP = {"raises_top_exit0.py": "import nki\nraise SystemExit(0)\n",
                  "raises_top_base.py": "import nki\nclass B(BaseException):\n"
                  "    def __str__(self):\n        raise B()\nraise B()\n"}


def odd_raises_files(folder: Path) -> list[str]:
    """Write the odd-exception kernels (`ODD_RAISES`, `ODD_RAISES_TOP`) into `folder`."""
    for name, (prelude_text, statement_text) in ODD_RAISES.items():
        (folder / name).write_text(f"import nki\n{prelude_text}\n@nki.jit\ndef k():\n"
                                   f"    {statement_text}\n", encoding="utf-8")
    for name, text in ODD_RAISES_TOP.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [*ODD_RAISES, *ODD_RAISES_TOP]


def run_odd_raise(argv: list[str], cwd: Path, timeout: float) -> dict:
    """A command line on an odd-exception kernel: exit 1 with APK148 (its own exception), or
    a usage error (exit 2) before it runs; never exit 0, another status or a traceback."""
    result = run_cli(argv, cwd, timeout)
    if "finding" in result or result["status"] == 2:
        return result
    if result["status"] != 1 or "APK148" not in result.get("stderr", ""):
        return {"finding": "odd exception not reported as APK148",
                "detail": f"exit {result['status']}: {result.get('stderr', '')[-1500:]}"}
    return result


def _found(report: Report, out: Path | None, finding: dict) -> None:
    report.findings.append(finding)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        name = f"{finding['kind']}-{finding['seed']}-{finding['index']}.json"
        (out / name).write_text(json.dumps(finding, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=2000, help="programs to run (default 2000)")
    ap.add_argument("--cli", type=int, default=40, help="command lines to run (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per program")
    ap.add_argument("--out", type=Path, default=None, help="write each finding here as JSON")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    report = campaign(args.n, args.cli, args.seed, args.timeout, args.out,
                      log=lambda s: print(s, file=sys.stderr, flush=True))
    for f in report.findings[:20]:
        print(f"--- {f['kind']} {f['index']}: {f['finding']}")
        print(f.get("source", f.get("argv", ""))[:600] if f["kind"] == "program"
              else " ".join(f["argv"]))
        print(f["detail"][-1500:])
    print(report.summary())
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
