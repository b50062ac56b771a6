"""Where the audit runs and how its input is laid out: the thread engine against Ray with 1, 2
and 4 workers, and one Parquet file against the same log as a hive-partitioned dataset folder
(``rho=…/part-0.parquet``; issue 22).

    python benchmarks/bench_engines.py                          # 2 000 runs × 1 000 steps
    python benchmarks/bench_engines.py --runs 2000 --steps 5000 --repeat 2

One canonical log is generated (``bench_side_by_side.write_log``: float32 metric and
accuracies, an axis ``rho`` with 8 values, ``seed``), written once as one file and once as a
dataset folder partitioned by ``rho`` (rows kept in their order within each partition:
pyarrow's writer reorders them across threads otherwise, and a log whose rows come in another
order lists its runs in another order). Each measurement runs in a fresh subprocess (best of
``--repeat``), timing ``grokaudit.audit_path`` and, for Ray, separately the start of the local
Ray instance (``ray.init``, paid once per command). Every measurement's JSON is hashed: the
table says whether it is identical to the thread engine's on the single file (the trail and the
input's provenance aside: they name the input and how it was read). Prints a Markdown table with the machine and its load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_side_by_side import _machine, write_log  # noqa: E402


def child(kind: str, path: str, workers: int) -> dict[str, float | str]:
    """One measurement in this (fresh) process."""
    os.environ["GROKAUDIT_THREADS"] = str(workers)
    import grokaudit
    import grokaudit.api  # noqa: F401  loaded here, not on first use inside the timer
    from grokaudit.engine import engine_named

    t0 = time.perf_counter()
    eng = engine_named(kind)  # Ray, for "ray", started (or reached) here
    start = time.perf_counter() - t0 if kind == "ray" else 0.0
    t0 = time.perf_counter()
    res = grokaudit.audit_path(path, by="rho", metrics=["emb_erank"], max_rows=10**12,
                               engine=eng)
    secs = time.perf_counter() - t0
    d = res.to_dict()
    d["input"].pop("source", None)
    d["input"].pop("provenance", None)  # how it was read: a dataset folder lists its files
    d["trail"] = None
    digest = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]
    return {"seconds": secs, "start": start, "digest": digest}


def measure(kind: str, path: str, workers: int, repeat: int) -> dict[str, float | str]:
    best: dict[str, float | str] | None = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--child", kind, path, str(workers)],
                             capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"child {kind} {workers} failed:\n{out.stderr[-3000:]}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    assert best is not None
    return best


def write_dataset(src: Path, out: Path) -> Path:
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    ds.write_dataset(table.drop_columns(["rho"]).append_column("rho", table["rho"]), out,
                     format="parquet", partitioning=["rho"], partitioning_flavor="hive",
                     existing_data_behavior="overwrite_or_ignore", preserve_order=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workers", default="1,2,4", help="Ray workers to try (default 1,2,4)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], int(a.child[2]))))
        return 0
    with tempfile.TemporaryDirectory() as d:
        f = write_log(Path(d) / "log.parquet", a.runs, a.steps, 1)
        folder = write_dataset(f, Path(d) / "dataset")
        print(f"# engines and layouts: {a.runs:,} runs × {a.steps:,} steps = "
              f"{a.runs * a.steps:,} rows, one float32 metric; fresh process per measurement, "
              f"best of {a.repeat}\n# {_machine()}\n")
        print("| input | engine | workers | audit (s) | × threads on the file | Ray start (s) "
              "| same JSON |")
        print("|---|---|---|---|---|---|---|")
        base = measure("threads", str(f), os.cpu_count() or 1, a.repeat)
        rows = [("file", "threads", os.cpu_count() or 1, base),
                ("dataset folder", "threads", os.cpu_count() or 1,
                 measure("threads", str(folder), os.cpu_count() or 1, a.repeat))]
        for w in (int(x) for x in a.workers.split(",")):
            rows.append(("file", "ray", w, measure("ray", str(f), w, a.repeat)))
        for inp, eng, w, r in rows:
            start = f"{float(r['start']):.1f}" if eng == "ray" else "—"
            print(f"| {inp} | {eng} | {w} | {float(r['seconds']):.2f} | "
                  f"{float(r['seconds']) / float(base['seconds']):.2f} | {start} | "
                  f"{'yes' if r['digest'] == base['digest'] else 'NO'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
