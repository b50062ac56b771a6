"""Properties every audit result must have, checked against the truth of generated logs.

Each ``check_*`` function takes a drawn :class:`~.strategies.Study` and a config, audits it,
and raises ``AssertionError`` (with the run, cell or quantity that broke) when the audit
claims something the log does not support. ``tests/suite`` drives them with hypothesis;
:func:`run_all` does the same for ``grokaudit suite``.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import grokaudit
import pandas as pd
from grokaudit import AuditConfig, AuditResult, Reason
from grokaudit.config import replace as replace_config
from grokaudit.results import CellSummary, Interval, StudyResult
from hypothesis import HealthCheck, Phase, given, settings

from .strategies import ExpectedStudy, Study, clock_studies, expected_clock_study, studies

CLAIMS = (Reason.TWO_CLOCKS, Reason.ONE_CLOCK_LARGE_LAG, Reason.PARTIALLY_SEPARATED)
TIME_QS = ("t_grok", "t_compress", "lag")


def audit(study: Study, cfg: AuditConfig, df: pd.DataFrame | None = None,
          **options: Any) -> AuditResult:
    """Audit ``study`` (its accuracy levels placed for ``cfg``, unless ``df`` is given)."""
    opts = {"cell": (), "metrics": ("emb_erank",), "acc_scale": None, "on_duplicate": "error",
            **study.options, **options}
    return grokaudit.audit_table(study.for_config(cfg).table() if df is None else df,
                                 replace_config(cfg, **opts))


# ------------------------------------------------------------------------------------------
# properties of one result
# ------------------------------------------------------------------------------------------

def check_no_t_compress_without_truth(study: Study, cfg: AuditConfig,
                                      result: AuditResult | None = None) -> None:
    """A run whose truth has no compression time (no grok, no compression, a floor still
    moving, a fall that outlasts the log) never gets a ``t_compress`` value."""
    result = result or audit(study, cfg)
    truths = study.truths(cfg)
    for s in result.studies:
        for r in s.runs:
            t = truths[r.run]
            if t.no_t_compress:
                assert r.t_compress is None or r.t_compress.value is None, (
                    f"{r.run}: t_compress {r.t_compress} reported, but by construction there "
                    f"is none ({_shape(study, r.run)})")


def _shape(study: Study, run: str) -> str:
    s = next(x for x in study.specs if x.run == run)
    return f"acc {s.acc_shape}, metric {s.metric_shape}"


def check_t_grok(study: Study, cfg: AuditConfig, result: AuditResult | None = None) -> None:
    """``t_grok`` is inside its reported interval and within one logging interval of the
    truth; a run that never groks is right-censored."""
    result = result or audit(study, cfg)
    truths = study.truths(cfg)
    for s in result.studies:
        for r in s.runs:
            t = truths[r.run]
            iv = r.t_grok
            if not t.grokked:
                assert iv.censored and iv.value is None, f"{r.run}: t_grok {iv} but never grokked"
                continue
            assert iv.value is not None and iv.lower is not None and iv.upper is not None, (
                f"{r.run}: grokked at {t.t_grok} but t_grok {iv}")
            assert iv.lower < iv.value <= iv.upper, f"{r.run}: t_grok {iv} outside its interval"
            assert iv.lower < t.t_grok <= iv.upper, (
                f"{r.run}: true t_grok {t.t_grok} outside the reported interval {iv}")
            assert iv.value - t.t_grok < t.acc_interval, (
                f"{r.run}: t_grok {iv.value} more than one logging interval after {t.t_grok}")


def check_t_compress(study: Study, cfg: AuditConfig, result: AuditResult | None = None
                     ) -> None:
    """Rule ``settle``: a reported ``t_compress`` lies within the cadence plus the smoothing
    window of the true settling time; a clean, early settle is always reported."""
    result = result or audit(study, cfg)
    truths = study.truths(cfg)
    for s in result.studies:
        for r in s.runs:
            t = truths[r.run]
            tc = r.t_compress
            if t.settles and tc is not None and tc.value is not None:
                tol = t.t_compress_tolerance(cfg.smooth)
                assert abs(tc.value - t.t_settle) <= tol, (
                    f"{r.run}: t_compress {tc.value}, true settling {t.t_settle:.1f} "
                    f"(tolerance {tol:.0f}; {_shape(study, r.run)})")
                assert tc.lower is not None and tc.lower < tc.value, f"{r.run}: {tc}"
            if t.clean:
                assert tc is not None and tc.value is not None, (
                    f"{r.run}: a clean settle at {t.t_settle:.1f} was not reported "
                    f"({r.floor_stability}, {[c.value for c in r.reasons]})")


def check_lag_not_clipped(study: Study, cfg: AuditConfig, result: AuditResult | None = None
                          ) -> None:
    """``lag`` is ``t_compress − t_grok`` by interval arithmetic, negative when compression
    came first: never clipped to 0."""
    result = result or audit(study, cfg)
    truths = study.truths(cfg)
    for s in result.studies:
        for r in s.runs:
            tc, tg, lag = r.t_compress, r.t_grok, r.lag
            if tc is None or tc.value is None or tg.value is None:
                continue
            assert lag is not None and lag.value is not None, f"{r.run}: no lag"
            # both clocks are established: each end of both intervals is known
            assert tc.lower is not None and tc.upper is not None, f"{r.run}: {tc}"
            assert tg.lower is not None and tg.upper is not None, f"{r.run}: {tg}"
            assert lag.value == tc.value - tg.value, f"{r.run}: lag {lag.value}"
            assert lag.lower == tc.lower - tg.upper, f"{r.run}: lag lower {lag.lower}"
            assert lag.upper == tc.upper - tg.lower, f"{r.run}: lag upper {lag.upper}"
            t = truths[r.run]
            if t.settles and t.t_settle + t.t_compress_tolerance(cfg.smooth) < t.t_grok - \
                    t.acc_interval:
                assert lag.value < 0, f"{r.run}: compression came first but lag {lag.value}"
                assert Reason.COMPRESSION_BEFORE_GROK in r.reasons, r.run


def check_censored_medians(study: Study, cfg: AuditConfig, result: AuditResult | None = None
                           ) -> None:
    """A cell median is censored when half or more of its runs are, and a censored median is
    never reported as a value."""
    result = result or audit(study, cfg)
    for s in result.studies:
        for c in s.cells:
            runs = [r for r in s.runs if r.cell == c.axis_value]
            for q in TIME_QS:
                iv: Interval | None = getattr(c, q)
                if iv is None:
                    continue
                if iv.censored:
                    assert iv.value is None and iv.upper is None, f"cell {c.axis_value} {q}: {iv}"
                    assert Reason.MEDIAN_CENSORED in c.notes, f"cell {c.axis_value} {q}"
                members = [getattr(r, q) for r in runs
                           if (q == "t_grok" or r.t_grok.value is not None)]
                members = [m for m in members if m is not None and m.lower is not None]
                if not members:
                    continue
                n_cens = sum(m.censored for m in members)
                assert iv.censored == (2 * n_cens >= len(members)), (
                    f"cell {c.axis_value} {q}: {n_cens}/{len(members)} censored, median {iv}")
                if not iv.censored:
                    assert iv.lower is not None and iv.upper is not None and \
                        iv.value is not None and iv.lower <= iv.value <= iv.upper, (
                            f"cell {c.axis_value} {q}: {iv}")


def _oracle_counts(cells: Sequence[CellSummary], q: str) -> tuple[int, int, int, int]:
    """Concordant, discordant and unidentified pairs of ``q`` against the axis, recounted
    from the cells' reported intervals by AUDIT_SPEC §3 (independently of the core)."""
    pts = []
    for c in cells:
        if q in TIME_QS:
            iv = getattr(c, q)
            if iv is None or iv.lower is None:
                continue
            pts.append((iv.lower, math.inf if iv.upper is None else iv.upper, iv.value))
        else:
            v = getattr(c, q)
            if v is None or c.delta is None:
                continue
            pts.append((v - c.delta, v + c.delta, None))
    C = D = U = 0
    for i in range(len(pts)):
        for j in range(i + 1, len(pts)):
            (li, ui, vi), (lj, uj, vj) = pts[i], pts[j]
            if q in TIME_QS:
                tie = vi is not None and vi == vj
                before, after = (ui <= lj and not tie), (uj <= li and not tie)
            else:
                before, after = ui < lj, uj < li
            C, D, U = (C + 1, D, U) if before else (C, D + 1, U) if after else (C, D, U + 1)
    return C, D, U, len(pts)


