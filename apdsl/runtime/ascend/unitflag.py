"""The unit flag between `mmad` and Fixpipe (AscendC "UnitFlag", Atlas A2).

With `unit_flag` 2 or 3 on both sides, each 512-byte block of L0C has a flag that orders the
cube unit's writes and Fixpipe's reads without an M_FIX / FIX_M event:
- an mmad waits until the flags of the blocks it writes are 0; with 3 it then sets them to 1
  (with 2 it leaves them 0: more mmads of the same accumulation follow);
- a Fixpipe waits until the flags of the blocks it reads are 1; with 3 it then sets them to 0
  (with 2 it leaves them 1: more Fixpipes of the same result follow).
apdsl keeps the flags per core and block, with what the setting pipe knew: a wait joins that
into the waiting pipe (`apdsl.runtime.sync`), so the race checker and the profile see the
order.  A Fixpipe whose blocks no mmad with unit_flag=3 set would wait for ever (APK513), and
so would an mmad that writes blocks whose results no Fixpipe has read yet (a program that
overwrites them before reading them: also APK513).  With the sync checker off (`--sync off`)
every instruction already waits for the ones before it, and the flags change nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ApdslRuntimeError
from ...tensor.machine import current
from ..core import execute as ex
from ..sync.pipes import PIPE_INDEX

BLOCK = 512  # bytes of L0C a flag covers
FLAGS = (0, 2, 3)
_M, _FIX = PIPE_INDEX["M"], PIPE_INDEX["FIX"]


def flag_arg(label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or int(value) not in FLAGS:
        raise ApdslRuntimeError(f"{label}: unit_flag is {value!r}; it is 0 (off), 2 or 3",
                                code="APK513", notes=[
                                    "2: keep the blocks' flags as they are after the "
                                    "instruction; 3: flip them (mmad sets them for Fixpipe, "
                                    "Fixpipe clears them for the next mmad)"],
                                help="unit_flag=2 on all but the last mmad of an "
                                "accumulation, 3 on the last and on the Fixpipe")
    return int(value)


def _blocks(view: Any, label: str, role: str) -> list[tuple[int, int]]:
    acc = ex.resolve(view, label, role)
    byte = acc.offsets().ravel().astype(np.int64) * (view.dtype.bits // 8)
    sid = view.storage.id
    return [(sid, int(b)) for b in np.unique(byte // BLOCK)]


def _units(label: str, view: Any, role: str, uf: int) -> tuple[Any, list, dict] | None:
    if uf == 0:
        return None
    s = current().sync
    if s is None or view.dynamic is not None:
        return None
    return s, _blocks(view, label, role), s.units


def before_write(label: str, dst: Any, uf: int) -> None:
    """An mmad with unit flag `uf` about to write L0C view `dst`."""
    got = _units(label, dst, "dst", uf)
    if got is None:
        return
    s, blocks, units = got
    for key in blocks:
        state, snap, line = units.get(key, (0, None, None))
        if state == 1:
            where = f" (set at line {line})" if line else ""
            raise ApdslRuntimeError(
                f"deadlock: {label} with unit_flag={uf} writes L0C blocks whose results an "
                f"mmad with unit_flag=3 handed to Fixpipe{where}, and no Fixpipe has read them",
                code="APK513", notes=["an mmad under the unit flag waits until a Fixpipe has "
                                      "read (and cleared) the blocks it writes"],
                help="read the result out with a Fixpipe (unit_flag=3) first, or write "
                "another L0C buffer")
        if snap is not None:
            s.join(_M, snap)


def after_write(dst: Any, uf: int, label: str) -> None:
    """The mmad recorded: with 3 its blocks are handed to Fixpipe."""
    got = _units(label, dst, "dst", uf)
    if got is None:
        return
    s, blocks, units = got
    loc = current().location
    for key in blocks:
        units[key] = (1, s.snapshot(_M), loc[1] if loc else None) if uf == 3 else \
            (0, units.get(key, (0, None, None))[1], None)


def before_read(label: str, src: Any, uf: int) -> None:
    """A Fixpipe with unit flag `uf` about to read L0C view `src`."""
    got = _units(label, src, "src", uf)
    if got is None:
        return
    s, blocks, units = got
    for key in blocks:
        state, snap, _ = units.get(key, (0, None, None))
        if state != 1:
            raise ApdslRuntimeError(
                f"deadlock: {label} with unit_flag={uf} reads L0C blocks that no mmad with "
                "unit_flag=3 has handed over", code="APK513",
                notes=["a Fixpipe under the unit flag waits until an mmad with unit_flag=3 has "
                       "set the flags of the blocks it reads"],
                help="give the last mmad of the accumulation unit_flag=3, or order the two "
                "with set_flag(\"M_FIX\") / wait_flag(\"M_FIX\") and unit_flag=0")
        if snap is not None:
            s.join(_FIX, snap)


def after_read(src: Any, uf: int, label: str = "asc.fixpipe") -> None:
    """The Fixpipe recorded: with 3 its blocks are free for the next mmad."""
    got = _units(label, src, "src", uf)
    if got is None:
        return
    s, blocks, units = got
    for key in blocks:
        units[key] = (0, s.snapshot(_FIX), None) if uf == 3 else units[key]
