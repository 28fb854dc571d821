# Re-typed from aws-neuron/nki-library at d2ad3a5 (NKI Lib 2026-04-13): src/nkilib_src/nkilib/core/utils/tiled_range.py
# (Apache-2.0, Copyright Amazon.com, Inc. or its affiliates); docstrings shortened.
"""TiledRange: a dimension divided into tiles, the last one possibly smaller."""
import math
from typing import Tuple, Union

from nki.language import NKIObject


class TiledRangeIterator(NKIObject):

    def __init__(self, tile_size: int, tile_index: int, start_offset: int, end_offset: int):
        self.size = tile_size
        self.index = tile_index
        self.start_offset = start_offset
        self.end_offset = end_offset

    def __repr__(self) -> str:
        return f"TiledRangeIterator(size={self.size}, index={self.index}, start_offset={self.start_offset}, end_offset={self.end_offset})"


def TiledRange(size: Union[int, TiledRangeIterator], tile_size: int) -> Tuple[TiledRangeIterator, ...]:
    if isinstance(size, TiledRangeIterator):
        # Subtiled case: use the size of the TiledRangeIterator
        total_size = size.size
        base_offset = size.start_offset
    else:
        total_size = size
        base_offset = 0

    # Calculate the number of tiles needed (ceiling division)
    num_tiles = math.ceil(total_size / tile_size)

    # Create the tuple of TiledRangeIterators
    iterators = []
    for i in range(num_tiles):
        relative_offset = i * tile_size
        # Last tile may be smaller
        current_tile_size = min(tile_size, total_size - relative_offset)
        # Add base_offset to make the start_offset absolute
        start_offset = base_offset + relative_offset
        end_offset = base_offset + relative_offset + current_tile_size
        iterators.append(TiledRangeIterator(current_tile_size, i, start_offset, end_offset))

    return tuple(iterators)
