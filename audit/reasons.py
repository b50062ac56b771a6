"""The one enum of reason codes, with the default severity of each.

Every verdict and finding carries a :class:`Reason`. ``docs/reasons.md`` documents each code
(what it means, what to do); ``tests/test_docs.py`` keeps the two in sync.
"""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    """How much a finding matters. ``critical`` findings make ``grokaudit check`` exit 1."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Reason(str, Enum):
    """Machine-readable reason codes. The value is the code as it appears in JSON."""

    # -- per run --------------------------------------------------------------------------
    NO_GROK = "NO_GROK"
    NO_MEMORIZATION = "NO_MEMORIZATION"
    GROK_NOT_SUSTAINED = "GROK_NOT_SUSTAINED"
    NOT_FULLY_GENERALIZED = "NOT_FULLY_GENERALIZED"
    TOO_SHORT = "TOO_SHORT"
    NO_METRIC_POINTS = "NO_METRIC_POINTS"
    FLOOR_TOO_FEW_POINTS = "FLOOR_TOO_FEW_POINTS"
    FLOOR_STABLE = "FLOOR_STABLE"
    FLOOR_UNSTABLE = "FLOOR_UNSTABLE"
    FLOOR_INDETERMINATE = "FLOOR_INDETERMINATE"
    FLOOR_NOISY = "FLOOR_NOISY"
    METRIC_NOT_AT_GROK = "METRIC_NOT_AT_GROK"
    NO_COMPRESSION = "NO_COMPRESSION"
    COMPRESSION_UNKNOWN = "COMPRESSION_UNKNOWN"
    COMPRESSION_SETTLED_IN_FINAL_WINDOW = "COMPRESSION_SETTLED_IN_FINAL_WINDOW"
    COMPRESSION_NEVER_SETTLED = "COMPRESSION_NEVER_SETTLED"
    REBOUND = "REBOUND"
    COMPRESSION_BEFORE_GROK = "COMPRESSION_BEFORE_GROK"
    COMPRESSION_CONCURRENT = "COMPRESSION_CONCURRENT"
    NONPOSITIVE_FLOOR = "NONPOSITIVE_FLOOR"
    # -- per cell -------------------------------------------------------------------------
    MEDIAN_CENSORED = "MEDIAN_CENSORED"
    BOUNDARY_PARTIAL_GENERALIZATION = "BOUNDARY_PARTIAL_GENERALIZATION"
    BOUNDARY_NO_COMPRESSION = "BOUNDARY_NO_COMPRESSION"
    HIGH_FLOOR_OUTLIER = "HIGH_FLOOR_OUTLIER"
    COMPRESSION_NOT_ESTABLISHED = "COMPRESSION_NOT_ESTABLISHED"
    SNAPSHOT_TRANSIENT = "SNAPSHOT_TRANSIENT"
    SNAPSHOT_CONVERGED = "SNAPSHOT_CONVERGED"
    # -- per study ------------------------------------------------------------------------
    LOW_POWER_DESCRIPTIVE = "LOW_POWER_DESCRIPTIVE"
    ORDERING_IDENTIFIED = "ORDERING_IDENTIFIED"
    ORDERING_UNDEFINED = "ORDERING_UNDEFINED"
    TOO_FEW_CELLS = "TOO_FEW_CELLS"
    CENSORED_INTERVALS_OVERLAP = "CENSORED_INTERVALS_OVERLAP"
    TIES_WITHIN_RESOLUTION = "TIES_WITHIN_RESOLUTION"
    INCONCLUSIVE_CENSORING = "INCONCLUSIVE_CENSORING"
    LARGE_LAG_ORDERING_UNDETERMINED = "LARGE_LAG_ORDERING_UNDETERMINED"
    TWO_CLOCKS = "TWO_CLOCKS"
    ONE_CLOCK_LARGE_LAG = "ONE_CLOCK_LARGE_LAG"
    PARTIALLY_SEPARATED = "PARTIALLY_SEPARATED"
    SINGLE_CLOCK_SMALL_LAG = "SINGLE_CLOCK_SMALL_LAG"
    SNAPSHOT_REVERSES_ORDERING = "SNAPSHOT_REVERSES_ORDERING"
    SNAPSHOT_HIDES_BOUNDARY = "SNAPSHOT_HIDES_BOUNDARY"
    SHARED_ENDPOINT = "SHARED_ENDPOINT"
    # -- input ----------------------------------------------------------------------------
    DUPLICATE_AXIS_VALUES = "DUPLICATE_AXIS_VALUES"
    DUPLICATE_ROWS = "DUPLICATE_ROWS"
    MISSING_VALUES = "MISSING_VALUES"
    EMPTY_ROWS = "EMPTY_ROWS"
    UNSORTED_STEPS = "UNSORTED_STEPS"
    # -- adapters (issue 5) ---------------------------------------------------------------
    SOURCE_DOWNSAMPLED = "SOURCE_DOWNSAMPLED"
    RESUMED_DUPLICATES = "RESUMED_DUPLICATES"
    SOURCE_TRUNCATED = "SOURCE_TRUNCATED"
    POSSIBLY_SAMPLED = "POSSIBLY_SAMPLED"
    # -- claims (issue 6) -----------------------------------------------------------------
    SURVIVORSHIP_BIAS = "SURVIVORSHIP_BIAS"
    THRESHOLD_SENSITIVE = "THRESHOLD_SENSITIVE"
    TOO_FEW_RUNS = "TOO_FEW_RUNS"
    FIT_FAILED = "FIT_FAILED"
    MODELS_INDISTINGUISHABLE = "MODELS_INDISTINGUISHABLE"
    OUTSIDE_FIT_RANGE = "OUTSIDE_FIT_RANGE"
    MEDIATOR_OUT_OF_RANGE = "MEDIATOR_OUT_OF_RANGE"
    INSUFFICIENT_BUDGET = "INSUFFICIENT_BUDGET"
    TOO_FEW_LEVELS = "TOO_FEW_LEVELS"
    NO_TRANSITION = "NO_TRANSITION"
    PEAK_AT_WINDOW_EDGE = "PEAK_AT_WINDOW_EDGE"
    PRECURSOR_NOT_SPECIFIC = "PRECURSOR_NOT_SPECIFIC"
    CENSORED_PAIRS = "CENSORED_PAIRS"
    UNDERPOWERED = "UNDERPOWERED"
    VERDICT_FRAGILE = "VERDICT_FRAGILE"


#: Findings that make ``check`` exit 1 unless ``--fail-on`` says otherwise (AUDIT_SPEC §4).
#: ``FLOOR_UNSTABLE`` is critical only on a cell that passes every gate; the study module
#: raises it at that scope only.
DEFAULT_CRITICAL: frozenset[Reason] = frozenset({
    Reason.SNAPSHOT_TRANSIENT,
    Reason.SNAPSHOT_REVERSES_ORDERING,
    Reason.SNAPSHOT_HIDES_BOUNDARY,
    Reason.FLOOR_UNSTABLE,
    Reason.INCONCLUSIVE_CENSORING,
    # claims (issue 6)
    Reason.SURVIVORSHIP_BIAS,
    Reason.MODELS_INDISTINGUISHABLE,
    Reason.TOO_FEW_LEVELS,
    Reason.PRECURSOR_NOT_SPECIFIC,
    Reason.UNDERPOWERED,
    Reason.VERDICT_FRAGILE,
})

#: Codes that are informational: they describe, they do not warn.
INFO_CODES: frozenset[Reason] = frozenset({
    Reason.SHARED_ENDPOINT,
    Reason.SNAPSHOT_CONVERGED,
    Reason.ORDERING_IDENTIFIED,
    Reason.FLOOR_STABLE,
    Reason.TWO_CLOCKS,
    Reason.ONE_CLOCK_LARGE_LAG,
    Reason.PARTIALLY_SEPARATED,
    Reason.SINGLE_CLOCK_SMALL_LAG,
    Reason.UNSORTED_STEPS,
    # claims (issue 6)
    Reason.OUTSIDE_FIT_RANGE,
})
