"""Sweeps: a TOML file holding a base config and a grid, expanded into runs, grouped into
batches, optionally sharded, trained with checkpoints, and written as one canonical table.

A sweep file::

    name = "mlp_wd"                 # run ids are "<name>/<key>=<value>,..."
    [base]                          # any TrainConfig field
    task = "add"
    p = 59
    [grid]                          # every combination of these lists is one run
    wd = [1.0, 3.0]
    seed = [0, 1, 2]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.progress import Progress

from .checkpoint import load_checkpoint, refuse_foreign, restore, save_checkpoint
from .config import FIELD_NAMES, TrainConfig, check_memory, from_dict, group_key
from .train import GroupTrainer, measure_wc, resolve_device

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Condition columns written for every run, whether or not they vary (TRAINER_SPEC).
ALWAYS_CONDITIONS = ("seed", "arch", "task", "p")
#: The most runs one sweep's grid may expand to (the product of its lists' lengths): checked
#: before anything is expanded. Larger studies are several sweep files (or fixed keys).
MAX_RUNS = 100_000


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep: its name, base mapping, grid (key → list of values, in file order)."""

    name: str
    base: dict[str, Any]
    grid: dict[str, list[Any]]

    def with_overrides(self, overrides: dict[str, Any]) -> Sweep:
        """A flag fixes a key: it replaces the base value and removes the key from the grid."""
        base = {**self.base, **overrides}
        grid = {k: v for k, v in self.grid.items() if k not in overrides}
        return Sweep(self.name, base, grid)


@dataclass(frozen=True)
class RunSpec:
    """One run: its id, its config, and its condition columns."""

    run_id: str
    cfg: TrainConfig
    conditions: dict[str, Any]


