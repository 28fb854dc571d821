"""`asc.runtime`: its `config` (the backend and platform a pyasc program sets)."""

from __future__ import annotations

from . import config

__all__ = ["config"]
