"""The language server and the notebook (APK980-APK989): what `apdsl lsp` and `%%apk` tell
about a check itself, as opposed to what the program holds."""

from . import entry

ENTRIES = [
    entry("APK980", "a check in the editor was stopped", """
`apdsl lsp` checks each file in a process of its own, as you type; a check that runs past the
editor's wall-clock limit (`apdsl.timeLimit`, 30 seconds unless set) is stopped, so that a
program whose loops run long before a budget ends them never holds the editor up. The
diagnostics shown are then not up to date: this warning at the top of the file says so. The
step and time budgets (`apdsl.maxSteps`, `apdsl.maxTime`, as `apdsl check --max-steps` and
`--max-time`) end such a program with its own diagnostic (APK801, APK804) at the loop; give the
editor smaller ones, or a longer `apdsl.timeLimit`, and `apdsl check FILE` in a terminal shows
where the steps go.
""", """
# python
# (the editor's check of an endless loop whose budgets are set high; limit 1 second)
import asyncio
from apdsl.surfaces.editor.jobs import Budgets, run_job
asyncio.run(run_job({"op": "check", "file": "endless.apk", "source": "while True:\\n    pass\\n"},
                    Budgets(max_steps=10**12, max_time=10**6, time_limit=1)))
"""),
    entry("APK981", "a kernel the editor cannot check on its own", """
`apdsl check FILE` needs to know which kernel to check when a file has several, and a kernel
whose parameters declare no shapes (a Python kernel's parameters, an untyped `.apk` one) needs
`-i` inputs to be checked. The editor has no `-i`: it checks each kernel, and a Python kernel
with parameters on the inputs its file gives, as `apdsl check FILE KERNEL -i ...` would with
`.npy` files of those shapes: parameters annotated `nki.typing.tensor[shape, dtype]`
(`a: nt.tensor[128, 64, nl.float32]`), else the first call of the kernel in the file's
`if __name__ == "__main__":` block (the block runs until that call, at most 5 seconds, and stops
there: the call's arrays give shapes and dtypes, its numbers their values, its launch the grid).
Where the file gives none, this note (information, not an error) at the kernel says why: which
parameter lacks an annotation, and whether the file has no such block, the block ended without
calling the kernel, or stopped with an error first. Annotate the parameters, call the kernel
from the `__main__` block, or check it from the command line with its inputs
(`apdsl check FILE KERNEL -i NAME=FILE.npy`).
""", """
# python
# (the editor's check of a Python kernel with a parameter: its shape comes from -i)
from apdsl.surfaces.editor.worker import checked
raise checked("apk981_kernel.py", "import nki\\n@nki.jit\\ndef scale(x):\\n    return x\\n")[0]
"""),
    entry("APK982", "a check in the editor ended without an answer", """
The process that checks a file for the editor ended without giving its diagnostics. A Python
kernel file can end the process itself when it is imported (`os._exit`, a signal, a crash in
an extension module it loads); otherwise it is a bug in apdsl. The message gives the last line
the process wrote; `apdsl check FILE` in a terminal shows the whole story.
""", """
# python
# (the editor's check of a kernel file that ends the process when imported)
import asyncio
from apdsl.surfaces.editor.jobs import Budgets, run_job
source = "import os\\nos._exit(3)\\n"
asyncio.run(run_job({"op": "check", "file": "ends.py", "source": source}, Budgets()))
"""),
    entry("APK983", "a %%apk cell's first line is wrong", """
In a notebook, `%%apk [KERNEL] [-i NAME[=VARIABLE]]... [-o VARIABLE] [--target T] [--check |
--profile]` runs the cell as a program. Its first line names the kernel to run (needed when
the cell has several), the notebook variables that are the kernel's inputs (`-i A=a`: the
NumPy array `a` is parameter `A`; `-i A` takes the variable `A`) and where the result goes. An
option it does not know, an `-i` naming a variable the notebook does not have, or a cell of
several kernels with none named is this error; nothing runs.
""", """
# python
# (a cell whose -i names no variable of the notebook)
from apdsl.surfaces.notebook.magic import run_cell
shown = []
run_cell("k -i A=missing", "kernel k(A: f32[4] @ hbm) -> f32[4] @ hbm:\\n    return A\\n",
         {}, shown.append)
raise shown[0].errors[0]
"""),
]
