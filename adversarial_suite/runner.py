"""Run the named cases, the claim cases (and, when hypothesis is installed, a bounded property
run) against the installed audit and a config: the engine behind ``grokaudit suite`` and the
suite's tests."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grokaudit
from grokaudit import AuditConfig, AuditResult, LogFormatError
from grokaudit.results import Result

from .cases import DESIGN_DEFAULTS, Case, Instance  # noqa: F401 (re-exported)
from .catalog import CASES
from .claim_cases import CLAIM_CASES, ClaimCase, compare_check, run_check
from .expect import LOW_POWER, compare, error_label, verdict_label


@dataclass(frozen=True)
class CaseOutcome:
    """One case against one config: expected and got (one word each), every mismatch, and the
    thresholds of the config the case could not follow (it kept its own value of those)."""

    name: str
    expected: str
    got: str
    mismatches: tuple[str, ...]
    notes: tuple[str, ...] = ()
    command: str = ""  #: claim cases: the claim command(s) the case runs

    @property
    def passed(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        out = {"case": self.name, "expected": self.expected, "got": self.got,
               "pass": self.passed, "mismatches": list(self.mismatches),
               "notes": list(self.notes)}
        if self.command:
            out["command"] = self.command
        return out


@dataclass(frozen=True)
class SuiteReport(Result):
    """The outcome of a suite run: cases, and the property run (None when skipped)."""

    profile: str
    cases: tuple[CaseOutcome, ...]
    properties: tuple[dict[str, Any], ...] | None
    skipped: str | None = None  #: why the property run was skipped
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)  #: the user's effective config
    claims: tuple[CaseOutcome, ...] = ()  #: the claim audits' cases

    @property
    def passed(self) -> bool:
        props_ok = self.properties is None or all(p["pass"] for p in self.properties)
        return (all(c.passed for c in self.cases) and all(c.passed for c in self.claims)
                and props_ok)

    # -- the result kernel (grokaudit.results.Result): a suite run raises no reason-code
    # finding; what fails it is its failed cases and properties
    @property
    def findings(self) -> tuple[Any, ...]:  # type: ignore[override]
        """None: the suite's outcome is its cases and properties (see :attr:`failing`)."""
        return ()

    @property
    def fail_on(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("default",)

    @property
    def failing(self) -> tuple[Any, ...]:
        """The failed cases (core and claims) and failed properties."""
        props = tuple(p for p in self.properties or () if not p["pass"])
        return tuple(c for c in (*self.cases, *self.claims) if not c.passed) + props

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "grokaudit.suite/1", "profile": self.profile, "passed": self.passed,
                "config": dict(self.config),
                "cases": [c.to_dict() for c in self.cases],
                "claim_cases": [c.to_dict() for c in self.claims],
                "properties": list(self.properties) if self.properties is not None else None,
                "properties_skipped": self.skipped}


def case_config(case: Case, cfg: AuditConfig) -> AuditConfig:
    """The user's config with the case's own design fields (axis, split, metric, scale)."""
    return case.config(cfg)


def audit_case(case: Case, cfg: AuditConfig | None = None
               ) -> tuple[AuditResult | None, LogFormatError | None]:
    """Audit the case's log (built under ``cfg``); the input error instead of a result when
    the audit refuses it."""
    inst = case.instance(cfg)
    return _audit(inst)


def _audit(inst: Instance) -> tuple[AuditResult | None, LogFormatError | None]:
    try:
        return grokaudit.audit_table(inst.table, inst.cfg), None
    except LogFormatError as exc:
        return None, exc


def got_label(result: AuditResult | None, error: LogFormatError | None) -> str:
    if error is not None:
        return f"error:{error_label(error)}"
    assert result is not None
    return " ".join(verdict_label(s.verdict) for s in result.studies) or LOW_POWER


def run_case(case: Case, cfg: AuditConfig | None = None) -> CaseOutcome:
    """Build the case under ``cfg``, audit it and compare with its expectation under ``cfg``."""
    inst = case.instance(cfg)
    try:
        result, error = _audit(inst)
    except Exception as exc:  # a crash is a failure of the audit, reported like any other
        return CaseOutcome(case.name, inst.expect.label, f"crash:{type(exc).__name__}",
                           (f"the audit crashed: {type(exc).__name__}: {exc}",), inst.notes)
    return CaseOutcome(case.name, inst.expect.label, got_label(result, error),
                       tuple(compare(inst.expect, result, error)), inst.notes)


def run_cases(cfg: AuditConfig | None = None, cases: Iterable[Case] = CASES
              ) -> tuple[CaseOutcome, ...]:
    return tuple(run_case(c, cfg) for c in cases)


def _labels(labels: Iterable[str]) -> str:
    return " | ".join(dict.fromkeys(labels))


def run_claim_case(case: ClaimCase, cfg: AuditConfig | None = None) -> CaseOutcome:
    """Build the claim case under ``cfg``, run each of its claim commands and compare with
    the pre-registered answers (a crash is a failure, reported like any other)."""
    inst = case.instance(cfg)
    bad: list[str] = []
    got: list[str] = []
    for check in inst.checks:
        try:
            result, error = run_check(check, inst.table, inst.cfg)
            bad.extend(compare_check(check, result, error))
        except Exception as exc:  # a crash of the audit (or of its renderer) is a failure
            bad.append(f"{check.command}: the audit crashed: {type(exc).__name__}: {exc}")
            got.append(f"crash:{type(exc).__name__}")
            continue
        got.append(check.got_label(result, error))
    commands = ",".join(dict.fromkeys(c.command for c in inst.checks))
    return CaseOutcome(case.name, inst.label, _labels(got), tuple(bad), inst.notes, commands)


def run_claim_cases(cfg: AuditConfig | None = None, cases: Iterable[ClaimCase] = CLAIM_CASES
                    ) -> tuple[CaseOutcome, ...]:
    return tuple(run_claim_case(c, cfg) for c in cases)


def run_suite(cfg: AuditConfig, max_examples: int = 25, properties: bool = True,
              claims: bool = True) -> SuiteReport:
    """The named cases, the claim cases, then (when hypothesis is importable) each property
    for ``max_examples`` generated logs."""
    t0 = time.perf_counter()
    outcomes = run_cases(cfg)
    claim_outcomes = run_claim_cases(cfg) if claims else ()
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
                       seconds=time.perf_counter() - t0, config=cfg.to_dict(),
                       claims=claim_outcomes)
