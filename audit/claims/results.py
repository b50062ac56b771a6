"""The result object of every claim audit: a frozen dataclass that keeps its evidence, with a
versioned, byte-stable JSON form (``grokaudit.onset/1``, ``grokaudit.dose/1``, …).

The command-specific content lives in ``body``: a mapping of plain values and of estimator
results (``AFTFit``, ``LinearFit``, ``BootstrapCI``…) that serialize themselves with
``to_dict()``. Findings use the core's :class:`~grokaudit.results.Finding` and
:class:`~grokaudit.reasons.Reason`; the exit code follows ``check`` (1 when a finding is
critical under ``fail_on``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..reasons import Reason, Severity
from ..results import Finding, Interval, fails, sort_findings
from ..study import severity_of

SCHEMA_VERSION = 1


def plain(x: Any) -> Any:
    """Convert results, numpy values and containers to JSON-safe Python values.

    NaN and ±inf become ``None`` (a censored bound says so in its own field)."""
    if hasattr(x, "to_dict") and callable(x.to_dict):
        return plain(x.to_dict())
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return [plain(v) for v in x.tolist()]
    if isinstance(x, Reason):
        return x.value
    if isinstance(x, Interval):
        return x.to_dict()
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        xf = float(x)
        if math.isnan(xf) or math.isinf(xf):
            return None
        if xf.is_integer() and abs(xf) < 2**53:
            return int(xf)
        return round(xf, 12)
    return x


def finding(code: Reason, scope: str, message: str, *, cell: Any = None,
            runs: Sequence[str] = (), evidence: Mapping[str, Any] | None = None,
            severity: Severity | None = None, study: Mapping[str, Any] | None = None,
            metric: str | None = None) -> Finding:
    """A core :class:`Finding` with the code's default severity."""
    return Finding(code=code, severity=severity or severity_of(code), scope=scope,
                   message=message, study=dict(study or {}), metric=metric, cell=cell,
                   runs=tuple(str(r) for r in runs), evidence=dict(evidence or {}))


@dataclass(frozen=True)
class ClaimResult:
    """One claim audit: what was asked (``params``), the effective config, the input
    accounting, the computed tables and estimates (``body``), and the findings."""

    command: str  #: ``onset``, ``dose``, ``transition``, ``precursor``, ``compare``
    version: str
    params: Mapping[str, Any]
    config: Mapping[str, Any]
    input: Mapping[str, Any]
    body: Mapping[str, Any]
    findings: tuple[Finding, ...]
    fail_on: tuple[str, ...] = ("default",)

    @property
    def schema(self) -> str:
        return f"grokaudit.{self.command}/{SCHEMA_VERSION}"

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if fails(f, self.fail_on))

    @property
    def exit_code(self) -> int:
        """0 no critical finding, 1 critical findings (as ``grokaudit check``)."""
        return 1 if self.failing else 0

    @property
    def codes(self) -> frozenset[Reason]:
        return frozenset(f.code for f in self.findings)

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "grokaudit_version": self.version,
            "command": self.command,
            "params": plain(dict(self.params)),
            "config": plain(dict(self.config)),
            "input": plain(dict(self.input)),
            "summary": {
                "exit_code": self.exit_code,
                "n_findings": len(self.findings),
                "n_failing": len(self.failing),
                "failing_codes": sorted({f.code.value for f in self.failing}),
            },
            **{k: plain(v) for k, v in self.body.items()},
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The versioned JSON form; byte-identical for identical input and options."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False,
                          ensure_ascii=False) + "\n"


def make_result(command: str, *, params: Mapping[str, Any], config: Mapping[str, Any],
                input: Mapping[str, Any], body: Mapping[str, Any],
                findings: Sequence[Finding], fail_on: Sequence[str] = ("default",)
                ) -> ClaimResult:
    from .. import __version__

    return ClaimResult(command=command, version=__version__, params=dict(params),
                       config=dict(config), input=dict(input), body=dict(body),
                       findings=sort_findings(list(findings)), fail_on=tuple(fail_on))
