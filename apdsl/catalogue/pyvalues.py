"""The Python builtins and methods `.apk` takes from NKI's Python (APK190-APK199)."""

from . import entry

ENTRIES = [
    entry("APK191", "isinstance() given something that is not a type", """
`isinstance(value, T)` takes as T one of the type builtins (`int`, `float`, `bool`, `str`,
`tuple`, `list`, `dict`, `set`, `range`, and `ndarray`/`nl.ndarray` for a tensor) or a tuple of
them. Any other value (a number, a string, a tensor) is an error at that argument.
""", """
x = isinstance(3, "int")
"""),
    entry("APK192", "format field reads into its argument", """
A `str.format` template may name an argument (`{}`, `{0}`, `{name}`) and give it a format spec
(`{:>8.3f}`, `{!r}`), but not read an attribute or an item of it (`{0.shape}`, `{0[1]}`):
that would reach past the sandbox, which exposes only the attributes a value lists. Compute
the value first and format that.
""", """
t = (1, 2)
s = "{0[1]}".format(t)
"""),
]
