"""Files: programs, modules and .npy data (APK6xx)."""

from . import entry

ENTRIES = [
    entry("APK601", "cannot read file", """
A program, module or `.npy` file does not exist, is a folder, or cannot be read.
""", """
x: f32[4, 4] @ hbm = load("no_such_file.npy")
"""),
    entry("APK602", "no such module", """
`import M` looks for M.apk next to the importing file, then in apdsl's stdlib/.
""", """
import no_such_module
"""),
    entry("APK603", "path outside the program's folder", """
`load` and `save` use paths relative to the .apk file and may not leave its folder (no absolute
paths, no '..'): programs are sandboxed.
""", """
x: f32[4, 4] @ hbm = load("/etc/passwd")
"""),
    entry("APK604", "circular import", """
Module A imports B which imports A again while A is still loading.
""", """
# a.apk: import b      b.apk: import a
import _apk604_self
"""),
    entry("APK605", "not a valid file", """
A `.npy` file that NumPy cannot read (truncated, pickled objects, not an array), or a program
that is not UTF-8 text.
""", """
# corrupt.npy holds text, not an array
y: f32[4] @ hbm = load("corrupt.npy")
"""),
    entry("APK606", "cannot write file", """
`-o` or `save` cannot write: the folder does not exist or is not writable. Nothing is left
half-written: files are written to a temporary name and renamed into place.
""", """
x: f32[4] @ hbm = arange
save(x, "no_such_folder/out.npy")
"""),
    entry("APK607", "nothing to write", """
`-o OUT.npy` was given but the program has no kernel result.
""", """
# apdsl run no_kernel.apk -o out.npy
x: f32[4] @ hbm = arange
"""),
]
