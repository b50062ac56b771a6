"""Benchmark the audit core: time and peak memory of ``grokaudit.audit_path`` on a synthetic log
of R runs × T logged steps, next to the floor (read the same columns with pyarrow plus one
vectorized numpy pass), and how audit time grows with R and with T.

    python benchmarks/bench_audit.py                  # 2 000 runs × 5 000 steps (10 M rows)
    python benchmarks/bench_audit.py --runs 200 --steps 500 --quick

Each measurement runs in a fresh subprocess (peak RSS is per measurement); the floor and the
audit run side by side in the same invocation, so their ratio is what to read. Prints a
Markdown table (paste it into docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

METRICS = ("emb_erank", "emb_pr")


def make_log(R: int, T: int, seed: int = 0) -> pd.DataFrame:
    """R runs × T logged steps: cells along ``rho`` (4 seeds each) that grok then compress."""
    rng = np.random.default_rng(seed)
    steps = np.arange(T, dtype=np.int64) * 10
    cells = np.arange(R) // 4  # 4 seeds per cell
    t_grok = (0.1 + 0.02 * cells + rng.uniform(0, 0.01, R)) * steps[-1]
    tau = (0.05 + 0.01 * cells) * steps[-1]
    s = steps[None, :]
    acc = np.where(s >= t_grok[:, None], 1.0, 0.05)
    decay = np.exp(-np.maximum(s - t_grok[:, None], 0) / tau[:, None])
    m1 = 10 + 30 * decay + rng.normal(0, 0.05, (R, T))
    m2 = 2 * m1
    return pd.DataFrame({
        "run": np.repeat([f"r{i:05d}" for i in range(R)], T),
        "step": np.tile(steps, R), "test_acc": acc.ravel(), "train_acc": 1.0,
        METRICS[0]: m1.ravel(), METRICS[1]: m2.ravel(),
        "rho": np.repeat(1.0 + 0.05 * cells, T), "seed": np.repeat(np.arange(R) % 4, T),
    })


def _child(kind: str, path: str) -> None:
    import resource

    import grokaudit
    import pyarrow.parquet as pq

    t0 = time.perf_counter()  # imports are start-up cost, not the audit's: outside the timer
    if kind == "audit":
        res = grokaudit.audit_path(path, by="rho", metrics=list(METRICS))
        n = len(res.studies)
    else:  # the floor: read the same columns, one vectorized pass over each
        t = pq.read_table(path, columns=["run", "step", "test_acc", "train_acc", *METRICS])
        n = 0
        for name in ("step", "test_acc", "train_acc", *METRICS):
            a = t.column(name).to_numpy()
            n += int(np.count_nonzero(np.diff(a) > 0))
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB on Linux
    print(json.dumps({"seconds": dt, "peak_rss_mib": rss, "check": n}))


def measure(kind: str, path: str, repeat: int = 3) -> dict[str, float]:
    best: dict[str, float] | None = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--child", kind, path],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    assert best is not None
    return best


def write(R: int, T: int, d: Path) -> str:
    import grokaudit

    p = d / f"log_{R}x{T}.parquet"
    if not p.exists():
        grokaudit.write_table(make_log(R, T), p)
    return str(p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the scaling sweeps")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(*a.child)
        return 0
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        d = Path(tmp)
        R, T = a.runs, a.steps
        print(f"# grokaudit audit benchmark: {R} runs × {T} steps = {R * T:,} rows, "
              f"{len(METRICS)} metrics; best of {a.repeat}", flush=True)
        p = write(R, T, d)
        au, fl = measure("audit", p, a.repeat), measure("floor", p, a.repeat)
        print("\n| measurement | time (s) | peak RSS (MiB) |\n|---|---|---|")
        print(f"| (a) `audit_path` | {au['seconds']:.2f} | {au['peak_rss_mib']:.0f} |")
        print(f"| (b) floor: pyarrow read + one numpy pass | {fl['seconds']:.2f} | "
              f"{fl['peak_rss_mib']:.0f} |")
        print(f"| ratio a/b | {au['seconds'] / fl['seconds']:.2f} | |", flush=True)
        if a.quick:
            return 0
        print("\n| runs R (T fixed) | rows | audit (s) | s per M rows |\n|---|---|---|---|")
        for r in (R // 8, R // 4, R // 2, R):
            m = measure("audit", write(r, T, d), a.repeat)
            print(f"| {r} | {r * T:,} | {m['seconds']:.2f} | "
                  f"{m['seconds'] / (r * T / 1e6):.3f} |", flush=True)
        print("\n| steps T (R fixed) | rows | audit (s) | s per M rows |\n|---|---|---|---|")
        for t in (T // 8, T // 4, T // 2, T):
            m = measure("audit", write(R, t, d), a.repeat)
            print(f"| {t} | {R * t:,} | {m['seconds']:.2f} | "
                  f"{m['seconds'] / (R * t / 1e6):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
