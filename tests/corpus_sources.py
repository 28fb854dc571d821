"""Small NKI kernel files for the corpus tests, written for them: each test spells only what
its kernels compute, and the shape every such kernel shares (a new HBM tensor shaped as the
input, one store into it) is written once, here."""

from __future__ import annotations

NKI_IMPORTS = "import nki\nimport nki.language as nl\n"


def hbm_kernel(name: str, value: str, x: str = "a", *, params: str | None = None,
               first: str = "", body: tuple[str, ...] = ()) -> str:
    """An `@nki.jit` kernel storing `value` (an expression of its input `x`) into a new HBM
    tensor shaped as `x`, and returning it; `params` its parameters when more than `x`, `first`
    a statement before the allocation (an assert), `body` statements between it and the store."""
    lines = ["@nki.jit", f"def {name}({params or x}):", *([f"    {first}"] if first else []),
             f"    out = nl.ndarray({x}.shape, dtype={x}.dtype, buffer=nl.shared_hbm)",
             *(f"    {s}" for s in body), f"    nl.store(out, {value})", "    return out"]
    return "\n".join(lines)


def kernel_module(*kernels: str, before: str = "", after: str = "") -> str:
    """A kernel file: `before`, NKI's imports, the kernels two blank lines apart, `after`."""
    return f"\n{before}{NKI_IMPORTS}\n\n" + "\n\n\n".join(kernels) + "\n" + after