def check_orderings_back_verdicts(study: Study, cfg: AuditConfig,
                                  result: AuditResult | None = None) -> None:
    """An ordering is identified only when ≥ 3 cells take part and |C − D| > U (recounted
    here from the reported intervals); a clock claim is made only on identified orderings
    of the right shape and direction; a gated cell takes part in none."""
    result = result or audit(study, cfg)
    for s in result.studies:
        passing = [c for c in s.cells if c.passes]
        for o in s.orderings:
            assert set(o.axis_values) <= {c.axis_value for c in passing}, (
                f"{o.quantity}: a gated cell takes part in the ordering")
            C, D, U, n = _oracle_counts(passing, o.quantity)
            if o.identified:
                assert n >= 3 and abs(C - D) > U, (
                    f"{o.quantity} identified with C={C} D={D} U={U} over {n} cells")
                assert o.direction == (1 if C > D else -1), f"{o.quantity} direction"
            if cfg.ordering == "intervals":
                assert (o.concordant, o.discordant, o.unidentified) == (C, D, U), (
                    f"{o.quantity}: reported C/D/U {o.concordant}/{o.discordant}/"
                    f"{o.unidentified}, recounted {C}/{D}/{U}")
                assert o.identified == (n >= 3 and abs(C - D) > U), o.quantity
        _check_verdict(s, len(passing))


