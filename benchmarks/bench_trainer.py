"""Benchmark of the reference trainer: a naive loop of R separate models vs R runs batched.

For p ∈ {59, 97} and R ∈ {1, 4, 12} on CPU (and R up to 256 on CUDA when present) it measures,
in one process and side by side:

(a) a naive loop: R ordinary ``nn.Module`` MLPs (embedding, ``Linear(2d, H)`` on the
    concatenated pair, GELU, ``Linear(H, p)``), each with its own ``torch.optim.AdamW``
    (decay on matrices only), full batch on its own split, stepped one after another;
(b) this trainer: the same R runs as one batched, factorized model (``GroupTrainer``);

and reports aggregate run-steps/s of each (best of 3 repetitions, a and b measured in
alternation so that a change in machine load hits both), the ratio b/a, the achieved FLOP rate of (b) (useful
FLOPs of the factorized model, :func:`flops_per_step`) next to the machine's measured float32
matmul peak, and the cost of logging at the default cadence (one ``evaluate()`` every
``log_every`` = 100 steps, as a share of training time).

Usage::

    python benchmarks/bench_trainer.py              # CPU table (+ CUDA when available)
    python benchmarks/bench_trainer.py --quick      # fewer steps, for a smoke test

On CUDA the naive loop is measured at R ≤ 16 and, being sequential, extrapolated linearly to
larger R (marked "extrap." in the table).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from grokaudit.reference_runs.config import TrainConfig
from grokaudit.reference_runs.tasks import build_dataset
from grokaudit.reference_runs.train import GroupTrainer, flops_per_step
from torch import nn


class NaiveMLP(nn.Module):
    """The textbook form of the seed MLP: concat the two embeddings, no factorization."""

    def __init__(self, p: int, d: int, h: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(p, d)
        self.fc1 = nn.Linear(2 * d, h)
        self.fc2 = nn.Linear(h, p)

    def forward(self, ab: torch.Tensor) -> torch.Tensor:
        x = self.emb(ab).flatten(1)
        return self.fc2(F.gelu(self.fc1(x)))


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def naive_setup(cfgs: list[TrainConfig], dev: torch.device) -> Callable[[], None]:
    """One step of R separate models with separate optimizers, stepped in a Python loop."""
    data = build_dataset(cfgs, dev)
    models, opts, xs, ys = [], [], [], []
    for r, c in enumerate(cfgs):
        torch.manual_seed(c.seed)
        m = NaiveMLP(c.p, c.d_emb, c.hidden).to(dev)
        mats = [m.emb.weight, m.fc1.weight, m.fc2.weight]
        rest = [m.fc1.bias, m.fc2.bias]
        opts.append(torch.optim.AdamW([{"params": mats, "weight_decay": c.wd},
                                       {"params": rest, "weight_decay": 0.0}],
                                      lr=c.lr, betas=(c.beta1, c.beta2)))
        models.append(m)
        idx = data.train_idx[r]
        xs.append(data.x[idx])
        ys.append(data.y[idx])

    def one_round() -> None:
        for m, o, x, y in zip(models, opts, xs, ys):
            loss = F.cross_entropy(m(x), y)
            o.zero_grad(set_to_none=True)
            loss.backward()
            o.step()

    return one_round


def timed(step: Callable[[], None], steps: int, dev: torch.device) -> float:
    """Seconds for ``steps`` calls of ``step``."""
    _sync(dev)
    t = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(dev)
    return time.perf_counter() - t


def compare(cfgs: list[TrainConfig], dev: torch.device, steps: int, reps: int,
            naive: bool = True) -> tuple[float | None, float, float, GroupTrainer]:
    """Best-of-``reps`` run-steps/s of (a) the naive loop and (b) the batched trainer, measured
    in alternation so that a change in machine load hits both; plus seconds per log point."""
    R = len(cfgs)
    tr = GroupTrainer(cfgs, dev)
    a_step = naive_setup(cfgs, dev) if naive else None
    for _ in range(3):  # warm-up
        tr.train_step()
        if a_step is not None:
            a_step()
    best_a, best_b = 0.0, 0.0
    for _ in range(reps):
        if a_step is not None:
            best_a = max(best_a, R * steps / timed(a_step, steps, dev))
        best_b = max(best_b, R * steps / timed(tr.train_step, steps, dev))
    tr.evaluate()
    t_eval = min(timed(tr.evaluate, 1, dev) for _ in range(3))
    return (best_a if naive else None), best_b, t_eval, tr


def matmul_peak(dev: torch.device, n: int = 1024, reps: int = 10) -> float:
    """Measured float32 matmul rate (FLOP/s) of an n×n by n×n product."""
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    for _ in range(2):
        a @ b
    _sync(dev)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(dev)
    return 2 * n ** 3 * reps / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (smoke test)")
    ap.add_argument("--device", default="all", choices=["all", "cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = []
    if args.device in ("all", "cpu"):
        devices.append(torch.device("cpu"))
    if args.device in ("all", "cuda") and torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    print(f"# torch {torch.__version__}, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} CPU threads"
          + (f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no CUDA"))
    print()
    print("| device | p | R | naive (a) run-steps/s | batched (b) run-steps/s | b/a "
          "| batched GFLOP/s | matmul peak GFLOP/s | logging overhead |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dev in devices:
        peak = matmul_peak(dev, 2048 if dev.type == "cuda" else 1024)
        rs = (1, 4, 12) if dev.type == "cpu" else (1, 16, 64, 128, 256)
        for p in (59, 97):
            naive_per_run = None
            for R in rs:
                cfgs = [TrainConfig(p=p, seed=s, alpha=0.4) for s in range(R)]
                steps = (3 if args.quick else 10) if dev.type == "cpu" else (10 if args.quick
                                                                             else 50)
                extrap = dev.type == "cuda" and R > 16
                a, b, t_eval, tr = compare(cfgs, dev, steps, 2 if args.quick else 3,
                                           naive=not extrap)
                if a is None:  # the naive loop is sequential: its aggregate rate is flat in R
                    assert naive_per_run is not None
                    a, note = naive_per_run, " (extrap.)"
                else:
                    naive_per_run, note = a, ""
                flops = flops_per_step(cfgs[0], tr.data.n_train) * b
                overhead = t_eval / (cfgs[0].log_every * R / b)
                print(f"| {dev.type} | {p} | {R} | {a:.0f}{note} | {b:.0f} | {b / a:.2f} "
                      f"| {flops / 1e9:.1f} | {peak / 1e9:.0f} | {100 * overhead:.1f}% |",
                      flush=True)

if __name__ == "__main__":
    main()
