"""Executing views on NumPy: the runtime's execution interface, one import for the instructions.

The work is done by modules of one job each: `access` (a view made concrete: `Strided`,
`Pieces`, `Rows`, `Indexed`), `resolve` (registers and runtime indices read, bounds checked),
`written` (written state and the init check) and `move` (reads, writes, fills, copies and the
whole-view helpers).
"""

from __future__ import annotations

from .access import Access, Indexed, Pieces, Rows, Strided
from .move import (
                   cast,
                   copy,
                   fill,
                   prepare_write,
                   read,
                   read_float32,
                   read_view,
                   store,
                   store_where,
                   strided_copy,
                   write_view,
)
from .resolve import (
    TI_GROUP,
    TI_GROUP_MATMUL,
    check_dynamic,
    check_live,
    registers_known,
    resolve,
    warn_static,
)
from .written import check_init, copy_written, forget_all, forget_written, has_written, set_written

__all__ = ["TI_GROUP", "TI_GROUP_MATMUL", "Access", "Indexed", "Pieces", "Rows", "Strided",
           "cast", "check_dynamic", "check_init", "check_live", "copy", "copy_written", "fill",
           "forget_all", "forget_written", "has_written", "prepare_write", "read",
           "read_float32", "read_view", "registers_known", "resolve", "set_written", "store",
           "store_where", "strided_copy", "warn_static", "write_view"]