def _check_verdict(s: StudyResult, n_passing: int) -> None:
    og, oc = s.ordering("t_grok"), s.ordering("t_compress")
    assert og is not None and oc is not None
    if n_passing < 2:
        assert s.verdict is None, f"{s.verdict} with {n_passing} passing cells"
        return
    assert s.verdict is not None
    if s.verdict in CLAIMS:
        assert og.identified and oc.identified, f"{s.verdict.value} on an undefined ordering"
    if s.verdict is Reason.TWO_CLOCKS:
        assert og.monotone and oc.monotone and og.direction == -oc.direction
    if s.verdict is Reason.ONE_CLOCK_LARGE_LAG:
        assert og.monotone and oc.monotone and og.direction == oc.direction
    if s.verdict is Reason.PARTIALLY_SEPARATED:
        assert not (og.monotone and oc.monotone)
    if s.verdict is Reason.LARGE_LAG_ORDERING_UNDETERMINED:
        assert not (og.identified and oc.identified), "undetermined, yet both identified"
    codes = {f.code for f in s.findings}
    if Reason.SNAPSHOT_REVERSES_ORDERING in codes:
        om, of = s.ordering("m_grok"), s.ordering("floor")
        assert om is not None and of is not None and om.monotone and of.monotone \
            and om.direction == -of.direction, "SNAPSHOT_REVERSES_ORDERING without the orderings"
    gated = {c.axis_value for c in s.cells if not c.passes}
    for f in s.findings:
        if f.code is Reason.SNAPSHOT_HIDES_BOUNDARY:
            assert f.cell in gated, f"SNAPSHOT_HIDES_BOUNDARY on passing cell {f.cell}"


def check_one_result(study: Study, cfg: AuditConfig) -> None:
    """Every single-result property on one audit of ``study``."""
    result = audit(study, cfg)
    for f in SINGLE:
        f(study, cfg, result)


SINGLE: tuple[Callable[..., None], ...] = (
    check_no_t_compress_without_truth, check_t_grok, check_t_compress, check_lag_not_clipped,
    check_censored_medians, check_orderings_back_verdicts,
)


# ------------------------------------------------------------------------------------------
# metamorphic invariances and determinism
# ------------------------------------------------------------------------------------------

def signature(result: AuditResult, step_scale: float = 1.0, metric_scale: float = 1.0,
              run_names: Callable[[str], str] = lambda r: r, seeds_dup: bool = False
              ) -> list[Any]:
    """What must not change under a harmless transformation of the log: verdicts, gates,
    orderings, medians (times divided by ``step_scale``, metric values by ``metric_scale``),
    and each run's reasons (by its original name)."""
    out: list[Any] = []
    for s in result.studies:
        cells = []
        for c in s.cells:
            d = {q: _iv(getattr(c, q), step_scale) for q in TIME_QS}
            d.update(axis=c.axis_value, gates=c.gates, notes=c.notes,
                     floor=_v(c.floor, metric_scale), m_grok=_v(c.m_grok, metric_scale),
                     rel_lag=_v(c.rel_lag, 1.0), inflation=_v(c.inflation, 1.0),
                     frac_pre=_v(c.frac_pre, 1.0))
            if not seeds_dup:
                d.update(n=(c.n_runs, c.n_grokked, c.n_established, c.n_transient))
            cells.append(d)
        ords = [(o.quantity, o.identified, o.direction, o.shape, o.concordant, o.discordant,
                 o.unidentified, o.sub_reason) for o in s.orderings]
        runs = sorted((run_names(r.run), r.reasons, _iv(r.t_grok, step_scale),
                       _iv(r.t_compress, step_scale), _iv(r.lag, step_scale),
                       _v(r.floor, metric_scale), r.floor_stability) for r in s.runs)
        if seeds_dup:
            runs = sorted(set(runs))
        out.append((s.verdict, cells, ords, runs))
    # a copy of every run is a copy: DUPLICATE_RUN is what the duplicated log must add
    skip = (Reason.UNSORTED_STEPS, Reason.MISSING_VALUES) + (
        (Reason.DUPLICATE_RUN,) if seeds_dup else ())
    codes = sorted(c.value for c in result.codes if c not in skip)
    out.append(codes)
    return out


