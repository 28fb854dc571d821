"""`os.environ` for a `.apk` program: NKI files set NEURON_* variables before their kernels.

The program's own mapping, never the process environment (the sandbox reads and writes no
outside state): it starts empty, holds strings, and setting
`NEURON_PLATFORM_TARGET_OVERRIDE` selects that target as `set_target` does (for the program
run only: the run restores the target afterwards).  Other variables are kept and mean nothing.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError

TARGET_VARIABLE = "NEURON_PLATFORM_TARGET_OVERRIDE"
# the methods a program may call on it: reading ones (a write goes through `environ[k] = v`)
METHODS = frozenset({"get", "keys", "values", "items"})


class Environ(dict):
    """A program's `os.environ`."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(key) is not str or type(value) is not str:
            raise ApdslTypeError(
                f"os.environ holds strings; got {type(key).__name__} = {type(value).__name__}",
                code="APK120", help='write os.environ["NAME"] = "value"')
        if key == TARGET_VARIABLE:
            from ..tensor import targets
            targets.set_target(value)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