def load_sweep(path: str | Path) -> Sweep:
    """Parse a sweep TOML; raises :class:`ConfigError` naming the file and key."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file", code=ErrorCode.CONFIG_NOT_FOUND) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})", code=ErrorCode.CONFIG_SYNTAX) from None
    extra = sorted(set(data) - {"name", "base", "grid", "description"})
    if extra:
        raise ConfigError(f"{p}: unknown top-level key(s) {extra}; a sweep has name, "
                          "description, [base] and [grid]", code=ErrorCode.UNKNOWN_OPTION)
    base = data.get("base", {})
    grid = data.get("grid", {})
    if not isinstance(base, dict) or not isinstance(grid, dict):
        raise ConfigError(f"{p}: [base] and [grid] must be tables", code=ErrorCode.CONFIG_SYNTAX)
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{p}: grid key {k!r} needs a non-empty list of values", code=ErrorCode.INVALID_OPTION)
    for k in list(base) + list(grid):
        if k not in FIELD_NAMES:
            raise ConfigError(f"{p}: unknown key {k!r}; known keys: {', '.join(FIELD_NAMES)}", code=ErrorCode.UNKNOWN_OPTION)
    return Sweep(str(data.get("name", p.stem)), dict(base), dict(grid))


def _fmt(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v).lower() if isinstance(v, bool) else str(v)


def expand(sweep: Sweep) -> list[RunSpec]:
    """Every grid combination as a run, in file order (seed fastest when it is listed last).

    Refused (:class:`ConfigError`) before anything is expanded: a grid of more than
    :data:`MAX_RUNS` runs (``OPTION_OUT_OF_RANGE``). After: two runs of one config (``seed =
    [0, 0.0]``: values equal as numbers are one value) are ``INVALID_OPTION``.
    """
    keys = list(sweep.grid)
    _check_grid_size(sweep)
    specs = []
    for combo in itertools.product(*(sweep.grid[k] for k in keys)):
        over = dict(zip(keys, combo))
        cfg = from_dict({**sweep.base, **over}, where=f"sweep {sweep.name!r} run {over}")
        run_id = sweep.name + ("/" + ",".join(f"{k}={_fmt(v)}" for k, v in over.items())
                               if over else "")
        cond: dict[str, Any] = {k: getattr(cfg, k) for k in ALWAYS_CONDITIONS}
        for k in keys:
            val = getattr(cfg, k)
            cond[k] = float("nan") if val is None else val
        specs.append(RunSpec(run_id, cfg, cond))
    _check_distinct(sweep, specs)
    return specs


def _check_grid_size(sweep: Sweep) -> None:
    """Refuse a grid of more than :data:`MAX_RUNS` combinations from the lists' lengths alone:
    expanding 30⁵ runs took minutes and gigabytes before any check ran."""
    n = math.prod(len(v) for v in sweep.grid.values())
    if n > MAX_RUNS:
        sizes = " × ".join(f"{len(v)} {k}" for k, v in sweep.grid.items())
        raise ConfigError(f"sweep {sweep.name!r}: the grid has {n} combinations ({sizes}), "
                          f"more than the {MAX_RUNS} runs one sweep may hold; split it into "
                          "several sweep files, or fix some keys in [base]",
                          code=ErrorCode.OPTION_OUT_OF_RANGE)


def _check_distinct(sweep: Sweep, specs: list[RunSpec]) -> None:
    """Two runs with one config train the same thing twice: a repeated grid value, also when
    written differently (``0`` and ``0.0``, ``1`` and ``1.0`` are one number; a bool is not
    a number and is refused by the field's type)."""
    ids = [s.run_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"sweep {sweep.name!r}: the grid repeats a combination; "
                          "remove the duplicate values", code=ErrorCode.INVALID_OPTION)
    first: dict[TrainConfig, str] = {}
    for s in specs:
        other = first.setdefault(s.cfg, s.run_id)
        if other != s.run_id:
            raise ConfigError(f"sweep {sweep.name!r}: the grid repeats a combination (runs "
                              f"{other!r} and {s.run_id!r} have one config); remove the "
                              "duplicate values", code=ErrorCode.INVALID_OPTION)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` (0 ≤ i < n) → ``(i, n)``; raises :class:`ConfigError`."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {text!r}: expected i/n, e.g. 0/4", code=ErrorCode.INVALID_OPTION) from None
    if not 0 <= i < n:
        raise ConfigError(f"--shard {text!r}: needs 0 ≤ i < n", code=ErrorCode.OPTION_OUT_OF_RANGE)
    return i, n


def shard(specs: list[RunSpec], i: int, n: int) -> list[RunSpec]:
    """Shard i of n: a contiguous slice, so that batchable runs stay together."""
    lo, hi = len(specs) * i // n, len(specs) * (i + 1) // n
    return specs[lo:hi]


def groups(specs: list[RunSpec]) -> list[list[RunSpec]]:
    """Runs that share a group key, in first-appearance order: each trains as one batch."""
    out: dict[tuple[Any, ...], list[RunSpec]] = {}
    for s in specs:
        out.setdefault(group_key(s.cfg), []).append(s)
    return list(out.values())


def sweep_id(specs: list[RunSpec]) -> str:
    """A hash of every run's id and config: a checkpoint resumes only the same sweep."""
    blob = json.dumps([[s.run_id, s.cfg.to_dict()] for s in specs], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def resolve_wc(specs: list[RunSpec], device: torch.device,
               say: Callable[[str], None] = lambda s: None) -> list[RunSpec]:
    """Fill ``w_c`` of clamped runs that lack it from free control runs (one per seed of the
    cell's other settings), as seed 000/002 do. The control is the free run without the
    interventions applied on top of the clamp (no clamp, no output temperature: ``tau = 1``),
    so that every ``tau`` of a cell clamps to the same reference norm."""
    cache: dict[tuple[Any, ...], float] = {}
    out = []
    need = [s for s in specs if s.cfg.rho is not None and s.cfg.w_c is None]
    for s in specs:
        if s.cfg.rho is None or s.cfg.w_c is not None:
            out.append(s)
            continue
        key = _control_key(s.cfg)
        if key not in cache:
            seeds = sorted({x.cfg.seed for x in need if _control_key(x.cfg) == key})
            ctrl = [replace(s.cfg, seed=sd, tau=1.0) for sd in seeds]
            try:
                cache[key] = measure_wc(ctrl, device)
            except ValueError as exc:
                raise ConfigError(f"run {s.run_id}: {exc}", code=ErrorCode.INVALID_OPTION) from None
            say(f"w_c measured from {len(seeds)} free control run(s): {cache[key]:.4g}")
        out.append(RunSpec(s.run_id, replace(s.cfg, w_c=cache[key]), s.conditions))
    return out


def _control_key(cfg: TrainConfig) -> tuple[Any, ...]:
    """The settings a clamped run's free control shares with it: all but the seed, the clamp
    and the output temperature."""
    return group_key(replace(cfg, seed=0, rho=None, t_int=0, tau=1.0))


def available_memory(dev: torch.device) -> int | None:
    """The memory a group may use on ``dev``, in bytes: a CUDA device's total memory; on the
    CPU, this machine's RAM and free swap, or the cgroup's limit when lower. None: unknown."""
    if dev.type == "cuda":
        return int(torch.cuda.get_device_properties(dev).total_memory)
    if dev.type != "cpu":
        return None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None
    total += _meminfo_bytes("SwapFree")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    return int(total)


def _meminfo_bytes(key: str) -> int:
    """A ``/proc/meminfo`` entry in bytes (0 when there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name == key:
                return int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def check_fits(specs: list[RunSpec], device: str) -> None:
    """Refuse, before anything is allocated, a sweep with a group that cannot fit the memory
    of the device it trains on (:func:`~.config.check_memory`, ``OUT_OF_MEMORY``)."""
    dev = resolve_device(device)
    available = available_memory(dev)
    for gi, group in enumerate(groups(specs)):
        check_memory(group[0].cfg, len(group), available, str(dev),
                     f"group {gi + 1} (run {group[0].run_id})")


def rows_to_frame(specs: list[RunSpec], rows: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Log rows of one group (each a dict of per-run arrays) → canonical long table."""
    cols = [k for k in rows[0] if k != "step"]
    R, T = len(specs), len(rows)
    frame: dict[str, Any] = {
        "run": np.repeat([s.run_id for s in specs], T),
        "step": np.tile(np.array([int(r["step"][0]) for r in rows], dtype=np.int64), R),
    }
    for c in cols:
        frame[c] = np.stack([r[c] for r in rows], axis=1).reshape(-1).astype(np.float64)
    for k in specs[0].conditions:
        frame[k] = np.repeat([s.conditions[k] for s in specs], T)
    out: pd.DataFrame = pd.DataFrame(frame)
    return out


@dataclass
class SweepResult:
    """The outcome of :func:`run_sweep`: the table, whether every run finished, per-run summary."""

    table: pd.DataFrame
    complete: bool
    summary: list[tuple[str, dict[str, Any]]]
    wall_seconds: float


def run_sweep(specs: list[RunSpec], *, device: str = "auto", checkpoint: Path | None = None,
              resume: bool = False, checkpoint_minutes: float = 5.0,
              max_minutes: float | None = None, progress: str = "auto") -> SweepResult:
    """Train every run (batched by group), checkpointing to ``checkpoint`` every
    ``checkpoint_minutes`` of wall time, and stop cleanly after ``max_minutes``.

    With ``resume``, continues from ``checkpoint`` when it exists; the final table is identical
    to an uninterrupted sweep's. Returns the table of every logged row so far. A file at
    ``checkpoint`` that is not a checkpoint is never replaced (``OUTPUT_NOT_WRITABLE``).
    """
    t0 = time.monotonic()
    dev = resolve_device(device)
    sid = sweep_id(specs)
    grouped = groups(specs)
    done: dict[int, list[dict[str, Any]]] = {}
    current = None
    if resume and checkpoint is not None and checkpoint.exists():
        done, current = load_checkpoint(checkpoint, sid)
    elif checkpoint is not None:  # never written over, nor removed, unless it is a checkpoint
        refuse_foreign(checkpoint)
    total = sum(len(g) * g[0].cfg.steps for g in grouped)
    bar = Progress(total, progress)
    bar.done = sum(len(grouped[gi]) * grouped[gi][0].cfg.steps for gi in done)
    if current is not None:
        bar.done += len(grouped[current[0]]) * current[1].step
    if resume and (done or current):
        bar.message(f"resumed from {checkpoint}: {len(done)} group(s) done"
                    + (f", group {current[0]} at step {current[1].step}" if current else ""))
    last_ckpt = time.monotonic()
    deadline = None if max_minutes is None else t0 + 60.0 * max_minutes
    complete = True
    summary: list[tuple[str, dict[str, Any]]] = []
    frames = []
    for gi, group in enumerate(grouped):
        if gi in done:
            frames.append(rows_to_frame(group, done[gi]))
            continue
        group = resolve_wc(group, dev, bar.message)
        tr = GroupTrainer([s.cfg for s in group], dev)
        if current is not None and current[0] == gi:
            assert checkpoint is not None  # current comes from it
            restore(tr, current[1], checkpoint)
        R = len(group)
        label = f"group {gi + 1}/{len(grouped)} ({R} runs)"

        def save() -> None:
            nonlocal last_ckpt
            if checkpoint is not None:
                save_checkpoint(checkpoint, sid, done, (gi, tr.state()))  # noqa: B023
            last_ckpt = time.monotonic()

        finished = tr.run(
            should_stop=lambda: deadline is not None and time.monotonic() >= deadline,
            on_steps=lambda n: bar.advance(n * R, label),  # noqa: B023
            on_checkpoint=save,
            # reads the latest last_ckpt on purpose (save() updates it)
            checkpoint_due=lambda: time.monotonic() - last_ckpt >= 60.0 * checkpoint_minutes)  # noqa: B023
        if tr.rows:
            frames.append(rows_to_frame(group, tr.rows))
        if not finished:
            save()
            complete = False
            bar.message(f"stopped at --max-minutes: group {gi + 1} at step {tr.step}; "
                        f"continue with --resume")
            break
        done[gi] = tr.rows
        if checkpoint is not None:
            save_checkpoint(checkpoint, sid, done, None)
            last_ckpt = time.monotonic()
        for s, summ in zip(group, tr.summary()):
            summary.append((s.run_id, summ))
            g = summ["grok_step"]
            bar.message(f"run {s.run_id}: grokked at step {g if g is not None else 'never'}, "
                        f"final train_acc {summ['train_acc']:.3f}, test_acc {summ['test_acc']:.3f}")
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return SweepResult(table, complete, summary, time.monotonic() - t0)
