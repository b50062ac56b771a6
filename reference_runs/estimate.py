"""How long a sweep will train on this device, estimated before it starts.

Each batch group of the sweep is probed: up to :data:`PROBE_RUNS` of its runs are built on the
device and timed for a few optimizer steps and one evaluation (after one warm-up step); the
group's time is then ``steps × t_step + log points × t_eval``, scaled by its number of runs
over the probed ones. A clamped group adds its free control runs (at most ``steps`` each: they
stop at their grok). The estimate is what ``grokaudit reproduce`` prints before it trains and
compares with ``--budget-hours``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from .sweep import expand, groups, load_sweep
from .train import GroupTrainer, log_steps, resolve_device

#: Runs of a group built for the probe (the batched cost grows about linearly with runs).
PROBE_RUNS = 2
#: Optimizer steps timed per group (after one warm-up step).
PROBE_STEPS = 3


@dataclass(frozen=True)
class SweepEstimate:
    """A sweep's estimated training time on ``device``."""

    config: str
    device: str
    runs: int
    groups: int
    run_steps: int
    seconds: float
    probe_seconds: float

    def to_dict(self) -> dict[str, object]:
        return {"config": self.config, "device": self.device, "runs": self.runs,
                "groups": self.groups, "run_steps": self.run_steps,
                "seconds": round(self.seconds, 1), "probe_seconds": round(self.probe_seconds, 1)}


def estimate_sweep(config_file: str | Path, device: str = "auto", threads: int | None = None,
                   probe_steps: int = PROBE_STEPS) -> SweepEstimate:
    """Probe every group of the sweep in ``config_file`` on ``device`` (see the module)."""
    if threads is not None:
        torch.set_num_threads(threads)
    dev = resolve_device(device)
    specs = expand(load_sweep(config_file))
    t0 = time.monotonic()
    total = 0.0
    run_steps = 0
    grouped = groups(specs)
    for g in grouped:
        cfg0 = g[0].cfg
        probe = [replace(s.cfg, rho=None, w_c=None) for s in g[:PROBE_RUNS]]
        tr = GroupTrainer(probe, dev)
        tr.train_step()  # warm-up: first-call allocations and kernel selection
        _sync(dev)
        t1 = time.monotonic()
        for _ in range(probe_steps):
            tr.train_step()
        _sync(dev)
        t_step = (time.monotonic() - t1) / probe_steps
        t2 = time.monotonic()
        tr.evaluate()
        _sync(dev)
        t_eval = time.monotonic() - t2
        scale = len(g) / len(probe)
        n_log = len(log_steps(cfg0))
        seconds = scale * (cfg0.steps * t_step + n_log * t_eval)
        if any(s.cfg.rho is not None and s.cfg.w_c is None for s in g):
            seeds = {s.cfg.seed for s in g}
            seconds += len(seeds) / len(probe) * cfg0.steps * t_step
        total += seconds
        run_steps += len(g) * cfg0.steps
        del tr
    return SweepEstimate(str(config_file), str(dev), len(specs), len(grouped), run_steps,
                         total, time.monotonic() - t0)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