def _v(x: float | None, scale: float) -> float | None:
    return None if x is None else round(x / scale, 9)


def _iv(iv: Interval | None, scale: float) -> Any:
    if iv is None:
        return None
    return (_v(iv.value, scale), _v(iv.lower, scale), _v(iv.upper, scale), iv.censored)


def check_metamorphic(study: Study, cfg: AuditConfig, seed: int = 0) -> None:
    """Shuffling rows, renaming runs, studies and the axis, scaling the metric by a power of two
    (when ``abs_tol`` and ``min_abs_drop`` are 0: otherwise the config itself is not
    scale-free), multiplying every step by 2 or 4, and duplicating every seed change nothing
    that should not change."""
    study = study.for_config(cfg)
    df = study.table()
    base = audit(study, cfg, df)
    rng = random.Random(seed)

    # rows shuffled
    shuffled = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    assert signature(audit(study, cfg, shuffled)) == signature(base), "row order changed it"

    # runs renamed (the new names sort differently) and the study renamed
    names = {r: f"{rng.randrange(10**6):06d}-{i}" for i, r in enumerate(df["run"].unique())}
    inv = {v: k for k, v in names.items()}
    ren = df.assign(run=df["run"].map(names), arch="a")
    ren2 = df.assign(arch="z")
    sig_a = signature(audit(study, cfg, ren, cell=("arch",)), run_names=lambda r: inv[r])
    sig_z = signature(audit(study, cfg, ren2, cell=("arch",)))
    assert sig_a == sig_z == signature(base), "renaming runs or the study changed it"

    # the axis column renamed
    axis_ren = df.rename(columns={study.axis: "wd"})
    assert signature(audit(study, cfg, axis_ren, by="wd")) == signature(base), (
        "renaming the axis column changed it")

    # metric scaled by a power of two (exact in floating point); only a config without
    # absolute tolerances (abs_tol, min_abs_drop in metric units) is scale-free
    c = rng.choice((0.25, 0.5, 2.0, 8.0))
    if cfg.abs_tol == 0 and cfg.min_abs_drop == 0:
        scaled = df.assign(emb_erank=df["emb_erank"] * c)
        assert signature(audit(study, cfg, scaled), metric_scale=c) == signature(base), (
            f"scaling the metric by {c} changed it")

    # every step multiplied by an integer
    k = rng.choice((2, 4))
    stretched = df.assign(step=df["step"] * k)
    assert signature(audit(study, cfg, stretched), step_scale=k) == signature(base), (
        f"multiplying steps by {k} changed it")

    # every seed duplicated under a new run id
    dup = df.assign(run=df["run"] + "/dup", seed=df["seed"] + 1000)
    both = pd.concat([df, dup], ignore_index=True)
    res_dup = audit(study, cfg, both)
    sig_dup = signature(res_dup, seeds_dup=True, run_names=lambda r: r.removesuffix("/dup"))
    assert sig_dup == signature(base, seeds_dup=True), "duplicating seeds changed it"
    assert Reason.DUPLICATE_RUN in res_dup.codes, "a copy of every run was not flagged"


def check_deterministic(study: Study, cfg: AuditConfig) -> None:
    """The same log and config give byte-identical JSON."""
    df = study.for_config(cfg).table()
    a = audit(study, cfg, df).to_json()
    b = audit(study, cfg, df.copy()).to_json()
    assert a == b, "two audits of the same log differ"


