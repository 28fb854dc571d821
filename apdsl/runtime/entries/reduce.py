"""Instruction table entries: the reduce group (see `apdsl.runtime.entries`)."""

from __future__ import annotations

from ..spec import Instruction

ENTRIES: tuple[Instruction, ...] = ()
