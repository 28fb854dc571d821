"""`asc.runtime`: its `config` (the backend and platform a pyasc program sets), `launcher`
(the step that makes a launch's writes visible) and `jit` (pyasc's argument stand-ins)."""

from __future__ import annotations

from . import config, launcher
from . import runtime_jit as jit

__all__ = ["config", "jit", "launcher"]
