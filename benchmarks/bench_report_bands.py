"""The report's cell bands: ``figures.cell_band`` (one pass over a cell's rows) against the
per-run interpolation that defines it (two arrays and one ``np.interp`` per run, as the band
was computed before), side by side in one process, on cells of many short runs. And on a log
whose cells' runs are consecutive (as a batch of cells read again by ``report --stream``
holds them): the slice ``cell_band`` reads there against the gather it makes elsewhere, with
the peak of the memory numpy allocates for the bands (tracemalloc).

    python benchmarks/bench_report_bands.py                 # 8 cells of 25 000 runs × 50 steps
    python benchmarks/bench_report_bands.py --runs 2000 --steps 5000 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_side_by_side import _machine, make_chunk  # noqa: E402


def by_run(log: Any, rows: list[int], column: str) -> tuple[np.ndarray, ...]:
    """The band as defined: each run interpolated onto the union of the runs' steps."""
    values = log.series[column]
    per_run = []
    for i in rows:
        a, b = int(log.offsets[i]), int(log.offsets[i + 1])
        v = values[a:b]
        ok = ~np.isnan(v)
        if ok.sum():
            per_run.append((log.step[a:b][ok].astype(float), v[ok].astype(float)))
    grid = np.unique(np.concatenate([s for s, _ in per_run]))
    M = np.vstack([np.interp(grid, s, v, left=np.nan, right=np.nan) for s, v in per_run])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid, np.nanmedian(M, axis=0), np.nanmin(M, axis=0), np.nanmax(M, axis=0)


def gathered(log: Any, rows: list[int], column: str) -> tuple[np.ndarray, ...]:
    """``cell_band``'s gather (every run's points indexed, then put on the grid), whatever
    the rows: what it does where a cell's runs are not consecutive."""
    from grokaudit.figures import _on_grid

    grid, M = _on_grid(log, rows, log.series[column])
    assert M is not None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return grid, np.nanmedian(M, axis=0), np.nanmin(M, axis=0), np.nanmax(M, axis=0)


def _bands(fn: Any, log: Any, cells: np.ndarray) -> tuple[float, float, list[Any]]:
    """Seconds, peak MiB numpy allocated, and the bands of every cell."""
    import tracemalloc

    tracemalloc.start()
    t0 = time.perf_counter()
    out = [fn(log, np.flatnonzero(cells == c).tolist(), "emb_erank") for c in np.unique(cells)]
    secs = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return secs, peak, [b if isinstance(b, tuple) else (b.step, b.median, b.low, b.high)
                        for b in out]


def main() -> None:
    import pyarrow as pa
    from grokaudit.api import _config, validated_log
    from grokaudit.figures import cell_band

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200_000)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    cfg = _config(None, {"metrics": ["emb_erank"], "max_rows": 10**12})
    log = validated_log(make_chunk(0, a.runs, a.steps, 1, a.runs), cfg)
    cells = log.conditions["rho"].to_numpy()
    print(_machine())
    print(f"\n{a.runs:,} runs × {a.steps:,} steps in 8 cells; best of {a.repeat}\n")
    best = {"one pass": np.inf, "per run": np.inf}
    for _ in range(a.repeat):
        for name, fn in (("one pass", cell_band), ("per run", by_run)):
            t0 = time.perf_counter()
            out = [fn(log, np.flatnonzero(cells == c).tolist(), "emb_erank")
                   for c in np.unique(cells)]
            best[name] = min(best[name], time.perf_counter() - t0)
            if name == "one pass":
                mine = out
            else:
                same = all(np.array_equal(x, y, equal_nan=True)
                           for b, ref in zip(mine, out, strict=True)
                           for x, y in zip((b.step, b.median, b.low, b.high), ref,
                                           strict=True))
    print("| bands | seconds |\n|---|---:|")
    for name, secs in best.items():
        print(f"| {name} | {secs:.2f} |")
    print(f"\none pass ÷ per run: {best['one pass'] / best['per run']:.2f}; same bands: "
          f"{'yes' if same else 'NO'}")

    # the same runs, each cell's consecutive (the log sorted by cell, then run)
    table = make_chunk(0, a.runs, a.steps, 1, a.runs)
    order = np.lexsort((np.arange(table.num_rows), table.column("rho").to_numpy()))
    del log
    log = validated_log(table.take(pa.array(order)), cfg)
    del table
    cells = log.conditions["rho"].to_numpy()
    best2 = {"slice": (np.inf, 0.0), "gather": (np.inf, 0.0)}
    got: dict[str, list[Any]] = {}
    for _ in range(a.repeat):
        for name, fn in (("slice", cell_band), ("gather", gathered)):
            secs, peak, got[name] = _bands(fn, log, cells)
            best2[name] = (min(best2[name][0], secs), peak)
    same2 = all(np.array_equal(x, y, equal_nan=True)
                for b, ref in zip(got["slice"], got["gather"], strict=True)
                for x, y in zip(b, ref, strict=True))
    print("\n| consecutive runs | seconds | peak numpy MiB |\n|---|---:|---:|")
    for name, (secs, peak) in best2.items():
        print(f"| {name} | {secs:.2f} | {peak:.0f} |")
    print(f"\nslice ÷ gather: {best2['slice'][0] / best2['gather'][0]:.2f} in time, "
          f"{best2['slice'][1] / best2['gather'][1]:.2f} in memory; same bands: "
          f"{'yes' if same2 else 'NO'}")


if __name__ == "__main__":
    main()
