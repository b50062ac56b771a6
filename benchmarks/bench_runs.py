"""Benchmark the audit's cost in the number of runs: ``grokaudit.audit_path`` on a canonical log
of N runs × 3 logged steps (and a variant with a few more steps), N from 1 000 to 1 000 000.

    python benchmarks/bench_runs.py                              # 1k, 10k, 100k, 1M runs
    python benchmarks/bench_runs.py --runs 1000,10000 --steps 3,8 --check
    python benchmarks/bench_runs.py --write DIR --runs 2000 --steps 12   # only write the logs

The audit path must be linear in runs (issue 10: it was quadratic, 200k runs took 47 s): read
the "µs per row" column, which should stay roughly constant as N grows. "audit (s)" is wall
time, "CPU (s)" the process's CPU time (less sensitive to other load on the machine). Each size is audited
in a fresh subprocess, so its peak RSS (``ru_maxrss`` of that process, imports included) is its
own. ``--check`` also times ``python -m grokaudit check`` (text report, no JSON) as a
subprocess; its peak RSS is read with ``RUSAGE_CHILDREN`` in a fresh wrapper process. Prints a
Markdown table (paste it into docs/performance.md) with the date, the machine and the versions.

The synthetic log: ``--cells`` axis values of ``wd`` (default 8) with the runs spread evenly
over them (seed = the run's number within its cell), one metric ``emb_erank``. About one run
in five never groks (censored ``t_grok``); with ``--ragged`` (default on) about one run in
seven lacks its last logged point (unequal lengths) and a few metric values are missing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

METRIC = "emb_erank"
#: the row cap of every audit here: the largest logs are larger than the default cap on purpose
NO_CAP = 10**12


def make_log(n_runs: int, n_steps: int, n_cells: int = 8, seed: int = 0,
             ragged: bool = True) -> pd.DataFrame:
    """``n_runs`` runs × ``n_steps`` logged steps (every 100 steps) along ``wd``.

    Runs grok at a logged step that depends on the cell (or never: about 20 %), then their
    metric decays towards a cell-dependent floor. With ``ragged``, about one run in seven lacks
    its last point and about 1 % of the metric values are NaN.
    """
    rng = np.random.default_rng(seed)
    R, T = n_runs, n_steps
    steps = np.arange(T, dtype=np.int64) * 100
    run_no = np.arange(R)
    cell = run_no % n_cells
    # grok index: a cell-dependent point plus jitter; T (never) for about 20 % of runs
    g = np.clip((cell * (T - 1)) // max(n_cells, 1) + rng.integers(0, 2, R), 1, T - 1)
    g = np.where(rng.random(R) < 0.2, T, g)
    k = np.arange(T)[None, :]
    after = k >= g[:, None]
    test_acc = np.where(after, 0.99, 0.05 + 0.3 * k / max(T, 1))
    train_acc = np.where(k >= 1, 1.0, 0.5) * np.ones((R, 1))
    floor = 10.0 + cell[:, None]
    tau = 1.0 + (cell[:, None] % 3)
    decay = np.exp(-np.maximum(k - g[:, None], 0) / tau)
    m = floor + 30.0 * np.where(after, decay, 1.0) + rng.normal(0, 0.02, (R, T))
    keep = np.ones((R, T), dtype=bool)
    if ragged:
        m[rng.random((R, T)) < 0.01] = np.nan
        keep[:, -1] = rng.random(R) >= 1 / 7  # unequal lengths
    names = np.array([f"r{i:07d}" for i in range(R)], dtype=object)
    flat = keep.ravel()
    return pd.DataFrame({
        "run": np.repeat(names, T)[flat],
        "step": np.tile(steps, R)[flat],
        "test_acc": test_acc.ravel()[flat],
        "train_acc": train_acc.ravel()[flat],
        METRIC: m.ravel()[flat],
        "wd": np.repeat(0.1 * (1 + cell), T)[flat],
        "seed": np.repeat(run_no // n_cells, T)[flat],
    })


def write(n_runs: int, n_steps: int, d: Path, n_cells: int, ragged: bool = True) -> Path:
    import grokaudit

    p = d / f"runs_{n_runs}x{n_steps}_c{n_cells}{'_r' if ragged else ''}.parquet"
    if not p.exists():
        grokaudit.write_table(make_log(n_runs, n_steps, n_cells, ragged=ragged), p)
    return p


def write_in_child(n_runs: int, n_steps: int, d: Path, n_cells: int, ragged: bool) -> Path:
    """:func:`write` in a subprocess, so that this process stays small (a child forked from
    a large parent would start with its memory counted)."""
    args = [sys.executable, __file__, "--write", str(d), "--runs", str(n_runs), "--steps",
            str(n_steps), "--cells", str(n_cells)] + ([] if ragged else ["--no-ragged"])
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def _peak_rss_mib() -> float:
    """This process's peak resident set size in MiB: ``VmHWM`` from /proc (it belongs to the
    process image, so it starts afresh at exec), else ``ru_maxrss`` (which on Linux keeps the
    high-water mark of the parent that forked this process)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(path: str) -> None:
    import grokaudit
    import grokaudit.api  # noqa: F401  loaded here, not on first use inside the timer

    t0 = time.perf_counter()  # imports are start-up cost, not the audit's: outside the timer
    c0 = time.process_time()
    res = grokaudit.audit_path(path, by="wd", max_rows=NO_CAP)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"seconds": dt, "cpu_seconds": cpu, "peak_rss_mib": _peak_rss_mib(),
                      "runs": len(res.studies[0].runs), "exit": res.exit_code}))


