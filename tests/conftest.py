"""The one root of the test suite: the hypothesis settings profile is loaded here, once, for
every test that uses hypothesis (``GROKAUDIT_HYPOTHESIS_PROFILE``: ``ci`` by default, see
``grokaudit.adversarial_suite.profiles``). Without the ``test`` extra's hypothesis, nothing is
loaded and the tests that need it skip."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("hypothesis") is not None:
    from grokaudit.adversarial_suite import profiles

    profiles.load()
