"""Syntax errors (APK0xx): raised by `apdsl.syntax.parser.parse`."""

from . import entry

ENTRIES = [
    entry("APK001", "unexpected token", """
The parser met a token that cannot continue the program at that point.  The message lists what
could have come instead, in words ("expected ')' or ','", "expected an expression",
"expected end of line"), and a note names what was found.  Common causes: a missing comma or
operator between two values, a missing ':' after `if`/`for`/`def`/`kernel`, or a closing
bracket that does not match the opening one.
""", """
x = max(1 2)
"""),
    entry("APK002", "unexpected character", """
The text contains a character that is not part of the language outside a string or comment,
such as `$`, `?`, a backtick, or typographic quotes pasted from a document.  Strings use
straight quotes: "..." or '...'.
""", """
x = 3 $ 4
"""),
    entry("APK003", "indentation error", """
Blocks are marked by indentation, as in Python: the body of `if`, `elif`, `else`, `for`,
`def` and `kernel` is indented under the line ending in ':', and a block ends when a line
returns to an outer indentation.  This error means a line is indented where no block starts
("unexpected indent"), a block is missing ("expected an indented block"), a line dedents to a
level no open block uses, or the indentation contains a tab (indent with spaces only).
""", """
if True:
x = 1
"""),
    entry("APK004", "unterminated string", """
A string literal is not closed before the end of its line ('...' and "...") or before the end
of the file (triple-quoted strings).  Close it with the same quote that opened it; a quote
inside the string is written with a backslash: "say \\"hi\\"".
""", """
pattern = "b (h w -> b h w
"""),
    entry("APK005", "unexpected end of file", """
The file ended in the middle of a construct: a bracket was opened and never closed, or a line
ending in ':' has no indented block after it.  The note says what was expected and a label
points at the bracket left open.  (The REPL uses this code to know that an input continues on
the next line.)
""", """
x = dma_copy(dst=a, src=b
"""),
    entry("APK006", "invalid assignment target or declaration", """
The left of '=' must be something that can hold a value: a name, an element `t[i]`, or a tuple
of them (`a, b = ...`).  A function call or a literal cannot be assigned to; write into a tensor
with an instruction such as `dma_copy`.  A declaration `NAME: TYPE` needs a type of the form
`DTYPE[D0, D1, ...] @ BUFFER [as FORMAT]` (for example `f32[128, 64] @ sbuf`), as do kernel
parameters; a loop variable must be a name or a tuple of names.
""", """
f(x) = 1
"""),
    entry("APK007", "malformed construct", """
The text breaks a rule of the language.  Most often it is Python that `.apk` does not take:
`class`, `try`/`except`/`finally`, `with`, generators (`yield`), `global`/`nonlocal`,
`async`/`await`, assignment expressions (`:=`), `*args`/`**kwargs` parameters, or any other
Python syntax outside the part of Python that NKI kernels are written in (SPEC section 3).  The
message says "not part of .apk" and the help names the Python frontend, `apdsl run FILE.py`,
which runs any Python.  The same code covers a positional argument after a keyword argument, a
repeated keyword argument or parameter, a parameter without a default after one with a
default, a starred expression where none may stand, an invalid escape sequence in a string,
and a decimal integer with leading zeros.
""", """
class Tile:
    pass
"""),
]
