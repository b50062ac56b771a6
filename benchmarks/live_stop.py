"""What a settled-stop rule would have saved on the bundled sweeps, and what it would cost.

    python benchmarks/live_stop.py [--margins 1,2,3] [--markdown]

Each run of each bundled reference sweep is replayed row by row through
:class:`grokaudit.live.LiveRun` (the state computed at every logged step, as a callback
evaluating at every logged step would). For each margin the run stops at the first step where
``should_stop(margin)`` holds (its numbers defined and held from S0 to (1 + margin) × S0), or
runs to its budget. The sweep of stopped runs is then audited exactly as the full sweep is, and
the two are compared: steps saved against the fixed budget; runs whose t_compress differs
(changed value, or newly censored); the clock verdicts; the findings that appear or disappear.
This is a measurement, not a timing: it prints counts, never seconds.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "reference_runs" / "data"
#: (file, axis, metric, cells): the options the sweeps' own README audits them with
SWEEPS = (("mlp_wd_sweep_p59.parquet", "wd", "emb_erank", ("arch",)),
          ("transformer_ln_p23.parquet", "layernorm", "emb_erank", ()))


@dataclass
class Replay:
    run: str
    budget: float
    steps: list[float]
    defined_from: list[float | None]

    def stop(self, margin: float) -> float | None:
        for s, d in zip(self.steps, self.defined_from):
            if d is not None and s > d and s >= (1.0 + margin) * d:
                return s
        return None


def replay(df: pd.DataFrame, metric: str) -> list[Replay]:
    from grokaudit.live import LiveRun
    from grokaudit.schema import is_known_metric

    out = []
    for run, g in df.groupby("run", sort=True):
        # the per-step values a training loop logs (conditions are the run's, not rows)
        num = [c for c in g.columns if c not in ("run", "step") and g[c].dtype.kind in "fi"
               and (is_known_metric(c) or c in ("test_acc", "train_acc")
                    or g[c].nunique(dropna=True) > 1)]
        live = LiveRun(str(run), metrics=[metric])
        steps, since = [], []
        for rec in g.sort_values("step")[["step", *num]].to_dict("records"):
            s = float(rec.pop("step"))
            live.log(s, **rec)
            steps.append(s)
            since.append(live.state().defined_from)
        out.append(Replay(str(run), float(g["step"].max()), steps, since))
    return out


def compare(df: pd.DataFrame, reps: list[Replay], margin: float, axis: str, metric: str,
            cells: tuple[str, ...]) -> dict[str, object]:
    from grokaudit import audit_table

    stops = {r.run: r.stop(margin) for r in reps}
    cut = pd.concat([g[g["step"] <= stops[str(run)]] if stops[str(run)] is not None else g
                     for run, g in df.groupby("run", sort=True)])
    opts = {"by": axis, "metrics": [metric], "cell": list(cells)}
    full, short = audit_table(df, **opts), audit_table(cut, **opts)
    a = {r.run: r for s in full.studies for r in s.runs}
    b = {r.run: r for s in short.studies for r in s.runs}
    changed = [k for k in a if _tc(a[k]) != _tc(b[k])]
    newly_censored = [k for k in changed if b[k].t_compress is not None
                      and b[k].t_compress.censored and not (a[k].t_compress is not None
                                                            and a[k].t_compress.censored)]
    budget = sum(r.budget for r in reps)
    saved = sum(r.budget - s for r in reps if (s := stops[r.run]) is not None)
    fa = {f.code.value for f in full.findings}
    fb = {f.code.value for f in short.findings}
    return {"margin": margin, "runs": len(reps),
            "stopped": sum(s is not None for s in stops.values()),
            "saved": saved / budget if budget else 0.0,
            "tc_changed": changed, "newly_censored": newly_censored,
            "verdicts_full": [s.verdict_label for s in full.studies],
            "verdicts_stopped": [s.verdict_label for s in short.studies],
            "findings_added": sorted(fb - fa), "findings_removed": sorted(fa - fb)}


def _tc(r: object) -> str | None:
    tc = getattr(r, "t_compress", None)
    return None if tc is None else tc.format()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--margins", default="1,2,3", help="margins to compare (default 1,2,3)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    a = ap.parse_args(argv)
    margins = [float(m) for m in a.margins.split(",")]
    rows = []
    for name, axis, metric, cells in SWEEPS:
        df = pd.read_parquet(DATA / name)
        reps = replay(df, metric)
        for m in margins:
            rows.append((name, metric, compare(df, reps, m, axis, metric, cells)))
    if a.markdown:
        print("| sweep | metric | margin | runs stopped early | steps saved | t_compress "
              "changed | newly censored | clock verdict (full → stopped) | findings added | "
              "findings removed |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for name, metric, r in rows:
        vf = ", ".join(map(str, r["verdicts_full"]))  # type: ignore[call-overload]
        vs = ", ".join(map(str, r["verdicts_stopped"]))  # type: ignore[call-overload]
        changed = r["tc_changed"]
        cens = r["newly_censored"]
        if a.markdown:
            print(f"| `{name}` | `{metric}` | {r['margin']:g} | {r['stopped']}/{r['runs']} | "
                  f"{100 * r['saved']:.1f} % | {len(changed)} | {len(cens)} | "  # type: ignore
                  f"{vf} → {vs} | {', '.join(r['findings_added']) or '—'} | "  # type: ignore
                  f"{', '.join(r['findings_removed']) or '—'} |")  # type: ignore
        else:
            print(f"{name} {metric} margin {r['margin']:g}: stopped {r['stopped']}/{r['runs']}, "
                  f"saved {100 * r['saved']:.1f} % of the steps; t_compress changed in "
                  f"{changed}, newly censored {cens}; verdicts {vf} -> {vs}; findings added "
                  f"{r['findings_added']}, removed {r['findings_removed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
