"""The live answer never disagrees with ``check`` on a finished log (issue 24): every run of
every named adversarial case and of the bundled logs, fed to a LiveRun row by row, ends in the
state ``check`` gives that run — exactly, against the run audited on its own; and against the
whole log except where ``check`` learned from a sibling (a longer run showing the metric still
moving after this run's horizon: ``short_horizon_runs``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from grokaudit import audit_table
from grokaudit.adversarial_suite import catalog
from grokaudit.errors import GrokauditError
from grokaudit.live import LiveRun
from grokaudit.schema import is_known_metric

pytestmark = pytest.mark.filterwarnings("ignore")
DATA = Path(__file__).resolve().parents[2] / "reference_runs" / "data"
BUNDLED = (("mlp_wd_sweep_p59.parquet", {"by": "wd", "metrics": ["emb_erank", "emb_pr"]}),
           ("transformer_ln_p23.parquet", {"by": "layernorm", "metrics": ["emb_erank"]}))


def _fields(r) -> dict:
    d = r.to_dict()
    return {k: d[k] for k in ("t_grok", "grok_sustained", "compression", "t_compress", "floor",
                              "floor_stability", "drift", "delta")}


def _settled(r) -> bool:
    """The live notion of a settled metric, read off check's own per-run result."""
    return (r.floor_stability in ("stable", "unchecked")
            and (r.compression == "none" or (r.compression == "compressed"
                                             and r.t_compress is not None
                                             and not r.t_compress.censored)))


def _live_final(df: pd.DataFrame, run: str, cfg) -> LiveRun:
    """The run fed row by row, as a training loop logs it (its per-step columns only)."""
    live = LiveRun(run, config=cfg)
    g = df[df["run"] == run].sort_values("step", kind="stable")
    cols = [c for c in g.columns if c not in ("run", "step") and g[c].dtype.kind in "fi"
            and (is_known_metric(c) or c in ("test_acc", "train_acc", cfg.grok_on)
                 or g[c].nunique(dropna=True) > 1)]
    for rec in g[["step", *cols]].to_dict("records"):
        step = rec.pop("step")
        live.log(step, **rec)
    return live


def _compare(df: pd.DataFrame, cfg) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            whole = audit_table(df, config=cfg)
        except GrokauditError:
            return -1  # an input-error case: check refuses it, there is no answer to agree with
    short = {r for s in whole.studies for c in s.cells for r in c.short_horizon_runs}
    compared = 0
    for study in whole.studies:
        for r in study.runs:
            live = _live_final(df, r.run, cfg)
            st = live.state()
            alone = audit_table(df[df["run"] == r.run], config=cfg.__class__(
                **{**cfg.__dict__, "by": None, "cell": (), "metrics": (study.metric,)
                   if not is_known_metric(study.metric) else ()}))
            ra = next(x for s in alone.studies if s.metric == study.metric for x in s.runs)
            ms = next((m for m in st.metrics if m.metric == study.metric), None)
            if ms is None:  # the run never logged this metric: live names it missing
                assert study.metric in {g.metric for g in st.missing}, r.run
                assert r.floor is None and r.t_compress is None, r.run
                compared += 1
                continue
            assert ms.run is not None
            assert ms.run.to_dict() == ra.to_dict() | {"cell": None}, (r.run, study.metric)
            if r.run not in short and cfg.floor_window != "grid" \
                    and cfg.grok_relative == "off":
                assert _fields(ms.run) == _fields(r), (r.run, study.metric)
                assert st.grokked == (not r.t_grok.censored)
                assert st.grok_sustained == (st.grokked and r.grok_sustained)
                assert ms.settled == _settled(r), (r.run, study.metric)
                if len(st.metrics) == 1:  # defined: grokked, held, and the metric settled
                    lo, _ = ms.window
                    tg = r.t_grok
                    want = (st.grok_sustained and _settled(r) and not tg.left_censored
                            and not (r.t_compress is not None and r.t_compress.left_censored)
                            and (r.floor is None or lo >= tg.upper))
                    assert st.defined == want, r.run
            compared += 1
    return compared


@pytest.mark.parametrize("case", catalog.CASES, ids=lambda c: c.name)
def test_live_agrees_with_check_on_every_suite_case(case) -> None:
    inst = case.instance()
    cfg = inst.cfg
    n = _compare(inst.table, cfg)
    assert n != 0  # refused by check (-1), or runs compared


@pytest.mark.parametrize("name,opts", BUNDLED, ids=[b[0] for b in BUNDLED])
def test_live_agrees_with_check_on_the_bundled_logs(name: str, opts: dict) -> None:
    from grokaudit import make_config

    df = pd.read_parquet(DATA / name)
    n = _compare(df, make_config(**opts))
    assert n == df["run"].nunique() * len(opts["metrics"])
