"""Synthetic canonical logs with known answers, for the claim audits' tests and docs examples.

A run is described by its conditions and its true event steps; :func:`make_log` writes the
per-step table the audit reads (``run``, ``step``, ``test_acc``, ``train_acc``, conditions,
optional extra series). ``test_acc`` crosses 0.9 exactly at ``t_grok`` (a linear ramp of width
``ramp`` steps ending at 1.0 shortly after); a run with ``t_grok = inf`` never groks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

SeriesFn = Callable[[pd.Series, np.ndarray], np.ndarray]


def weibull_times(mu: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``T`` with ``log T = mu + sigma·W``, ``W`` standard minimum-extreme-value."""
    w = np.log(rng.exponential(size=np.shape(mu)))
    return np.exp(np.asarray(mu, dtype=float) + sigma * w)


def lognormal_times(mu: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Draw ``T`` with ``log T = mu + sigma·Z``, ``Z`` standard normal (a log-normal AFT)."""
    return np.exp(np.asarray(mu, dtype=float) + sigma * rng.standard_normal(np.shape(mu)))


def make_log(runs: pd.DataFrame, *, every: int = 100, ramp: float = 0.0,
             series: Mapping[str, SeriesFn] | None = None) -> pd.DataFrame:
    """The canonical table of ``runs``.

    ``runs`` has one row per run: ``run``, ``t_grok`` (inf = never), ``budget`` (last step),
    optionally ``t_mem`` (default 0.05·budget) and any condition columns. Steps are
    ``0, every, 2·every, … ≤ budget``. ``series`` maps a column name to ``fn(row, steps)``.
    """
    frames = []
    cond_cols = [c for c in runs.columns if c not in ("t_grok", "t_mem", "budget")]
    for _, r in runs.iterrows():
        steps = np.arange(0, int(r["budget"]) + 1, every, dtype=np.int64)
        tg = float(r["t_grok"])
        s = steps.astype(float)
        if ramp > 0 and np.isfinite(tg):
            acc = np.clip(0.1 + 0.8 * (s - tg + ramp) / ramp, 0.1, 1.0)
        else:
            acc = np.where(s >= tg, 1.0, 0.1)
        tm = float(r["t_mem"]) if "t_mem" in runs.columns else 0.05 * float(r["budget"])
        train = np.where(s >= tm, 1.0, 0.5)
        d = {"step": steps, "test_acc": acc, "train_acc": train}
        for name, fn in (series or {}).items():
            d[name] = np.asarray(fn(r, s), dtype=float)
        df = pd.DataFrame(d)
        for c in cond_cols:
            df[c] = r[c]
        frames.append(df)
    out: pd.DataFrame = pd.concat(frames, ignore_index=True)
    out["run"] = out["run"].astype(str)
    return out
