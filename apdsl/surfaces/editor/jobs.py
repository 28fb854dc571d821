"""Running a worker (`apdsl.surfaces.editor.worker`) from the server's event loop: one process
per job, stopped when its wall-clock limit passes or the job is cancelled (a newer edit of the
same file, a closed file), so nothing a program does can hold the server up."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from ...errors import ApdslError, ApdslRuntimeError, Span, Warning_
from ...records import record

__all__ = ["Budgets", "run_job"]


@record
class Budgets:
    """The limits of every check and hover: `apdsl.options` budgets in the worker (None: the
    command line's defaults) and the wall-clock seconds after which the worker is stopped."""

    max_steps: int | None = None
    max_memory: int | None = None
    max_time: float | None = None
    time_limit: float = 30.0

    @classmethod
    def of(cls, settings: Any) -> Budgets:
        """From the client's settings (`maxSteps`, `maxMemory`, `maxTime`, `timeLimit`);
        anything else, or a value of the wrong kind, keeps its default."""
        if not isinstance(settings, dict):
            return cls()

        def number(key: str, kind: type) -> Any:
            value = settings.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                return kind(value)
            return None

        limit = number("timeLimit", float)
        return cls(number("maxSteps", int), number("maxMemory", int), number("maxTime", float),
                   limit if limit is not None else 30.0)

    def options(self) -> dict[str, Any]:
        return {"max_steps": self.max_steps, "max_memory": self.max_memory,
                "max_time": self.max_time}


async def run_job(request: dict[str, Any], budgets: Budgets) -> dict[str, Any]:
    """The worker's answer to `request`, run under `budgets`: APK980 when it was stopped at
    the wall-clock limit, APK982 when it ended without an answer."""
    message = json.dumps({**request, "options": budgets.options()}).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "apdsl.surfaces.editor.worker",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(process.communicate(message), budgets.time_limit)
    except TimeoutError:
        raise _stopped(str(request.get("file")), budgets.time_limit) from None
    finally:
        if process.returncode is None:  # timed out or cancelled: the process goes with it
            process.kill()
            await asyncio.shield(process.wait())
    try:
        return json.loads(out.decode("utf-8", errors="replace"))
    except ValueError:
        last = err.decode("utf-8", errors="replace").strip().splitlines()[-1:]
        raise _failed(str(request.get("file")),
                      last[0] if last else f"exit status {process.returncode}") from None


def _stopped(file: str, seconds: float) -> ApdslError:
    return Warning_(
        f"the check of this file did not finish in {seconds:g} s and was stopped: these "
        "diagnostics are not up to date", code="APK980", span=Span(file, 1, 1, 1, 1),
        help="a loop that runs long before its budgets stop it: give the editor a smaller "
        "apdsl.maxSteps or apdsl.maxTime, or a longer apdsl.timeLimit; "
        f"`apdsl check {file}` shows where it spends its steps")


def _failed(file: str, why: str) -> ApdslError:
    return ApdslRuntimeError(
        f"the check of this file ended without an answer: {why}", code="APK982",
        span=Span(file, 1, 1, 1, 1),
        help=f"run `apdsl check {file}`: it shows what ended the check (a kernel file that "
        "ends the process itself, os._exit or a signal, or a bug in apdsl)")
