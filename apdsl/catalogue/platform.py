"""The target an NKI kernel names itself (APK972): `@nki.jit(platform_target=...)`."""

from . import entry

ENTRIES = [
    entry("APK972", "platform_target names no platform, or another target than the run's", """
A kernel of the legacy API (and of NKI before 0.3.0) names the platform it is built for in its
decorator, `@nki.jit(platform_target='trn3')`; apdsl runs it on that target, so its rules
(SBUF size, trn3-only instructions such as quantize_mx) are the ones checked. The names are
those of NEURON_PLATFORM_TARGET_OVERRIDE: trn1 (or inf2, gen2), trn2 (gen3), trn3 (gen4); any
other is this error at the decorator. When the run itself chose another NKI target than the
default (`--target trn1`, `apdsl.target("trn1")`) and the kernel names a different one, the
run stops here rather than check the kernel against the wrong machine. (NKI 0.3.0 and later
reject platform_target and take the target from NEURON_PLATFORM_TARGET_OVERRIDE only: the
migration guide.) A kernel without platform_target runs on the target its process environment
names: NEURON_PLATFORM_TARGET_OVERRIDE, or else the `--target` (trn1, trn1n, inf2, trn2, trn3)
of NEURON_CC_FLAGS, the compiler's options; a name neither tool knows is this error at the call.
""", """
# python
import apdsl.nki as nki
import apdsl.nki.language as nl

@nki.jit(platform_target="trn4")
def k(a):
    return a
"""),
]
