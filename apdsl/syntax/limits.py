"""The fixed limits of SPEC section 15 that the language's syntax and semantics share: integer
and sequence sizes, helper call depth and source nesting, and the errors that report them.

They live at the bottom layer because the parser needs them as much as the interpreter: an
integer literal beyond 2**1024 and a block nested too deeply are refused while parsing.
"""

from __future__ import annotations

from ..errors import LimitError

MAX_INT = 2 ** 1024  # integers beyond this magnitude are errors
MIN_INT = -MAX_INT
MAX_INT_BITS = 1025  # bit length of MAX_INT; a larger bit length is beyond it
MAX_ELEMENTS = 100_000_000  # characters of a string, elements of a list or tuple
MAX_CALL_DEPTH = 1_000  # helper calls under way at once
MAX_NESTING = 200  # open blocks and brackets in the source
# The Python recursion the interpreter may use: about 7 frames per helper call (so 1,000
# helper calls fit) plus deep expressions.  Measured safe for CPython's C stack at 8 MiB.
RECURSION_LIMIT = 20_000
COPY_STEP = 64  # building a string, list or tuple costs a step per this many elements


def int_too_large(what: str = "integer") -> LimitError:
    return LimitError(f"{what} too large: its magnitude exceeds 2**1024", code="APK802",
                      help="apdsl integers are limited to 2**1024 (about 1.8e308) in magnitude; "
                           "the limit is fixed", limit="2**1024")


def too_long(kind: str, n: int) -> LimitError:
    unit = "characters" if kind == "string" else "elements"
    return LimitError(f"{kind} too long: {n:,} {unit}, more than the limit of "
                      f"{MAX_ELEMENTS:,}", code="APK803", length=n,
                      help=f"strings, lists and tuples are limited to {MAX_ELEMENTS:,} elements "
                           f"(characters of a string); the limit is fixed (keep large data in "
                           f"tensors)")


def int_literal(text: str) -> int | None:
    """The value of an integer literal, or None when it is beyond 2**1024 (checked on the
    digits first, so a 5,000-digit literal costs nothing).  ValueError for a decimal literal
    with leading zeros, which Python does not allow either."""
    body = text.replace("_", "")
    base = {"0x": 16, "0o": 8, "0b": 2}.get(body[:2].lower(), 10)
    if base == 10 and body[0] == "0" and body.strip("0"):
        raise ValueError("leading zeros")
    digits = (body[2:] if base != 10 else body).lstrip("0") or "0"
    bits_per_digit = {16: 4, 8: 3, 2: 1, 10: 3.33}[base]
    if len(digits) * bits_per_digit > MAX_INT_BITS + 8:
        return None
    value = int(digits, base)
    return None if value > MAX_INT else value


def recursion_too_deep(name: str) -> LimitError:
    return LimitError(f"recursion too deep: more than {MAX_CALL_DEPTH:,} calls of helpers under "
                      f"way (in {name})", code="APK123", limit=MAX_CALL_DEPTH,
                      help="helper recursion is limited to 1,000 calls and the limit is fixed; "
                           "check the recursion's base case, or write it as a loop")


def nested_too_deeply() -> LimitError:
    return LimitError("expression nested too deeply for apdsl to evaluate", code="APK126",
                      help="split it into several statements with intermediate names")
