"""One-off: convert the external critical-norm-grokking NPZ sweep into the interim demo log.

Run from the repository root with the folder of the public repository's NPZ files:

    python reference_runs/data/convert_external.py path/to/grokfss_p59

It writes ``reference_runs/data/external_alpha_sweep.parquet``: the MLP on (a + b) mod 59 with
the train fraction ``alpha`` as the axis, 5 of the 20 seeds per file (to keep the file small),
every logged step. Columns: run, step, test_acc, train_acc, eff_rank_E, weight_norm,
spec_entropy_E, train_loss, test_loss, alpha, seed, p.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT.parent / "shared" / "external" / "critical-norm-grokking" / "grokfss_p59"
OUT = Path(__file__).resolve().parent / "external_alpha_sweep.parquet"
SEEDS = 5
SERIES = ("train_acc", "test_acc", "eff_rank_E", "weight_norm", "spec_entropy_E",
          "train_loss", "test_loss")


def convert(src: Path = SRC, seeds: int = SEEDS) -> pd.DataFrame:
    """One DataFrame in the canonical table from every NPZ file under ``src``."""
    frames = []
    for f in sorted(src.glob("*.npz")):
        d = np.load(f)
        steps = d["steps"].astype(np.int64)
        alpha = round(float(d["alpha"]), 4)
        for s in range(min(seeds, d["test_acc"].shape[0])):
            cols = {k: d[k][s].astype(np.float64) for k in SERIES}
            frames.append(pd.DataFrame({
                "run": f"alpha{alpha:.2f}_s{s}", "step": steps, **cols,
                "alpha": alpha, "seed": s, "p": int(d["p"]),
            }))
    out: pd.DataFrame = pd.concat(frames, ignore_index=True)
    return out


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from grokaudit.schema import write_table

    args = sys.argv[1:] if argv is None else argv
    src = Path(args[0]) if args else SRC
    if not src.is_dir():
        print(f"error: {src} not found; pass the folder of grokfss_p59 NPZ files",
              file=sys.stderr)
        return 2
    df = convert(src)
    write_table(df, OUT, {"producer": "reference_runs/data/convert_external.py",
                          "source": "ClevixLab/critical-norm-grokking grokfss_p59 (MIT)",
                          "seeds_per_cell": SEEDS})
    print(f"wrote {OUT} ({len(df)} rows, {df['run'].nunique()} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
