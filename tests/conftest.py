"""The one root of the test suite: the hypothesis settings profile is loaded here, once, for
every test that uses hypothesis (``GROKAUDIT_HYPOTHESIS_PROFILE``: ``ci`` by default, see
``grokaudit.adversarial_suite.profiles``). Without the ``test`` extra's hypothesis, nothing is
loaded and the tests that need it skip.

Fixtures used by more than one test folder are here too; shared helper code is in the
``helpers`` package beside this file (``tests/helpers``)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator

import pytest

# One thread per library in the test processes and the scripts they start (torch, OpenBLAS,
# pyarrow read OMP_NUM_THREADS): pytest-xdist runs one worker per CPU, and more threads in each
# only contend (the logging guide's four MLflow runs at once: 59 s with the default threads,
# 27 s with one each, on 2 cores).
os.environ.setdefault("OMP_NUM_THREADS", "1")

if importlib.util.find_spec("hypothesis") is not None:
    from grokaudit.adversarial_suite import profiles

    profiles.load()


@pytest.fixture
def umask() -> Iterator[Callable[[int], int]]:
    """``umask(m)`` sets the process umask for the test; the old one comes back after."""
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow run first (in their order): started last, a one-minute test kept
    one worker busy while the others had finished."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
