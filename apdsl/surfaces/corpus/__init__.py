"""`apdsl corpus DIR`: measure what apdsl runs of a repository's NKI kernels (SPEC 19)."""
