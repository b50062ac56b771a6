"""Side by side on one log: the floor, the v1.5 per-seed rules, and ``grokaudit.audit_path``.

    python benchmarks/bench_side_by_side.py                       # 2 000 runs × 5 000 steps
    python benchmarks/bench_side_by_side.py --runs 200 --steps 500 --repeat 3
    python benchmarks/bench_side_by_side.py --growth rows         # 0.5 M … 4 M rows (minutes)
    python benchmarks/bench_side_by_side.py --growth rows --sizes 1000000,10000000,50000000
    python benchmarks/bench_side_by_side.py --growth runs --sizes 1000,10000,100000,1000000
    python benchmarks/bench_side_by_side.py --growth metrics --sizes 1,2,4,8

One canonical Parquet log is generated (``--runs`` × ``--steps``, ``--metrics`` float32 metric
columns as trainers write them, float32 accuracies, an axis ``rho`` with 8 values, ``seed``),
then, in ONE process, alternating (a)(b)(c) in a rotating order, best of ``--repeat``:

(a) the floor: pyarrow reads the columns the audit needs, then one vectorized numpy pass (per
    run: first step with test_acc ≥ 0.9, last-10 % median of each metric);
(b) the v1.5 loop: the same columns read, each cell put on its (seeds, T) grid as v1.5 stores
    it (float64), then ``benchmarks/v15_loop.py``'s per-seed rules as v1.5 runs them
    (``cell_row_np`` → ``seed_clock_np``: numpy per seed, a Python scan of the post-grok points
    up to the first hit) for every metric, and its ``study``; ``--plain`` adds the plain-Python
    oracle of the same rules (``cell_row``, about 3× slower);
(c) ``grokaudit.audit_path(path, by="rho", metrics=[...])``.

Ratios are read within the one process (the machine may be shared: never compare absolute
times across runs). Peak RSS (VmHWM) of each is measured once in a fresh subprocess and set
against the Arrow size of the columns read. ``--growth`` runs every size in fresh subprocesses
(one per measurement, best of 2 unless ``--repeat``) and prints a table of times and ratios;
the full ranges of issue 13 (rows 1 M–50 M, runs 1 k–1 M, metrics 1–8) take ``--sizes`` as
above and a machine with the memory for them (peak RSS grows linearly: 1.3 GiB at 10 M rows
here).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
METRIC_NAMES = ("emb_erank", "emb_pr", "emb_srank", "unemb_erank", "unemb_pr", "unemb_srank",
                "emb_erank2", "unemb_erank2")
AXIS = "rho"
N_CELLS = 8
GROK_THR = 0.90  # v1.5's default grok threshold (v15_loop.Params.grok_thr)
FLOOR_FRAC = 0.10


# ------------------------------------------------------------------------------------------
# the log
# ------------------------------------------------------------------------------------------

def make_chunk(r0: int, r1: int, T: int, n_metrics: int, R: int, seed: int = 0) -> pa.Table:
    """Runs r0..r1-1 of an R-run log: cells along ``rho`` (run % 8) that grok then compress."""
    rng = np.random.default_rng([seed, r0])
    n = r1 - r0
    runs = np.arange(r0, r1)
    cells = runs % N_CELLS
    steps = np.arange(T, dtype=np.int64) * 10
    last = float(steps[-1]) if T > 1 else 1.0
    t_grok = (0.10 + 0.04 * cells + rng.uniform(0, 0.02, n)) * last
    tau = (0.03 + 0.01 * cells) * last
    s = steps[None, :].astype(np.float64)
    acc = np.where(s >= t_grok[:, None], 0.99, 0.05).astype(np.float32)
    decay = np.exp(-np.maximum(s - t_grok[:, None], 0.0) / tau[:, None])
    cols: dict[str, pa.Array] = {
        "run": pa.array(np.repeat(np.array([f"r{i:07d}" for i in runs], dtype=object), T),
                        type=pa.string()),
        "step": pa.array(np.tile(steps, n)),
        "train_acc": pa.array(np.ones(n * T, dtype=np.float32)),
        "test_acc": pa.array(acc.ravel()),
    }
    for k in range(n_metrics):
        m = (10.0 + k) + 30.0 * decay + rng.normal(0.0, 0.05, (n, T))
        cols[METRIC_NAMES[k]] = pa.array(m.astype(np.float32).ravel())
    cols[AXIS] = pa.array(np.repeat(1.0 + 0.25 * cells, T))
    cols["seed"] = pa.array(np.repeat(runs // N_CELLS, T).astype(np.int64))
    return pa.table(cols)


def write_log(path: Path, R: int, T: int, n_metrics: int) -> Path:
    """Write the log in row groups of whole runs (about 1 M rows each), never all in memory."""
    if path.exists():
        return path
    per = max(1, min(R, 1_000_000 // max(T, 1)))
    tmp = path.with_suffix(".tmp")
    meta = {b"grokaudit": json.dumps({"schema_version": 1,
                                      "producer": "bench_side_by_side"}).encode()}
    writer = None
    for r0 in range(0, R, per):
        t = make_chunk(r0, min(R, r0 + per), T, n_metrics, R)
        t = t.replace_schema_metadata(meta)
        if writer is None:
            writer = pq.ParquetWriter(tmp, t.schema)
        writer.write_table(t)
    assert writer is not None
    writer.close()
    tmp.rename(path)
    return path


def needed_columns(metrics: list[str]) -> list[str]:
    return ["run", "step", "test_acc", "train_acc", *metrics, AXIS, "seed"]


def arrow_size(path: str, columns: list[str] | None) -> int:
    """Bytes of the columns as Arrow holds them once read (run ids dictionary-encoded)."""
    t = pq.read_table(path, columns=columns, read_dictionary=["run"], pre_buffer=False)
    return int(t.nbytes)


# ------------------------------------------------------------------------------------------
# the three measurements
# ------------------------------------------------------------------------------------------

def _run_blocks(table: pa.Table) -> tuple[np.ndarray, int]:
    """Row offsets of the runs (the log is written grouped by run) and their common length."""
    codes = table.column("run").combine_chunks().indices.to_numpy()
    starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1))
    counts = np.diff(np.append(starts, len(codes)))
    if not (counts == counts[0]).all():
        raise SystemExit("the floor and the v1.5 grid assume runs of equal length")
    return starts, int(counts[0])


def floor(path: str, metrics: list[str]) -> int:
    """Read the needed columns, one numpy pass: grok index and last-10 % median per run."""
    t = pq.read_table(path, columns=needed_columns(metrics), read_dictionary=["run"], pre_buffer=False)
    starts, T = _run_blocks(t)
    R = starts.size
    acc = t.column("test_acc").to_numpy().reshape(R, T)
    gi = np.argmax(acc >= GROK_THR, axis=1)
    k = max(1, int(FLOOR_FRAC * T))
    out = int(gi.sum())
    for m in metrics:
        M = t.column(m).to_numpy().reshape(R, T)
        out += int(np.count_nonzero(np.median(M[:, T - k:], axis=1) > 0))
    return out


def _v15(path: str, metrics: list[str], plain: bool) -> int:
    sys.path.insert(0, str(HERE))
    import v15_loop as v

    t = pq.read_table(path, columns=needed_columns(metrics), read_dictionary=["run"], pre_buffer=False)
    starts, T = _run_blocks(t)
    R = starts.size
    step = t.column("step").to_numpy().reshape(R, T)
    acc = t.column("test_acc").to_numpy().reshape(R, T)
    axis = t.column(AXIS).to_numpy()[starts]
    runs = t.column("run").combine_chunks().dictionary.to_pylist()  # the log is in run order
    p = v.Params()
    out = 0
    for m in metrics:
        M = t.column(m).to_numpy().reshape(R, T)
        cells = []
        for value in np.unique(axis):  # one cell per axis value: v1.5's (seeds, T) matrices
            sel = np.flatnonzero(axis == value)
            names = [runs[i] for i in sel]
            if plain:
                grid = step[sel[0]].tolist()  # the runs share one step grid (floor checks)
                cells.append(v.cell_row(float(value), grid, acc[sel].tolist(),
                                        M[sel].tolist(), p, names))
            else:  # as v1.5 holds a cell: float64 (seeds, T) arrays, numpy per seed
                cells.append(v.cell_row_np(float(value), step[sel[0]].astype(float),
                                           acc[sel].astype(float), M[sel].astype(float), p,
                                           names))
        out += len(v.study(cells, p)["used_cells"])
    return out


def v15(path: str, metrics: list[str]) -> int:
    """The v1.5 rules as v1.5 runs them (``v15_loop.cell_row_np``: numpy per seed, a Python
    scan of the post-grok points), on the same columns."""
    return _v15(path, metrics, plain=False)


def v15_plain(path: str, metrics: list[str]) -> int:
    """The same rules from the plain oracle (``v15_loop.cell_row``: Python floats)."""
    return _v15(path, metrics, plain=True)


def audit(path: str, metrics: list[str]) -> int:
    import grokaudit

    # the growth table goes past the default row cap on purpose
    res = grokaudit.audit_path(path, by=AXIS, metrics=list(metrics), max_rows=10**12)
    return len(res.studies)


KINDS = {"floor": floor, "v15": v15, "audit": audit}
EXTRA = {"v15_plain": v15_plain}


def _vmhwm_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(kind: str, path: str, metrics: list[str]) -> None:
    import grokaudit  # noqa: F401  imports are start-up cost, outside the timer and in "base"
    import grokaudit.api  # noqa: F401  (``import grokaudit`` loads its modules on first use)
    import pandas  # noqa: F401

    if kind == "base":  # the interpreter with the imports, nothing read
        print(json.dumps({"seconds": 0.0, "peak_rss_mib": _vmhwm_mib()}))
        return
    t0 = time.perf_counter()
    {**KINDS, **EXTRA}[kind](path, metrics)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "peak_rss_mib": _vmhwm_mib()}))


def in_subprocess(kind: str, path: str, metrics: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, path, ",".join(metrics)],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"child {kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def side_by_side(path: str, metrics: list[str], repeat: int) -> dict[str, float]:
    """Best of ``repeat`` for each kind, alternating floor, v1.5, audit in this process; the
    order rotates at each round, so that each kind follows each other one (what ran before
    leaves the allocator and caches in a state that the next measurement pays for)."""
    best = {k: float("inf") for k in KINDS}
    order = list(KINDS)
    for i in range(repeat):
        for kind in order[i % len(order):] + order[:i % len(order)]:
            fn = KINDS[kind]
            gc.collect()
            t0 = time.perf_counter()
            fn(path, metrics)
            best[kind] = min(best[kind], time.perf_counter() - t0)
    return best


def _machine() -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; CPU {cpu}, "
            f"{os.cpu_count()} cores; load average {load}")


def main_side_by_side(a: argparse.Namespace, d: Path) -> None:
    metrics = list(METRIC_NAMES[:a.metrics])
    R, T = a.runs, a.steps
    path = str(write_log(d / f"log_{R}x{T}x{a.metrics}.parquet", R, T, a.metrics))
    print(f"# side by side: {R:,} runs × {T:,} steps = {R * T:,} rows, {a.metrics} float32 "
          f"metric(s), axis {AXIS} ({N_CELLS} values); best of {a.repeat}, alternated in one "
          f"process\n# {_machine()}", flush=True)
    best = side_by_side(path, metrics, a.repeat)
    size_read = arrow_size(path, needed_columns(metrics))
    size_all = arrow_size(path, None)
    rss = {k: in_subprocess(k, path, metrics)["peak_rss_mib"] for k in (*KINDS, "base")}
    mib = size_read / 2**20
    print(f"\nParquet file {os.path.getsize(path) / 2**20:.0f} MiB; Arrow size of the columns "
          f"the audit needs {mib:.0f} MiB (whole table {size_all / 2**20:.0f} MiB); "
          f"interpreter + imports {rss['base']:.0f} MiB\n")
    print("| measurement | time (s) | × floor | peak RSS (MiB) | RSS / Arrow size | "
          "(RSS − imports) / Arrow size |")
    print("|---|---|---|---|---|---|")
    label = {"floor": "(a) floor: pyarrow read + one numpy pass",
             "v15": "(b) v1.5 per-seed loop (numpy per seed, as v1.5)",
             "v15_plain": "(b') the same rules, plain Python (v15_loop.cell_row)",
             "audit": "(c) `grokaudit.audit_path`"}
    for k in KINDS:
        print(f"| {label[k]} | {best[k]:.2f} | {best[k] / best['floor']:.2f} | {rss[k]:.0f} | "
              f"{rss[k] / mib:.2f} | {(rss[k] - rss['base']) / mib:.2f} |")
    print(f"\n**audit / v1.5 = {best['audit'] / best['v15']:.2f}; audit / floor = "
          f"{best['audit'] / best['floor']:.2f}; audit peak RSS / Arrow size = "
          f"{rss['audit'] / mib:.2f}**", flush=True)


GROWTH_DEFAULTS = {
    # rows: 2 000 runs, steps varied; runs: 50 steps per run, runs varied; metrics at 1 M rows
    "rows": (500_000, 1_000_000, 2_000_000, 4_000_000),
    "runs": (1_000, 4_000, 16_000, 64_000),
    "metrics": (1, 2, 4, 8),
}


def main_growth(a: argparse.Namespace, d: Path) -> None:
    sizes = ([int(float(x)) for x in a.sizes.split(",")] if a.sizes
             else list(GROWTH_DEFAULTS[a.growth]))
    kinds = ["floor", "audit"] + ([] if a.no_v15 else ["v15"])
    print(f"# growth over {a.growth}; each measurement in a fresh subprocess, best of "
          f"{a.repeat}\n# {_machine()}\n")
    base = None
    print("| runs | steps | metrics | rows | Arrow MiB | floor (s) | audit (s) | audit/floor"
          f"{'' if a.no_v15 else ' | v1.5 (s) | audit/v1.5'} | audit RSS (MiB) | RSS/Arrow | "
          "(RSS − imports)/Arrow |")
    print("|---|---|---|---|---|---|---|---" + ("" if a.no_v15 else "|---|---") + "|---|---|---|",
          flush=True)
    for size in sizes:
        if a.growth == "rows":
            R, T, k = 2000, max(3, size // 2000), a.metrics
        elif a.growth == "runs":
            R, T, k = size, 50, a.metrics
        else:
            R, T, k = 1000, 1000, size
        metrics = list(METRIC_NAMES[:k])
        path = str(write_log(d / f"log_{R}x{T}x{k}.parquet", R, T, k))
        res: dict[str, dict[str, float]] = {}
        for _ in range(a.repeat):  # alternated, each in its own process
            for kind in kinds:
                r = in_subprocess(kind, path, metrics)
                if kind not in res or r["seconds"] < res[kind]["seconds"]:
                    res[kind] = {"seconds": r["seconds"],
                                 "peak_rss_mib": min(r["peak_rss_mib"],
                                                     res.get(kind, r)["peak_rss_mib"])}
        mib = arrow_size(path, needed_columns(metrics)) / 2**20
        if base is None:
            base = in_subprocess("base", path, metrics)["peak_rss_mib"]
        fl, au = res["floor"]["seconds"], res["audit"]["seconds"]
        v = "" if a.no_v15 else (f" | {res['v15']['seconds']:.2f} | "
                                 f"{au / res['v15']['seconds']:.2f}")
        print(f"| {R:,} | {T:,} | {k} | {R * T:,} | {mib:.0f} | {fl:.2f} | {au:.2f} | "
              f"{au / fl:.2f}{v} | {res['audit']['peak_rss_mib']:.0f} | "
              f"{res['audit']['peak_rss_mib'] / mib:.2f} | "
              f"{(res['audit']['peak_rss_mib'] - base) / mib:.2f} |", flush=True)
        if not a.keep:
            os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--metrics", type=int, default=1, choices=range(1, len(METRIC_NAMES) + 1))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--growth", choices=sorted(GROWTH_DEFAULTS),
                    help="a growth table over rows (runs fixed at 2 000), runs (50 steps each) "
                         "or metrics (1 000 × 1 000)")
    ap.add_argument("--sizes", help="comma-separated sizes for --growth (rows, runs or metrics)")
    ap.add_argument("--no-v15", action="store_true", help="--growth: skip the v1.5 loop")
    ap.add_argument("--plain", action="store_true",
                    help="also time the plain-Python oracle of the v1.5 rules")
    ap.add_argument("--keep", action="store_true", help="--growth: keep the generated logs")
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR"),
                    help="where to write the logs (default: a temporary folder)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.plain:
        KINDS.update(EXTRA)
    if a.child:
        kind, path, metrics = a.child
        _child(kind, path, metrics.split(","))
        return 0
    if a.growth and a.repeat == 3 and "--repeat" not in sys.argv:
        a.repeat = 2
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        (main_growth if a.growth else main_side_by_side)(a, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
