"""Read time per million points for each adapter, next to the writers' own readers.

    python benchmarks/bench_adapters.py [--points 1000000] [--wandb-points 1000000] [--repeat 3]
                                        [--cache DIR] [--markdown] [--only wandb]
                                        [--wandb-before REV]

Writes the fixtures once (into ``--cache DIR`` to reuse them in later runs, else a temporary
folder), then times, side by side in one run (``read_log`` best of ``--repeat``, the other
readers once):

* TensorBoard: ``read_log`` vs TensorBoard's own ``EventFileLoader`` (events decoded, scalar
  values collected) and ``tbparse.SummaryReader`` (when installed), on the same event file;
* W&B offline: ``read_log`` vs wandb's own ``Record`` protobuf decoding the run record by
  record (wandb 0.31 ships no Python reader of ``.wandb`` files: its reader is the Go
  ``wandb-core``), on a run written by ``wandb`` itself: ``--wandb-points`` values, 4 per
  logged row (wandb writes about 5 000 rows a second: a million points take about a minute);
* MLflow SQLite: ``read_log`` vs ``sqlite3`` (``fetchall`` of the metric rows into numpy) and
  ``pandas.read_sql_query``, which only fetch the rows (no per-metric series, no checks);
* CSV: ``read_log`` vs ``pandas.read_csv`` on the same file;
* Parquet, JSONL, NPZ, W&B history CSV and the MLflow file store: ``read_log`` alone.

``--wandb-before REV`` also times the W&B offline reader of an earlier commit (its
W&B modules ``wandb.py``, ``_wandb_decode.py`` and ``_wandb_values.py`` taken from ``git show
REV:...`` and loaded beside the current ones), the two
run in turn in this one process, best of ``--repeat`` each, with the ratio; ``--only wandb``
skips the other formats.

Every reader must return every point; the script checks the counts before it reports a time.
The load average of the machine is printed before and after.
The event files are framed by this script (TFRecord framing, masked CRC-32C) from ``Event``
protobufs built with TensorBoard's own classes, because ``SummaryWriter`` needs minutes for a
million points; ``EventFileLoader`` and ``tbparse`` verify them as they read.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
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


def write_wandb(root: Path, n_points: int) -> Path | None:
    """A run logged by ``wandb`` offline: ``n_points // 4`` rows of the 4 tags."""
    if importlib.util.find_spec("wandb") is None:
        return None
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(root))
    import wandb

    steps, vals = series(n_points)
    cols = {t: vals[t].tolist() for t in TAGS}
    run = wandb.init(project="bench", id="bench1", dir=str(root), mode="offline",
                     settings=wandb.Settings(console="off", x_disable_stats=True,
                                             x_disable_meta=True, disable_git=True))
    for i, s in enumerate(steps.tolist()):
        run.log({t: cols[t][i] for t in TAGS}, step=s)
    run.finish()
    out = root / "wandb"
    deadline = time.monotonic() + 120  # wandb-core may still be writing after finish()
    while time.monotonic() < deadline:
        try:
            if _points(read_log(out)) == steps.size * len(TAGS):
                break
        except Exception:  # noqa: BLE001 - not complete yet
            pass
        time.sleep(1)
    return out


def cached(cache: Path | None, name: str, write: Callable[[Path], object]) -> Path:
    """``cache/name`` written once by ``write`` (a ``.done`` marker says it is complete)."""
    assert cache is not None
    target = cache / name
    if not (cache / f"{name}.done").exists():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        write(target)
        (cache / f"{name}.done").write_text("ok\n")
    return target


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


def wandb_protobuf_points(root: Path) -> int:
    """wandb's own ``Record`` protobuf, record by record: LevelDB framing walked in Python
    (zlib CRC of every record, as wandb-core checks it), each record decoded, each history
    value read with ``float``/``json``."""
    import json
    import zlib

    from wandb.proto.wandb_internal_pb2 import Record

    n = 0
    for f in sorted(root.rglob("offline-run-*/*.wandb")):
        data = f.read_bytes()
        pos, pending = 7, b""
        while pos + 7 <= len(data):
            room = 32768 - pos % 32768
            if room < 7:
                pos += room
                continue
            crc, length, kind = struct.unpack_from("<IHB", data, pos)
            if kind == 0 and length == 0:
                pos += room
                continue
            body = data[pos + 7:pos + 7 + length]
            if zlib.crc32(body, zlib.crc32(bytes((kind,)))) != crc:
                raise SystemExit(f"CRC error in {f} at {pos}")
            pos += 7 + length
            pending = body if kind in (1, 2) else pending + body
            if kind not in (1, 4):
                continue
            rec = Record.FromString(pending)
            if rec.WhichOneof("record_type") == "history":
                for item in rec.history.item:
                    key = item.key or ".".join(item.nested_key)
                    if not key.startswith("_"):
                        try:
                            float(item.value_json)
                        except ValueError:
                            json.loads(item.value_json)
                        n += 1
    return n


