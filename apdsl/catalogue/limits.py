"""The limits of SPEC section 15 (APK801-APK804, APK125, APK126): what no program can exceed."""

from . import entry

ENTRIES = [
    entry("APK801", "step budget exhausted", """
A program (or a check of it) ran more than its step budget, 100,000,000 steps unless raised.
A step is a simple statement, an `if` or loop test, a loop iteration, a call (builtins
included), an element a builtin walks (`list`, `tuple`, `sorted`, `sum`, `min`, `max`,
`dict`, `prod`, and the nested elements `print` and `str` show), or 64 elements of a string,
list or tuple that `+`, `*` or `%` builds (so `s = s + "ab"` in a long loop, quadratic work,
cannot run for ever). The budget makes every program end: `for i in range(10**12)` stops instead of
running for days. Raise it with `--max-steps N` on the command line or
`apdsl.options(max_steps=N)` in Python; `check` obeys the same budget, since it walks the
loops too.
""", """
# python
with apdsl.options(max_steps=1_000):
    apdsl.run("total = 0\\nfor i in range(10**12):\\n    total = total + i\\n")
"""),
    entry("APK802", "integer too large", """
An integer's magnitude would exceed 2**1024 (about 1.8e308, the range of a float64). The
limit is fixed; it is checked before an operation that would build a huge number runs, so
`10**10**10` is this error at once rather than a hang. An integer literal beyond the limit is
the same error when the file is parsed.
""", """
x = 10 ** 10 ** 10
"""),
    entry("APK803", "string or list too long", """
A string would have more than 100,000,000 characters, or a list or tuple more than 100,000,000
elements. The limit is fixed and checked before the value is built (`"a" * 10**10` needs no
memory to be refused). Keep large data in tensors, which the memory budget bounds.
""", """
x = "a" * 10 ** 10
"""),
    entry("APK804", "time budget exhausted", """
A program (or a check of it) ran longer than its time budget, counted in seconds of processor
time.  `check` has a budget of 10 seconds unless given one: it moves no data, so a correct
program checks in far less, and a loop that never ends (`while True:` whose exit is never
reached) stops within seconds instead of walking 100,000,000 steps for minutes.  `run`,
`lower`, `profile` and `show` have no time budget unless given one (the step budget still ends
every program).  Set it with `--max-time SECONDS` on the command line or
`apdsl.options(max_time=SECONDS)` in Python.
""", """
# python
with apdsl.options(max_time=0.2):
    apdsl.run("n = 0\\nwhile True:\\n    n = n + 1\\n")
"""),
    entry("APK125", "too deeply nested", """
The source nests more than 200 levels of blocks (indented `if`, `for`, `def`, `kernel` bodies)
and open brackets together. The limit is fixed, as CPython limits nested parentheses; long
flat expressions (`1 + 1 + ... + 1`, a chain of 400 `.slice` calls) are not nesting and are
fine. Move inner parts into helpers or intermediate names.
""", """
x = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))
"""),
    entry("APK126", "expression nested too deeply", """
An expression is too deep for the interpreter to evaluate (thousands of operators or calls
inside one another, which Python's own recursion could not follow). Split it into several
statements with intermediate names.
""", """
x = """ + "-" * 30000 + """1
"""),
]
