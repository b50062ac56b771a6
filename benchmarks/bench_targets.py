"""The speed targets of issue 44, every ratio measured side by side in ONE process.

    python benchmarks/bench_targets.py                    # the four rows below, best of 3
    python benchmarks/bench_targets.py --big-runs 200000  # a smaller "many short runs" log
    python benchmarks/bench_targets.py --kernel numba     # the audit with the `fast` extra
    python benchmarks/bench_targets.py --kernel both      # both kernels, side by side
    python benchmarks/bench_targets.py --prefault 3       # steady numbers on a VM (below)

Three canonical Parquet logs from ``bench_side_by_side.write_log`` (float32 metric and
accuracies, an axis ``rho`` with 8 values, ``seed``), written once under ``--dir``:

* ``A``: 2 000 runs × 5 000 steps (10 M rows);
* ``B``: 200 000 runs × 3 steps (cost should follow rows, not runs);
* ``C``: ``--big-runs`` (1 000 000) runs × 50 steps (the row cap raised).

The floor of ``A`` reads every column the audit reads (``bench_side_by_side.floor``); the floor
of ``C`` reads four (run, step, test_acc, the metric: :func:`floor4`), as the issue defines it.

Then, alternating in a rotating order, best of ``--repeat``: the read+scan floor and the v1.5
per-seed rules on ``A`` (``bench_side_by_side.floor`` / ``v15``), ``grokaudit.audit_path`` on
``A``, ``B`` and ``C``, and the floor on ``C``. It prints the ratios the issue names:

| row | ratio | target (default path) |
|---|---|---|
| audit ÷ the v1.5 rules, A | audit(A) / v15(A) | ≤ 1.0 |
| audit ÷ the read+scan floor, A | audit(A) / floor(A) | (≤ 2 with `fast`) |
| many short runs ÷ the 10 M-row log | audit(B) / audit(A) | ≤ 1.0 |
| 1 M runs × 50 steps ÷ its read floor | audit(C) / floor(C) | ≤ 3.0 |

With ``--kernel both`` the audits run on numpy and on numba (``audit A numba``…) in the same
rotation, and the ratios are printed for each kernel: the two kernels compared within one run.

Absolute times move with the machine's load; only the ratios, read within this one process,
are compared. The machine, its load average and the command are printed with the table,
and beside each best time the median and the slowest of the repeats, and beside each ratio
the ratio of the medians: how far the machine's noise moves it (the 50 M-row floor of C
varies about 2× between repeats on a 2-core VM). Most of that noise is the VM's: a guest that
hands its free pages back to its host pays about 2 ms per MiB to touch them again, on
whichever job allocates first; ``--prefault GIB`` touches that much memory before each job,
outside its time (:func:`prefault`), and the numbers become steady.

Beside each best time, the CPU that run used (user + system time of every thread,
``time.process_time``) and the cores it kept busy (CPU ÷ wall); under the ratios, each
target's ratio as the same CPU would give it with every core of the machine busy throughout
(CPU ÷ cores ÷ the denominator's best): where that bound is above a target, no scheduling of
the same work reaches the target on this machine — less work is the only way there.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_side_by_side as sbs  # noqa: E402

METRICS = ["emb_erank"]


def _audit(kernel: str | None) -> Callable[[str], int]:
    def run(path: str) -> int:
        import grokaudit
        from grokaudit.kernels import kernel_named

        opts = {} if kernel is None else {"kernel": kernel_named(kernel)}
        res = grokaudit.audit_path(path, by=sbs.AXIS, metrics=METRICS, max_rows=10**12,
                                   **opts)
        return len(res.studies)

    return run


def floor4(path: str) -> int:
    """The read floor of issue 44's last row: four columns read (run, step, test_acc, the
    metric), then per run the first step at the grok threshold (argmax) and the last-10 %
    median of the metric."""
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["run", "step", "test_acc", *METRICS],
                      read_dictionary=["run"], pre_buffer=False)
    starts, T = sbs._run_blocks(t)
    R = starts.size
    acc = t.column("test_acc").to_numpy().reshape(R, T)
    out = int(np.argmax(acc >= sbs.GROK_THR, axis=1).sum())
    k = max(1, int(sbs.FLOOR_FRAC * T))
    for m in METRICS:
        M = t.column(m).to_numpy().reshape(R, T)
        out += int(np.count_nonzero(np.median(M[:, T - k:], axis=1) > 0))
    return out


def prefault(n_bytes: int) -> None:
    """Touch ``n_bytes`` of fresh memory and free it. On a virtual machine whose guest hands
    its free pages back to the host (virtio-balloon free page reporting, as on the development
    VM), memory the guest has not touched for a few seconds costs about 2 ms per MiB the next
    time a process touches it (2 GiB: 4.2 s, then 0.34 s at once, and 3.3–5.4 s again after
    5–20 s): a cost of that VM, not of the code, that lands on whichever job allocates first.
    Touching the memory a job will need just before it makes the job pay only the guest's own
    page faults, as on a machine without it."""
    if n_bytes > 0:
        import numpy as np

        a = np.empty(n_bytes // 8)
        a.fill(1.0)
        del a


def measure(jobs: dict[str, tuple[Callable[[str], int], str]], repeat: int,
            prefault_bytes: int = 0, cpu: dict[str, list[float]] | None = None
            ) -> dict[str, list[float]]:
    """Every one of ``repeat`` times of each job, the order rotating at each round (each job
    follows each other one: what ran before leaves the allocator and caches to the next);
    ``prefault_bytes`` touched before each job (:func:`prefault`), outside its time. ``cpu``,
    when given, receives each run's CPU time (user + system, every thread of the process:
    ``time.process_time``), in the same order as its wall times."""
    times: dict[str, list[float]] = {k: [] for k in jobs}
    order = list(jobs)
    for i in range(repeat):
        for name in order[i % len(order):] + order[:i % len(order)]:
            fn, path = jobs[name]
            gc.collect()
            prefault(prefault_bytes)
            c0 = time.process_time()
            t0 = time.perf_counter()
            fn(path)
            times[name].append(time.perf_counter() - t0)
            if cpu is not None:
                cpu.setdefault(name, []).append(time.process_time() - c0)
            print(f"  {name}: {times[name][-1]:.2f} s", file=sys.stderr)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big-runs", type=int, default=1_000_000,
                    help="runs of the 50-step log C (default 1 000 000)")
    ap.add_argument("--kernel", default=None,
                    help="passed to audit_path (the `fast` extra); `both`: numpy and numba "
                         "side by side")
    ap.add_argument("--dir", default=os.environ.get("BENCH_DIR", "/tmp/grokaudit-bench"))
    ap.add_argument("--prefault", type=float, default=0.0, metavar="GIB",
                    help="touch GIB of fresh memory before each job (outside its time): on a "
                         "VM that hands free pages back to its host, so that no job pays the "
                         "host's first touch (see prefault())")
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    A = str(sbs.write_log(d / "r2000_t5000.parquet", 2000, 5000, 1))
    B = str(sbs.write_log(d / "r200000_t3.parquet", 200_000, 3, 1))
    C = str(sbs.write_log(d / f"r{a.big_runs}_t50.parquet", a.big_runs, 50, 1))
    # (suffix of the audits' names, kernel): one, or numpy and numba side by side
    kinds = [("", "numpy"), (" numba", "numba")] if a.kernel == "both" else [("", a.kernel)]
    jobs: dict[str, tuple[Callable[[str], int], str]] = {
        "floor A": (lambda p: sbs.floor(p, METRICS), A),
        "v1.5 A": (lambda p: sbs.v15(p, METRICS), A), "floor C": (floor4, C)}
    for suffix, kernel in kinds:
        audit = _audit(kernel)
        jobs.update({f"audit A{suffix}": (audit, A), f"audit B{suffix}": (audit, B),
                     f"audit C{suffix}": (audit, C)})
    cpu: dict[str, list[float]] = {}
    times = measure(jobs, a.repeat, int(a.prefault * 2**30), cpu)
    best = {k: min(v) for k, v in times.items()}
    # the CPU of each job's fastest run (the run its best time is)
    best_cpu = {k: cpu[k][v.index(best[k])] for k, v in times.items()}
    from grokaudit.blocks import usable_cpus

    cores = usable_cpus()  # the CPUs this process may use, as the audit's pool counts them
    median = {k: statistics.median(v) for k, v in times.items()}
    print(f"# {sbs._machine()}; kernel {a.kernel or 'default'}; best of {a.repeat}, "
          "alternated in one process"
          + (f"; {a.prefault:g} GiB touched before each job" if a.prefault else ""))
    print(f"# python benchmarks/bench_targets.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| measurement | best s | median s | slowest s | CPU s of the best | cores busy |")
    print("|---|---|---|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {best[k]:.2f} | {median[k]:.2f} | {max(v):.2f} | {best_cpu[k]:.2f} | "
              f"{best_cpu[k] / best[k]:.2f} |")
    print()
    pairs = []
    for suffix, kernel in kinds:
        on = f", {kernel}" if suffix else ""
        pairs += [(f"audit ÷ the v1.5 rules (A: 2 000 × 5 000{on})", f"audit A{suffix}",
                   "v1.5 A", "≤ 0.5 with `fast`" if kernel == "numba" else "≤ 1.0"),
                  (f"audit ÷ the read+scan floor (A{on})", f"audit A{suffix}", "floor A",
                   "≤ 2 with `fast`"),
                  (f"200 000 runs × 3 steps ÷ the 10 M-row log{on}", f"audit B{suffix}",
                   f"audit A{suffix}", "≤ 1.0"),
                  (f"{a.big_runs:,} runs × 50 steps ÷ its read floor{on}", f"audit C{suffix}",
                   "floor C", "≤ 3.0")]
    if len(kinds) == 2:
        pairs += [(f"numba ÷ numpy, audit {x}", f"audit {x} numba", f"audit {x}", "—")
                  for x in "ABC"]
    # the targets read the best times; the medians' ratio shows how far the noise moves it
    print("| ratio | measured (best ÷ best) | medians' ratio | target |")
    print("|---|---|---|---|")
    for name, num, den, target in pairs:
        print(f"| {name} | {best[num] / best[den]:.2f} | {median[num] / median[den]:.2f} | "
              f"{target} |")
    # the lowest ratio the same CPU allows on this machine: every core busy the whole time
    print()
    print(f"Bounds from CPU ({cores} cores): a job's CPU ÷ {cores} is the least wall time it "
          "could take here with every core busy throughout.")
    print()
    print("| ratio | its CPU ÷ cores ÷ the denominator's best | target |")
    print("|---|---|---|")
    for name, num, den, target in pairs:
        if target != "—":
            print(f"| {name} | {best_cpu[num] / cores / best[den]:.2f} | {target} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
