#!/usr/bin/env python3
"""Reproduction check of a recipe against public runs: T_grok and a metric trajectory.

Compares the runs of a trainer log (one cell, several seeds) with the public runs of the same
cell: the public median and 10–90 % band (over seeds) of the metric at several steps, and the
public T_grok range, against the trainer's median. Public trajectories are read at each step by
linear interpolation in log(step) per seed (the public grid is log-spaced), the trainer's at the
logged step itself (the reproduction config logs every comparison step).

The public cell of recipe ``critical-norm`` is one NPZ of ClevixLab/critical-norm-grokking's
p = 59 train-fraction sweep (``grokfss_p59/adamw_p59_a0.50_d128_H256_wd1e00_lr1e-03.npz``: 20
seeds, keys ``steps``, ``eff_rank_E``, ``test_acc``, ``T_grok_per_seed``); its ``eff_rank_E`` is
this trainer's ``emb_erank2``.

Usage::

    # train the cell (3 seeds × 12 000 steps, one thread: ≈ 4 min on one CPU core) and compare
    grokaudit train reference_runs/configs/repro_critical_norm_p59.toml -o runs/cn.parquet \\
        --threads 1
    python benchmarks/reproduce_recipes.py --log runs/cn.parquet --public PATH/TO/adamw_p59_a0.50_...npz

``--public`` defaults to ``$GROKAUDIT_CN_NPZ``. Prints a Markdown table (the one in
docs/trainer.md, "Reproduction") and exits 1 when a check fails: the trainer's median outside the
public 10–90 % band at a checked step, or its median T_grok outside the public range.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: Steps whose band is checked (the acceptance steps) and steps only shown.
CHECK_STEPS = (2000, 5000, 10000)
SHOW_STEPS = (1000, 2000, 3000, 5000, 8000, 10000, 12000)


@dataclass(frozen=True)
class Public:
    """The public runs of one cell: log grid, per-seed trajectories, per-seed T_grok."""

    steps: np.ndarray  # (T,)
    metric: np.ndarray  # (S, T)
    test_acc: np.ndarray  # (S, T)
    t_grok: np.ndarray  # (S,), ≤ 0 = never

    def at(self, values: np.ndarray, step: int) -> np.ndarray:
        """Per-seed value at ``step``: linear interpolation in log(step) (step 0 exact)."""
        if step == 0:
            return values[:, 0]
        s = self.steps[1:].astype(float)
        return np.array([np.interp(np.log(step), np.log(s), v[1:]) for v in values])


def load_public_npz(path: Path, key: str = "eff_rank_E") -> Public:
    z = np.load(path)
    return Public(steps=np.asarray(z["steps"]), metric=np.asarray(z[key], dtype=float),
                  test_acc=np.asarray(z["test_acc"], dtype=float),
                  t_grok=np.asarray(z["T_grok_per_seed"], dtype=float))


def trainer_runs(log: Path, metric: str, grok_threshold: float) -> tuple[pd.DataFrame, pd.Series]:
    """The log's metric pivoted to step × run, and each run's T_grok (first logged step with
    test_acc ≥ the threshold; NaN when never)."""
    df = pd.read_parquet(log)
    wide = df.pivot_table(index="step", columns="run", values=metric)
    acc = df.pivot_table(index="step", columns="run", values="test_acc")
    tg = acc.apply(lambda c: c.index[c.to_numpy() >= grok_threshold].min()
                   if (c.to_numpy() >= grok_threshold).any() else np.nan)
    return wide, tg


def compare(public: Public, wide: pd.DataFrame, tg: pd.Series,
            check_steps: tuple[int, ...] = CHECK_STEPS,
            show_steps: tuple[int, ...] = SHOW_STEPS) -> tuple[list[str], bool]:
    """Markdown table lines and whether every check passed."""
    ok = True
    lines = ["| step | public median [10–90 %] (20 seeds) | public test_acc | trainer median "
             "(per seed) | inside band |",
             "|---:|---|---:|---|---|"]
    for step in sorted({0, *show_steps, *check_steps}):
        if step not in wide.index or step > public.steps[-1]:
            continue
        pv = public.at(public.metric, step)
        lo, hi = np.percentile(pv, [10, 90])
        ours = wide.loc[step].to_numpy(dtype=float)
        med = float(np.median(ours))
        inside = lo <= med <= hi
        checked = step in check_steps
        ok &= inside or not checked
        mark = ("yes" if inside else "**no**") if checked else ("(yes)" if inside else "(no)")
        acc = float(np.median(public.at(public.test_acc, step)))
        lines.append(f"| {step} | {np.median(pv):.1f} [{lo:.1f}, {hi:.1f}] | {acc:.2f} | "
                     f"{med:.1f} ({', '.join(f'{v:.1f}' for v in ours)}) | {mark} |")
    pt = public.t_grok[public.t_grok > 0]
    ours_t = tg.to_numpy(dtype=float)
    med_t = float(np.median(ours_t)) if np.isfinite(ours_t).all() else float("nan")
    inside_t = bool(len(pt)) and float(pt.min()) <= med_t <= float(pt.max())
    ok &= inside_t
    lines.append(f"| T_grok | median {np.median(pt):.0f}, range [{pt.min():.0f}, {pt.max():.0f}] "
                 f"({len(pt)}/{len(public.t_grok)} grokked) | | {med_t:.0f} "
                 f"({', '.join('never' if not np.isfinite(v) else f'{v:.0f}' for v in ours_t)})"
                 f" | {'yes' if inside_t else '**no**'} |")
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, required=True, help="the trainer's log of the cell")
    ap.add_argument("--public", type=Path, default=os.environ.get("GROKAUDIT_CN_NPZ"),
                    help="the public NPZ of the cell [default: $GROKAUDIT_CN_NPZ]")
    ap.add_argument("--metric", default="emb_erank2", help="the trainer's column")
    ap.add_argument("--public-key", default="eff_rank_E", help="the NPZ key it is compared with")
    ap.add_argument("--grok-threshold", type=float, default=0.9)
    args = ap.parse_args(argv)
    if args.public is None or not Path(args.public).is_file():
        print("reproduce_recipes: give --public PATH (the public NPZ of the cell) or set "
              "GROKAUDIT_CN_NPZ", file=sys.stderr)
        return 2
    public = load_public_npz(Path(args.public), args.public_key)
    wide, tg = trainer_runs(args.log, args.metric, args.grok_threshold)
    lines, ok = compare(public, wide, tg)
    print(f"{args.metric} (trainer, {wide.shape[1]} seeds) vs {args.public_key} "
          f"({Path(args.public).name})")
    print("\n".join(lines))
    print("reproduction: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
