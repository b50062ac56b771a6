"""Read time per million points for each adapter, next to the libraries' own readers.

    python benchmarks/bench_adapters.py [--points 1000000] [--wandb-points 100000] [--repeat 3]
                                        [--markdown]

Writes the fixtures once into a temporary folder, then times (best of ``--repeat``):

* TensorBoard: ``read_log`` vs TensorBoard's own ``EventFileLoader`` (events decoded, scalar
  values collected) and ``tbparse.SummaryReader`` (when installed), on the same event files;
* CSV: ``read_log`` vs ``pandas.read_csv`` on the same file;
* Parquet, JSONL, NPZ, W&B history CSV, MLflow file store and SQLite: ``read_log`` alone;
* W&B offline: ``read_log`` on a run written by ``wandb`` itself (``--wandb-points`` rows, as
  wandb writes about 5 000 rows a second), when wandb is installed.

Every reader must return every point; the script checks the counts before it reports a time.
The event files are framed by this script (TFRecord framing, masked CRC-32C) from ``Event``
protobufs built with TensorBoard's own classes, because ``SummaryWriter`` needs minutes for a
million points; ``EventFileLoader`` and ``tbparse`` verify them as they read.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sqlite3
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from grokaudit.adapters import read_log
from grokaudit.adapters.crc32c import crc32c_many, masked

TAGS = ("test/acc", "train/acc", "emb_erank", "weight_norm")


def best(fn: Callable[[], int], repeat: int, expect: int) -> float:
    """Best wall time of ``repeat`` calls; each call must return ``expect`` points."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t0)
        if n != expect:
            raise SystemExit(f"reader returned {n} points, expected {expect}")
    return min(times)


def _points(table) -> int:  # type: ignore[no-untyped-def]
    cols = [c for c in table.column_names if c in ("test_acc", "train_acc", "emb_erank",
                                                    "weight_norm")]
    return int(sum(len(table.column(c)) - table.column(c).null_count for c in cols))


# ------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------