_METRICS_QUERY = ("select run_uuid, key, step, value, timestamp, is_nan from metrics "
                  "order by rowid")


def sqlite3_points(db: Path) -> int:
    """``sqlite3``: every metric row fetched, the numbers into numpy arrays."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute(_METRICS_QUERY).fetchall()
    finally:
        con.close()
    runs, keys, step, value, ts, is_nan = zip(*rows)
    arrays = (np.array(step, dtype=np.int64), np.array(value, dtype=np.float64),
              np.array(ts, dtype=np.float64), np.array(is_nan, dtype=bool))
    return int(arrays[1].size)


def pandas_sql_points(db: Path) -> int:
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return len(pd.read_sql_query(_METRICS_QUERY, con))
    finally:
        con.close()


def tbparse_points(logdir: Path) -> int:
    from tbparse import SummaryReader

    return len(SummaryReader(str(logdir)).scalars)


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [f"python {sys.version.split()[0]}"]
    for pkg in ("numpy", "pandas", "pyarrow", "protobuf", "tensorboard", "tbparse", "wandb"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            pass
    out.append(f"sqlite {sqlite3.sqlite_version}")
    return ", ".join(out)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


#: The W&B offline reader's own modules: taken from the commit compared (where it has them);
#: every other module it imports is the current one.
WANDB_MODULES = ("_wandb_values", "_wandb_decode", "wandb")


def reader_at(rev: str | None) -> Callable[[Path], int]:
    """The W&B offline reader (``read_offline``, its points counted) of commit ``rev``: its
    modules (:data:`WANDB_MODULES`, those ``rev`` has) loaded from ``git show`` as a private
    package beside the current one, whose other relative imports resolve to the current
    modules; None: the current one."""
    import importlib
    import subprocess
    import types

    from grokaudit.adapters import wandb as mod
    from grokaudit.adapters.merge import ReadOptions

    if rev is not None:
        here = Path(__file__).resolve().parent
        pkg_name = f"grokaudit.adapters._before_{rev}"
        pkg = types.ModuleType(pkg_name)
        pkg.__path__ = []  # a package: its submodules are the ones registered below
        sys.modules[pkg_name] = pkg
        current = importlib.import_module("grokaudit.adapters")
        for info in __import__("pkgutil").iter_modules(current.__path__):
            if info.name not in WANDB_MODULES:
                sys.modules[f"{pkg_name}.{info.name}"] = importlib.import_module(
                    f"grokaudit.adapters.{info.name}")
        for name in WANDB_MODULES:
            got = subprocess.run(["git", "show", f"{rev}:adapters/{name}.py"],
                                 capture_output=True, text=True, cwd=here)
            if got.returncode != 0:  # not at that commit: its wandb.py does not import it
                continue
            sub = types.ModuleType(f"{pkg_name}.{name}")
            sub.__package__ = pkg_name
            sys.modules[sub.__name__] = sub
            exec(compile(got.stdout, f"{rev}:adapters/{name}.py", "exec"),  # noqa: S102
                 sub.__dict__)
            mod = sub

    def read(root: Path) -> int:
        pts = mod.read_offline(root, ReadOptions())
        return int(sum(c.value.size for c in pts.chunks))
    return read


def side_by_side(fns: dict[str, Callable[[], int]], repeat: int, expect: int) -> dict[str, float]:
    """Best wall time of each reader, the readers run in turn ``repeat`` times."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name].append(best(fn, 1, expect))
    return {k: min(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--wandb-points", type=int, default=1_000_000,
                    help="values in the W&B offline run (4 per row; 0: no W&B run)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache", type=Path, default=None,
                    help="keep the generated logs here and reuse them in later runs")
    ap.add_argument("--markdown", action="store_true", help="print the docs table only")
    ap.add_argument("--only", choices=("all", "wandb"), default="all")
    ap.add_argument("--wandb-before", metavar="REV", default=None,
                    help="also time the W&B offline reader of this commit, in turn with the "
                         "current one")
    args = ap.parse_args(argv)
    rows: list[tuple[str, str, int, float]] = []
    load_before = load()

    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        steps, vals = series(args.points)
        n = steps.size * len(TAGS)
        have_tb = (importlib.util.find_spec("tensorboard") is not None
                   and args.only == "all")
        if have_tb:
            tb_dir = cached(cache, f"tb-{args.points}", lambda d: write_events(
                d / "events.out.tfevents.1700000000.bench", steps, vals))
            tb_file = tb_dir / "events.out.tfevents.1700000000.bench"
            rows.append(("tensorboard", "grokaudit read_log", n,
                         best(lambda: _points(read_log(tb_dir)), args.repeat, n)))
            rows.append(("tensorboard", "tensorboard EventFileLoader", n,
                         best(lambda: efl_points([tb_file]), 1, n)))
            if importlib.util.find_spec("tbparse") is not None:
                rows.append(("tensorboard", "tbparse SummaryReader.scalars", n,
                             best(lambda: tbparse_points(tb_dir), 1, n)))
        nw = (args.wandb_points // len(TAGS)) * len(TAGS)
        if nw and importlib.util.find_spec("wandb") is not None:
            wb = cached(cache, f"wandb-{nw}", lambda d: write_wandb(d, nw)) / "wandb"
            fns = {"grokaudit read_log": lambda: _points(read_log(wb))}
            if args.wandb_before:  # the reader alone (its points), now and at REV, in turn
                now, before = reader_at(None), reader_at(args.wandb_before)
                fns["grokaudit read_offline (points only)"] = lambda: now(wb)
                fns[f"grokaudit read_offline at {args.wandb_before} (points only)"] = \
                    lambda: before(wb)
            for who, t in side_by_side(fns, args.repeat, nw).items():
                rows.append(("wandb-offline", who, nw, t))
            rows.append(("wandb-offline", "wandb Record protobuf, record by record", nw,
                         best(lambda: wandb_protobuf_points(wb), 1, nw)))
        if args.only == "wandb":
            return report(rows, args.markdown, load_before)
        tables = cached(cache, f"tables-{args.points}", lambda d: write_tables(d, steps, vals))
        files = {k: tables / v for k, v in (("csv", "logs.csv"), ("parquet", "logs.parquet"),
                                             ("jsonl", "logs.jsonl"),
                                             ("wandb-history", "r0-history.csv"),
                                             ("npz", "cell.npz"), ("mlflow", "mlruns"),
                                             ("mlflow-sqlite", "mlflow.db"))}
        db = files["mlflow-sqlite"]
        rows.append(("mlflow-sqlite", "grokaudit read_log", n,
                     best(lambda: _points(read_log(db)), args.repeat, n)))
        rows.append(("mlflow-sqlite", "sqlite3 fetchall + numpy", n,
                     best(lambda: sqlite3_points(db), args.repeat, n)))
        rows.append(("mlflow-sqlite", "pandas read_sql_query", n,
                     best(lambda: pandas_sql_points(db), args.repeat, n)))
        rows.append(("csv", "grokaudit read_log", n,
                     best(lambda: _points(read_log(files["csv"])), args.repeat, n)))
        rows.append(("csv", "pandas read_csv", n,
                     best(lambda: int(pd.read_csv(files["csv"])[["test_acc", "train_acc",
                                                                 "emb_erank", "weight_norm"]]
                                      .notna().to_numpy().sum()), args.repeat, n)))
        for fmt in ("parquet", "jsonl", "npz", "wandb-history", "mlflow"):
            rows.append((fmt, "grokaudit read_log", n,
                         best(lambda p=files[fmt]: _points(read_log(p)), args.repeat, n)))
    report(rows, args.markdown, load_before)


def report(rows: list[tuple[str, str, int, float]], markdown: bool, load_before: str) -> None:
    """Print the table (and, unless ``markdown``, the versions and the machine's load)."""
    lines = ["| format | reader | points | seconds | s per 1M points | time ÷ grokaudit's |",
             "|---|---|---:|---:|---:|---:|"]
    ours = {fmt: t / p * 1e6 for fmt, who, p, t in rows if who == "grokaudit read_log"}
    for fmt, who, p, t in rows:
        per_m = t / p * 1e6
        ratio = f"{per_m / ours[fmt]:.1f}" if who != "grokaudit read_log" else "1"
        lines.append(f"| {fmt} | {who} | {p:,} | {t:.2f} | {per_m:.2f} | {ratio} |")
    if not markdown:
        print(versions())
        print(f"load average (1, 5, 15 min): before {load_before}, after {load()}; "
              f"{os.cpu_count()} CPUs")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