def _child_check(path: str) -> None:
    """Run ``grokaudit check`` (text report to /dev/null) and report its wall time and the
    peak RSS of that one child process (this small wrapper is what it was forked from)."""
    t0 = time.perf_counter()
    rc = subprocess.run([sys.executable, "-m", "grokaudit", "check", path, "--by", "wd", "-q",
                         "--max-rows", str(NO_CAP)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if rc.returncode not in (0, 1):
        raise SystemExit(f"check failed ({rc.returncode}): {rc.stderr[-2000:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"seconds": dt, "peak_rss_mib": rss, "exit": rc.returncode}))


def measure(kind: str, path: Path, timeout: float) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(path)],
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"{kind} on {path} failed:\n{out.stderr[-3000:]}")
    r: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return r


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def versions() -> str:
    import grokaudit
    import pyarrow

    return (f"grokaudit {grokaudit.__version__}, Python {platform.python_version()}, "
            f"numpy {np.__version__}, pandas {pd.__version__}, pyarrow {pyarrow.__version__}")


def _ints(s: str) -> list[int]:
    out = []
    for part in s.split(","):
        part = part.strip().lower().replace("_", "")
        mult = 1
        if part.endswith("k"):
            part, mult = part[:-1], 1000
        elif part.endswith("m"):
            part, mult = part[:-1], 1_000_000
        out.append(int(float(part) * mult))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="1000,10000,100000,1000000",
                    help="comma list of run counts (1k, 1M accepted)")
    ap.add_argument("--steps", default="3,8", help="comma list of logged steps per run")
    ap.add_argument("--cells", type=int, default=8, help="axis values (cells)")
    ap.add_argument("--no-ragged", action="store_true", help="equal lengths, no NaN")
    ap.add_argument("--check", action="store_true", help="also time `grokaudit check`")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per measurement")
    ap.add_argument("--write", metavar="DIR", help="only write the logs into DIR")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        (_child if a.child[0] == "audit" else _child_check)(a.child[1])
        return 0
    runs, steps, ragged = _ints(a.runs), _ints(a.steps), not a.no_ragged
    if a.write:
        d = Path(a.write)
        d.mkdir(parents=True, exist_ok=True)
        for t in steps:
            for n in runs:
                print(write(n, t, d, a.cells, ragged))
        return 0
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# grokaudit cost in runs — {now}\n# machine: {machine()}\n# {versions()}\n"
          f"# command: python benchmarks/bench_runs.py {' '.join(sys.argv[1:])}\n"
          f"# log: {a.cells} cells along wd, 1 metric, "
          f"{'ragged (≈1/7 runs one point short, 1 % NaN metric)' if ragged else 'equal lengths'}"
          ", ≈20 % of runs never grok\n", flush=True)
    head = ("| runs | steps | rows | audit (s) | CPU (s) | µs per row | µs per run "
            "| peak RSS (MB) |")
    sep = "|---|---|---|---|---|---|---|---|"
    if a.check:
        head += " check (s) | check peak RSS (MB) |"
        sep += "---|---|"
    print(head + "\n" + sep, flush=True)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        d = Path(tmp)
        for t in steps:
            for n in runs:
                p = write_in_child(n, t, d, a.cells, ragged)
                rows = int(pq.read_metadata(p).num_rows)
                m = measure("audit", p, a.timeout)
                line = (f"| {n:,} | {t} | {rows:,} | {m['seconds']:.2f} | "
                        f"{m['cpu_seconds']:.2f} | {1e6 * m['seconds'] / rows:.2f} | "
                        f"{1e6 * m['seconds'] / n:.1f} | {m['peak_rss_mib'] * 1.048576:.0f} |")
                if a.check:
                    c = measure("check", p, a.timeout)
                    line += f" {c['seconds']:.2f} | {c['peak_rss_mib'] * 1.048576:.0f} |"
                print(line, flush=True)
                p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
