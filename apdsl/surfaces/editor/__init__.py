"""`apdsl lsp`: the language server editors talk to (LSP over stdio, SPEC section 20).

The server (`server`, on pygls: `pip install 'apdsl[lsp]'`) never runs a program itself: every
check and every view a hover asks about is worked out by `worker`, in a process of its own
with the step, memory and time budgets, which the server stops when a newer edit supersedes it
or its wall-clock limit passes (`jobs`).  A slow or endless program, or a `.py` kernel file's
own Python doing anything at all, never holds up the editor.  What needs no program run
(words under the cursor, signatures, completions, definitions, error codes) is `words`.
"""
