"""`asc.lib.runtime` as pyasc's tutorials use it on the host: `current_stream()` names the
stream a launch goes on (apdsl runs a launch at once, so any stream is the same).  `asc.lib`'s
`host` (the host tiling API) is `apdsl.asc.host`."""

from __future__ import annotations

from ..records import record


@record
class Stream:
    device_id: int = 0


def current_stream(device_id: int | None = None) -> Stream:
    return Stream(device_id or 0)


runtime = __import__("sys").modules[__name__]  # `asc.lib.runtime` is this module
from . import host  # noqa: E402,F401 - `asc.lib.host`
