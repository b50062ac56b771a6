"""CvAdamW: AdamW whose weight decay follows the attention specific heat (seed 004 §3–4).

The scale-invariant ("z-score") form with a cold start. Each step the caller reports the
specific heat ``C_v(t)`` (the variance of the scaled attention logits, ``attn_cv`` in the logs)
and the training accuracy; the decay for that step is

    v_t   = C_v(t) − C_v(t−1)                                   velocity
    μ_t   = β_z μ_{t−1} + (1 − β_z) v_t                          EMA mean          (7)
    σ²_t  = β_z σ²_{t−1} + (1 − β_z)(v_t − μ_{t−1})(v_t − μ_t)   EMA variance      (8)
    Z_t   = (v_t − μ_t) / (√σ²_t + ε)                                              (9)
    λ_t   = λ_base + max(0, Z_t − z_thresh)                                       (10)

with ``β_z = 0.9``, ``z_thresh = 2``, ``λ_base = 0.1`` by default. The memorization gate
(``train_acc ≥ 0.99``) switches the actuator: while it is closed, ``λ_t = λ_base``. With the
**cold start** (default) the statistics ``μ, σ²`` start from zero only when the gate first opens
(the first report after that only sets ``C_v(t−1)``), so the first post-gate signal is judged
against no warm baseline; with ``cold_start=False`` (the paper's "continuous sensor") they are
tracked from the first report. Once started, the statistics keep running when the gate closes
again (the slingshot of §3.2(3)); only the actuator is gated.

Note what the recursion implies: the first velocity after a cold start has
``Z = sign(v)·√(β_z/(1 − β_z))`` (3 for ``β_z = 0.9``), so a rising ``C_v`` gets one unit of decay
above base immediately — the sensitivity the paper attributes to the cold start.

:class:`ZScoreDecay` is the controller alone, on tensors of any shape (``[R]`` for a batched
trainer: set ``BatchedAdamW.wd`` from it each step). :class:`CvAdamW` is a drop-in
``torch.optim.Optimizer`` for one model, whose arithmetic is ``torch.optim.AdamW``'s with the
weight decay replaced by ``λ_t``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch


class ZScoreDecay:
    """The z-score weight-decay controller of seed 004 §4, elementwise over ``shape``."""

    def __init__(self, wd_base: float | torch.Tensor = 0.1, *, beta_z: float = 0.9,
                 z_thresh: float = 2.0, eps: float = 1e-8, mem_threshold: float = 0.99,
                 cold_start: bool = True, shape: tuple[int, ...] = (),
                 dtype: torch.dtype = torch.float64) -> None:
        if not 0.0 < beta_z < 1.0:
            raise ValueError(f"beta_z must lie in (0, 1), got {beta_z}")
        self.beta_z, self.z_thresh, self.eps = beta_z, z_thresh, eps
        self.mem_threshold, self.cold_start = mem_threshold, cold_start
        z = torch.zeros(shape, dtype=dtype)
        self.wd_base = torch.as_tensor(wd_base, dtype=dtype).expand(shape).clone()
        self.mu = z.clone()  #: EMA of the velocity
        self.var = z.clone()  #: EMA variance of the velocity
        self.prev = torch.full(shape, math.nan, dtype=dtype)  #: C_v(t−1); NaN before the first
        self.started = torch.zeros(shape, dtype=torch.bool)  #: statistics running
        self.opened = torch.zeros(shape, dtype=torch.bool)  #: the gate has opened at least once
        self.z = z.clone()  #: the last Z_t (0 before any velocity)
        self.wd = self.wd_base.clone()  #: the last λ_t

    @torch.no_grad()  # type: ignore[untyped-decorator]  # untyped torch
    def update(self, cv: float | torch.Tensor, train_acc: float | torch.Tensor) -> torch.Tensor:
        """Report ``C_v(t)`` and ``train_acc``; return ``λ_t`` (same shape as the controller)."""
        cv_t = torch.as_tensor(cv, dtype=self.mu.dtype).expand(self.mu.shape)
        gate = torch.as_tensor(train_acc, dtype=self.mu.dtype).expand(self.mu.shape) \
            >= self.mem_threshold
        self.opened |= gate
        # cold start: the statistics start at the first report with the gate open
        newly = ~self.started & (self.opened if self.cold_start else torch.ones_like(gate))
        self.prev = torch.where(newly, torch.full_like(self.prev, math.nan), self.prev)
        self.started |= newly
        have_v = self.started & ~torch.isnan(self.prev)
        v = torch.where(have_v, cv_t - self.prev, torch.zeros_like(cv_t))
        b = self.beta_z
        mu_new = b * self.mu + (1 - b) * v
        var_new = b * self.var + (1 - b) * (v - self.mu) * (v - mu_new)
        self.mu = torch.where(have_v, mu_new, self.mu)
        self.var = torch.where(have_v, var_new, self.var)
        z = (v - self.mu) / (self.var.clamp_min(0).sqrt() + self.eps)
        self.z = torch.where(have_v, z, torch.zeros_like(z))
        self.prev = torch.where(self.started, cv_t, self.prev)
        boost = (self.z - self.z_thresh).clamp_min(0)
        self.wd = torch.where(gate, self.wd_base + boost, self.wd_base)
        return self.wd.clone()

    def state_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k).clone() for k in
                ("wd_base", "mu", "var", "prev", "started", "opened", "z", "wd")}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v.clone())


class CvAdamW(torch.optim.Optimizer):  # type: ignore[misc]  # untyped base
    """AdamW with the weight decay of each step set by :class:`ZScoreDecay`.

    Call :meth:`observe` with the step's ``C_v`` and ``train_acc`` before :meth:`step`; without
    a report the last ``λ_t`` (initially ``weight_decay``) is used. The update is
    ``torch.optim.AdamW``'s: ``p ← p·(1 − lr·λ_t)``, then the bias-corrected Adam step.
    """

    def __init__(self, params: Iterable[Any], lr: float = 3e-4,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.1, *, beta_z: float = 0.9, z_thresh: float = 2.0,
                 z_eps: float = 1e-8, mem_threshold: float = 0.99,
                 cold_start: bool = True) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0:
            raise ValueError("lr, eps and weight_decay must be ≥ 0")
        defaults = {"lr": lr, "betas": betas, "eps": eps}
        super().__init__(params, defaults)
        self.controller = ZScoreDecay(weight_decay, beta_z=beta_z, z_thresh=z_thresh,
                                      eps=z_eps, mem_threshold=mem_threshold,
                                      cold_start=cold_start)

    @property
    def current_weight_decay(self) -> float:
        """``λ_t`` used by the next :meth:`step`."""
        return float(self.controller.wd)

    def observe(self, cv: float, train_acc: float) -> float:
        """Report this step's ``C_v`` and ``train_acc``; returns the new ``λ_t``."""
        return float(self.controller.update(cv, train_acc))

    @torch.no_grad()  # type: ignore[untyped-decorator]  # untyped torch
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        wd = self.current_weight_decay
        for group in self.param_groups:
            lr = group["lr"]
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                p.mul_(1 - lr * wd)
                m, v = st["exp_avg"], st["exp_avg_sq"]
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                bc1 = 1 - b1 ** t
                bc2 = 1 - b2 ** t
                denom = (v.sqrt() / math.sqrt(bc2)).add_(group["eps"])
                p.addcdiv_(m, denom, value=-lr / bc1)
        return loss

    def state_dict(self) -> dict[str, Any]:
        sd: dict[str, Any] = super().state_dict()
        sd["cv_controller"] = self.controller.state_dict()
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        ctrl = state_dict.pop("cv_controller", None)
        super().load_state_dict(state_dict)
        if ctrl is not None:
            self.controller.load_state_dict(ctrl)
