"""Every named case of the suite, in one place: the core's cases (:mod:`.cases`) and issue
19's evidence cases (:mod:`.cases_evidence`, which builds on the core's). Importing the list
from here, not from either module, keeps the two free of each other's imports."""

from __future__ import annotations

from .cases import BASE_CASES, Case
from .cases_curves import CURVE_CASES
from .cases_evidence import EVIDENCE_CASES

#: Every named case, in the order the suite runs them.
CASES: tuple[Case, ...] = (*BASE_CASES, *EVIDENCE_CASES, *CURVE_CASES)
#: The cases by name.
CASES_BY_NAME: dict[str, Case] = {c.name: c for c in CASES}
