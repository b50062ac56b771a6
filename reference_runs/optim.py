"""Batched AdamW with per-run hyperparameters, and the exact norm clamp.

``torch.optim.AdamW`` takes one scalar lr and weight decay per parameter group; here every run
has its own, so the update is written out with per-run tensors broadcast over each parameter's
trailing axes. The arithmetic follows ``torch.optim.AdamW`` (decoupled decay ``p ← p(1 − lr·wd)``,
bias-corrected moments, ε outside the square root).
"""

from __future__ import annotations

import torch

from .models import BatchedModel


def _bcast(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.reshape((-1,) + (1,) * (like.dim() - 1))


class BatchedAdamW:
    """AdamW over a :class:`BatchedModel`; weight decay on its ``decayed`` set.

    ``lr``, ``wd``, ``beta1``, ``beta2``, ``eps``: float tensors ``[R]`` in the model's dtype.
    """

    def __init__(self, model: BatchedModel, lr: torch.Tensor, wd: torch.Tensor,
                 beta1: torch.Tensor, beta2: torch.Tensor, eps: torch.Tensor) -> None:
        self.model = model
        self.lr, self.wd, self.beta1, self.beta2, self.eps = lr, wd, beta1, beta2, eps
        self.t = 0
        self.m = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
        self.v = {n: torch.zeros_like(p) for n, p in model.named_parameters()}

    @torch.no_grad()  # type: ignore[untyped-decorator]  # untyped torch
    def step(self) -> None:
        self.t += 1
        bc1 = 1 - self.beta1 ** self.t
        bc2 = 1 - self.beta2 ** self.t
        decayed = set(self.model.decayed)
        for name, p in self.model.named_parameters():
            if p.grad is None:
                continue
            g = p.grad
            lr = _bcast(self.lr, p)
            if name in decayed:  # the recipe's decay set (weight matrices, or every parameter)
                p.mul_(1 - lr * _bcast(self.wd, p))
            m, v = self.m[name], self.v[name]
            b1, b2 = _bcast(self.beta1, p), _bcast(self.beta2, p)
            m.mul_(b1).add_((1 - b1) * g)
            v.mul_(b2).add_((1 - b2) * g * g)
            # Same order of operations as torch.optim.AdamW: √v / √(1 − β2ᵗ) + ε.
            denom = (v.sqrt() / _bcast(bc2.sqrt(), p)).add_(_bcast(self.eps, p))
            p.sub_(lr / _bcast(bc1, p) * m / denom)

    def zero_grad(self) -> None:
        for p in self.model.parameters():
            p.grad = None

    def state_dict(self) -> dict[str, object]:
        return {"t": self.t, "m": self.m, "v": self.v}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.t = int(state["t"])  # type: ignore[call-overload]
        for name in self.m:
            self.m[name].copy_(state["m"][name])  # type: ignore[index]
            self.v[name].copy_(state["v"][name])  # type: ignore[index]


def weight_norm_sq(model: BatchedModel) -> torch.Tensor:
    """Per-run ``‖W‖² = Σ‖M‖²_F`` over the norm set (``norm_params``: the weight matrices, biases
    and gains excluded, or every parameter), ``[R]``."""
    total = None
    for name in model.normed:
        p = getattr(model, name)
        s = p.detach().pow(2).flatten(1).sum(1)
        total = s if total is None else total + s
    assert total is not None
    return total


@torch.no_grad()  # type: ignore[untyped-decorator]  # untyped torch
def clamp_norm(model: BatchedModel, target: torch.Tensor, active: torch.Tensor) -> None:
    """Rescale the norm set of each active run by one scalar so ``‖W‖ = target``.

    ``target`` ``[R]`` is ``rho·w_c``; ``active`` ``[R]`` bool (clamped runs past ``t_int``).
    The norm is computed in float64 so the rescaled norm equals the target to float rounding.
    """
    if not bool(active.any()):
        return
    norm = weight_norm_sq(model).double().sqrt()
    scale = torch.where(active, target.double() / norm, torch.ones_like(norm))
    for name in model.normed:
        p = getattr(model, name)
        p.mul_(_bcast(scale, p).to(p.dtype))
