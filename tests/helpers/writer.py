"""A training process for the RunLogger tests: ``python writer.py FOLDER RUN WD SEED MODE``.

It imports grokaudit only (no torch), logs a grokking-shaped trajectory and reports on stdout
what it has flushed, so that the parent knows which rows must survive a SIGKILL:

* ``complete`` — every step, then a clean close;
* ``killed`` — steps up to CUT, ``flush()``, ``FLUSHED <rows> <last step>``, then more rows that
  are never flushed, ``LOGGED_MORE``, and it waits to be killed;
* ``storm`` — a flush after every row (``flush_every=1``), ``F <step>`` after each, forever.
"""

from __future__ import annotations

import math
import sys
import time

from grokaudit.logger import RunLogger

STEPS = range(0, 12001, 50)
CUT = 6000


def values(step: int, wd: float, seed: int) -> dict[str, float]:
    t_grok = 6000.0 / wd + 300.0 * seed
    out = {"test_acc": 1.0 / (1.0 + math.exp(-(step - t_grok) / 250.0)),
           "train_acc": 1.0 / (1.0 + math.exp(-(step - 400.0) / 80.0))}
    if step % 100 == 0:  # the metric at half the cadence: NaN in between
        out["emb_erank"] = 6.0 + 20.0 / (1.0 + math.exp((step - t_grok - 1500.0) / 300.0))
    return out


def main() -> None:
    folder, run, wd_s, seed_s, mode = sys.argv[1:6]
    wd, seed = float(wd_s), int(seed_s)
    cond = {"wd": wd, "seed": seed}
    if mode == "complete":
        with RunLogger(folder, run=run, conditions=cond, flush_every=16) as log:
            for step in STEPS:
                log.log(step, **values(step, wd, seed))
    elif mode == "killed":
        log = RunLogger(folder, run=run, conditions=cond, flush_every=25, flush_secs=3600)
        for step in STEPS:
            if step > CUT:
                break
            log.log(step, **values(step, wd, seed))
        log.flush()
        print("FLUSHED", log.rows_flushed, CUT, flush=True)
        log.flush_every = 10**9
        for step in STEPS:
            if step > CUT:
                log.log(step, **values(step, wd, seed))
        print("LOGGED_MORE", log.rows_logged, flush=True)
        time.sleep(600)
    elif mode == "storm":
        log = RunLogger(folder, run=run, conditions=cond, flush_every=1, segment_flushes=8)
        step = 0
        while True:
            log.log(step, **values(step % 12000, wd, seed))
            print("F", step, flush=True)
            step += 50
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
