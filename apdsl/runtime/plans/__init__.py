"""Plans: what a call checked once, kept for the next call on operands of equal value.

Every fast path of apdsl sits under one switch, the `plans` option (`apdsl.options(plans=False)`,
`APDSL_PLANS=0` for a whole process): with it off every instruction, view and statement takes
the general path, which gives the same values, traces and diagnostics (the tests compare the
two; CI runs the instruction, view, Ascend, pipes and corpus tests both ways).

The plan table, `table`: one bounded table keyed by (instruction, target, the operands' keys,
the other arguments), a view's key standing for its value (layout, dtype, storage buffer,
shape, size and address), made once per view.  A plan holds no view and no storage.  The NKI
instructions keep their plans there: `dmaplan` (`dma_copy`), `runtime/nki/tile_plans`
(compute instructions), `runtime/nki/matmul` (`nc_matmul`, the PSUM bank rule).  A new fast
path keeps its plans there too.

Not yet in the table (each under the same switch): `ascend_plans` (Ascend copies and `mmad`,
kept on their first view; GM tiles by value) with `runtime/ascend/dma` (alignment, regions),
`matmul_run` (`nc_matmul`'s product added into PSUM in place), `runtime/sync/sync_facts` (the
sync checker's view facts and instruction plans), `runtime/core/resolve` (a static view's
access memoised on the view, row-gather plans per storage), `tensor/view/cache` (the children
indexing, the view methods and the TLA functions make, so a view costs the same however it is
spelled), and in the interpreter, decided when a program is compiled, `semantics/callsites`
(generated code for calls, assignments and straight blocks) and the direct instruction calls.

Each fast path is here because a SPEC 10 row needs it (measured switched off alone; the
README's "How it is built" gives the figures); one whose removal leaves every row ok goes.

A plan never changes what a call checks each time it runs: freed storage, the init check,
duplicate writes, written marks, PSUM and accumulator state, the sync checker and the trace.
"""