def check_expected_verdict(drawn: tuple[Study, ExpectedStudy | None],
                           cfg: AuditConfig) -> None:
    """A :func:`~.strategies.clock_studies` log gets exactly the cell times, pair counts and
    verdict worked out from its construction under ``cfg``'s thresholds
    (:func:`~.strategies.expected_clock_study`; nothing is said when the construction does not
    settle cleanly under them)."""
    study, _ = drawn
    exp = expected_clock_study(study, cfg)
    if exp is None:
        return
    if abs(exp.median_rel_lag - cfg.large_lag) < 1e-9:
        return  # on the threshold itself: either answer rounds the same way
    result = audit(study, cfg)
    s = result.studies[0]
    for c in s.cells:
        assert c.gates == (), f"cell {c.axis_value} gated {c.gates}"
        assert c.t_grok is not None and c.t_compress is not None, f"cell {c.axis_value}"
        assert (c.t_grok.lower, c.t_grok.value) == exp.t_grok[c.axis_value], (
            f"cell {c.axis_value}: t_grok {c.t_grok}, expected {exp.t_grok[c.axis_value]}")
        assert (c.t_compress.lower, c.t_compress.value) == exp.t_compress[c.axis_value], (
            f"cell {c.axis_value}: t_compress {c.t_compress}, "
            f"expected {exp.t_compress[c.axis_value]}")
    for q, cdu in exp.counts.items():
        o = s.ordering(q)
        assert o is not None and (o.concordant, o.discordant, o.unidentified) == cdu, (
            f"{q}: C/D/U {o and (o.concordant, o.discordant, o.unidentified)}, expected {cdu}")
    assert s.verdict is exp.verdict, (
        f"verdict {s.verdict}, expected {exp.verdict} (median rel_lag {exp.median_rel_lag:.3f})")


# ------------------------------------------------------------------------------------------
# running them outside pytest (``grokaudit suite``)
# ------------------------------------------------------------------------------------------

#: A property run by :func:`run_property`: it checks one drawn :func:`~.strategies.studies`
#: log, or (:func:`check_expected_verdict`) one :func:`~.strategies.clock_studies` draw.
PropertyFn: TypeAlias = (Callable[[Study, AuditConfig], None]
                         | Callable[[tuple[Study, ExpectedStudy | None], AuditConfig], None])

PROPERTIES: tuple[tuple[str, PropertyFn, float], ...] = (
    ("single-result properties", check_one_result, 1.0),
    ("metamorphic invariances", check_metamorphic, 0.4),
    ("determinism", check_deterministic, 0.2),
    ("expected verdicts", check_expected_verdict, 0.5),
)


def run_property(name: str, fn: PropertyFn, cfg: AuditConfig,
                 max_examples: int, shrink: bool = False) -> dict[str, Any]:
    """Run one property for ``max_examples`` drawn studies; report pass or the first failure
    (not shrunk unless ``shrink``: shrinking is unbounded in time)."""
    import warnings

    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]

    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=phases, print_blob=False)
    @given(clock_studies() if fn is check_expected_verdict else studies())
    def prop(study: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(study, cfg)

    try:
        prop()
    except Exception as exc:  # noqa: BLE001 - report any failure, with its message
        msg = str(exc).strip().splitlines()
        return {"property": name, "examples": max_examples, "pass": False,
                "error": f"{type(exc).__name__}: {msg[0] if msg else ''}"}
    return {"property": name, "examples": max_examples, "pass": True, "error": None}


def run_all(cfg: AuditConfig, max_examples: int) -> tuple[dict[str, Any], ...]:
    return tuple(run_property(n, f, cfg, max(1, int(max_examples * share)))
                 for n, f, share in PROPERTIES)





def undefined_critical_findings(doc: Mapping[str, Any]) -> list[str]:
    """Critical findings whose cell's own gates say the quantity is undefined (issue 19), in
    an audit's JSON (``AuditResult.to_dict()`` or ``check --json``): a snapshot finding on a
    cell that did not generalize, or whose transient groks were mostly not sustained, or
    whose evidence says the value at grok is undefined; an unstable floor on a gated cell.
    Empty when severity follows evidence."""
    bad: list[str] = []
    for s in doc.get("studies", []):
        cells = {json.dumps(c["axis_value"]): c for c in s.get("cells", [])}
        for f in s.get("findings", []):
            if f.get("severity") != "critical" or f.get("cell") is None:
                continue
            c = cells.get(json.dumps(f["cell"]))
            if c is None:
                continue
            where = f"{f['code']} on cell {f['cell']} ({s.get('metric')})"
            if f["code"] in ("SNAPSHOT_TRANSIENT", "SNAPSHOT_HIDES_BOUNDARY"):
                ev = f.get("evidence") or {}
                if {"BOUNDARY_PARTIAL_GENERALIZATION", "NO_GROK"} & set(c.get("gates", [])):
                    bad.append(f"{where}: the cell did not generalize")
                elif ev.get("value_at_grok_defined") is False:
                    bad.append(f"{where}: its evidence says the value at grok is undefined")
                elif f["code"] == "SNAPSHOT_TRANSIENT" and c.get("n_transient") and \
                        2 * c.get("n_transient_sustained", 0) <= c["n_transient"]:
                    bad.append(f"{where}: most transient groks were not sustained")
            if f["code"] == "FLOOR_UNSTABLE" and not c.get("passes", False):
                bad.append(f"{where}: the cell is gated")
    return bad
