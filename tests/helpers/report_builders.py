"""Smooth synthetic grokking logs for the report tests, with a known shape per cell.

Each run: train accuracy saturates early, test accuracy rises as a logistic around ``t_grok``,
and the metric (``emb_erank``) sits near a peak until ``t_grok``, then decays exponentially to
its floor with time constant ``tau``. Seeds jitter ``t_grok`` and add small noise. A cell built
with ``settle=False`` has runs whose metric keeps falling linearly to the end of the log: those
runs never settle, so their ``t_compress`` is censored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

END = 20_000
CAD = 100


def run_frame(run: str, *, t_grok: float, tau: float, floor: float, peak: float = 40.0,
              acc_hi: float = 1.0, settle: bool = True, seed: int = 0, end: int = END,
              cad: int = CAD, **conds: object) -> pd.DataFrame:
    rng = np.random.default_rng(seed + int(t_grok))
    s = np.arange(0, end + 1, cad, dtype=np.int64)
    tg = t_grok * (1 + 0.05 * rng.standard_normal())
    test = 0.02 + (acc_hi - 0.02) / (1 + np.exp(-(s - tg) / (0.03 * tg)))
    train = 1 - 0.98 * np.exp(-s / 300.0)
    if settle:
        m = floor + (peak - floor) * np.exp(-np.clip(s - tg, 0, None) / tau)
    else:  # still falling linearly when the log ends: never settles
        m = peak - (peak - floor) * np.clip(s - tg, 0, None) / (end - tg)
    m = m * (1 + 0.002 * rng.standard_normal(s.shape))
    df = pd.DataFrame({"run": run, "step": s, "test_acc": np.clip(test, 0, 1),
                       "train_acc": np.clip(train, 0, 1), "emb_erank": m})
    df["seed"] = seed
    for k, v in conds.items():
        df[k] = v
    return df


def study(cells: Sequence[dict[str, object]], seeds: int = 3, axis: str = "rho",
          **conds: object) -> pd.DataFrame:
    """One run per seed per cell; each cell dict holds ``axis`` plus run_frame keywords.

    A cell may give ``never_settle`` = how many of its seeds never settle.
    """
    frames = []
    for spec in cells:
        spec = dict(spec)
        a = spec.pop(axis)
        bad = int(spec.pop("never_settle", 0))  # type: ignore[arg-type]
        for s in range(seeds):
            frames.append(run_frame(f"{axis}{a}_s{s}", seed=s, settle=s >= bad, **spec,
                                    **{axis: a}, **conds))
    return pd.concat(frames, ignore_index=True)


def healthy_study(**conds: object) -> pd.DataFrame:
    """Four compressing cells along ``rho`` (t_grok falls, lag grows) and one boundary cell
    that never fully generalizes."""
    return study([
        {"rho": 0.5, "t_grok": 1200, "tau": 400, "floor": 12.0},
        {"rho": 1.0, "t_grok": 1600, "tau": 700, "floor": 13.0},
        {"rho": 1.5, "t_grok": 2200, "tau": 1000, "floor": 14.0},
        {"rho": 2.0, "t_grok": 3000, "tau": 1300, "floor": 15.0},
        {"rho": 3.0, "t_grok": 4000, "tau": 600, "floor": 20.0, "acc_hi": 0.7},
    ], **conds)


def censored_study(**conds: object) -> pd.DataFrame:
    """Like :func:`healthy_study`, but two of three seeds of ``rho=2`` never settle: that cell's
    median ``t_compress`` is censored (MEDIAN_CENSORED)."""
    return study([
        {"rho": 0.5, "t_grok": 1200, "tau": 400, "floor": 12.0},
        {"rho": 1.0, "t_grok": 1600, "tau": 700, "floor": 13.0},
        {"rho": 1.5, "t_grok": 2200, "tau": 1000, "floor": 14.0},
        {"rho": 2.0, "t_grok": 3000, "tau": 1300, "floor": 15.0, "never_settle": 2},
    ], **conds)
