"""Logs the claim tests share."""

from __future__ import annotations

import numpy as np
import pandas as pd
from grokaudit.claims.simulate import make_log


def diverging_dose_log(budget: int = 100_000) -> pd.DataFrame:
    """ln T = ln 300 + 2x up to x = 2 (7 cells, 5 seeds), then a cell at x = 2.5 where no
    run groks within ``budget``: the exponential law fitted on the first 7 cells predicts
    300·e⁵ ≈ 45 000 steps there, a cell still ungrokked at 100 000."""
    rng = np.random.default_rng(1)
    rows = []
    for x in [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5]:
        for s in range(5):
            t = np.inf if x > 2.2 else round(300 * np.exp(2 * x + rng.normal(0, 0.03)))
            rows.append({"run": f"x{x}s{s}", "rho": x, "seed": s, "t_grok": t,
                         "budget": budget})
    return make_log(pd.DataFrame(rows), every=500)
