"""The platform a repository's test asks for.  nki-library's conftest turns its
`--platform-target` option (trn2 by default) into a mark expression, and marks each test with
the platforms it does not exclude (`@pytest.mark.platforms(exclude=[TRN1, TRN2])` on the
trn3-only ones), so that a run for one platform deselects every test of another.  A corpus run
measures the kernel the tests drive rather than one platform: when none of the tests chosen for
a kernel is for the option's platform, `PlatformChooser` (a pytest plugin) sets the option to a
platform they are for, as a user running them with `--platform-target trn3` would, so they run
and the test's `CompilerArgs(platform_target=...)` puts the kernel under that target's rules.

When some of the tests are for the option's platform, they run on it; the others (deselected by
their marks, or skipping themselves at run time with a reason naming another platform, as
nki-library's MX tests do on trn2: "MX is only supported on TRN3.") are kept in `elsewhere`, so
that a kernel none of the first tests reached is measured by them on their own platform (a
second session, `PlatformChooser(force=...)`): nki-library's MX kernels are reached only by
tests for trn3, beside tests for trn2 of the same entry point at other dtypes."""

from __future__ import annotations

import os
import re
from typing import Any

# the repositories' platform names, the SDK's order of preference after the option's own
PLATFORMS = ("trn2", "trn3", "trn1")
OPTION = "platform_target"


def _marks(item: Any) -> set[str]:
    return {m.name for m in item.iter_markers()}


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?![\w.])")


def choose(current: str, items: list[Any]) -> str | None:
    """The platform to run `items` on, when the option's `current` one deselects them all;
    None when some item is for `current` (or none is for any platform)."""
    marked = [_marks(i) for i in items]
    if not marked or any(current in m for m in marked):
        return None
    return next((p for p in PLATFORMS if p != current and any(p in m for m in marked)), None)


def skipped_for(reason: str, current: str) -> str | None:
    """The platform other than `current` that a test's run-time skip reason names ("MX is
    only supported on TRN3."), or None."""
    return next((p for p in PLATFORMS if p != current and
                 re.search(rf"(?<!\w){p}(?!\w)", reason, re.IGNORECASE)), None)


class PlatformChooser:
    """A pytest plugin.  Its `pytest_collection_modifyitems` runs after the conftest's (which
    is `tryfirst` and adds the platform marks) and before pytest's own selection by mark (a
    plugin given to `pytest.main` is registered after pytest's, and pluggy calls the later
    one first).  With `force`, the option is set to that platform whatever the tests are
    for."""

    def __init__(self, force: str | None = None) -> None:
        self.chosen: str | None = None
        self.force = force
        self.current: str | None = None  # the platform the tests run on (None: no option)
        self.root = ""
        # tests for another platform only, by platform, in order (see the module's docstring)
        self.elsewhere: dict[str, list[str]] = {}

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        current = getattr(config.option, OPTION, None)
        expr = getattr(config.option, "markexpr", "") or ""
        if not isinstance(current, str) or not _word(current).search(expr):
            return  # the repository does not select its tests by a platform option
        if self.force is not None:
            chosen = None if self.force == current else self.force
        else:
            chosen = choose(current, items)
        if chosen is not None:
            setattr(config.option, OPTION, chosen)
            config.option.markexpr = _word(current).sub(chosen, expr)
            self.chosen = chosen
        self.current = chosen or current
        self.root = str(getattr(config, "rootpath", ""))
        if self.force is None:
            for item in items:
                marks = _marks(item)
                if self.current not in marks:
                    other = next((p for p in PLATFORMS if p in marks), None)
                    if other is not None:
                        self.elsewhere.setdefault(other, []).append(self._node(item.nodeid))

    def pytest_runtest_logreport(self, report: Any) -> None:
        if self.current is None or self.force is not None or not report.skipped or \
                report.when not in ("setup", "call"):
            return
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        other = skipped_for(str(reason), self.current)
        if other is not None:
            self.elsewhere.setdefault(other, []).append(self._node(report.nodeid))

    def _node(self, nodeid: str) -> str:
        """The argument naming a test to pytest (its node id is from the root directory)."""
        return os.path.join(self.root, nodeid) if self.root else nodeid
