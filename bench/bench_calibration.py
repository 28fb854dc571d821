"""The calibration table of SPEC section 14: the profile's estimates against published times.

Each row profiles a kernel written for apdsl after a kernel whose time was published
(`bench/calibration_kernels.py`, `bench/calibration_catlass.apk`) and prints the estimate, the
published figure, their ratio and ok/MISS for the band 0.8-1.25.

How the large kernels are estimated.  The matmul tutorial's steps are profiled at their full
size, [4096, 8192] @ [8192, 8192] bf16, without computing anything: the kernel runs in check mode
(`apdsl check`'s dry run: every instruction validated, lowered and traced, no data moved) and
the profile schedules that trace -- the same instructions and access patterns a run traces, so
the estimate is the model's schedule of every one of the ~35,000-100,000 instructions.  With
`--quick` they are profiled on 1/8 of M instead and the estimate is the model's time for that
run times 8 (`QUICK` says so in the row); the table of the README and of lane reports is the full
one.  The other rows run as they were published.

The CATLASS rows run the kernel (bench/calibration_catlass.apk) on its 20 cores: the
interpreter runs the cores one after another and the profile schedules their instructions in the
order of time, so that their transfers share the chip's GM bandwidth as they ask for it.

Validation rows (marked so) are kernels the model was not fitted to, with published times: the
fused Mamba tutorial's mamba_v1, mamba_v2 and mamba_v3 (aws-neuron-sdk
nki/guides/tutorials/fused_mamba.rst; kernels in calibration_kernels.py) and CATLASS TileShape
case 3.  They print ok or MISS as they come out; a miss there is a finding about the model and
does not fail the run.

    python bench/bench_calibration.py [--quick] [-k TEXT]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, main  # noqa: E402

HERE = Path(__file__).resolve().parent
BAND = (0.8, 1.25)

# (kernel, published seconds, source)
MATMUL = (
    ("tiled", 51.80e-3), ("hoisted", 42.96e-3), ("blocked", 22.07e-3), ("optimised", 6.97e-3))
MATMUL_SOURCE = ("aws-neuron-sdk nki/tutorials/matrix_multiplication.rst (2025 revision), "
                 "trn1, [4096, 8192] @ [8192, 8192] bf16")


def _placeholder(shape: tuple[int, ...], dtype: Any) -> Any:
    """An input of this shape and dtype whose data a dry run never reads (nothing allocated)."""
    import numpy as np
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype=dtype), shape=shape,
                                           strides=(0,) * len(shape))


def profile_nki(kernel: str, inputs: dict[str, Any], target: str, *, dry: bool) -> Any:
    """The profile of kernel `kernel` of calibration_kernels.py on `target`; with `dry`, of its
    check-mode trace (nothing computed)."""
    from apdsl.nki.kernel import call
    from apdsl.nki.program import PyProgram
    from apdsl.profile import profile_run
    from apdsl.runtime.core.trace import tracing
    from apdsl.semantics.program import RunResult
    from apdsl.tensor.machine import current
    from apdsl.tensor.targets import set_target

    machine = current().child(check=dry)
    with machine.active():
        set_target(target)
        prog = PyProgram(str(HERE / "calibration_kernels.py"))
        fn = prog.kernel_function(kernel)
        with tracing() as trace:
            call(fn, tuple(inputs.values()), {}, (), dry=dry, raw=True)
        return profile_run(RunResult(None, kernel, None, trace, [], machine))


def _matmul(kernel: str, quick: bool) -> float:
    import ml_dtypes
    k, m, n = 8192, 4096, 8192
    share = 8 if quick else 1
    ins = {"lhsT": _placeholder((k, m // share), ml_dtypes.bfloat16),
           "rhs": _placeholder((k, n), ml_dtypes.bfloat16)}
    if kernel == "optimised" and quick:  # its blocks are 2048 wide in M: cut N instead
        ins = {"lhsT": _placeholder((k, m), ml_dtypes.bfloat16),
               "rhs": _placeholder((k, n // share), ml_dtypes.bfloat16)}
    p = profile_nki(kernel, ins, "trn1", dry=True)
    return p.total_ns * share * 1e-9


def _dma() -> float:
    """The transfer of the [4, 4096] bf16 load: its slot, less the fixed DMA latency (the
    published 1,416 ns is the engine's transfer, as the profile shows it)."""
    import ml_dtypes
    p = profile_nki("dma_example", {"a": _placeholder((4, 4096), ml_dtypes.bfloat16)}, "trn2",
                    dry=True)
    load = p.slots[0]
    return (load.end - load.start - load.cost.fixed_ns) * 1e-9


def _chain() -> float:
    """The initiation interval of the chain: from the second activation's start to the last
    one's, over the instructions between (the first reads the DMA's output, not an
    activation's)."""
    import numpy as np
    p = profile_nki("scalar_chain", {"x": _placeholder((128, 1), np.float32)}, "trn1", dry=True)
    acts = [s for s in p.slots if s.op == "activation"]
    return (acts[-1].start - acts[1].start) / (len(acts) - 2) * 1e-9


def _catlass(kernel: str, cores: int) -> float:
    """The estimate of kernel `kernel` of calibration_catlass.apk launched on `cores` cores."""
    from apdsl.profile import profile_run
    from apdsl.semantics.program import Program
    from apdsl.tensor.machine import current
    from apdsl.tensor.targets import set_target
    source = (HERE / "calibration_catlass.apk").read_text()
    program = Program(source, str(HERE / "calibration_catlass.apk"))
    machine = current().child()
    with machine.active():
        set_target("ascend-a2")
        result = program.run(kernel, trace=True, grid=(cores,))
        return profile_run(result).total_ns * 1e-9


# The fused Mamba tutorial's published device times: mamba_v1 on its toy size and with 4096
# channels, mamba_v2 with 4096 channels (batch 1, seq_len 512, state_size 16, float32).  The
# tutorial names no instance; assumption: trn1, as the matmul tutorial of the same
# documentation.
# mamba_v2_hoisted: mamba_v2 with its loop-invariant delta * u out of the state loop, as the
# published profile's Vector time implies the compiler ran it (calibration_kernels.py).
# mamba_v3 (seq_len tiled by 512) is published at seq_len 1024 to 8192 with 4096 channels (the
# tutorial's table: 3.3 ms at 1024); the rows run it at 1024.
MAMBA = (("mamba_v1", 256, 512, 172.93e-6), ("mamba_v1", 4096, 512, 2.34e-3),
         ("mamba_v2", 4096, 512, 1.61e-3), ("mamba_v2_hoisted", 4096, 512, 1.61e-3),
         ("mamba_v3", 4096, 1024, 3.3e-3), ("mamba_v3_hoisted", 4096, 1024, 3.3e-3))
MAMBA_TARGET = "trn1"


def _mamba(kernel: str, channels: int, seq: int) -> float:
    import numpy as np
    batch, states = 1, 16
    z = _placeholder
    ins = {"delta": z((batch, channels, seq), np.float32), "u": z((batch, channels, seq),
                                                                  np.float32),
           "A": z((channels, states), np.float32), "B": z((batch, states, seq), np.float32),
           "C": z((batch, states, seq), np.float32)}
    return profile_nki(kernel, ins, MAMBA_TARGET, dry=True).total_ns * 1e-9


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def cases(args: Any = None) -> list[Case]:
    quick = bool(getattr(args, "quick", False))
    out = []
    for kernel, published in MATMUL:
        name = f"matmul tutorial {kernel} (trn1){' QUICK: 1/8 x 8' if quick else ''}"
        out.append(Case(name, f"published {published * 1e3:.2f} ms", 0.0,
                        lambda k=kernel, pub=published: (_matmul(k, quick), pub), band=BAND))
    out.append(Case("[4, 4096] bf16 HBM -> SBUF DMA transfer (trn2)", "published 1.416 us", 0.0,
                    lambda: (_dma(), 1.416e-6), band=BAND))
    out.append(Case("dependent [128, 1] ScalarE chain, per instruction (trn1)",
                    "published ~189 ns", 0.0, lambda: (_chain(), 189e-9), band=BAND))
    for tiles, published in (((128, 256), 72.5e-6), ((256, 128), 48.6e-6)):
        out.append(Case(f"CATLASS case 1, {tiles[0]} x {tiles[1]} tiles (ascend-a2, 20 cores)",
                        f"published {_time(published)}", 0.0,
                        lambda t=tiles, pub=published: (
                            _catlass(f"case1_{t[0]}x{t[1]}", 20), pub), band=BAND))
    for kernel, channels, seq, published in MAMBA:
        out.append(Case(f"{kernel} [1, {channels}, {seq}], 16 states ({MAMBA_TARGET})",
                        f"published {_time(published)}", 0.0,
                        lambda k=kernel, c=channels, n=seq, pub=published: (_mamba(k, c, n), pub),
                        band=BAND, validation=True))
    for tiles, published in (((128, 128), 36.3e-6), ((16, 32), 15.5e-6)):
        out.append(Case(f"CATLASS case 3, {tiles[0]} x {tiles[1]} tiles (ascend-a2, 24 cores)",
                        f"published {_time(published)}", 0.0,
                        lambda t=tiles, pub=published: (
                            _catlass(f"case3_{t[0]}x{t[1]}", 24), pub),
                        band=BAND, validation=True))
    return out


def add_arguments(ap: Any) -> None:
    ap.add_argument("--quick", action="store_true",
                    help="profile the matmul steps on 1/8 of their size and multiply by 8")


if __name__ == "__main__":
    raise SystemExit(main(cases, __doc__.splitlines()[0], add_arguments=add_arguments))
