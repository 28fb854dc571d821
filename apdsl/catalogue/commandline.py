"""The command line itself (APK170-APK179): what `apdsl` is asked for on the command line, as
opposed to what a file holds."""

from . import entry

ENTRIES = [
    entry("APK170", "multi-rank runs are not available yet", """
`--ranks N` asks for a run of the kernel on N ranks, its collectives exchanging data between
them. apdsl runs one rank for now: leave `--ranks` out (or give `--ranks 1`). `--grid N` is
another thing: N logical NeuronCores of one rank, as `kernel[N](...)`.
""", """
# apdsl run example.apk --ranks 2
kernel k(A: f32[128, 64] @ hbm) -> f32[128, 64] @ hbm:
    return A
"""),
]
