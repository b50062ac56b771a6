"""The logged quantities: spectral metrics of the embedding and unembedding, accuracy, loss,
logit scale, softmax collapse, and the Transformer's attention diagnostics.

Every function takes batched tensors (leading run axis ``R``) and returns one value per run.
Definitions, formulas and units are in ``docs/metrics.md``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def singular_values(mat: torch.Tensor) -> torch.Tensor:
    """Float64 singular values of ``[R, rows, cols]``, descending; zeros masked to exactly 0.

    Values at or below ``σ_max · max(rows, cols) · ε_float64`` (numpy's ``matrix_rank``
    tolerance) count as zero: rounding noise must not add rank.
    """
    m = mat.detach().to(torch.float64)
    # a diverged run (inf or nan weights, e.g. from a huge lr) has no spectrum: NaN, while the
    # other runs of the batch keep theirs (the SVD of a non-finite matrix raises)
    finite = torch.isfinite(m).flatten(1).all(1)
    s = torch.linalg.svdvals(torch.where(finite[:, None, None], m, torch.zeros_like(m)))
    tol = s[:, :1] * max(mat.shape[-2:]) * torch.finfo(torch.float64).eps
    s = torch.where(s > tol, s, torch.zeros_like(s))
    return torch.where(finite[:, None], s, torch.full_like(s, float("nan")))


def _entropy_rank(w: torch.Tensor) -> torch.Tensor:
    """``exp(H(w/Σw))`` with ``0·log 0 = 0``, per row of ``w`` ``[R, k]``; NaN for a row with
    a NaN (a diverged run's spectrum) or no positive weight (0/0): never a faked 1.0."""
    total = w.sum(dim=1, keepdim=True)
    q = w / total
    h = -torch.where(q > 0, q * q.log(), torch.zeros_like(q)).sum(dim=1)
    # ``q > 0`` is False for NaN: without this, a NaN spectrum would read as a collapse (1.0)
    defined = torch.isfinite(total[:, 0]) & (total[:, 0] > 0)
    return torch.where(defined, h.exp(), torch.full_like(h, float("nan")))


def spectral_metrics(mat: torch.Tensor) -> dict[str, torch.Tensor]:
    """Effective rank (on σ), squared-normalized effective rank (on σ²), participation ratio
    and stable rank of each run's matrix; float64 ``[R]`` each, dimensionless (units of rank).

    NaN in, NaN out: a run whose matrix is not finite (or is all zeros) has every metric NaN.
    The four are scale-free, so they are computed on ``σ/σ_max``: ``σ²`` and ``σ⁴`` of a huge
    but finite matrix cannot overflow to inf.
    """
    s = singular_values(mat)
    s = s / s[:, :1]  # NaN for a NaN or all-zero spectrum (0/0): it stays NaN below
    s2 = s * s
    return {
        "erank": _entropy_rank(s),
        "erank2": _entropy_rank(s2),
        "pr": s2.sum(1) ** 2 / (s2 * s2).sum(1),
        "srank": s2.sum(1) / s2[:, 0],
    }


def accuracy_and_loss(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                      loss: str, n_classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-run mean accuracy and loss over the examples where ``mask`` ``[R, n]`` is True.

    ``logits`` ``[R, n, C]`` are post-τ. Returns float64 ``[R]`` each.
    """
    per = per_example_loss(logits, y, loss, n_classes).double()
    correct = (logits.argmax(-1) == y).double()
    m = mask.double()
    cnt = m.sum(1).clamp_min(1)
    return (correct * m).sum(1) / cnt, (per * m).sum(1) / cnt


def per_example_loss(logits: torch.Tensor, y: torch.Tensor, loss: str,
                     n_classes: int) -> torch.Tensor:
    """``[R, n]``: cross-entropy, or the mean squared error against one-hot targets."""
    if loss == "ce":
        return F.cross_entropy(logits.transpose(1, 2), y, reduction="none")
    onehot = F.one_hot(y, logits.shape[-1]).to(logits.dtype)  # the readout's width
    return (logits - onehot).pow(2).mean(-1)


def logit_scale(logits: torch.Tensor) -> torch.Tensor:
    """Mean L2 norm of the post-τ logit vector over all examples, ``[R]`` (logit units)."""
    return logits.double().norm(dim=-1).mean(-1)


def softmax_collapse(logits: torch.Tensor) -> torch.Tensor:
    """Fraction of examples whose float32 softmax puts exactly 1.0 on one class, ``[R]``."""
    probs = logits.float().softmax(-1)
    return (probs.max(-1).values == 1.0).double().mean(-1)


def attention_metrics(probs: list[torch.Tensor], scores: list[torch.Tensor]
                      ) -> dict[str, torch.Tensor]:
    """Seed 001's head coordination and seed 004's specific heat, averaged over layers.

    ``probs``/``scores``: per layer ``[R, n, heads, T, T]``. At the last query position (the one
    the readout uses): ``attn_head_cos`` = mean over head pairs of the cosine similarity of the
    heads' attention rows concatenated over examples; ``attn_entropy_std`` = the standard
    deviation over heads (population) of each head's mean attention entropy (nats);
    ``attn_cv`` = the variance of ``QKᵀ/√d_k`` over every causal entry, example and head.
    """
    cos_l, ent_l, cv_l = [], [], []
    for pr, sc in zip(probs, scores):
        R, n, H, T, _ = pr.shape
        last = pr[:, :, :, -1, :].double()  # [R, n, H, T]
        vec = last.permute(0, 2, 1, 3).reshape(R, H, n * T)
        vec = vec / vec.norm(dim=-1, keepdim=True)
        gram = vec @ vec.transpose(1, 2)
        off = ~torch.eye(H, dtype=torch.bool, device=pr.device)
        cos_l.append(gram[:, off].mean(-1) if H > 1
                     else torch.ones(R, dtype=torch.float64, device=pr.device))
        ent = -torch.where(last > 0, last * last.log(), torch.zeros_like(last)).sum(-1)
        ent_l.append(ent.mean(1).std(dim=-1, unbiased=False))
        causal = torch.ones(T, T, dtype=torch.bool, device=pr.device).tril()
        cv_l.append(sc.double()[..., causal].reshape(R, -1).var(dim=-1, unbiased=False))
    return {"attn_head_cos": torch.stack(cos_l).mean(0),
            "attn_entropy_std": torch.stack(ent_l).mean(0),
            "attn_cv": torch.stack(cv_l).mean(0)}
