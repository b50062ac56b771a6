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
