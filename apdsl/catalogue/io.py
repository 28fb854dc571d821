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
`load` and `save` paths must resolve, symbolic links followed, inside the program's folder (the
.apk file's folder; the working directory in the REPL; `base_dir` for `apdsl.run(source)`):
programs are sandboxed, so neither `..`, an absolute path nor a link pointing elsewhere may
lead out.
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
`-o`, `--svg` or `save` cannot write: the folder does not exist or is not writable, or the
write itself failed (a full disk, a device that refuses data). Nothing is left half-written: a
file is written to a temporary name and renamed into place, so on failure the old file survives.
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
    entry("APK608", ".npy header does not match the file", """
A `.npy` file's header gives its shape and dtype; the data that follows must be exactly that
many bytes. A truncated file, or one whose header claims more (a 200-byte file claiming 745 GiB,
a shape whose product overflows), is refused before any memory is allocated.
""", """
# short.npy: a header claiming shape (1000000, 1000000) and 16 bytes of data
x: f32[4] @ hbm = load("short.npy")
"""),
    entry("APK609", ".npy file holds Python objects", """
A `.npy` file of dtype `object` stores pickled Python objects, and unpickling runs code of the
file's choosing. apdsl never unpickles: save numeric arrays (`numpy.save(path, a,
allow_pickle=False)`).
""", """
# objects.npy: an array of dtype object
x: f32[2] @ hbm = load("objects.npy")
"""),
    entry("APK610", "output path is not a file", """
`-o`, `--svg` and `save` write files. A folder cannot be replaced by one, and `save` writes
only new or regular files (not devices or FIFOs; `-o` writes into an existing device or FIFO in
place, so `-o /dev/null` works). Name a file.
""", """
# apdsl run example.apk -o .
kernel k(A: f32[4] @ hbm):
    return A
"""),
    entry("APK611", "result is not a tensor", """
`-o` writes a kernel's result as the logical contents of a tensor. A kernel that returns a
dict, a list, a function or a plain number has nothing `-o` can write as an array; return the
tensor (or a tuple of tensors, written with `-o OUT.npz`).
""", """
# apdsl run example.apk -o out.npy
kernel k(A: f32[4] @ hbm):
    return {"a": A}
"""),
    entry("APK612", "a tuple result needs .npz", """
A kernel returning a tuple has several arrays to write; a `.npy` file holds one. Write them with
`-o OUT.npz`: an archive of arrays `r0`, `r1`, ... in the tuple's order (`numpy.load` reads it).
""", """
# apdsl run example.apk -o out.npy
kernel k(A: f32[4] @ hbm, B: f32[4] @ hbm):
    return A, B
"""),
    entry("APK613", "save writes .npy files only", """
`save(value, PATH)` writes a `.npy` file, so PATH must end in `.npy`: a program may not
overwrite its own source, a module or any other file of its folder (`save(x, "self.apk")`), and
an empty name or `.` names no file.
""", """
x: f32[4] @ hbm = arange
save(x, "self.apk")
"""),
]
