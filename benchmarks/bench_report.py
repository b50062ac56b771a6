"""`grokaudit report` against `grokaudit check`: whole commands, side by side.

    python benchmarks/bench_report.py                       # the bundled MLP sweep, every metric
    python benchmarks/bench_report.py LOG -- --by wd --cell arch
    python benchmarks/bench_report.py --repeat 7 --png      # also write the PNGs
    python benchmarks/bench_report.py --jobs 1              # report drawing in one process

Each round runs ``check LOG OPTIONS -q`` and ``report LOG OPTIONS -o TMP/r.html`` as fresh
processes (start-up and imports included), alternating which goes first, so that a change in
the machine's load hits both alike. Prints, per command, the median and the lowest wall time
and the median CPU time (user + system of the process and every worker it started), the ratio
report / check of the medians and of the lowest times, and the load average before and after
(the development machine has two cores shared with other work: read the ratio, and the
lowest times, rather than the absolute numbers, when the load is above the core count).

The target (issue 13): ``report`` ≤ 3 × ``check`` on every metric of the bundled MLP sweep.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
#: the options of the bundled MLP sweep (reference_runs/data/README.md), every metric
OPTIONS = ["--by", "wd", "--cell", "arch"]


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and its reaped children, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "GROKAUDIT_PROGRESS": "0"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", type=Path, default=LOG)
    ap.add_argument("options", nargs="*", help=f"audit options (default: {' '.join(OPTIONS)})")
    ap.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--png", action="store_true", help="report also writes --png DIR")
    ap.add_argument("--jobs", type=int, default=None, help="report --jobs N")
    a = ap.parse_args(argv)
    opts = a.options or OPTIONS
    exe = [sys.executable, "-m", "grokaudit"]
    with tempfile.TemporaryDirectory() as tmp:
        cap = ["--max-rows", str(10**12)]  # large logs on purpose
        check = [*exe, "check", str(a.log), *opts, *cap, "-q"]
        report = [*exe, "report", str(a.log), *opts, *cap, "-o", str(Path(tmp) / "r.html")]
        if a.png:
            report += ["--png", str(Path(tmp) / "png")]
        if a.jobs is not None:
            report += ["--jobs", str(a.jobs)]
        timed(check)  # warm the file cache and the bytecode
        load0 = os.getloadavg()
        times: dict[str, list[tuple[float, float]]] = {"check": [], "report": []}
        codes = set()
        for k in range(a.repeat):
            order = [("check", check), ("report", report)]
            for name, cmd in order if k % 2 == 0 else order[::-1]:
                wall, cpu, code = timed(cmd)
                times[name].append((wall, cpu))
                codes.add((name, code))
        load1 = os.getloadavg()
        page = Path(tmp) / "r.html"
        size = page.stat().st_size if page.exists() else 0
    print(f"log: {a.log.name} {' '.join(opts)}; {a.repeat} rounds, alternated; "
          f"{os.cpu_count()} CPUs; load average {load0[0]:.2f} before, {load1[0]:.2f} after; "
          f"page {size / 1e6:.2f} MB")
    print("| command | wall median (s) | wall lowest (s) | CPU median (s) |")
    print("|---|---|---|---|")
    med: dict[str, float] = {}
    low: dict[str, float] = {}
    for name, cmd in (("check", check), ("report", report)):
        walls = [w for w, _ in times[name]]
        cpus = [c for _, c in times[name]]
        med[name], low[name] = statistics.median(walls), min(walls)
        shown = " ".join(["grokaudit", *cmd[3:4], a.log.name, *cmd[5:]]).replace(tmp, "TMP")
        print(f"| `{shown}` | {med[name]:.2f} | {low[name]:.2f} | "
              f"{statistics.median(cpus):.2f} |")
    print(f"ratio report / check: {med['report'] / med['check']:.2f} (medians), "
          f"{low['report'] / low['check']:.2f} (lowest); target ≤ 3")
    if len({c for _, c in codes}) != 1:
        print(f"note: the commands exited differently: {sorted(codes)}")


if __name__ == "__main__":
    main()
