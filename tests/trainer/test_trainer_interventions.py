"""The norm clamp, the output temperature τ, and weight decay's reach (matrices, not biases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402

CPU = torch.device("cpu")
SMALL = dict(p=11, alpha=0.5, d_emb=8, hidden=16, lr=1e-2)


def _norm(model: torch.nn.Module, names: tuple[str, ...]) -> np.ndarray:
    # Independent of the code under test: the Frobenius norms of the named matrices, by numpy.
    return np.sqrt(sum((getattr(model, n).detach().double().numpy() ** 2)
                       .reshape(model.n_runs, -1).sum(1) for n in names))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clamp_holds_norm_exactly_every_step_after_t_int(dtype: str) -> None:
    cfgs = [TrainConfig(**SMALL, dtype=dtype, seed=0, rho=0.7, w_c=6.0, t_int=5, steps=30),
            TrainConfig(**SMALL, dtype=dtype, seed=1, rho=1.3, w_c=6.0, t_int=12, steps=30),
            TrainConfig(**SMALL, dtype=dtype, seed=2, steps=30)]  # free run: never clamped
    tr = GroupTrainer(cfgs, CPU)
    names = ("E", "W1", "W2")
    assert tr.model.matrices == names  # the biases b1, b2 are not in ‖W‖
    tol = 1e-12 if dtype == "float64" else 2e-6
    free_before = None
    for step in range(1, 31):
        before = _norm(tr.model, names)
        tr.train_step()
        after = _norm(tr.model, names)
        for r, (rho, t_int) in enumerate(((0.7, 5), (1.3, 12))):
            if step >= t_int:
                assert after[r] == pytest.approx(rho * 6.0, rel=tol), (step, r)
        free_before = before[2]
    # The free run's norm moves on its own: it is never pinned.
    assert free_before is not None and not math.isclose(after[2], free_before, rel_tol=1e-9)


def test_clamp_rescales_all_matrices_by_one_scalar() -> None:
    cfg = TrainConfig(**SMALL, dtype="float64", rho=0.5, w_c=4.0, t_int=3, steps=10)
    tr = GroupTrainer([cfg], CPU)
    for _ in range(3):  # steps 1–2 free; step 3: one optimizer step, then the clamp
        tr.train_step()
    # The same run without the clamp: identical through the optimizer step of step 3, so the
    # clamp's effect is the ratio, which must be one scalar for every matrix.
    tr2 = GroupTrainer([TrainConfig(**SMALL, dtype="float64", steps=10, seed=0)], CPU)
    for _ in range(3):
        tr2.train_step()
    ratios = [float((getattr(tr.model, n).detach() / getattr(tr2.model, n).detach())
                    .flatten()[0]) for n in ("E", "W1", "W2")]
    assert ratios == pytest.approx([ratios[0]] * 3, rel=1e-12)
    np.testing.assert_array_equal(tr.model.b1.detach().numpy(), tr2.model.b1.detach().numpy())


def test_tau_divides_logits_and_is_not_a_parameter() -> None:
    cfgs = [TrainConfig(**SMALL, dtype="float64", seed=0, tau=1.0),
            TrainConfig(**SMALL, dtype="float64", seed=0, tau=4.0)]
    tr = GroupTrainer(cfgs, CPU)
    # Same seed → same initial parameters; τ lives outside the model.
    for p in tr.model.parameters():
        torch.testing.assert_close(p[0], p[1], rtol=0, atol=0)
    assert all(p.shape[0] == 2 for p in tr.model.parameters())
    row = tr.evaluate()
    assert row["weight_norm"][0] == row["weight_norm"][1]  # τ does not count in ‖W‖
    # logit_scale is post-τ: a quarter at τ = 4 (hand ratio, not the code's output).
    assert row["logit_scale"][1] == pytest.approx(row["logit_scale"][0] / 4.0, rel=1e-12)
    # The loss is computed on logits/τ: recompute the τ=4 training loss by hand.
    fwd = tr.model.forward_idx(tr.data, tr.all_idx)
    raw = fwd.logits[1].detach()
    mask = tr.data.train_mask[1]
    ce = torch.nn.functional.cross_entropy(raw[mask] / 4.0, tr.data.y[mask])
    assert row["train_loss"][1] == pytest.approx(float(ce), rel=1e-10)


def test_weight_decay_skips_biases() -> None:
    """With zero gradients, AdamW changes only the decayed matrices, by exactly (1 − lr·wd)."""
    cfg = TrainConfig(**{**SMALL, "lr": 0.05}, dtype="float64", wd=2.0)
    tr = GroupTrainer([cfg], CPU)
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters()}
    for p in tr.model.parameters():
        p.grad = torch.zeros_like(p)
    tr.opt.step()
    for n, p in tr.model.named_parameters():
        if n.startswith("b"):
            torch.testing.assert_close(p.detach(), before[n], rtol=0, atol=0)
        else:
            torch.testing.assert_close(p.detach(), before[n] * (1 - 0.05 * 2.0), rtol=1e-14,
                                       atol=0)


def test_transformer_decay_skips_layernorm_gains_and_biases() -> None:
    cfg = TrainConfig(arch="transformer", p=7, d_model=8, n_heads=2, mlp_ratio=2,
                      dtype="float64", wd=1.0, lr=0.1)
    tr = GroupTrainer([cfg], CPU)
    assert not any(n.startswith(("ln", "b")) for n in tr.model.matrices)
    before = {n: p.detach().clone() for n, p in tr.model.named_parameters()}
    for p in tr.model.parameters():
        p.grad = torch.zeros_like(p)
    tr.opt.step()
    for n, p in tr.model.named_parameters():
        expected = before[n] * 0.9 if n in tr.model.matrices else before[n]
        torch.testing.assert_close(p.detach(), expected, rtol=1e-14, atol=0)
