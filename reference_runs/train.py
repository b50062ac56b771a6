"""Training one group of runs as one batched model, with logging and resumable state.

A *group* is a list of runs whose configs share a :func:`~.config.group_key`: the same task,
shapes, schedule and logging cadence. Their per-run hyperparameters (seed, lr, wd, ρ, w_c,
t_int, τ, betas) become tensors ``[R]``. The loop is straight-line: forward on each run's train
examples, sum of per-run mean losses (so each run receives exactly its own gradient), AdamW step,
norm clamp, and at log points a no-grad evaluation on every example.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from .config import TrainConfig, group_key
from .cv_adamw import ZScoreDecay
from .metrics import (
    accuracy_and_loss,
    attention_metrics,
    logit_scale,
    per_example_loss,
    softmax_collapse,
    spectral_metrics,
)
from .models import BatchedModel, build_model
from .optim import BatchedAdamW, clamp_norm, weight_norm_sq
from .tasks import Dataset, build_dataset

#: Seeds the minibatch sampler's stream (only used with batch_size > 0).
BATCH_STREAM = 0xB47C
#: On a CPU, a training step processes runs in chunks of about this many activation elements
#: (runs × examples × width): 2²¹ float32 = 8 MB, about a cache's worth. 0 = one chunk.
CHUNK_ELEMS = 2 ** 21


def log_steps(cfg: TrainConfig) -> list[int]:
    """Logged steps (step s = the state after s optimizer steps): 0, the last step, every
    multiple of ``log_every`` (when > 0), and

    - ``log_grid = "linear"``: a geometric grid of ``early_points`` steps in [1, log_every);
    - ``log_grid = "geometric"``: ``log_points`` steps log-spaced on [1, steps], rounded
      (the critical-norm runner's grid: 360 points)."""
    every = int(cfg.log_every or 0)
    steps = {0, cfg.steps}
    if every > 0:
        steps |= set(range(every, cfg.steps + 1, every))
    if cfg.log_grid == "geometric":
        pts = np.round(np.geomspace(1, cfg.steps, int(cfg.log_points or 2)))
        steps |= {int(s) for s in pts if 0 < s <= cfg.steps}
    else:
        early = np.unique(np.round(np.geomspace(1, every, int(cfg.early_points or 0) + 1)[:-1]))
        steps |= {int(s) for s in early if 0 < s < min(every, cfg.steps)}
    return sorted(steps)


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available, else CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class GroupState:
    """Everything needed to continue a group exactly: step, parameters, optimizer moments,
    the minibatch RNG, and the log rows so far (one dict of per-run numpy arrays per point)."""

    step: int
    model: dict[str, torch.Tensor]
    optim: dict[str, object]
    rng: torch.Tensor | None
    rows: list[dict[str, np.ndarray]] = field(default_factory=list)
    ctrl: dict[str, torch.Tensor] | None = None  # the cv-adamw controller, when used


class GroupTrainer:
    """Trains the runs of one group together. Create, optionally :meth:`load`, then :meth:`run`."""

    def __init__(self, cfgs: list[TrainConfig], device: torch.device,
                 chunk_elems: int = CHUNK_ELEMS) -> None:
        if not cfgs or any(group_key(c) != group_key(cfgs[0]) for c in cfgs):
            raise ValueError("a group's runs must share every non-batchable config field "
                             "(see config.group_key); split them with sweep.groups")
        self.cfgs = cfgs
        self.cfg = c0 = cfgs[0]
        self.device = device
        self.data: Dataset = build_dataset(cfgs, device)
        self.model: BatchedModel = build_model(c0, [c.seed for c in cfgs], self.data.n_classes,
                                               device)
        dt = next(self.model.parameters()).dtype

        def vec(name: str) -> torch.Tensor:
            return torch.tensor([float(getattr(c, name)) for c in cfgs], dtype=dt, device=device)

        self.tau = vec("tau")
        self.opt = BatchedAdamW(self.model, vec("lr"), vec("wd"), vec("beta1"), vec("beta2"),
                                vec("eps"))
        # cv-adamw (seed 004 §4): each run's weight decay is raised, step by step, when the
        # velocity of its attention specific heat jumps (z-score), once it has memorized
        self.ctrl: ZScoreDecay | None = None
        if c0.optimizer == "cv-adamw":
            self.ctrl = ZScoreDecay(vec("wd").detach().cpu().double(), beta_z=c0.cv_beta_z,
                                    z_thresh=c0.cv_z_thresh, mem_threshold=c0.cv_mem_threshold,
                                    cold_start=True, shape=(len(cfgs),))
        rho = [c.rho for c in cfgs]
        if any(r is not None for r in rho) and any(
                c.w_c is None for c in cfgs if c.rho is not None):
            raise ValueError("w_c must be resolved (see sweep.resolve_wc) before training")
        self.clamped = [c.rho is not None for c in cfgs]
        self.target = torch.tensor([(c.rho or 0.0) * (c.w_c or 0.0) for c in cfgs],
                                   dtype=torch.float64, device=device)
        self.t_int = [c.t_int for c in cfgs]
        self._active_key: tuple[bool, ...] | None = None
        self._active = torch.zeros(len(cfgs), dtype=torch.bool, device=device)
        # Minibatches (batch_size > 0) come from one CPU generator per run, seeded by that run's
        # seed alone, so a run draws the same batches alone or in a batch.
        self.gens: list[torch.Generator] | None = None
        if cast(int, c0.batch_size) > 0:  # set by TrainConfig.__post_init__ (from the recipe)
            self.gens = [torch.Generator().manual_seed(
                int(np.random.default_rng([c.seed, BATCH_STREAM]).integers(2 ** 62)))
                for c in cfgs]
        self.chunk_elems = chunk_elems
        self._chunks = self._run_chunks()
        self.log_at = log_steps(c0)
        self.step = 0
        self.rows: list[dict[str, np.ndarray]] = []
        R, N = len(cfgs), self.data.train_mask.shape[1]
        self.all_idx = torch.arange(N, device=device).expand(R, N)

    # ---- state ------------------------------------------------------------------------------
    def state(self) -> GroupState:
        return GroupState(
            step=self.step,
            model={k: v.detach().clone() for k, v in self.model.state_dict().items()},
            optim={"t": self.opt.t, "m": {k: v.clone() for k, v in self.opt.m.items()},
                   "v": {k: v.clone() for k, v in self.opt.v.items()}},
            rng=None if self.gens is None else torch.stack([g.get_state() for g in self.gens]),
            rows=list(self.rows),
            ctrl=None if self.ctrl is None else self.ctrl.state_dict())

    def load(self, st: GroupState) -> None:
        self.step = st.step
        self.model.load_state_dict(st.model)
        self.opt.load_state_dict(st.optim)
        if self.gens is not None and st.rng is not None:
            for g, state in zip(self.gens, st.rng):
                g.set_state(state.clone())
        self.rows = list(st.rows)
        if self.ctrl is not None and st.ctrl is not None:
            self.ctrl.load_state_dict(st.ctrl)
            self.opt.wd = self.ctrl.wd.to(self.opt.wd.dtype).to(self.device)

    # ---- one optimizer step -----------------------------------------------------------------
    def _train_idx(self) -> torch.Tensor:
        idx = self.data.train_idx
        if self.gens is None or self.cfg.batch_size >= idx.shape[1]:
            return idx
        n, bs = idx.shape[1], self.cfg.batch_size
        pick = torch.stack([torch.randperm(n, generator=g)[:bs] for g in self.gens])
        return idx.gather(1, pick.to(self.device))

    def _run_chunks(self) -> list[slice]:
        """Slices of the run axis for one training step. On a CPU a large batch is processed a
        few runs at a time: activations of ``R × n × H`` elements outgrow the caches and, past
        glibc's mmap threshold, are returned to the OS and page-faulted back every step (30%+
        of the step in the prototype). Runs are independent, so chunking changes no result."""
        R = len(self.cfgs)
        if self.device.type != "cpu" or self.chunk_elems <= 0:
            return [slice(0, R)]
        c = self.cfg
        # the recipe's fields are set by TrainConfig.__post_init__ (None only before it)
        width = (cast(int, c.hidden) if c.arch == "mlp"
                 else 3 * cast(int, c.mlp_ratio) * cast(int, c.d_model))
        n = min(self.data.n_train, c.batch_size or self.data.n_train)
        per_run = n * max(width, self.data.n_classes)
        k = max(1, min(R, self.chunk_elems // max(per_run, 1)))
        return [slice(lo, min(lo + k, R)) for lo in range(0, R, k)]

    def train_step(self) -> None:
        idx = self._train_idx()
        self.opt.zero_grad()
        cv_parts, acc_parts = [], []
        for runs in self._chunks:
            sub = idx[runs]
            fwd = self.model.forward_idx(self.data, sub, runs=runs,
                                         internals=self.ctrl is not None)
            logits = fwd.logits / self.tau[runs, None, None]
            y = self.data.y[runs].gather(-1, sub) if self.data.per_run_inputs \
                else self.data.y[sub]
            per = per_example_loss(logits, y, self.cfg.loss, self.data.n_classes)
            # Sum over runs of each run's mean loss: run r's gradient is its own, unscaled.
            per.mean(dim=1).sum().backward()
            if self.ctrl is not None:
                assert fwd.attn_probs is not None and fwd.attn_scores is not None
                with torch.no_grad():
                    cv_parts.append(attention_metrics(fwd.attn_probs, fwd.attn_scores)["attn_cv"])
                    acc_parts.append((logits.argmax(-1) == y).double().mean(dim=1))
        if self.ctrl is not None:
            # the controller sees this step's training batch (one host copy per step)
            wd = self.ctrl.update(torch.cat(cv_parts).cpu(), torch.cat(acc_parts).cpu())
            self.opt.wd = wd.to(self.opt.wd.dtype).to(self.device)
        self.opt.step()
        self.step += 1
        key = tuple(c and self.step >= t for c, t in zip(self.clamped, self.t_int))
        if key != self._active_key:  # rebuilt only when it changes: no host sync per step
            self._active_key = key
            self._active = torch.tensor(key, dtype=torch.bool, device=self.device)
        if any(key):
            clamp_norm(self.model, self.target, self._active)

    # ---- logging ----------------------------------------------------------------------------
    @torch.no_grad()  # type: ignore[untyped-decorator]  # untyped torch
    def evaluate(self) -> dict[str, np.ndarray]:
        """One log row per run: every quantity of ``docs/metrics.md`` at the current step."""
        internals = self.cfg.arch == "transformer"
        fwd = self.model.forward_idx(self.data, self.all_idx, internals=internals)
        logits = fwd.logits / self.tau[:, None, None]
        y = self.data.y if self.data.per_run_inputs else self.data.y.expand(self.all_idx.shape)
        mask = self.data.train_mask
        tr_acc, tr_loss = accuracy_and_loss(logits, y, mask, self.cfg.loss, self.data.n_classes)
        te_acc, te_loss = accuracy_and_loss(logits, y, ~mask, self.cfg.loss, self.data.n_classes)
        out: dict[str, torch.Tensor] = {
            "train_acc": tr_acc, "test_acc": te_acc, "train_loss": tr_loss, "test_loss": te_loss,
            "weight_norm": weight_norm_sq(self.model).double().sqrt(),
        }
        for name in self.model.matrices:
            out[f"norm_{name}"] = getattr(self.model, name).double().flatten(1).norm(dim=1)
        for prefix, mat in (("emb", self.model.emb_matrix()), ("unemb", self.model.unemb_matrix())):
            for k, v in spectral_metrics(mat).items():
                out[f"{prefix}_{k}"] = v
        if self.ctrl is not None:
            out["cv_wd"] = self.opt.wd.double()  # the weight decay cv-adamw applied last
        out["logit_scale"] = logit_scale(logits)
        out["softmax_collapse"] = softmax_collapse(logits)
        if internals:
            assert fwd.attn_probs is not None and fwd.attn_scores is not None
            out.update(attention_metrics(fwd.attn_probs, fwd.attn_scores))
        # One device→host copy per log point (no per-step synchronisation on CUDA).
        stacked = torch.stack([v.double() for v in out.values()]).cpu().numpy()
        row = {k: stacked[i] for i, k in enumerate(out)}
        row["step"] = np.full(len(self.cfgs), self.step, dtype=np.int64)
        return row

    # ---- the loop ---------------------------------------------------------------------------
    def run(self, should_stop: Callable[[], bool] = lambda: False,
            on_steps: Callable[[int], None] = lambda n: None,
            on_checkpoint: Callable[[], None] | None = None,
            checkpoint_due: Callable[[], bool] = lambda: False) -> bool:
        """Train to ``cfg.steps``; returns True when finished, False when ``should_stop`` fired
        (the state is then consistent and can be saved and resumed)."""
        pending = [s for s in self.log_at if s >= self.step]
        if pending and pending[0] == self.step and not any(
                int(r["step"][0]) == self.step for r in self.rows):
            self.rows.append(self.evaluate())
        chunk = 0
        while self.step < self.cfg.steps:
            if should_stop():
                on_steps(chunk)
                return False
            self.train_step()
            chunk += 1
            if self.step in self._log_set:
                self.rows.append(self.evaluate())
                on_steps(chunk)
                chunk = 0
                if on_checkpoint is not None and checkpoint_due():
                    on_checkpoint()
        on_steps(chunk)
        return True

    @property
    def _log_set(self) -> set[int]:
        if not hasattr(self, "_log_set_cache"):
            self._log_set_cache = set(self.log_at)
        return self._log_set_cache

    def summary(self) -> list[dict[str, float | int | None]]:
        """Per run: first logged step with test_acc ≥ 0.9 (None if never) and final accuracies."""
        steps = np.array([int(r["step"][0]) for r in self.rows])
        te = np.stack([r["test_acc"] for r in self.rows])  # [points, R]
        tr = np.stack([r["train_acc"] for r in self.rows])
        out = []
        for r in range(len(self.cfgs)):
            hit = np.flatnonzero(te[:, r] >= 0.9)
            out.append({"grok_step": int(steps[hit[0]]) if len(hit) else None,
                        "train_acc": float(tr[-1, r]), "test_acc": float(te[-1, r])})
        return out


def measure_wc(cfgs: list[TrainConfig], device: torch.device, grok_threshold: float = 0.9
               ) -> float:
    """``w_c`` for a clamped cell: the median, over the cell's seeds, of ``‖W‖`` at the first
    logged step with ``test_acc ≥ grok_threshold`` in a free control run (same config, no
    clamp), trained until every control has grokked or ``steps`` run out. Raises ValueError
    when no control run groks."""
    from dataclasses import replace

    ctrl = [replace(c, rho=None, w_c=None, t_int=0) for c in cfgs]
    tr = GroupTrainer(ctrl, device)

    def all_grokked() -> bool:  # only the grok point is needed: stop the controls there
        seen = np.stack([r["test_acc"] for r in tr.rows]) if tr.rows else np.zeros((1, 1))
        return bool((seen >= grok_threshold).any(axis=0).all()) and len(tr.rows) > 0

    tr.run(should_stop=all_grokked)
    te = np.stack([r["test_acc"] for r in tr.rows])
    wn = np.stack([r["weight_norm"] for r in tr.rows])
    at = [wn[np.flatnonzero(te[:, r] >= grok_threshold)[0], r]
          for r in range(len(ctrl)) if (te[:, r] >= grok_threshold).any()]
    if not at:
        raise ValueError("no free control run grokked, so w_c cannot be measured; "
                         "give w_c in the config or train longer")
    return float(np.median(at))


def flops_per_step(cfg: TrainConfig, n_train: int) -> float:
    """Approximate multiply-add FLOPs (×2) of one training step of one run (forward+backward ≈
    3× forward), for the benchmark's achieved-FLOP-rate column."""
    if cfg.arch == "mlp" and cfg.task != "parity":
        # the recipe's fields are set by TrainConfig.__post_init__ (None only before it)
        p, d, h = cfg.p, cast(int, cfg.d_emb), cast(int, cfg.hidden)
        fwd = 2 * (2 * p * d * h) + 2 * n_train * h * p + (2 * n_train * h * h if cfg.depth == 2
                                                              else 0)
        return 3.0 * fwd
    if cfg.arch == "mlp":
        h = cast(int, cfg.hidden)
        return 3.0 * 2 * n_train * (cfg.parity_bits * h + h * 2)
    d = cast(int, cfg.d_model)
    m = cast(int, cfg.mlp_ratio) * d
    per_tok = 2 * (4 * d * d + 2 * d * m) * cast(int, cfg.n_layers)
    return 3.0 * (n_train * 3 * per_tok + 2 * n_train * d * cfg.p)


