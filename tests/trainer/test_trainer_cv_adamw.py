"""The trainer's cv-adamw optimizer (seed 004 §4): weight decay raised online from the
attention specific heat once a run has memorized."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.errors import ConfigError  # noqa: E402
from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402

CPU = torch.device("cpu")
BASE = dict(arch="transformer", p=7, alpha=0.5, d_model=16, n_heads=2, mlp_ratio=2, steps=12,
            log_every=4, dtype="float64", lr=3e-3, wd=0.5)


def rows(cfgs: list[TrainConfig]) -> list[dict[str, np.ndarray]]:
    tr = GroupTrainer(cfgs, CPU)
    tr.run()
    return tr.rows


def test_cv_adamw_needs_a_transformer() -> None:
    with pytest.raises(ConfigError) as ei:
        TrainConfig(optimizer="cv-adamw").validate()
    assert "optimizer" in str(ei.value)


def test_with_the_gate_closed_it_trains_exactly_like_adamw() -> None:
    # the memorization gate never opens (threshold above 1): lambda stays the base decay
    plain = rows([TrainConfig(**BASE, seed=s) for s in (0, 1)])
    cv = rows([TrainConfig(**BASE, seed=s, optimizer="cv-adamw", cv_mem_threshold=1.5)
               for s in (0, 1)])
    for a, b in zip(plain, cv):
        for key in ("test_acc", "train_loss", "emb_erank", "weight_norm"):
            np.testing.assert_array_equal(a[key], b[key])
        np.testing.assert_array_equal(b["cv_wd"], [0.5, 0.5])


def test_with_the_gate_open_the_decay_follows_the_controller() -> None:
    # gate open from the first step and a threshold far below any z-score: the decay applied
    # each step is lambda = base + max(z - z_thresh, 0), seed 004's z-score form
    cfgs = [TrainConfig(**BASE, seed=s, optimizer="cv-adamw", cv_mem_threshold=0.0,
                        cv_z_thresh=-5.0) for s in (0, 1)]
    tr = GroupTrainer(cfgs, CPU)
    seen = []
    for _ in range(6):
        tr.train_step()
        z = tr.ctrl.z.clone()
        expect = 0.5 + torch.clamp(z + 5.0, min=0.0)
        torch.testing.assert_close(tr.opt.wd, expect.to(tr.opt.wd.dtype))
        seen.append(z)
    assert torch.all(seen[0] == 0)  # cold start: no velocity at the first step, z = 0
    assert any(bool(torch.any(z != 0)) for z in seen[2:])  # later the velocity moves z


def test_resume_restores_the_controller() -> None:
    cfgs = [TrainConfig(**BASE, seed=0, optimizer="cv-adamw", cv_mem_threshold=0.0)]
    a = GroupTrainer(cfgs, CPU)
    for _ in range(5):
        a.train_step()
    b = GroupTrainer(cfgs, CPU)
    b.load(a.state())
    for _ in range(3):
        a.train_step()
        b.train_step()
    torch.testing.assert_close(a.opt.wd, b.opt.wd)
    for k, v in a.ctrl.state_dict().items():
        torch.testing.assert_close(v, b.ctrl.state_dict()[k], equal_nan=True)
