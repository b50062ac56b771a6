"""``grokaudit compare``: paired comparisons of methods (CLAIMS_SPEC, seed 004 §6.3).

``--by method --pair seed``: runs are paired by the ``--pair`` column across two arms of the
``--by`` column; per pair ``d = t_grok(first arm) − t_grok(second arm)`` (positive: the second
arm groks sooner). A pair in which one arm never grokked is a *censored difference*: only a
bound is known (``d > bound`` when the first arm is censored, ``d < bound`` when the second is).
It is shown, counted, and enters the tests at its bound; a pair where both arms are censored has
no known sign and is left out of the tests (counted). Tests: the exact Wilcoxon signed-rank test,
the sign-flip permutation test; effect size Cohen's ``d_z``; seeded bootstrap CIs of the mean
(BCa) and median (percentile) difference. ``UNDERPOWERED`` when the number of usable pairs makes
``p < α`` impossible for the exact test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..config import AuditConfig
from ..errors import ErrorCode, LogFormatError
from ..reasons import Reason
from ..results import Finding, Interval
from ..schema import LogTable
from .results import ClaimResult, finding, make_result
from .runs import py, require_columns, run_clocks
from .stats import bootstrap_ci, cohen_dz, min_wilcoxon_p, sign_flip_test, wilcoxon_exact


def _diff(a: pd.Series, b: pd.Series) -> dict[str, Any]:
    """The difference ``a − b`` of two runs' t_grok, with what is known when censored."""
    ca, cb = bool(math.isinf(a.tg_upper)), bool(math.isinf(b.tg_upper))
    if not ca and not cb:
        return {"kind": "observed", "value": a.tg_value - b.tg_value, "bound": None}
    if ca and not cb:  # first arm never grokked by its last step: d > L_a − t_b
        return {"kind": "lower_bound", "value": None, "bound": a.tg_lower - b.tg_value}
    if cb and not ca:
        return {"kind": "upper_bound", "value": None, "bound": a.tg_value - b.tg_lower}
    return {"kind": "both_censored", "value": None, "bound": None}


def paired_stats(d: np.ndarray, *, alpha: float, seed: int, level: float) -> dict[str, Any]:
    """Every paired statistic of the differences ``d`` (finite values)."""
    n = int(d.size)
    return {
        "n": n,
        "mean": float(d.mean()) if n else None,
        "median": float(np.median(d)) if n else None,
        "cohen_dz": cohen_dz(d),
        "wilcoxon": wilcoxon_exact(d),
        "sign_flip": sign_flip_test(d, seed=seed),
        "mean_ci": bootstrap_ci(d, np.mean, seed=seed, level=level, method="bca"),
        "median_ci": bootstrap_ci(d, np.median, seed=seed, level=level, method="percentile"),
        "min_attainable_p": min_wilcoxon_p(n),
    }


