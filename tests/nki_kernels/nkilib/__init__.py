"""Kernels of the NKI library re-typed for apdsl's tests, in the library's own package layout
(`src/nkilib_src/nkilib/...` of aws-neuron/nki-library at d2ad3a5 (NKI Lib 2026-04-13)), so their relative imports work unchanged.
Kernel files are re-typed statement for statement; helper modules keep only what the kernels
here use, and say so."""
