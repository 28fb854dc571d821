"""Jupyter (SPEC section 20): `%load_ext apdsl` adds the `%%apk` cell magic (`magic`), and views
and tensors draw their access picture in a notebook (`pictures`, installed when apdsl is
imported).  Profile results draw their timeline (`apdsl.profile.ProfileResult`).  Nothing here
imports IPython until a notebook loads the extension."""

from __future__ import annotations

from typing import Any

__all__ = ["load"]


def load(shell: Any) -> None:
    """Register `%%apk` with an IPython shell (`%load_ext apdsl` calls this)."""
    from .magic import cell_magic
    shell.register_magic_function(cell_magic(shell), magic_kind="cell", magic_name="apk")