def run_compare(table: pa.Table | pd.DataFrame | LogTable, config: AuditConfig, *,
                by: str, pair: str, arms: Sequence[Any] = (), alpha: float = 0.05,
                level: float = 0.95, seed: int = 0, step_unit: str | None = None,
                source: str | None = None) -> ClaimResult:
    """Audit a paired comparison of two arms of ``by``, paired on ``pair``."""
    rc = run_clocks(table, config, source, step_unit)
    require_columns(rc, [by], "--by", numeric=False)
    require_columns(rc, [pair], "--pair", numeric=False)
    f = rc.frame
    levels = sorted(f[by].dropna().unique().tolist(), key=str)
    if arms:
        chosen = []
        for a in arms:
            match = [v for v in levels if str(v) == str(a)]
            if not match:
                raise LogFormatError(f"--arms: {a!r} is not a value of {by!r} (values: "
                                     f"{[py(v) for v in levels]})", path=source, column=by, code=ErrorCode.UNKNOWN_VALUE)
            chosen.append(match[0])
        if len(chosen) != 2:
            raise LogFormatError("--arms takes exactly two values: FIRST,SECOND", path=source,
                                 column="--arms", code=ErrorCode.INVALID_OPTION)
    else:
        if len(levels) != 2:
            raise LogFormatError(f"--by {by!r} has {len(levels)} values "
                                 f"({[py(v) for v in levels]}); choose two with --arms A,B",
                                 path=source, column=by, code=ErrorCode.INVALID_OPTION)
        chosen = levels
    a_arm, b_arm = chosen
    A = f[f[by] == a_arm]
    B = f[f[by] == b_arm]
    for arm, g in ((a_arm, A), (b_arm, B)):
        dup = g[pair][g[pair].duplicated()]
        if len(dup):
            raise LogFormatError(f"arm {by}={py(arm)!r} has several runs with {pair}="
                                 f"{py(dup.iloc[0])!r}; a pair is one run per arm (split the "
                                 "other conditions first)", path=source, column=pair, code=ErrorCode.DUPLICATE_AXIS_VALUES)
    keys = sorted(set(A[pair]) & set(B[pair]), key=_order)
    unpaired = sorted((set(A[pair]) ^ set(B[pair])), key=_order)
    Ai = A.set_index(pair)
    Bi = B.set_index(pair)
    pairs = []
    for k in keys:
        a, b = Ai.loc[k], Bi.loc[k]
        dd = _diff(a, b)
        pairs.append({"pair": py(k), "runs": [a.run, b.run],
                      "t_grok": [Interval.make(a.tg_value, a.tg_lower, a.tg_upper),
                                 Interval.make(b.tg_value, b.tg_lower, b.tg_upper)], **dd})
    obs = np.array([p["value"] for p in pairs if p["kind"] == "observed"], dtype=float)
    bounded = np.array([p["bound"] for p in pairs if p["kind"] in ("lower_bound", "upper_bound")],
                       dtype=float)
    d_all = np.concatenate((obs, bounded))
    n_both = sum(p["kind"] == "both_censored" for p in pairs)
    findings: list[Finding] = []
    if bounded.size or n_both:
        findings.append(finding(
            Reason.CENSORED_PAIRS, "study",
            f"{bounded.size} pairs with one arm censored (entered at their bound), {n_both} "
            "with both censored (left out of the tests)",
            runs=[r for p in pairs if p["kind"] != "observed" for r in p["runs"]],
            evidence={"n_bounded": int(bounded.size), "n_both_censored": int(n_both),
                      "n_pairs": len(pairs)}))
    main = paired_stats(d_all, alpha=alpha, seed=seed, level=level)
    complete = paired_stats(obs, alpha=alpha, seed=seed, level=level)
    n_use = main["wilcoxon"].n
    if min_wilcoxon_p(n_use) >= alpha:
        findings.append(finding(
            Reason.UNDERPOWERED, "study",
            f"{n_use} usable pairs: the exact test cannot reach p < {alpha} (smallest attainable "
            f"p = {min_wilcoxon_p(n_use):.4g})",
            evidence={"n_pairs": n_use, "alpha": alpha,
                      "min_attainable_p": min_wilcoxon_p(n_use),
                      "pairs_needed": _pairs_needed(alpha)}))
    body = {
        "step_unit": rc.step_unit,
        "arms": [py(a_arm), py(b_arm)],
        "difference": f"t_grok({by}={py(a_arm)}) - t_grok({by}={py(b_arm)})",
        "pairs": pairs,
        "unpaired": [py(u) for u in unpaired],
        "tests": main,
        "tests_complete_pairs_only": complete,
        "alpha": alpha,
    }
    params = {"by": by, "pair": pair, "arms": [py(a_arm), py(b_arm)], "alpha": alpha,
              "level": level, "seed": seed, "step_unit": rc.step_unit}
    return make_result("compare", params=params, config=config.to_dict(),
                       input=rc.log.summary.to_dict(), body=body, findings=findings,
                       fail_on=config.fail_on)


def _order(v: Any) -> tuple[int, Any]:
    """Pair labels in natural order: numbers numerically, then text."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return (0, float(v))
    return (1, str(v))


def _pairs_needed(alpha: float) -> int:
    n = 1
    while min_wilcoxon_p(n) >= alpha:
        n += 1
    return n
