"""The Python that NKI kernels are written in, as `.apk` runs it (APK040-APK059): raising
exceptions, f-strings, element and attribute assignment."""

from . import entry

ENTRIES = [
    entry("APK040", "exception raised", """
The program ran `raise ValueError("...")` (or another of Python's exception classes:
`Exception`, `TypeError`, `RuntimeError`, `AssertionError`, `NotImplementedError`, ...).  The
program stops there with the exception's name and message, underlined at the `raise`; `check`
reports it like a failing `assert`.  `.apk` has no `try`, so a bare `raise` (which re-raises the
exception being handled) and raising a value that is not an exception are errors too.
""", """
kernel k(A: f32[128, 64] @ hbm):
    if A.shape[1] != 128:
        raise ValueError(f"expected 128 columns, got {A.shape[1]}")
"""),
    entry("APK041", "malformed f-string", """
An f-string's replacement field is `{expression}`, optionally followed by `=`, a conversion
(`!r`, `!s` or `!a`) and a format spec (`:>8`, `:.3f`, `:{width}`).  This error means a `{` is
never closed, a single `}` stands in the text (write a literal brace as `{{` or `}}`), a field
is empty, the conversion is not r, s or a, a spec nests fields more than one level deep, or the
expression does not parse (its own error is in the message).  The characters at fault are
underlined.
""", """
x = 3
label = f"x = {x"
"""),
    entry("APK042", "value has no elements to assign or delete", """
Item and slice assignment (`a[i] = v`, `a[i:j] = [..]`, `a[i] += 1`) and `del a[i]` work on
lists and dicts (and assignment on host arrays, the values `host(t)` gives).  A tuple or a
string cannot be changed: build a new one.  (A tensor's elements are written by instructions:
that is APK107.)
""", """
shape = (128, 64)
shape[0] = 256
"""),
    entry("APK043", "attribute cannot be set", """
No value in `.apk` has attributes a program may set or delete: tensors, dtypes, modules and
host values expose attributes to read (`t.shape`, `t.dtype`), and a tensor's layout changes only
through its methods, which return new views.  Keep the value in a name or a dict entry instead.
""", """
t: f32[128, 64] @ sbuf
t.name = "tile"
"""),
    entry("APK044", "value cannot be formatted with this spec", """
An f-string field's format spec is Python's (`{x:8.3f}`, `{n:>6}`, `{n:#x}`, `{s:^20}`) and
must suit the value: a number spec on a string, or any spec on a tensor, a list or a host array,
is an error.  Show such values with `{x}` or `{x!r}`.  A width or precision beyond the string
size limit is APK803.
""", """
name = "tile"
label = f"{name:.3f}"
"""),
    entry("APK045", "dictionary or set changed during iteration", """
A `for` loop (or a comprehension) walks a dict, a set or a dict's `keys()`, `values()` or
`items()`, and its body added or removed an element of it.  Python stops such a loop with
`RuntimeError: dictionary changed size during iteration`; `.apk` reports the same, at the loop
being walked.  Walk a copy (`for k in list(d):`), or collect the changes in another dict and
apply them after the loop (`d.update(new)`).
""", """
d = {"a": 1}
for k in d:
    d[k + "x"] = 1
"""),
]
