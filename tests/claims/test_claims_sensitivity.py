"""``check --sensitivity``: which verdicts move over the grid; VERDICT_FRAGILE."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from grokaudit import Reason, make_config
from grokaudit.claims.sensitivity import render_sensitivity, run_sensitivity


def _log(t_settle_scale: float) -> pd.DataFrame:
    """test_acc rises linearly to 1 at step 4000 (0.9 is crossed at 3556, 0.95 at 3778);
    the metric settles near 0.89·``t_settle_scale``: the median rel_lag sits near the 0.5 cut
    for 6100 and far below it for 3600."""
    rows = []
    rng = np.random.default_rng(0)
    steps = np.arange(0, 10001, 50)
    for rho in (1.0, 2.0, 3.0):
        for s in range(3):
            acc = np.clip(0.1 + 0.9 * steps / 4000, 0, 1)
            m = 2 + 8 * np.clip(1 - steps / t_settle_scale, 0, 1) ** 2 \
                + rng.normal(0, 0.005, steps.size)
            rows.append(pd.DataFrame({"run": f"r{rho}_{s}", "step": steps, "test_acc": acc,
                                      "train_acc": 1.0, "emb_erank": m, "rho": rho,
                                      "seed": s}))
    return pd.concat(rows, ignore_index=True)


def test_a_verdict_on_the_lag_cut_is_fragile() -> None:
    r = run_sensitivity(_log(6100), make_config(by="rho"))
    assert Reason.VERDICT_FRAGILE in r.codes
    assert r.exit_code == 1
    moved = {(m["parameter"], m["value"]) for m in r.moves}
    assert ("grok_threshold", 0.95) in moved  # t_grok later → rel_lag below the cut
    assert all(m["verdict"][0] != m["verdict"][1] or m["hazards_gained"] or m["hazards_lost"]
               for m in r.moves)


def test_a_verdict_far_from_every_cut_is_robust() -> None:
    r = run_sensitivity(_log(3600), make_config(by="rho"))
    assert Reason.VERDICT_FRAGILE not in r.codes
    assert not r.moves
    assert r.exit_code == 0
    assert len(r.variants) == 7  # 2 + 2 + 2 + 1 values away from the defaults


def test_json_is_versioned_and_stable_and_text_renders() -> None:
    a = run_sensitivity(_log(6100), make_config(by="rho")).to_json()
    b = run_sensitivity(_log(6100), make_config(by="rho")).to_json()
    assert a == b
    d = json.loads(a)
    assert d["schema"] == "grokaudit.sensitivity/1"
    assert d["summary"]["fragile_studies"] == 1
    assert d["audit"]["schema"] == "grokaudit.audit/1"  # the baseline audit travels along
    assert render_sensitivity(run_sensitivity(_log(3600), make_config(by="rho")))
