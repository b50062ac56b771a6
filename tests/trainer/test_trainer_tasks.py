"""Datasets: every pair once, correct labels for each operation, and sparse parity."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.tasks import modular_pairs, parity_data  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer, log_steps  # noqa: E402


@pytest.mark.parametrize("task,op", [
    ("add", lambda a, b, p: (a + b) % p),
    ("sub", lambda a, b, p: (a - b) % p),
    ("mul", lambda a, b, p: (a * b) % p),
])
def test_modular_labels(task: str, op: object) -> None:
    x, y = modular_pairs(task, 11)
    assert len(y) == 121 and len({(int(a), int(b)) for a, b in x}) == 121
    for (a, b), label in zip(x.tolist(), y.tolist()):
        assert label == op(a, b, 11)  # type: ignore[operator]


def test_div_is_multiplication_by_the_inverse_and_skips_zero() -> None:
    x, y = modular_pairs("div", 13)
    assert len(y) == 13 * 12 and (x[:, 1] != 0).all()
    # y = a·b⁻¹ ⇔ y·b ≡ a (mod p)
    assert ((y * x[:, 1]) % 13 == x[:, 0]).all()


def test_sparse_parity_labels_and_distinct_strings() -> None:
    cfg = TrainConfig(task="parity", parity_bits=10, parity_k=3, parity_samples=300)
    bits, y = parity_data(cfg, seed=4)
    assert bits.shape == (300, 10)
    assert len({tuple(r) for r in bits.tolist()}) == 300
    np.testing.assert_array_equal(y, bits[:, :3].sum(1) % 2)


def test_log_steps_grid() -> None:
    cfg = TrainConfig(steps=1050, log_grid="linear", log_every=100, early_points=8)
    steps = log_steps(cfg)
    assert steps[0] == 0 and steps[-1] == 1050
    assert set(range(100, 1001, 100)) <= set(steps)
    early = [s for s in steps if 0 < s < 100]
    assert 4 <= len(early) <= 8 and early == sorted(early)


def test_log_steps_geometric_grid() -> None:
    """The critical-norm runner's grid: 0 and round(geomspace(1, steps, n)), deduplicated;
    log_every adds its multiples on top."""
    cfg = TrainConfig(steps=60_000, log_grid="geometric", log_points=360, log_every=0)
    steps = log_steps(cfg)
    expected = np.unique(np.concatenate([[0], np.round(np.geomspace(1, 60_000, 360))]))
    assert steps == [int(s) for s in expected]
    assert len(steps) == 279  # the public p = 59 sweep's 279 logged steps
    both = log_steps(TrainConfig(steps=12_000, log_grid="geometric", log_points=360,
                                 log_every=1000))
    assert set(range(1000, 12_001, 1000)) <= set(both) and set(log_steps(
        TrainConfig(steps=12_000, log_grid="geometric", log_points=360, log_every=0))) <= set(both)


def test_rope_transformer_trains_and_logs() -> None:
    cfg = TrainConfig(arch="transformer", pos="rope", p=7, d_model=8, n_heads=2, mlp_ratio=2,
                      steps=5, log_every=5, seed=0)
    tr = GroupTrainer([cfg], torch.device("cpu"))
    assert "pos" not in dict(tr.model.named_parameters())  # no learned positions with RoPE
    tr.run()
    row = tr.rows[-1]
    assert np.isfinite(row["attn_cv"]).all() and np.isfinite(row["emb_erank"]).all()
