"""``grokaudit.audit_path`` before and after a change, on one generated log, side by side.

    python benchmarks/bench_before_after.py OLD_PACKAGE_DIR                 # 2 000 × 5 000
    python benchmarks/bench_before_after.py OLD_PACKAGE_DIR --runs 100000 --steps 50
    python benchmarks/bench_before_after.py OLD_PACKAGE_DIR --stream --row-group 1000 \
        --runs 2000 --steps 500        # check --stream on a file of many small row groups
    python benchmarks/bench_before_after.py OLD_PACKAGE_DIR --json --runs 200000 --steps 50
                                       # and the JSON written as --json writes it
    python benchmarks/bench_before_after.py OLD_PACKAGE_DIR --runs 1000000 --steps 50 \
        --prefault 3 --warm            # steady memory: each process's second audit

``OLD_PACKAGE_DIR`` is a folder holding the code before the change as an importable
``grokaudit`` package (for example ``git worktree add /tmp/old <commit>`` and a folder
``/tmp/oldpkg/grokaudit`` whose entries link to ``/tmp/old/audit/*``, ``adapters`` and
``adversarial_suite``). One canonical Parquet log is written (``bench_side_by_side.write_log``:
float32 metric and accuracies, 8 cells along ``rho``); then each audit runs in a fresh
subprocess, before and after alternated (the order flipped every round), ``--repeat`` rounds.
Printed: the best wall time of ``audit_path`` inside each process, its peak RSS (VmHWM), the
number of findings, and the ratio after / before. With ``--json`` each process then writes
the result's JSON as ``check --json FILE`` does (``Output.write_chunks`` of ``json_chunks``,
through ``safe_json``): its time, the peak RSS after it, and whether the two versions wrote the
same bytes. Read ratios, never absolute times, on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_side_by_side import write_log  # noqa: E402

CHILD = r'''
import importlib.util, sys, time
import grokaudit
import grokaudit.api  # loaded before the timer (``import grokaudit`` is lazy after 2026-12)
if sys.argv[2] == "stream":
    from grokaudit.stream import audit_stream
# no row cap where the version has one: these logs are larger than the default cap on purpose
cap = {"max_rows": 10**12} if importlib.util.find_spec("grokaudit.limits") else {}
def audit():
    if sys.argv[2] == "stream":
        return audit_stream(sys.argv[1], by="rho", metrics=["emb_erank"])
    return grokaudit.audit_path(sys.argv[1], by="rho", metrics=["emb_erank"], **cap)
if sys.argv[5] == "warm":  # one audit first, untimed: the second audit of a process is timed
    audit()
if int(sys.argv[4]):  # fresh memory touched first (bench_targets.prefault)
    import numpy as np
    a = np.empty(int(sys.argv[4]) // 8)
    a.fill(1.0)
    del a
t = time.perf_counter()
r = audit()
dt = time.perf_counter() - t
dtj, digest = 0.0, "-"
if sys.argv[3] != "-":  # the JSON, as check --json FILE writes it
    import hashlib
    from grokaudit.outputs import resolve_output
    from grokaudit.text import safe_json
    t = time.perf_counter()
    resolve_output(sys.argv[3], flag="--json").write_chunks(r.json_chunks(), transform=safe_json)
    dtj = time.perf_counter() - t
    digest = hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest()[:16]
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
print(dt, int(hwm) / 1024, len(r.findings), dtj, digest)
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="a folder holding the old code as a `grokaudit` package")
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--stream", action="store_true",
                    help="audit_stream (check --stream) instead of audit_path")
    ap.add_argument("--json", action="store_true",
                    help="also write the JSON as check --json FILE does, and time it")
    ap.add_argument("--row-group", type=int, default=None, metavar="N",
                    help="write the log in row groups of N rows (default: about 1 M)")
    ap.add_argument("--prefault", type=float, default=0.0, metavar="GIB",
                    help="touch GIB of fresh memory just before the timed audit (the peak RSS then "
                         "includes it; see "
                         "bench_targets.prefault: a virtual machine's returned pages)")
    ap.add_argument("--warm", action="store_true",
                    help="time each process's second audit (one untimed audit first)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = write_log(Path(d) / "log.parquet", a.runs, a.steps, 1)
        if a.row_group:
            import pyarrow.parquet as pq

            pq.write_table(pq.read_table(path), path, row_group_size=a.row_group)
        got: dict[str, list[list[str]]] = {"before": [], "after": []}
        for i in range(a.repeat):
            for kind in (("before", "after") if i % 2 == 0 else ("after", "before")):
                env = dict(os.environ)
                if kind == "before":
                    env["PYTHONPATH"] = a.old
                else:
                    env.pop("PYTHONPATH", None)
                out = subprocess.run([sys.executable, "-c", CHILD, str(path),
                                      "stream" if a.stream else "path",
                                      str(Path(d) / f"{kind}.json") if a.json else "-",
                                      str(int(a.prefault * 2**30)),
                                      "warm" if a.warm else "cold"],
                                     env=env, capture_output=True, text=True, cwd=d)
                if out.returncode:
                    print(out.stderr[-2000:], file=sys.stderr)
                    return 1
                got[kind].append(out.stdout.split())
    how = "audit_stream" if a.stream else "audit_path"
    print(f"{a.runs} runs × {a.steps} steps"
          f"{f' in row groups of {a.row_group} rows' if a.row_group else ''}, best of "
          f"{a.repeat} fresh processes each"
          f"{', the second audit of each' if a.warm else ''}"
          f"{f', {a.prefault:g} GiB touched before it' if a.prefault else ''}")
    def median(kind: str, k: int) -> float:
        return float(statistics.median(float(x[k]) for x in got[kind]))

    def best(kind: str, k: int) -> float:
        return min(float(x[k]) for x in got[kind])

    for kind, v in got.items():
        print(f"{kind:<7} {how} {best(kind, 0):.3f} s (median {median(kind, 0):.3f})   "
              f"peak RSS {best(kind, 1):.0f} MiB   "
              f"findings {int(v[0][2])}"
              + (f"   JSON written {best(kind, 3):.3f} s (sha256 {v[0][4]})" if a.json else ""))
    print(f"after / before: {best('after', 0) / best('before', 0):.3f} "
          f"(medians {median('after', 0) / median('before', 0):.3f})")
    if a.json:
        same = {x[4] for v in got.values() for x in v}
        print(f"JSON after / before: {best('after', 3) / best('before', 3):.3f}; "
              f"{'the same bytes' if len(same) == 1 else 'DIFFERENT bytes'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
