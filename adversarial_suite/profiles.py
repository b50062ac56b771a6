"""The hypothesis settings profiles of the suite, registered in one place.

``ci``    bounded and deterministic (derandomized, no example database): what ``.ci/run``
          and a plain ``pytest`` use; the whole property run stays well under 2 minutes.
``dev``   more examples, random, with the example database: for working on the core.
``deep``  many examples, for a nightly or manual run
          (``GROKAUDIT_HYPOTHESIS_PROFILE=deep pytest tests/suite``).

Select one with the ``GROKAUDIT_HYPOTHESIS_PROFILE`` environment variable (default ``ci``).
"""

from __future__ import annotations

import os
from typing import cast

from hypothesis import HealthCheck, settings

ENV = "GROKAUDIT_HYPOTHESIS_PROFILE"
PROFILES = ("ci", "dev", "deep")
_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          database=None, print_blob=True, suppress_health_check=_SLOW)
settings.register_profile("dev", max_examples=150, deadline=None, print_blob=True,
                          suppress_health_check=_SLOW)
settings.register_profile("deep", max_examples=2000, deadline=None, print_blob=True,
                          suppress_health_check=_SLOW)

#: Per-test scale: metamorphic tests audit each example six times, so they get a share.
METAMORPHIC_SHARE = 0.3


def current() -> str:
    """The profile chosen by the environment (``ci`` when unset)."""
    name = os.environ.get(ENV, "ci")
    if name not in PROFILES:
        raise ValueError(f"{ENV}={name!r}; choose one of {', '.join(PROFILES)}")
    return name


def load(name: str | None = None) -> settings:
    """Load and return the profile ``name`` (default: :func:`current`)."""
    settings.load_profile(name or current())
    return cast(settings, settings.default)  # set: a profile was just loaded


def scaled(share: float) -> settings:
    """The current profile with ``share`` of its examples (at least 5)."""
    base = cast(settings, settings.default)  # never None: hypothesis loads "default" lazily
    return settings(base, max_examples=max(5, int(base.max_examples * share)))
