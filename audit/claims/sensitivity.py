"""``grokaudit check --sensitivity``: does the core audit's verdict survive its free parameters?

The audit is re-run with each free parameter moved one at a time over a small grid (the others
at the given config): ``grok_threshold`` 0.85/0.90/0.95, ``floor_frac`` 0.05/0.10/0.20,
``rel_tol`` 0.02/0.05/0.10, ``rule`` settle/crossing. For every study (split and metric) the
clock verdict and the snapshot hazards (``SNAPSHOT_TRANSIENT`` per cell,
``SNAPSHOT_REVERSES_ORDERING``, ``SNAPSHOT_HIDES_BOUNDARY``) are compared with the audit at the
given config; ``VERDICT_FRAGILE`` (critical) names each study whose verdict or a hazard flips
inside the grid.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from ..config import AuditConfig, replace
from ..engine import THREADS, Engine
from ..errors import GrokauditError
from ..kernels import NUMPY, Kernel
from ..reasons import Reason
from ..results import AuditResult, Finding, Result, sort_findings
from ..text import format_value, safe
from .results import finding, plain

SCHEMA = "grokaudit.sensitivity/1"

#: The grid of CLAIMS_SPEC: (config field, values).
GRID: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("grok_threshold", (0.85, 0.90, 0.95)),
    ("floor_frac", (0.05, 0.10, 0.20)),
    ("rel_tol", (0.02, 0.05, 0.10)),
    ("rule", ("settle", "crossing")),
)

HAZARDS = (Reason.SNAPSHOT_TRANSIENT, Reason.SNAPSHOT_REVERSES_ORDERING,
           Reason.SNAPSHOT_HIDES_BOUNDARY)


def _study_key(study: Mapping[str, Any], metric: str) -> str:
    return json.dumps({"study": plain(dict(study)), "metric": metric}, sort_keys=True)


def _state(result: AuditResult) -> dict[str, dict[str, Any]]:
    """Per study: its clock verdict and the set of snapshot hazards (code, cell)."""
    out: dict[str, dict[str, Any]] = {}
    for s in result.studies:
        hz = sorted({(f.code.value, json.dumps(plain(f.cell))) for f in s.findings
                     if f.code in HAZARDS})
        out[_study_key(s.study, s.metric or "accuracy only")] = {
            "study": dict(s.study), "metric": s.metric,
            "verdict": s.verdict.value if s.verdict else None,
            "hazards": [{"code": c, "cell": json.loads(cell)} for c, cell in hz],
        }
    return out


@dataclass(frozen=True)
class Variant:
    """One re-run: the parameter moved, its value, and what it gave (or the error)."""

    parameter: str
    value: Any
    error: str | None
    states: Mapping[str, Mapping[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "value": self.value, "error": self.error,
                "studies": [plain(dict(v)) for _, v in sorted(self.states.items())]}


@dataclass(frozen=True)
class SensitivityResult(Result):
    """The baseline audit, every variant, and the per-study list of what moved."""

    baseline: AuditResult
    variants: tuple[Variant, ...]
    moves: tuple[Mapping[str, Any], ...]  #: one per (study, variant) whose verdict/hazard moved
    findings: tuple[Finding, ...]

    @property
    def fail_on(self) -> tuple[str, ...]:  # type: ignore[override]
        """The baseline audit's ``fail_on`` (``VERDICT_FRAGILE`` is critical: it fails under
        ``default``)."""
        return tuple(self.baseline.fail_on)

    @property
    def failing(self) -> tuple[Finding, ...]:
        """The baseline audit's failing findings, then the grid's that fail under the same
        ``fail_on``."""
        return tuple(self.baseline.failing) + super().failing

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "grokaudit_version": self.baseline.version,
            "grid": [{"parameter": p, "values": list(v)} for p, v in GRID],
            "baseline": {"config": plain(dict(self.baseline.config)),
                         "studies": [plain(dict(v)) for _, v in
                                     sorted(_state(self.baseline).items())],
                         "exit_code": self.baseline.exit_code},
            "summary": {"exit_code": self.exit_code,
                        "fragile_studies": sum(1 for f in self.findings
                                               if f.code is Reason.VERDICT_FRAGILE)},
            "variants": [v.to_dict() for v in self.variants],
            "moves": [plain(dict(m)) for m in self.moves],
            "findings": [f.to_dict() for f in self.findings],
            "audit": self.baseline.to_dict(),  #: the full audit at the given config
        }


def run_sensitivity(table: pa.Table | pd.DataFrame, config: AuditConfig,
                    grid: Sequence[tuple[str, Sequence[Any]]] = GRID, *,
                    source: str | None = None, engine: Engine = THREADS,
                    kernel: Kernel = NUMPY) -> SensitivityResult:
    """Re-run ``grokaudit.audit_table`` over ``grid`` one parameter at a time and report which
    verdicts move. Input errors of the baseline audit propagate (exit 2 in the CLI); a variant
    the config validation refuses is recorded with its error and skipped. Every audit runs
    its clocks on ``engine`` (:mod:`grokaudit.engine`), their passes over the points by
    ``kernel`` (:mod:`grokaudit.kernels`)."""
    from ..api import audit_table

    base = audit_table(table, config, source=source, engine=engine, kernel=kernel)
    base_state = _state(base)
    variants: list[Variant] = []
    moves: list[dict[str, Any]] = []
    for param, values in grid:
        for v in values:
            if getattr(config, param) == v:
                continue
            changes: dict[str, Any] = {param: v}
            if param == "floor_frac" and v > config.max_floor_frac:
                changes["max_floor_frac"] = min(0.99, max(config.max_floor_frac, float(v)))
            try:
                res = audit_table(table, replace(config, **changes), source=source,
                                  engine=engine, kernel=kernel)
            except GrokauditError as exc:
                variants.append(Variant(param, v, str(exc), {}))
                continue
            st = _state(res)
            variants.append(Variant(param, v, None, st))
            for key, b in base_state.items():
                o = st.get(key)
                if o is None:
                    continue
                verdict_moved = o["verdict"] != b["verdict"]
                bh = {(h["code"], json.dumps(h["cell"])) for h in b["hazards"]}
                oh = {(h["code"], json.dumps(h["cell"])) for h in o["hazards"]}
                if verdict_moved or bh != oh:
                    moves.append({"study": b["study"], "metric": b["metric"],
                                  "parameter": param, "value": v,
                                  "verdict": [b["verdict"], o["verdict"]],
                                  "hazards_gained": [{"code": c, "cell": json.loads(x)}
                                                     for c, x in sorted(oh - bh)],
                                  "hazards_lost": [{"code": c, "cell": json.loads(x)}
                                                   for c, x in sorted(bh - oh)]})
    findings: list[Finding] = []
    for key, b in sorted(base_state.items()):
        ms = [m for m in moves if _study_key(m["study"], m["metric"]) == key]
        if ms:
            findings.append(finding(
                Reason.VERDICT_FRAGILE, "study",
                f"the verdict or a snapshot hazard moves within the grid "
                f"({', '.join(sorted({m['parameter'] for m in ms}))})",
                study=b["study"], metric=b["metric"],
                evidence={"moves": [{"parameter": m["parameter"], "value": m["value"],
                                     "verdict": m["verdict"],
                                     "hazards_gained": m["hazards_gained"],
                                     "hazards_lost": m["hazards_lost"]} for m in ms]}))
    return SensitivityResult(base, tuple(variants), tuple(moves), sort_findings(findings))


def render_sensitivity(result: SensitivityResult) -> str:
    """The text form of a :class:`SensitivityResult` (printing only)."""
    lines = ["sensitivity of the audit to its free parameters (one at a time)"]
    grid = "; ".join(f"{p} {'/'.join(str(x) for x in v)}" for p, v in GRID)
    lines.append(f"grid: {grid}")
    base = _state(result.baseline)
    for key, b in sorted(base.items()):
        where = ", ".join(f"{safe(k)}={format_value(v)}" for k, v in b["study"].items()) \
            or "all runs"
        lines.append(f"== study: {where} · metric {safe(b['metric'])} · baseline verdict "
                     f"{b['verdict'] or '—'} ==")
        rows = [("parameter", "value", "verdict", "hazards")]
        for var in result.variants:
            if var.error:
                rows.append((var.parameter, str(var.value), "error", var.error[:60]))
                continue
            o = var.states.get(key)
            if o is None:
                continue
            moved = "" if o["verdict"] == b["verdict"] else " *"
            hz = ",".join(sorted({h["code"] for h in o["hazards"]})) or "none"
            hz_moved = " *" if o["hazards"] != b["hazards"] else ""
            rows.append((var.parameter, str(var.value), f"{o['verdict'] or '—'}{moved}",
                         hz + hz_moved))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("")
    for f in result.findings:
        lines.append(f"[{f.severity.value}] {f.code.value}: {safe(f.message)}")
    fragile = sum(1 for f in result.findings if f.code is Reason.VERDICT_FRAGILE)
    lines.append(f"result: {fragile} fragile stud{'y' if fragile == 1 else 'ies'}; "
                 f"exit {result.exit_code}  (* = differs from the baseline)")
    return "\n".join(lines) + "\n"
