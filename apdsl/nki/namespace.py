"""`nki.language` and `nki.isa`, sorted out of the one builtins table `.apk` programs use
(`apdsl.semantics.builtins`), so each name is the same model and every name added there
appears here: the NKI instructions and `ISA_NAMES` are `nki.isa`'s, the other NKI names
(dtypes, on-chip and HBM buffers, allocation, loops, launch) `nki.language`'s.  Each name
resolves, when used, to the builtins of the kernel call under way (`host.current()`)."""

from __future__ import annotations

import builtins as py
from difflib import get_close_matches
from typing import Any

from ..errors import ApdslNameError
from .locate import caller_span, importing_from

PYTHON = frozenset(vars(py))


class NkiNameError(ApdslNameError, AttributeError):
    """A name `nki.language`/`nki.isa` does not have: an apdsl diagnostic, and still an
    AttributeError so `hasattr` and `getattr(..., default)` keep working."""


class NkiImportNameError(ApdslNameError, ImportError):
    """The same, met by `from nki.X import name`: an ImportError there, since Python turns an
    AttributeError raised during `from ... import` into a bare ImportError of its own."""


def missing(message: str, **fields: Any) -> ApdslNameError:
    """The error for a name an NKI module lacks, located at the user's line that asked for it
    (an ImportError when that line is a `from ... import`)."""
    cls = NkiImportNameError if importing_from() else NkiNameError
    return cls(message, span=caller_span(2), **fields)


def _is_isa(name: str, value: Any) -> bool:
    from ..runtime import instructions as ins
    from ..semantics.builtins import INSTRUCTIONS, ISA_NAMES
    return name in ISA_NAMES or (name in INSTRUCTIONS and hasattr(ins, name))


def _is_nki(name: str, value: Any) -> bool:
    """An NKI name of the table: not an `.apk` host helper, not Python's own builtin, not of
    the Ascend family (its instructions, TLA functions and buffers)."""
    from ..semantics.builtins import APK_ONLY, INSTRUCTIONS, TLA
    from ..tensor import targets
    if name in APK_ONLY or name in TLA or (name in PYTHON and name != "float"):
        return False
    if name == "float":  # `float` is Python's in Python code; nl.float32 is the dtype
        return False
    if name in INSTRUCTIONS and not _is_isa(name, value):
        return False  # an Ascend instruction
    if isinstance(value, str) and name in targets.BUFFERS:
        return targets.family(name) == "nki"
    return True


_SHORT = {"language": "nl", "isa": "nisa"}


def names(space: str) -> list[str]:
    """The names of `space` ("language" or "isa"): NKI's own (the table's `nl.X` keys) and
    the NKI names of the shared builtins."""
    from .host import current
    table = current().builtins
    want_isa = space == "isa"
    own = _SHORT[space] + "."
    found = {n[len(own):] for n in table if n.startswith(own)}
    found.update(n for n, v in table.items()
                 if "." not in n and _is_nki(n, v) and _is_isa(n, v) == want_isa)
    return sorted(found)


def lookup(space: str, name: str) -> Any:
    """`nki.<space>.<name>` for the kernel call under way."""
    if name.startswith("__"):
        raise AttributeError(name)
    from .host import current
    table = current().builtins
    own = table.get(f"{_SHORT[space]}.{name}")  # NKI's meaning where it differs (nl.load)
    if own is not None:
        return own
    if name in table:
        value = table[name]
        if _is_nki(name, value) and _is_isa(name, value) == (space == "isa"):
            return value
    short = {"language": "nl", "isa": "nisa"}[space]
    other = {"language": "isa", "isa": "language"}[space]
    if name in table and _is_nki(name, table[name]):
        raise missing(f"{name} is in nki.{other}, not nki.{space}", code="APK144",
                      name=name, help=f"write {'nl' if other == 'language' else 'nisa'}"
                      f".{name}")
    close = get_close_matches(name, names(space), n=3)
    raise missing(
        f"apdsl.nki has no {short}.{name}", code="APK144", name=name,
        notes=[f"nki.{space} offers: {', '.join(names(space))}"],
        help=f"did you mean {', '.join(f'{short}.{c}' for c in close)}?" if close else None)
