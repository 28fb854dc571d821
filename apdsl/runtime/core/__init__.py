"""The runtime's core: views made concrete and moved (access, resolve, written, move, execute), operands, the trace, initialisers, options and files."""
