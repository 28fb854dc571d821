"""`apdsl script FILE.py ARG...`: a Python program run as `python FILE.py ARG...` runs it, its
`if __name__ == "__main__":` block included, with `import nki` (and `neuronxcc.nki`,
`torch_xla`, `asc`) resolving to apdsl where the real packages are absent.  This is how a
tutorial's launch script (make inputs, call the kernel, compare with NumPy or torch, print) runs
unchanged on a machine without the accelerator.

The program is the user's: its output and exit status are its own (`sys.exit(n)` ends with n).
An apdsl diagnostic ends it as every command reports one (located, exit 1); an exception of the
program's own Python is APK148, its traceback showing the program's frames only.  The warnings
of the kernels it called (an output written and not returned, APK181, say) are reported on
stderr when it ends, however it ends, before what ended it; each once."""

from __future__ import annotations

import os
import runpy
import sys

from ..errors import ApdslError
from ..runtime.sync.warn import take_warnings
from .plumbing import fail, headed, report


def run_script(file: str, args: list[str]) -> int:
    from ..semantics.program import read_source
    try:
        read_source(file)  # (a missing or unreadable file: APK601, as every command says)
    except ApdslError as e:
        raise fail([e], {}, file) from None
    from ..asc.install import install as install_asc
    from ..nki.install import install as install_nki
    from ..nki.usercode import from_exception, users
    install_nki()
    install_asc()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [file, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(file)))  # as `python FILE.py` does
    try:
        runpy.run_path(file, run_name="__main__")
    except SystemExit as e:
        report(headed(_warnings(), file), {})
        return _status(e.code)
    except ApdslError as e:
        raise fail([*_warnings(), e], {}, file) from None
    except BaseException as e:  # noqa: BLE001 - the program's own exception, whatever it is
        if not users(e):
            raise
        raise fail([*_warnings(), from_exception(e)], {}, file) from None
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    report(headed(_warnings(), file), {})
    return 0


def _warnings() -> list[ApdslError]:
    """The warnings of the kernels the program called, each once: a kernel called in a loop
    (a benchmark's warm-up and iterations) warns the same way on every call."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for w in take_warnings():
        key = (w.code, w.message, repr(w.span))
        if key not in seen:
            seen.add(key)
            out.append(w)
    return out


def _status(code: object) -> int:
    """The exit status `sys.exit(code)` gives (None 0, an int itself, anything else printed
    and 1), as Python's own exit does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1

