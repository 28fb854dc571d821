"""The platform a repository's test asks for.  nki-library's conftest turns its
`--platform-target` option (trn2 by default) into a mark expression, and marks each test with
the platforms it does not exclude (`@pytest.mark.platforms(exclude=[TRN1, TRN2])` on the
trn3-only ones), so that a run for one platform deselects every test of another.  A corpus run
measures the kernel the tests drive rather than one platform: when none of the tests chosen for
a kernel is for the option's platform, `PlatformChooser` (a pytest plugin) sets the option to a
platform they are for, as a user running them with `--platform-target trn3` would, so they run
and the test's `CompilerArgs(platform_target=...)` puts the kernel under that target's rules."""

from __future__ import annotations

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


class PlatformChooser:
    """A pytest plugin.  Its `pytest_collection_modifyitems` runs after the conftest's (which
    is `tryfirst` and adds the platform marks) and before pytest's own selection by mark (a
    plugin given to `pytest.main` is registered after pytest's, and pluggy calls the later
    one first)."""

    def __init__(self) -> None:
        self.chosen: str | None = None

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        current = getattr(config.option, OPTION, None)
        expr = getattr(config.option, "markexpr", "") or ""
        if not isinstance(current, str) or not _word(current).search(expr):
            return  # the repository does not select its tests by a platform option
        chosen = choose(current, items)
        if chosen is not None:
            setattr(config.option, OPTION, chosen)
            config.option.markexpr = _word(current).sub(chosen, expr)
            self.chosen = chosen
