"""Plans: what a call checked once, kept for the next call on the same views.

Every fast path of apdsl sits under one switch, the `plans` option (`apdsl.options(plans=False)`,
`APDSL_PLANS=0` for a whole process): with it off every instruction, view and statement takes
the general path, which gives the same values, traces and diagnostics (the tests compare the
two; CI runs the instruction, view, Ascend, pipes and corpus tests both ways).  A new fast
path reads the option and keeps its plans where these do:

- here: `dmaplan` (NKI `dma_copy` pairs, matched by value), `ascend_plans` (Ascend copies and
  `mmad`, by operand views; GM tiles by value), `matmul_run` (the work arrays of `nc_matmul`);
- beside the instruction they serve: `runtime/nki/tile_plans` (compute instructions),
  `runtime/nki/matmul` (nc_matmul plans, the PSUM bank rule), `runtime/sync/sync_facts` (the
  sync checker's view facts and instruction plans), `runtime/ascend/dma` (alignment, regions);
- on the view: `runtime/core/resolve` memoises a static view's access, and
  `tensor/view/cache` keeps the children indexing, the view methods and the TLA functions make
  (so a view costs the same however it is spelled);
- in the interpreter, decided when a program is compiled: `semantics/callsites` (generated
  code for calls, assignments and straight blocks) and the direct instruction calls.

A plan never changes what a call checks each time it runs: freed storage, the init check,
duplicate writes, written marks, PSUM and accumulator state, the sync checker and the trace.
"""
