"""Instruction table entries: the compute group (see `apdsl.runtime.entries`)."""

from __future__ import annotations

from ..spec import Instruction

ENTRIES: tuple[Instruction, ...] = ()
