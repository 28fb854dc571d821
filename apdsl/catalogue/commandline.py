"""The command line itself (APK170-APK179): what `apdsl` is asked for on the command line, as
opposed to what a file holds."""

from . import entry

ENTRIES = [
    entry("APK170", "--ranks on a program that is not an NKI Python kernel", """
`--ranks N` runs a kernel on a group of N ranks, each its own device, its collectives
(`nki.collectives`, `nisa.sendrecv`, `nisa.core_barrier`) exchanging data between them. Groups
of ranks run NKI Python kernels (`@nki.jit` functions in a `.py` file); an `.apk` program or a
pyasc kernel runs on one rank: leave `--ranks` out (or give `--ranks 1`). `--grid N` is
another thing: N logical NeuronCores of one rank, as `kernel[N](...)`.
""", """
# apdsl run example.apk --ranks 2
kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    return A
"""),
]
