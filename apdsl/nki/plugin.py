"""The pytest plugin: `pytest -p apdsl.nki` installs apdsl as `nki` (when the real package is
absent) before conftest files and test modules are imported.  The `pytest11` entry point
(`apdsl.nki.entry`) adds `--apdsl-nki`, which does the same when asked."""

from __future__ import annotations

from typing import Any


def pytest_load_initial_conftests(early_config: Any) -> None:
    from .install import install
    install()


def pytest_configure(config: Any) -> None:
    from .install import install
    install()  # idempotent: also covers a plugin registered after the initial conftests


def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """A test that failed on an apdsl error is reported as the command line reports it: the
    user's frames (test and kernel, apdsl's own left out), then the diagnostic as `.apk`
    renders it, the kernel's source line underlined, with notes and help."""
    from ..errors import ApdslError, Span
    exc = call.excinfo.value if call.excinfo is not None else None
    if not isinstance(exc, ApdslError) or exc.span is None:
        return None
    import traceback

    from _pytest.reports import TestReport  # the report pytest would make, then retold

    from ..surfaces.cli import with_module_sources
    from ..surfaces.diagnostics import render
    from .locate import is_user_file
    report = TestReport.from_item_and_call(item, call)
    frames = list(traceback.extract_tb(exc.__traceback__))
    test_file = str(item.path)
    start = next((i for i, f in enumerate(frames) if f.filename == test_file), 0)
    frames = [f for f in frames[start:] if is_user_file(f.filename)]  # pytest's: before it
    text = "".join(traceback.StackSummary.from_list(frames).format())
    sp = exc.span  # named relative to the working folder, as pytest does
    shown = exc.replace(span=Span(_relative(sp.file), sp.line, sp.column, sp.end_line,
                                  sp.end_column))
    diagnostic = render(shown, with_module_sources({}, [shown]), color=False)
    report.longrepr = (f"Traceback of your code (apdsl's frames left out):\n{text}\n"
                       f"{diagnostic}")
    return report


def _relative(path: str) -> str:
    import os
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
