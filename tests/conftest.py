"""Each test accounts its own on-chip allocations and starts on the default targets."""

import pytest

from apdsl.tensor import storage, targets


@pytest.fixture(autouse=True)
def _isolated_memory():
    saved = dict(targets._current)
    with storage.fresh_accounting():
        yield
    targets._current.clear()
    targets._current.update(saved)
