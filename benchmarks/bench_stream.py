"""A log larger than one part, audited whole and streamed (issue 22): time, peak RSS against
the log's Arrow size, and whether the results are the same.

    python benchmarks/bench_stream.py                                   # 10 000 runs × 5 000 steps
    python benchmarks/bench_stream.py --runs 2000 --steps 1000 --dir /tmp/b
    python benchmarks/bench_stream.py --report --claims   # also `report`, `dose`, streamed

One canonical log (``bench_side_by_side.make_chunk``: float32 metric and accuracies, ``rho``
with 8 values, ``seed``) is written twice, chunk by chunk (never whole in memory): as one
Parquet file in row groups of about 1 M rows, and as a hive dataset folder
``rho=…/part-K.parquet``. Each measurement runs in a fresh subprocess: ``audit_path`` on the
file (in memory), ``audit_stream`` on the file and on the folder. Peak RSS is the process's
VmHWM when the audit returns (before the JSON made for the comparison); the Arrow size is the sum over row groups of the columns as Arrow holds them (run ids
dictionary-encoded). "Same" compares the JSON with the in-memory audit of the file (the trail
aside; for the folder the input's source and provenance too: they name the files read).
``--report``: the page of ``report`` against ``report --stream`` (figures drawn in the process,
the trail left out; the folder's page without its provenance section); ``--claims``: the JSON
of ``dose --by rho`` against ``dose --by rho --stream``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_side_by_side import _machine, make_chunk  # noqa: E402


def write(dirname: Path, R: int, T: int) -> tuple[Path, Path]:
    """The log as one file and as a hive folder, written chunk by chunk."""
    file, folder = dirname / f"log_{R}x{T}.parquet", dirname / f"ds_{R}x{T}"
    if file.exists() and folder.exists():
        return file, folder
    per = max(1, 1_000_000 // T)
    writer = None
    for k, r0 in enumerate(range(0, R, per)):
        t = make_chunk(r0, min(R, r0 + per), T, 1, R)
        if writer is None:
            writer = pq.ParquetWriter(file, t.schema)
        writer.write_table(t)
        for v in pc.unique(t["rho"]).to_pylist():
            part = t.filter(pc.equal(t["rho"], v)).drop_columns(["rho"])
            d = folder / f"rho={v:g}"
            d.mkdir(parents=True, exist_ok=True)
            pq.write_table(part, d / f"part-{k:05d}.parquet")
    assert writer is not None
    writer.close()
    return file, folder


def arrow_size(path: Path) -> int:
    f = pq.ParquetFile(path, read_dictionary=["run"])
    return sum(f.read_row_group(i).nbytes for i in range(f.metadata.num_row_groups))


def child(kind: str, path: str) -> None:
    import grokaudit
    import grokaudit.api  # noqa: F401  loaded here, not on first use inside the timer
    from grokaudit.stream import audit_stream

    t0 = time.perf_counter()
    page = ""
    if kind.startswith("report"):
        page = report_child(kind, path)
        res = None
    elif kind.startswith("dose"):
        page = dose_child(kind, path)
        res = None
    elif kind == "whole":
        res = grokaudit.audit_path(path, by="rho", metrics=["emb_erank"], max_rows=10**12)
    else:
        res = audit_stream(path, by="rho", metrics=["emb_erank"], max_rows=10**12)
    secs = time.perf_counter() - t0
    if res is None:  # a report's page or a claim's JSON, the source's name aside
        hwm = _hwm()
        full = hashlib.sha256(page.replace(path, "LOG").encode()).hexdigest()[:12]
        # a folder's page also lists its files as the provenance: compared without it
        cut = page.find("<h3>Provenance</h3>")
        bare = hashlib.sha256((page[:cut] if cut >= 0 else page).replace(path, "LOG")
                              .encode()).hexdigest()[:12]
        print(json.dumps({"seconds": secs, "hwm": hwm, "full": full, "bare": bare}))
        return
    hwm = _hwm()  # the audit's peak, before its JSON (of every run) is made for the comparison
    d = res.to_dict()
    d["trail"] = None
    full = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]
    d["input"].pop("source")
    d["input"].pop("provenance")
    bare = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]
    print(json.dumps({"seconds": secs, "hwm": hwm, "full": full, "bare": bare}))


def _hwm() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def report_child(kind: str, path: str) -> str:
    """``report`` (in memory) or ``report --stream``: the audit and the page, drawn in this
    process (no figure workers: their memory is not this process's); the page, without its
    trail (it names how the log was read)."""
    import dataclasses
    import tempfile

    from grokaudit.api import _config, audit_log, validated_log
    from grokaudit.html_report import write_report
    from grokaudit.limits import Limits
    from grokaudit.loader import read_source
    from grokaudit.readers import ADAPTERS
    from grokaudit.schema import Owned
    from grokaudit.stream import audit_stream_with_trajectories

    opts = {"by": "rho", "metrics": ["emb_erank"], "max_rows": 10**12}
    if kind == "report-whole":
        cfg = _config(None, opts)
        log: object = validated_log(Owned(read_source(path, limits=Limits.of(cfg),
                                                      readers=ADAPTERS)), cfg, path)
        res = audit_log(log, cfg)  # type: ignore[arg-type]
    else:
        res, log = audit_stream_with_trajectories(path, **opts)
    res = dataclasses.replace(res, trail=None)
    with tempfile.TemporaryDirectory() as d:
        out = write_report(res, log, Path(d) / "r.html", jobs=1)  # type: ignore[arg-type]
        return out.read_text()


def dose_child(kind: str, path: str) -> str:
    """``dose --by rho`` (in memory) or ``dose --by rho --stream``: the claim's JSON without
    its trail."""
    from grokaudit.claims.dose import run_dose
    from grokaudit.config import make_config
    from grokaudit.limits import Limits
    from grokaudit.loader import read_source
    from grokaudit.readers import ADAPTERS
    from grokaudit.schema import Owned
    from grokaudit.stream import open_log_parts

    cfg = make_config(max_rows=10**12)
    table: object = (Owned(read_source(path, limits=Limits.of(cfg), readers=ADAPTERS))
                     if kind == "dose-whole" else open_log_parts(path, cfg))
    res = run_dose(table, cfg, by="rho", n_resamples=20, source="LOG")  # type: ignore[arg-type]
    d = res.to_dict()
    d.pop("trail", None)
    d["input"].pop("source", None)
    d["input"].pop("provenance", None)
    return json.dumps(d, sort_keys=True)


def measure(kind: str, path: Path) -> dict[str, float | str]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(path)],
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{kind} {path} failed:\n{out.stderr[-3000:]}")
    r: dict[str, float | str] = json.loads(out.stdout.strip().splitlines()[-1])
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=5_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/grokaudit_bench_stream"))
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"))
    ap.add_argument("--report", action="store_true",
                    help="also the HTML report: `report` in memory and `report --stream`")
    ap.add_argument("--claims", action="store_true",
                    help="also a claim: `dose --by rho` in memory and with --stream")
    ap.add_argument("--skip-check", action="store_true", help="not the audit itself")
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    a.dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    file, folder = write(a.dir, a.runs, a.steps)
    print(f"written in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    size = arrow_size(file)
    rows = pq.ParquetFile(file).metadata.num_rows
    print(_machine())
    print(f"\n{a.runs:,} runs × {a.steps:,} steps = {rows:,} rows; Arrow size "
          f"{size / 2**20:,.0f} MiB\n")
    print("| audit | input | seconds | peak RSS (MiB) | peak RSS ÷ Arrow size | same |")
    print("|---|---|---:|---:|---:|---|")
    base = measure("whole", file) if not a.skip_check else None
    for kind, path, label in (() if a.skip_check else (
            ("whole", file, "one file"), ("stream", file, "one file"),
            ("stream", folder, "hive folder"))):
        assert base is not None
        r = base if (kind, path) == ("whole", file) else measure(kind, path)
        key = "full" if path == file else "bare"
        same = "—" if r is base else ("yes" if r[key] == base[key] else "NO")
        print(f"| {'in memory' if kind == 'whole' else 'streamed'} | {label} | "
              f"{float(r['seconds']):.2f} | {float(r['hwm']) / 2**20:,.0f} | "
              f"{float(r['hwm']) / size:.2f} | {same} |")
    for name, on in (("report", a.report), ("dose", a.claims)):
        if not on:
            continue
        base = measure(f"{name}-whole", file)
        for kind, path, label in ((f"{name}-whole", file, "one file"),
                                  (f"{name}-stream", file, "one file"),
                                  (f"{name}-stream", folder, "hive folder")):
            r = base if (kind, path) == (f"{name}-whole", file) else measure(kind, path)
            key = "full" if path == file else "bare"
            same = "—" if r is base else ("yes" if r[key] == base[key] else "NO")
            print(f"| {name}{' --stream' if kind.endswith('stream') else ''} | {label} | "
                  f"{float(r['seconds']):.2f} | {float(r['hwm']) / 2**20:,.0f} | "
                  f"{float(r['hwm']) / size:.2f} | {same} |", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("GROKAUDIT_PROGRESS", "0")
    main()
