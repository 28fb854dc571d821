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


def lookup(code: str) -> Entry | None:
    return all_entries().get(code.upper())
