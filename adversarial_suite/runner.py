"""Run the named cases (and, when hypothesis is installed, a bounded property run) against the
installed audit and a config: the engine behind ``grokaudit suite`` and the suite's tests."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grokaudit
from grokaudit import AuditConfig, AuditResult, LogFormatError
from grokaudit.config import replace as replace_config

from .cases import CASES, Case
from .expect import LOW_POWER, compare, error_label, verdict_label


@dataclass(frozen=True)
class CaseOutcome:
    """One case against one config: expected and got (one word each), and every mismatch."""

    name: str
    expected: str
    got: str
    mismatches: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.name, "expected": self.expected, "got": self.got,
                "pass": self.passed, "mismatches": list(self.mismatches)}


@dataclass(frozen=True)
class SuiteReport:
    """The outcome of a suite run: cases, and the property run (None when skipped)."""

    profile: str
    cases: tuple[CaseOutcome, ...]
    properties: tuple[dict[str, Any], ...] | None
    skipped: str | None = None  #: why the property run was skipped
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        props_ok = self.properties is None or all(p["pass"] for p in self.properties)
        return all(c.passed for c in self.cases) and props_ok

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "grokaudit.suite/1", "profile": self.profile, "passed": self.passed,
                "cases": [c.to_dict() for c in self.cases],
                "properties": list(self.properties) if self.properties is not None else None,
                "properties_skipped": self.skipped}


#: Fields that describe a log's design, not a threshold: each case sets its own, whatever the
#: user's config says (a project's ``metrics = ["emb_pr"]`` must not break a synthetic log).
#: ``fail_on`` is a reporting choice, not a definition: the cases' exit codes are registered
#: under the default severities, so a project's ``fail_on = "none"`` must not fail them.
DESIGN_DEFAULTS: dict[str, Any] = {"by": None, "cell": (), "metrics": ("emb_erank",),
                                   "acc_scale": 1.0, "on_duplicate": "error",
                                   "fail_on": ("default",)}


def case_config(case: Case, cfg: AuditConfig) -> AuditConfig:
    """The user's config with the case's own design fields (axis, split, metric, scale)."""
    opts = {**DESIGN_DEFAULTS,
            **{k: (tuple(v) if isinstance(v, list) else v) for k, v in case.options.items()}}
    return replace_config(cfg, **opts)


def audit_case(case: Case, cfg: AuditConfig | None = None
               ) -> tuple[AuditResult | None, LogFormatError | None]:
    """Audit the case's log; the input error instead of a result when the audit refuses it."""
    cfg = grokaudit.make_config() if cfg is None else cfg
    try:
        return grokaudit.audit_table(case.table(), case_config(case, cfg)), None
    except LogFormatError as exc:
        return None, exc


def got_label(result: AuditResult | None, error: LogFormatError | None) -> str:
    if error is not None:
        return f"error:{error_label(error)}"
    assert result is not None
    return " ".join(verdict_label(s.verdict) for s in result.studies) or LOW_POWER


def run_case(case: Case, cfg: AuditConfig | None = None) -> CaseOutcome:
    """Audit one case and compare with its pre-registered expectation."""
    try:
        result, error = audit_case(case, cfg)
    except Exception as exc:  # a crash is a failure of the audit, reported like any other
        return CaseOutcome(case.name, case.expect.label, f"crash:{type(exc).__name__}",
                           (f"the audit crashed: {type(exc).__name__}: {exc}",))
    return CaseOutcome(case.name, case.expect.label, got_label(result, error),
                       tuple(compare(case.expect, result, error)))


def run_cases(cfg: AuditConfig | None = None, cases: Iterable[Case] = CASES
              ) -> tuple[CaseOutcome, ...]:
    return tuple(run_case(c, cfg) for c in cases)


def run_suite(cfg: AuditConfig, max_examples: int = 25, properties: bool = True
              ) -> SuiteReport:
    """The named cases, then (when hypothesis is importable) each property for
    ``max_examples`` generated logs."""
    t0 = time.perf_counter()
    outcomes = run_cases(cfg)
    props: tuple[dict[str, Any], ...] | None = None
    skipped: str | None = None
    if properties and max_examples > 0:
        try:
            from . import properties as props_mod
        except ImportError as exc:
            skipped = f"hypothesis is not installed ({exc}); pip install 'grokaudit[test]'"
        else:
            props = props_mod.run_all(cfg, max_examples)
    elif not properties or max_examples <= 0:
        skipped = "disabled"
    return SuiteReport(profile=cfg.profile, cases=outcomes, properties=props, skipped=skipped,
                       seconds=time.perf_counter() - t0)
