"""A small kernel library written for apdsl's tests, laid out as a library is: a package whose
kernels import helper modules by relative imports, re-exported from its `ops` package."""