def series(n_points: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    steps = np.arange(n_points // len(TAGS), dtype=np.int64)
    rng = np.random.default_rng(0)
    vals = {t: rng.random(steps.size).astype(np.float32).astype(np.float64) for t in TAGS}
    return steps, vals


def write_events(path: Path, steps: np.ndarray, vals: dict[str, np.ndarray]) -> None:
    """One event file: a file_version event, then one ``simple_value`` event per point."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    payloads = [Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()]
    for i, s in enumerate(steps.tolist()):
        for t in TAGS:
            ev = Event(wall_time=1.7e9 + s, step=s,
                       summary=Summary(value=[Summary.Value(tag=t, simple_value=vals[t][i])]))
            payloads.append(ev.SerializeToString())
    lengths = np.array([len(p) for p in payloads], dtype=np.int64)
    heads = [struct.pack("<Q", n) for n in lengths.tolist()]
    hbuf = np.frombuffer(b"".join(heads), dtype=np.uint8)
    hcrc = masked(crc32c_many(hbuf, np.arange(lengths.size) * 8, np.full(lengths.size, 8)))
    pbuf = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    pcrc = masked(crc32c_many(pbuf, starts, lengths))
    with path.open("wb") as fh:
        for h, hc, p, pc in zip(heads, hcrc.tolist(), payloads, pcrc.tolist()):
            fh.write(h + struct.pack("<I", hc) + p + struct.pack("<I", pc))


def write_tables(root: Path, steps: np.ndarray, vals: dict[str, np.ndarray]) -> dict[str, Path]:
    df = pd.DataFrame({"run": "r0", "step": steps, "test_acc": vals["test/acc"],
                       "train_acc": vals["train/acc"], "emb_erank": vals["emb_erank"],
                       "weight_norm": vals["weight_norm"]})
    out = {"csv": root / "logs.csv", "parquet": root / "logs.parquet", "jsonl": root / "logs.jsonl"}
    df.to_csv(out["csv"], index=False)
    df.to_parquet(out["parquet"], index=False)
    df.to_json(out["jsonl"], orient="records", lines=True, double_precision=15)
    hist = df.drop(columns=["run"]).rename(columns={"step": "_step", "test_acc": "test/acc"})
    hist.insert(1, "_timestamp", 1.7e9 + steps)
    out["wandb-history"] = root / "r0-history.csv"
    hist.to_csv(out["wandb-history"], index=False)
    out["npz"] = root / "cell.npz"
    np.savez(out["npz"], steps=steps, test_acc=vals["test/acc"][None], train_acc=vals["train/acc"][None],
             emb_erank=vals["emb_erank"][None], weight_norm=vals["weight_norm"][None])
    # MLflow file store: mlruns/1/<run>/metrics/<key> lines "timestamp value step"
    run = root / "mlruns" / "1" / "abc"
    (run / "metrics" / "test").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: abc\nrun_name: r0\nlifecycle_stage: active\n")
    for key, col in (("test/acc", "test_acc"), ("train_acc", "train_acc"),
                     ("emb_erank", "emb_erank"), ("weight_norm", "weight_norm")):
        lines = [f"{1700000000000 + s} {v!r} {s}\n" for s, v in zip(steps.tolist(),
                                                                     df[col].tolist())]
        (run / "metrics" / key).write_text("".join(lines))
    out["mlflow"] = root / "mlruns"
    # MLflow SQLite: the four tables the reader uses, in MLflow's schema
    db = root / "mlflow.db"
    con = sqlite3.connect(db)
    con.executescript("""
        create table runs (run_uuid varchar(32) primary key, name varchar(250),
                           lifecycle_stage varchar(20), start_time bigint, experiment_id integer);
        create table metrics (key varchar(250), value float, timestamp bigint,
                              run_uuid varchar(32), step bigint, is_nan boolean);
        create table params (key varchar(250), value varchar(8000), run_uuid varchar(32));
        create table tags (key varchar(250), value varchar(8000), run_uuid varchar(32));
        insert into runs values ('abc', 'r0', 'active', 0, 1);
    """)
    for key, col in (("test/acc", "test_acc"), ("train_acc", "train_acc"),
                     ("emb_erank", "emb_erank"), ("weight_norm", "weight_norm")):
        con.executemany("insert into metrics values (?, ?, ?, 'abc', ?, 0)",
                        zip([key] * steps.size, df[col].tolist(),
                            (1700000000000 + steps).tolist(), steps.tolist()))
    con.commit()
    con.close()
    out["mlflow-sqlite"] = db
    return out


def write_wandb(root: Path, n_rows: int) -> Path | None:
    if importlib.util.find_spec("wandb") is None:
        return None
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(root))
    import wandb

    run = wandb.init(project="bench", id="bench1", dir=str(root), mode="offline",
                     settings=wandb.Settings(console="off", x_disable_stats=True,
                                             x_disable_meta=True, disable_git=True))
    for s in range(n_rows):
        run.log({"test/acc": (s % 1000) / 1000}, step=s)
    run.finish()
    return root / "wandb"


# ------------------------------------------------------------------------------------------
# the readers compared
# ------------------------------------------------------------------------------------------

def efl_points(files: list[Path]) -> int:
    """TensorBoard's EventFileLoader: decode every event and collect its scalar values.

    The loader migrates ``simple_value`` summaries to scalar tensors as it reads them.
    """
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out: list[tuple[int, float]] = []
    for f in files:
        for ev in EventFileLoader(str(f)).Load():
            for v in ev.summary.value:
                if v.HasField("tensor"):
                    out.append((ev.step, float(tensor_util.make_ndarray(v.tensor))))
                elif v.HasField("simple_value"):
                    out.append((ev.step, v.simple_value))
    return len(out)


def tbparse_points(logdir: Path) -> int:
    from tbparse import SummaryReader

    return len(SummaryReader(str(logdir)).scalars)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--wandb-points", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the docs table only")
    args = ap.parse_args(argv)
    rows: list[tuple[str, str, int, float]] = []

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        steps, vals = series(args.points)
        n = steps.size * len(TAGS)
        tb_dir = root / "tb" / "r0"
        tb_dir.mkdir(parents=True)
        have_tb = importlib.util.find_spec("tensorboard") is not None
        if have_tb:
            tb_file = tb_dir / "events.out.tfevents.1700000000.bench"
            write_events(tb_file, steps, vals)
            rows.append(("tensorboard", "grokaudit read_log", n,
                         best(lambda: _points(read_log(tb_dir)), args.repeat, n)))
            rows.append(("tensorboard", "tensorboard EventFileLoader", n,
                         best(lambda: efl_points([tb_file]), 1, n)))
            if importlib.util.find_spec("tbparse") is not None:
                rows.append(("tensorboard", "tbparse SummaryReader.scalars", n,
                             best(lambda: tbparse_points(tb_dir), 1, n)))
        files = write_tables(root, steps, vals)
        rows.append(("csv", "grokaudit read_log", n,
                     best(lambda: _points(read_log(files["csv"])), args.repeat, n)))
        rows.append(("csv", "pandas read_csv", n,
                     best(lambda: int(pd.read_csv(files["csv"])[["test_acc", "train_acc",
                                                                 "emb_erank", "weight_norm"]]
                                      .notna().to_numpy().sum()), args.repeat, n)))
        for fmt in ("parquet", "jsonl", "npz", "wandb-history", "mlflow", "mlflow-sqlite"):
            rows.append((fmt, "grokaudit read_log", n,
                         best(lambda p=files[fmt]: _points(read_log(p)), args.repeat, n)))
        wb = write_wandb(root / "wb", args.wandb_points) if args.wandb_points else None
        if wb is not None:
            rows.append(("wandb-offline", "grokaudit read_log", args.wandb_points,
                         best(lambda: _points(read_log(wb)), args.repeat, args.wandb_points)))

    lines = ["| format | reader | points | seconds | s per 1M points | time ÷ grokaudit's |",
             "|---|---|---:|---:|---:|---:|"]
    ours = {fmt: t / p * 1e6 for fmt, who, p, t in rows if who == "grokaudit read_log"}
    for fmt, who, p, t in rows:
        per_m = t / p * 1e6
        ratio = f"{per_m / ours[fmt]:.1f}" if who != "grokaudit read_log" else "1"
        lines.append(f"| {fmt} | {who} | {p:,} | {t:.2f} | {per_m:.2f} | {ratio} |")
    if not args.markdown:
        print(f"python {sys.version.split()[0]}, numpy {np.__version__}, pandas {pd.__version__}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
