"""Catalogue of every error code: a title, an explanation and an example that triggers it.

Each layer keeps its entries in its own module here (`syntax`, `language`, `views`, `targets`,
`runtime`, `formats`, `io`, `patterns`, `limits`, `sync`, `commandline`, ...: every module of
the package is an area); `apdsl explain` and the tests read the merged table.
"""

from __future__ import annotations

from importlib import import_module

from ..records import record


def _areas() -> tuple[str, ...]:
    """Every module of this package: each area's entries, found without a list to keep (every
    lane adding codes adds a module here, and nothing else)."""
    from pkgutil import iter_modules
    return tuple(sorted(m.name for m in iter_modules(__path__) if not m.name.startswith("_")))


AREAS = _areas()


@record
class Entry:
    code: str
    title: str
    explanation: str
    example: str  # an .apk program (or fragment) that triggers the code


def entry(code: str, title: str, explanation: str, example: str) -> Entry:
    return Entry(code, title, explanation.strip(), example.strip("\n"))


def all_entries() -> dict[str, Entry]:
    table: dict[str, Entry] = {}
    for area in AREAS:
        try:
            module = import_module(f"{__name__}.{area}")
        except ModuleNotFoundError:
            continue
        for e in module.ENTRIES:
            if e.code in table:
                raise RuntimeError(f"duplicate catalogue code {e.code}")
            table[e.code] = e
    return dict(sorted(table.items()))


def normalise(code: str) -> str:
    """`apk302`, ` APK302 ` and `302` all name APK302."""
    code = code.strip().upper()
    return f"APK{code}" if code.isdigit() else code


def lookup(code: str) -> Entry | None:
    return all_entries().get(normalise(code))


def suggest(code: str, limit: int = 5) -> tuple[Entry, ...]:
    """The entries a mistyped or partial code most likely meant.  Codes are grouped by their
    leading digits (APK3xx: memory and capacity, ...), so a prefix (`APK30`) means that group and
    a number means its numeric neighbours; spelling distance would pair APK30 with APK930."""
    table = all_entries()
    code = normalise(code)
    group = [e for c, e in table.items() if c.startswith(code)]
    if group:
        return tuple(group[:limit])
    digits = code.removeprefix("APK")
    if not digits.isdigit():
        return ()
    # a digit too many or too few is the commonest slip: compare at the catalogue's width
    width = len(next(iter(table), "APK000")) - 3
    number = int(digits[:width].ljust(width, "0"))
    near = sorted(table.values(), key=lambda e: (abs(int(e.code[3:]) - number), e.code))
    return tuple(near[:min(limit, 3)])
