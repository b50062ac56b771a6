#!/usr/bin/env python3
"""Reproduction check of a recipe against public runs: T_grok and a metric trajectory.

Compares the runs of a trainer log (one cell, several seeds) with the public runs of the same
cell: the public median and band (over seeds) of the metric at several steps, and the public
T_grok range, against the trainer's median. Public trajectories are read at each step by linear
interpolation in log(step) per seed (the public grids are log-spaced, plus every 250 steps for
compression-clock), the trainer's at the logged step itself (the reproduction configs log every
comparison step). The band is the 10–90 % percentile range over the public seeds when there are
at least 5 of them, else their full range [min, max].

Two public sources, one per recipe (``--recipe``):

``critical-norm`` (default)
    One NPZ of ClevixLab/critical-norm-grokking's p = 59 train-fraction sweep
    (``grokfss_p59/adamw_p59_a0.50_d128_H256_wd1e00_lr1e-03.npz``: 20 seeds, keys ``steps``,
    ``eff_rank_E``, ``test_acc``, ``T_grok_per_seed``); its ``eff_rank_E`` is this trainer's
    ``emb_erank2``. Not bundled (``--public`` or ``$GROKAUDIT_CN_NPZ``).
``compression-clock``
    The per-run ``metrics.jsonl`` logs of ClevixLab/grokking-compression-clock's
    ``sample_data/arch_generality`` (seed 002's harness), arm A (MLP), p 59, train fraction 0.3,
    wd 2, seeds 0 and 1 (``arms/mlp/wd2_s0``, ``arms/mlp/wd2_s1``). Their ``embedding.sqnorm``
    is this trainer's ``emb_erank2`` and ``embedding.rv`` its ``emb_erank``. An extract of the
    two logs (the rows this check reads, MIT licence) is bundled as
    ``benchmarks/public/compression_clock_mlp_p59_wd2.json`` and is the default; ``--public``
    also takes the full ``metrics.jsonl`` files (one per seed), fetched with e.g.
    ``curl -O https://raw.githubusercontent.com/ClevixLab/grokking-compression-clock/main/sample_data/arch_generality/arms/mlp/wd2_s0/metrics.jsonl``.
    The public T_grok is computed from the rows (first logged step with test_acc ≥ 0.9).

Usage::

    # critical-norm: 3 seeds × 12 000 steps, one thread (≈ 4 min on one CPU core)
    grokaudit train reference_runs/configs/repro_critical_norm_p59.toml -o runs/cn.parquet \\
        --threads 1
    python benchmarks/reproduce_recipes.py --log runs/cn.parquet --public PATH/TO/adamw_p59_a0.50_...npz

    # compression-clock: 4 seeds × 24 000 steps, one thread (≈ 6 min)
    grokaudit train reference_runs/configs/repro_compression_clock_p59.toml -o runs/cc.parquet \\
        --threads 1
    python benchmarks/reproduce_recipes.py --recipe compression-clock --log runs/cc.parquet
    python benchmarks/reproduce_recipes.py --recipe compression-clock --log runs/cc.parquet \\
        --metric emb_erank --public-key embedding.rv

Prints a Markdown table (the ones in docs/trainer.md, "Reproduction") and exits 1 when a check
fails: the trainer's median outside the public band at a checked step, or its median T_grok
outside the public range.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
CC_EXTRACT = HERE / "public" / "compression_clock_mlp_p59_wd2.json"


class Mode(NamedTuple):
    """What one recipe's check reads: its public source's key, the trainer's column, the steps
    whose band is checked (the acceptance steps) and the steps only shown."""

    public_key: str
    metric: str
    check_steps: tuple[int, ...]
    show_steps: tuple[int, ...]


MODES = {
    "critical-norm": Mode("eff_rank_E", "emb_erank2", (2000, 5000, 10000),
                          (1000, 2000, 3000, 5000, 8000, 10000, 12000)),
    # before any seed generalizes, mid-transition, at the public T_grok, after it
    "compression-clock": Mode("embedding.sqnorm", "emb_erank2", (5000, 10000, 15000, 20000),
                              (1000, 2000, 5000, 8000, 10000, 12000, 13000, 14000, 15000, 16000,
                               18000, 20000, 22000, 24000)),
}
#: Kept for callers of the first version (the critical-norm check).
CHECK_STEPS = MODES["critical-norm"].check_steps
SHOW_STEPS = MODES["critical-norm"].show_steps


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


def _first_step(steps: np.ndarray, acc: np.ndarray, threshold: float) -> float:
    hit = np.flatnonzero(acc >= threshold)
    return float(steps[hit[0]]) if len(hit) else -1.0


def load_public_jsonl(paths: list[Path], key: str = "embedding.sqnorm",
                      grok_threshold: float = 0.9) -> Public:
    """The compression-clock harness's runs of one cell: either its ``metrics.jsonl`` files
    (one per seed) or the bundled JSON extract of them. Each seed's T_grok is read from all its
    rows; the trajectories are kept on the steps every seed logged."""
    runs: list[dict[int, tuple[float, float]]] = []  # step -> (test_acc, metric)
    for path in paths:
        if path.suffix == ".json":
            doc = json.loads(path.read_text(encoding="utf-8"))
            cols = doc["columns"]
            i_acc, i_val = cols.index("test_acc"), cols.index(key)
            for rows in doc["runs"].values():
                runs.append({int(r[0]): (float(r[i_acc]), float(r[i_val])) for r in rows})
        else:
            rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()
                    if ln.strip()]
            runs.append({int(r["step"]): (float(r["test_acc"]), float(r[key])) for r in rows})
    if not runs:
        raise ValueError("no public runs")
    t_grok = []
    for run in runs:
        st = np.array(sorted(run))
        t_grok.append(_first_step(st, np.array([run[s][0] for s in st]), grok_threshold))
    common = sorted(set.intersection(*(set(r) for r in runs)))
    return Public(steps=np.array(common),
                  metric=np.array([[r[s][1] for s in common] for r in runs]),
                  test_acc=np.array([[r[s][0] for s in common] for r in runs]),
                  t_grok=np.array(t_grok))


def trainer_runs(log: Path, metric: str, grok_threshold: float) -> tuple[pd.DataFrame, pd.Series]:
    """The log's metric pivoted to step × run, and each run's T_grok (first logged step with
    test_acc ≥ the threshold; NaN when never)."""
    df = pd.read_parquet(log)
    wide = df.pivot_table(index="step", columns="run", values=metric)
    acc = df.pivot_table(index="step", columns="run", values="test_acc")
    tg = acc.apply(lambda c: c.index[c.to_numpy() >= grok_threshold].min()
                   if (c.to_numpy() >= grok_threshold).any() else np.nan)
    return wide, tg


def band_percentiles(n_seeds: int) -> tuple[float, float]:
    """10–90 % over at least 5 public seeds; the full range over fewer."""
    return (10.0, 90.0) if n_seeds >= 5 else (0.0, 100.0)


def compare(public: Public, wide: pd.DataFrame, tg: pd.Series,
            check_steps: tuple[int, ...] = CHECK_STEPS,
            show_steps: tuple[int, ...] = SHOW_STEPS,
            acc: pd.DataFrame | None = None) -> tuple[list[str], bool]:
    """Markdown table lines and whether every check passed (``acc``: the trainer's test_acc,
    step × run, shown beside its metric when given)."""
    ok = True
    n = public.metric.shape[0]
    q = band_percentiles(n)
    band = "10–90 %" if q == (10.0, 90.0) else "min, max"
    per_seed = n <= 5
    lines = [f"| step | public median [{band}] ({n} seeds) | public test_acc | trainer median "
             "(per seed) | " + ("trainer test_acc | " if acc is not None else "") + "inside band |",
             "|---:|---|---:|---|" + ("---:|" if acc is not None else "") + "---|"]
    for step in sorted({0, *show_steps, *check_steps}):
        if step not in wide.index or step > public.steps[-1]:
            continue
        pv = public.at(public.metric, step)
        lo, hi = np.percentile(pv, q)
        ours = wide.loc[step].to_numpy(dtype=float)
        med = float(np.median(ours))
        inside = bool(lo <= med <= hi)
        checked = step in check_steps
        ok &= inside or not checked
        mark = ("yes" if inside else "**no**") if checked else ("(yes)" if inside else "(no)")
        pub_acc = float(np.median(public.at(public.test_acc, step)))
        pub = f"{np.median(pv):.1f} [{lo:.1f}, {hi:.1f}]"
        if per_seed:
            pub += f" ({', '.join(f'{v:.1f}' for v in pv)})"
        our_acc = (f" {float(np.median(acc.loc[step].to_numpy(dtype=float))):.2f} |"
                   if acc is not None else "")
        lines.append(f"| {step} | {pub} | {pub_acc:.2f} | "
                     f"{med:.1f} ({', '.join(f'{v:.1f}' for v in ours)}) |{our_acc} {mark} |")
    pt = public.t_grok[public.t_grok > 0]
    ours_t = tg.to_numpy(dtype=float)
    med_t = float(np.median(ours_t)) if np.isfinite(ours_t).all() else float("nan")
    inside_t = bool(len(pt)) and float(pt.min()) <= med_t <= float(pt.max())
    ok &= inside_t
    pub_t = (f"median {np.median(pt):.0f}, range [{pt.min():.0f}, {pt.max():.0f}] "
             f"({len(pt)}/{len(public.t_grok)} grokked)" if len(pt) else
             f"never (0/{len(public.t_grok)} grokked)")
    lines.append(f"| T_grok | {pub_t} | | {med_t:.0f} "
                 f"({', '.join('never' if not np.isfinite(v) else f'{v:.0f}' for v in ours_t)})"
                 f" |{' |' if acc is not None else ''} {'yes' if inside_t else '**no**'} |")
    return lines, ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, required=True, help="the trainer's log of the cell")
    ap.add_argument("--recipe", choices=sorted(MODES), default="critical-norm",
                    help="which public source to compare with [default: critical-norm]")
    ap.add_argument("--public", type=Path, nargs="+", default=None,
                    help="critical-norm: the public NPZ [default: $GROKAUDIT_CN_NPZ]; "
                         "compression-clock: the metrics.jsonl files or the JSON extract "
                         f"[default: {CC_EXTRACT.relative_to(HERE.parent)}]")
    ap.add_argument("--metric", default=None, help="the trainer's column [default: the mode's]")
    ap.add_argument("--public-key", default=None,
                    help="the public key it is compared with [default: the mode's]")
    ap.add_argument("--grok-threshold", type=float, default=0.9)
    args = ap.parse_args(argv)
    mode = MODES[args.recipe]
    metric = args.metric or mode.metric
    key = args.public_key or mode.public_key
    if args.recipe == "critical-norm":
        paths = args.public or ([Path(os.environ["GROKAUDIT_CN_NPZ"])]
                                if os.environ.get("GROKAUDIT_CN_NPZ") else [])
        if len(paths) != 1 or not paths[0].is_file():
            print("reproduce_recipes: give --public PATH (the public NPZ of the cell) or set "
                  "GROKAUDIT_CN_NPZ", file=sys.stderr)
            return 2
        public = load_public_npz(paths[0], key)
    else:
        paths = args.public or [CC_EXTRACT]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            print(f"reproduce_recipes: no such file: {missing[0]}", file=sys.stderr)
            return 2
        public = load_public_jsonl(paths, key, args.grok_threshold)
    wide, tg = trainer_runs(args.log, metric, args.grok_threshold)
    # the trainer's test_acc beside its metric where the clocks differ enough to matter (the
    # critical-norm table keeps the five columns it was published with)
    acc = (trainer_runs(args.log, "test_acc", args.grok_threshold)[0]
           if args.recipe == "compression-clock" else None)
    lines, ok = compare(public, wide, tg, mode.check_steps, mode.show_steps, acc)
    print(f"{metric} (trainer, {wide.shape[1]} seeds) vs {key} "
          f"({', '.join(p.name for p in paths)})")
    print("\n".join(lines))
    print("reproduction: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
