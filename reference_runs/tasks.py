"""Datasets: modular arithmetic over all pairs, and sparse parity; per-run seeded splits.

Every run draws its own train/test split from its own seed (unless ``shared_split``), so a batch
of R runs carries R boolean train masks over one shared list of examples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import TrainConfig

#: Offset mixed into a run's seed for its split stream, so that the split and the
#: initialization never share random numbers.
SPLIT_STREAM = 0x5151
PARITY_STREAM = 0x7A7A


@dataclass(frozen=True)
class Dataset:
    """All examples of a task, shared by the runs of a batch, and each run's train mask.

    ``x``: int64 ``[N, 2]`` operand pairs (modular tasks) or ``[R, N, n_bits]`` float bits in {0,1}
    (parity, where every run draws its own strings); ``y``: int64 ``[N]`` or ``[R, N]`` labels;
    ``train_mask``: bool ``[R, N]``; ``n_classes``: output width; ``n_train``: train examples per
    run (equal for every run, which keeps the batch rectangular).
    """

    x: torch.Tensor
    y: torch.Tensor
    train_mask: torch.Tensor
    train_idx: torch.Tensor  # int64 [R, n_train]: indices of each run's train examples
    n_classes: int
    n_train: int
    per_run_inputs: bool  # True when x, y carry a leading run axis (parity)


def modular_pairs(task: str, p: int) -> tuple[np.ndarray, np.ndarray]:
    """All operand pairs and labels of ``a ∘ b mod p``; ``div`` skips b = 0 (p(p−1) pairs)."""
    a: np.ndarray
    b: np.ndarray
    a, b = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    a, b = a.ravel(), b.ravel()
    if task == "div":
        keep = b != 0
        a, b = a[keep], b[keep]
        inv = np.array([pow(int(v), p - 2, p) for v in b])  # Fermat inverse, p prime
        y = (a * inv) % p
    elif task == "add":
        y = (a + b) % p
    elif task == "sub":
        y = (a - b) % p
    elif task == "mul":
        y = (a * b) % p
    else:
        raise ValueError(f"not a modular task: {task!r}")
    return np.stack([a, b], axis=1).astype(np.int64), y.astype(np.int64)


def split_mask(n: int, alpha: float, seed: int) -> np.ndarray:
    """A boolean mask choosing ``round(alpha·n)`` train examples, drawn from ``seed`` alone."""
    rng = np.random.default_rng([seed, SPLIT_STREAM])
    n_train = int(round(alpha * n))
    mask = np.zeros(n, dtype=bool)
    mask[rng.permutation(n)[:n_train]] = True
    return mask


def parity_data(cfg: TrainConfig, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``parity_samples`` distinct random bit strings (from ``seed``) and their parity of the
    first ``parity_k`` bits."""
    rng = np.random.default_rng([seed, PARITY_STREAM])
    n = cfg.parity_bits
    want = min(cfg.parity_samples, 2 ** n)
    seen: set[int] = set()
    while len(seen) < want:  # distinct strings: a repeated string would leak train into test
        for v in rng.integers(0, 2 ** n, size=want - len(seen), dtype=np.int64).tolist():
            seen.add(int(v))
    codes = np.array(sorted(seen), dtype=np.int64)
    rng.shuffle(codes)
    bits = ((codes[:, None] >> np.arange(n)) & 1).astype(np.float64)
    y = (bits[:, : cfg.parity_k].sum(axis=1) % 2).astype(np.int64)
    return bits, y


def build_dataset(cfgs: list[TrainConfig], device: torch.device) -> Dataset:
    """The examples and per-run train masks of a batch of runs that share a group key."""
    c0 = cfgs[0]
    split_seeds = [0 if c.shared_split else c.seed for c in cfgs]
    if c0.task == "parity":
        xs, ys = zip(*(parity_data(c0, s) for s in split_seeds))
        x = torch.tensor(np.stack(xs), device=device)
        y = torch.tensor(np.stack(ys), device=device)
        n, n_classes, per_run = x.shape[1], 2, True
    else:
        xn, yn = modular_pairs(c0.task, c0.p)
        x = torch.tensor(xn, device=device)
        y = torch.tensor(yn, device=device)
        n, n_classes, per_run = len(yn), c0.p, False
    masks = np.stack([split_mask(n, c0.alpha, s) for s in split_seeds])
    train_idx = np.stack([np.flatnonzero(m) for m in masks])
    return Dataset(x=x, y=y, train_mask=torch.tensor(masks, device=device),
                   train_idx=torch.tensor(train_idx, device=device), n_classes=n_classes,
                   n_train=train_idx.shape[1], per_run_inputs=per_run)
