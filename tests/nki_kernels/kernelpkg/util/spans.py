"""Splitting an extent into tiles with a tail: (start, size) of each tile."""


def spans(extent, size):
    return [(start, min(size, extent - start)) for start in range(0, extent, size)]
