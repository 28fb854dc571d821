"""Hardware targets: buffers, capacities and the limits instructions are checked against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import ApdslNameError
from ..records import record
from .machine import current

KiB = 1024
MiB = 1024 * KiB

NKI_ONCHIP = ("sbuf", "psum")
NKI_HBM = ("hbm", "private_hbm", "shared_hbm")
ASCEND = ("gm", "l1", "l0a", "l0b", "l0c", "ub", "bt")
BUFFERS = NKI_ONCHIP + NKI_HBM + ASCEND


def family(buffer: str) -> str:
    return "ascend" if buffer in ASCEND else "nki"


def is_onchip(buffer: str) -> bool:
    return buffer in NKI_ONCHIP


def buffer_name(value: object) -> str:
    if isinstance(value, str):
        key = value.removeprefix("nl.").lower()
        if key in BUFFERS:
            return key
        from difflib import get_close_matches
        close = get_close_matches(key, BUFFERS, n=2)
        raise ApdslNameError(f"unknown buffer '{value}'", code="APK105",
                             help=f"did you mean {' or '.join(map(repr, close))}?" if close
                             else f"buffers are: {', '.join(BUFFERS)}", name=value)
    raise ApdslNameError(f"not a buffer: {value!r}", code="APK105")


@record
class Target:
    name: str
    family: str
    partitions: int = 128
    # bytes per partition for partitioned buffers, total bytes otherwise; None = unbounded
    capacity: dict[str, int | None] | None = None
    max_free_entries: int = 4  # free [stride, count] entries of a lowered on-chip AP
    psum_bank_bytes: int = 2 * KiB
    psum_banks: int = 8
    matmul_max_n: int = 512
    has_indirect: bool = False  # Tensor Indirection (trn3)

    def capacity_of(self, buffer: str) -> int | None:
        return (self.capacity or {}).get(buffer)

    def describe(self, buffer: str) -> str:
        cap = self.capacity_of(buffer)
        if cap is None:
            return f"{buffer} is unbounded"
        if is_onchip(buffer):
            return (f"{buffer} on {self.name}: {self.partitions} partitions of {cap // KiB} KiB "
                    f"({self.partitions * cap // MiB} MiB)")
        return f"{buffer} on {self.name}: {cap // KiB} KiB"


def _nki(name: str, sbuf_kib: int, matmul_n: int, indirect: bool) -> Target:
    return Target(name, "nki", capacity={"sbuf": sbuf_kib * KiB, "psum": 16 * KiB,
                                         "hbm": None, "private_hbm": None, "shared_hbm": None},
                  matmul_max_n=matmul_n, has_indirect=indirect)


TARGETS: dict[str, Target] = {
    "trn1": _nki("trn1", 192, 512, False),
    "trn2": _nki("trn2", 224, 512, False),
    "trn3": _nki("trn3", 256, 4096, True),
    "ascend-a2": Target("ascend-a2", "ascend", partitions=1, capacity={
        "gm": None, "l1": 512 * KiB, "l0a": 64 * KiB, "l0b": 64 * KiB, "l0c": 128 * KiB,
        "ub": 192 * KiB, "bt": 1 * KiB}),  # bt: the bias table (CATLASS AtlasA2::BIAS_SIZE)
}

def get_target(name: str) -> Target:
    """The target named `name` (`trn1`, `trn2`, `trn3`, `ascend-a2`): partitions, capacities and
    limits.

    >>> t = apdsl.get_target("trn1")
    >>> t.family, t.partitions, t.capacity["sbuf"] // 1024
    ('nki', 128, 192)
    """
    key = name.lower()
    if key not in TARGETS:
        from difflib import get_close_matches
        close = get_close_matches(key, TARGETS, n=2)
        raise ApdslNameError(f"unknown target '{name}'", code="APK106",
                             help=f"did you mean {' or '.join(map(repr, close))}?" if close
                             else f"targets are: {', '.join(TARGETS)}", name=name)
    return TARGETS[key]


def target_for(buffer: str) -> Target:
    """The target generation in force for a buffer's family (on the current machine)."""
    return TARGETS[current().targets[family(buffer)]]


def set_target(name: str) -> Target:
    """Make `name` the current target of its family (NKI or Ascend) on the current machine and
    return it; `target(name)` does the same for a `with` block only.

    >>> apdsl.set_target("trn3").has_indirect
    True
    >>> apdsl.set_target("trn2").name
    'trn2'
    """
    t = get_target(name)
    current().targets[t.family] = t.name
    return t


@contextmanager
def target(name: str) -> Iterator[Target]:
    """Within the `with` block, `name` is the current target of its family; the previous one is
    restored on exit.

    >>> with apdsl.target("trn1") as t:
    ...     t.name, t.capacity["sbuf"] // 1024
    ('trn1', 192)
    """
    t = get_target(name)
    generations = current().targets
    saved = dict(generations)
    generations[t.family] = t.name
    try:
        yield t
    finally:
        generations.clear()
        generations.update(saved)
