"""The report of a test that failed on an apdsl error under `pytest -p apdsl.nki`, told as the
command line tells it.  pytest loads this plugin because `apdsl.nki` lists it in
`pytest_plugins`: rendering diagnostics is the surfaces' job, above the NKI frontend."""

from __future__ import annotations

from typing import Any


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

    from ..nki.locate import is_user_file
    from .diagnostics import render
    from .plumbing import with_module_sources
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
    lines = [f"Traceback of your code (apdsl's frames left out):\n{text}\n{diagnostic}\n"]
    # a native traceback's representation (pytest's own, as for --tb=native, which xdist
    # carries to the controller), whose crash line is the diagnostic's header: the short
    # summary reads `FAILED test_x.py::test_y - error[APK301]: psum tensor has ...`
    from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative
    report.longrepr = ReprExceptionInfo(
        reprtraceback=ReprTracebackNative(lines),
        reprcrash=ReprFileLocation(shown.span.file, shown.span.line,
                                   f"error[{exc.code}]: {exc.message}"))
    return report


def _relative(path: str) -> str:
    import os
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
