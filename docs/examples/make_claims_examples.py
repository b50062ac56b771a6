"""Write the synthetic logs of the worked examples in docs/claims.md.

    python docs/examples/make_claims_examples.py OUT_DIR

Each log is a canonical table written by ``grokaudit.claims.simulate.make_log`` from known
answers (stated below), so every number the claim audits print can be checked against the truth.
They stand in for trainer runs where the bundled trainer cannot produce the design on a small CPU
budget (see docs/claims.md, "Worked examples").
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from grokaudit.claims.simulate import make_log, weibull_times


def onset(rng: np.random.Generator) -> pd.DataFrame:
    """log t_grok = log 40 + 0.8·log H − 0.5·log lr + 0.4·W (Weibull AFT), budget 3000 steps:
    the slow cells are partly censored."""
    H = np.repeat([64, 128, 256, 512], 12)
    lr = np.tile(np.repeat([1.0, 3.0], 6), 4)
    s = np.tile(np.arange(6), 8)
    T = weibull_times(np.log(40) + 0.8 * np.log(H) - 0.5 * np.log(lr), 0.4, rng)
    T = np.where(T > 3000, np.inf, np.ceil(T))
    runs = pd.DataFrame({"run": [f"H{h}_lr{r:g}_s{x}" for h, r, x in zip(H, lr, s)], "H": H,
                         "lr": lr, "seed": s, "t_grok": T, "budget": 3000})
    return make_log(runs, every=50, ramp=400)


def dose(rng: np.random.Generator) -> pd.DataFrame:
    """ln t_grok = ln 500 + 1.2·(rho/tau − 1) + noise; a mediation design at rho = 1.15 over tau."""
    rows = []
    cells = [(r, 1.0) for r in (1.0, 1.15, 1.3, 1.45, 1.6, 1.75)] + \
        [(1.15, t) for t in (1.05, 1.1, 1.2, 1.25)]
    for rho, tau in cells:
        for s in range(6):
            T = np.exp(np.log(500) + 1.2 * (rho / tau - 1) + rng.normal(0, 0.04))
            rows.append({"run": f"rho{rho:g}_tau{tau:g}_s{s}", "rho": rho, "tau": tau,
                         "seed": s, "t_grok": float(np.ceil(T)), "budget": 3000})
    return make_log(pd.DataFrame(rows), every=5, series={
        "logit_scale": lambda r, st: np.full(st.size, 10 * r["rho"] / r["tau"])})


def transition(rng: np.random.Generator) -> pd.DataFrame:
    """P(grok) = logistic(4·(ln wd − ln 0.5)); above λ_c = 0.5, t_grok = 400·(wd − 0.5)^−0.5."""
    wd = np.repeat([0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0], 8)
    p = 1 / (1 + np.exp(-4 * (np.log(wd) - np.log(0.5))))
    g = rng.random(wd.size) < p
    with np.errstate(divide="ignore"):
        T = 400 * np.abs(wd - 0.5) ** -0.5 * np.exp(rng.normal(0, 0.1, wd.size))
    T = np.where(g, np.minimum(np.ceil(T), 7000), np.inf)
    runs = pd.DataFrame({"run": [f"wd{w:g}_s{i % 8}" for i, w in enumerate(wd)], "wd": wd,
                         "seed": np.tile(np.arange(8), 8), "t_grok": T, "budget": 8000})
    return make_log(runs, every=50)


def precursor(rng: np.random.Generator) -> pd.DataFrame:
    """attn_cv peaks 500 steps before grokking; weight_norm falls smoothly; 2 runs never grok."""
    tg = np.ceil(rng.uniform(2500, 4500, 10))
    tg[:2] = np.inf
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(10)], "seed": np.arange(10),
                         "t_grok": tg, "t_mem": 400, "budget": 6000})

    def cv(r: pd.Series, s: np.ndarray) -> np.ndarray:
        c = r["t_grok"] - 500 if np.isfinite(r["t_grok"]) else 3000
        noise = np.random.default_rng(int(r["seed"])).normal(0, 0.02, s.size)
        return 1 + np.exp(-(((s - c) / 250) ** 2)) + noise

    return make_log(runs, every=50, series={
        "attn_cv": cv, "weight_norm": lambda r, s: 30 * np.exp(-s / 4000) + 5})


def compare(rng: np.random.Generator) -> pd.DataFrame:
    """Five paired seeds: cv_adamw groks ~1500 steps sooner; one baseline run never groks."""
    base = np.ceil(rng.uniform(3000, 4000, 5))
    base[2] = np.inf
    new = np.ceil(rng.uniform(1500, 2500, 5))
    runs = pd.DataFrame({"run": [f"adamw_s{i}" for i in range(5)] + [f"cv_s{i}" for i in range(5)],
                         "method": ["adamw"] * 5 + ["cv_adamw"] * 5,
                         "seed": list(range(5)) * 2, "t_grok": np.r_[base, new],
                         "budget": 4500})
    return make_log(runs, every=50)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in (("onset", onset), ("dose", dose), ("transition", transition),
                     ("precursor", precursor), ("compare", compare)):
        df = fn(np.random.default_rng(2026))
        df.to_parquet(out / f"{name}.parquet", index=False)
        print(f"wrote {out / f'{name}.parquet'} ({df['run'].nunique()} runs, {len(df)} rows)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "claims_examples"))
