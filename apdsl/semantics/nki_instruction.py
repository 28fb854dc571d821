"""`nisa.NkiInstruction` (NKI isa reference): the handle an `nisa` instruction call returns, whose
`.depends_on(*producers)` adds scheduling dependencies ("this instruction runs after every
listed producer completes", lowered to a hardware semaphore wait).

apdsl runs a kernel's instructions one after another in program order, so the values a kernel
computes never depend on such an edge; what an edge changes is the schedule, and apdsl's
profile orders instructions by their data (read after write, write after read or write) and by
each engine's program order only: it has no explicit edges.  So `depends_on` is a located
error (APK938) naming that, rather than a dependency silently left out of the timeline.  Its
arguments are checked first (each an `NkiInstruction`), as the reference types them."""

from __future__ import annotations

from typing import Any

from ..errors import ApdslTypeError


class NkiInstruction:
    """Opaque handle to an issued NKI instruction (`op`: its name)."""

    __slots__ = ("op",)

    def __init__(self, op: str) -> None:
        self.op = op

    def depends_on(self, *producers: Any) -> NkiInstruction:
        for i, p in enumerate(producers):
            if not isinstance(p, NkiInstruction):
                raise ApdslTypeError(
                    f"{self.op}.depends_on: producer {i} is {type(p).__name__}, not an "
                    "NkiInstruction (what an nisa instruction call returns)", code="APK938",
                    param=("producers", i))
        names = ", ".join(p.op for p in producers) or "nothing"
        raise ApdslTypeError(
            f"{self.op}.depends_on({names}): apdsl does not model explicit scheduling "
            "dependencies between instructions", code="APK938",
            notes=["apdsl runs instructions in program order (the values do not depend on "
                   "the edge) and its profile orders them by their data and each engine's "
                   "program order; an explicit edge would change only the timeline"],
            help="remove the depends_on call to run the kernel on apdsl; where the order "
                 "matters to the data, the data dependency already orders it")

    def __repr__(self) -> str:
        return f"<NkiInstruction {self.op}>"
