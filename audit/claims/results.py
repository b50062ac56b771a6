"""The result object of every claim audit, and the typed records its bodies are made of.

A :class:`ClaimResult` offers the protocol every grokaudit result offers (``findings``,
``failing``, ``exit_code``, ``codes``, ``to_dict``, ``to_json``). Its content is one
:class:`ClaimStudy` per study (``--cell`` splits the runs into studies, as in ``check``), each
holding a typed frozen body (``OnsetBody``, ``DoseBody``, ``TransitionBody``,
``PrecursorBody``, ``CompareBody``) made of :class:`Record` dataclasses that serialize
themselves. The JSON form is versioned (``grokaudit.onset/2``, …) and byte-stable.

Findings use the core's :class:`~grokaudit.results.Finding`; their evidence is converted to
plain JSON values when the finding is made, so that no finding can carry an object the JSON
layer cannot write. The exit code follows ``check`` (1 when a finding fails under
``fail_on``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..reasons import Reason, Severity
from ..results import CLAIM_DIGITS, Finding, Result, sort_findings
from ..results import outward as outward
from ..results import plain as _plain
from ..study import severity_of

#: 2: typed bodies, one entry per study under ``studies`` (issue 11).
SCHEMA_VERSION = 2


#: Claim results round their floats to 12 significant digits (fits of a few seeds are not
#: reproducible beyond that across BLAS builds; significant digits, so a p of 1.6e-14 stays
#: 1.6e-14, never 0). Defined beside :class:`~grokaudit.results.Interval`, whose claim form
#: (the claims' ranges) writes its JSON with the same rounding.
DIGITS = CLAIM_DIGITS


def p_text(p: float | None, alpha: float | None = None, digits: int = 2) -> str:
    """A p-value for people: ``digits`` significant digits, rounded to the nearest (never
    up: 0.961 is 0.96), with as many more digits as it takes never to cross ``alpha`` (the
    level it is judged at: 0.0496 against 0.05 is 0.0496, not 0.05). ``—`` when missing; a
    positive p is never printed as 0."""
    if p is None or p != p:
        return "—"
    for d in range(digits, 17):
        s = f"{p:.{d}g}"
        v = float(s)
        if alpha is None or ((v < alpha) == (p < alpha) and (v == alpha) == (p == alpha)):
            return s
    return repr(float(p))


def plain(x: Any) -> Any:
    """:func:`grokaudit.results.plain` with the claims' rounding (:data:`DIGITS`)."""
    return _plain(x, DIGITS)


class Record:
    """Mixin of the frozen dataclasses in claim bodies: ``to_dict()`` is the fields, JSON-safe.

    A field declared with ``metadata={"json": False}`` is evidence kept in memory only."""

    def to_dict(self) -> dict[str, Any]:
        assert dataclasses.is_dataclass(self)
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.metadata.get("json", True)}


def finding(code: Reason, scope: str, message: str, *, cell: Any = None,
            runs: Sequence[str] = (), evidence: Mapping[str, Any] | None = None,
            severity: Severity | None = None, study: Mapping[str, Any] | None = None,
            metric: str | None = None) -> Finding:
    """A core :class:`Finding` with the code's default severity; ``evidence`` is converted to
    plain JSON values here, once."""
    return Finding(code=code, severity=severity or severity_of(code), scope=scope,
                   message=message, study=dict(plain(dict(study or {}))), metric=metric,
                   cell=plain(cell), runs=tuple(str(r) for r in runs),
                   evidence=plain(dict(evidence or {})))


@dataclass(frozen=True)
class ClaimStudy:
    """One study: the ``--cell`` values that select its runs (``{}`` without ``--cell``) and
    the command's typed body computed on them."""

    study: Mapping[str, Any]
    body: Any  #: OnsetBody, DoseBody, TransitionBody, PrecursorBody or CompareBody

    def to_dict(self) -> dict[str, Any]:
        return {"study": plain(dict(self.study)), **self.body.to_dict()}


@dataclass(frozen=True)
class ClaimResult(Result):
    """One claim audit: what was asked (``params``), the effective config, the input
    accounting, one :class:`ClaimStudy` per study, and the findings."""

    command: str  #: ``onset``, ``dose``, ``transition``, ``precursor``, ``compare``
    version: str
    params: Mapping[str, Any]
    config: Mapping[str, Any]
    input: Mapping[str, Any]
    studies: tuple[ClaimStudy, ...]
    findings: tuple[Finding, ...]
    fail_on: tuple[str, ...] = ("default",)
    trail: Any = None  #: how the result was made (:class:`grokaudit.trail.Trail`)

    @property
    def schema(self) -> str:
        return f"grokaudit.{self.command}/{SCHEMA_VERSION}"

    @property
    def body(self) -> Any:
        """The body of the only study (a log audited without ``--cell``)."""
        if len(self.studies) != 1:
            raise ValueError(f"{len(self.studies)} studies: use .studies[i].body")
        return self.studies[0].body

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
                "n_studies": len(self.studies),
                "n_findings": len(self.findings),
                "n_failing": len(self.failing),
                "failing_codes": sorted({f.code.value for f in self.failing}),
            },
            "studies": [s.to_dict() for s in self.studies],
            "findings": [f.to_dict() for f in self.findings],
            "trail": None if self.trail is None else self.trail.to_dict(),
        }


def make_result(command: str, *, params: Mapping[str, Any], config: Mapping[str, Any],
                input: Mapping[str, Any],
                studies: Sequence[tuple[Mapping[str, Any], Any, Sequence[Finding]]],
                findings: Sequence[Finding] = (), fail_on: Sequence[str] = ("default",)
                ) -> ClaimResult:
    """Assemble a result from ``(study key, body, findings)`` triples; each study's findings
    are stamped with its key."""
    from ..version import __version__

    all_f = list(findings)
    out = []
    for key, body, fs in studies:
        k = dict(plain(dict(key)))
        out.append(ClaimStudy(k, body))
        all_f.extend(dataclasses.replace(f, study=k) if k else f for f in fs)
    return ClaimResult(command=command, version=__version__, params=dict(plain(dict(params))),
                       config=dict(config), input=dict(input), studies=tuple(out),
                       findings=sort_findings(all_f), fail_on=tuple(fail_on))
