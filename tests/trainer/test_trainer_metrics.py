"""Each logged metric against a matrix or tensor whose answer is known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.reference_runs.metrics import (  # noqa: E402
    accuracy_and_loss,
    attention_metrics,
    logit_scale,
    softmax_collapse,
    spectral_metrics,
)


def _with_singular_values(s: list[float], rows: int, cols: int, seed: int) -> np.ndarray:
    """A rows×cols matrix U·diag(s)·Vᵀ with random orthonormal U, V."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(rows, rows)))
    v, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    d = np.zeros((rows, cols))
    d[: len(s), : len(s)] = np.diag(s)
    return u @ d @ v.T


def test_spectral_metrics_against_hand_values() -> None:
    # σ = (4, 2, 1, 1): σ/Σσ = (1/2, 1/4, 1/8, 1/8), entropy = 1.75·ln 2 → erank = 2^1.75.
    # σ² = (16, 4, 1, 1), Σσ² = 22, Σσ⁴ = 274.
    m = _with_singular_values([4, 2, 1, 1], 6, 5, seed=0)
    out = spectral_metrics(torch.tensor(m[None]))
    assert float(out["erank"][0]) == pytest.approx(2 ** 1.75, rel=1e-12)
    q2 = np.array([16, 4, 1, 1]) / 22
    assert float(out["erank2"][0]) == pytest.approx(math.exp(-(q2 * np.log(q2)).sum()), rel=1e-12)
    assert float(out["pr"][0]) == pytest.approx(22 ** 2 / 274, rel=1e-12)
    assert float(out["srank"][0]) == pytest.approx(22 / 16, rel=1e-12)


def test_spectral_metrics_mask_zero_singular_values_and_batch() -> None:
    # Rank 2 with equal singular values: every rank measure is exactly 2; the three zero
    # singular values (rounding noise in float64) must not add rank.
    a = _with_singular_values([3, 3], 7, 5, seed=1)
    b = _with_singular_values([1, 1, 1, 1, 1], 7, 5, seed=2)  # full rank 5, flat spectrum
    out = spectral_metrics(torch.tensor(np.stack([a, b])))
    for k in ("erank", "erank2", "pr", "srank"):
        assert out[k].dtype == torch.float64
        np.testing.assert_allclose(out[k].numpy(), [2.0, 5.0], rtol=1e-12)


def test_spectral_metrics_use_float64_even_for_float32_input() -> None:
    m = _with_singular_values([4, 2, 1, 1], 6, 5, seed=3)
    out = spectral_metrics(torch.tensor(m[None], dtype=torch.float32))
    assert out["erank"].dtype == torch.float64
    assert float(out["erank"][0]) == pytest.approx(2 ** 1.75, rel=1e-6)


def test_logit_scale_and_softmax_collapse() -> None:
    logits = torch.tensor([[[3.0, 4.0], [0.0, 0.0]], [[0.0, 200.0], [0.0, 1.0]]],
                          dtype=torch.float64)
    np.testing.assert_allclose(logit_scale(logits).numpy(), [2.5, (200 + 1) / 2])
    # float32 softmax of (0, 200) is exactly (0, 1); of (0, 1) it is not.
    np.testing.assert_array_equal(softmax_collapse(logits).numpy(), [0.0, 0.5])


def test_accuracy_and_loss_with_masks() -> None:
    logits = torch.tensor([[[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]]], dtype=torch.float64)
    y = torch.tensor([[0, 0, 0]])
    mask = torch.tensor([[True, True, False]])
    acc, loss = accuracy_and_loss(logits, y, mask, "ce", 2)
    assert float(acc[0]) == 0.5
    l_right, l_wrong = math.log(1 + math.exp(-2)), math.log(1 + math.exp(2))
    assert float(loss[0]) == pytest.approx((l_right + l_wrong) / 2, rel=1e-12)
    acc, loss = accuracy_and_loss(logits, y, mask, "mse", 2)
    # (2−1)² + 0² over 2 classes, and (0−1)² + 2² over 2 classes, then the mean of the two.
    assert float(loss[0]) == pytest.approx(((1 + 0) / 2 + (1 + 4) / 2) / 2, rel=1e-12)


def test_attention_metrics_against_hand_values() -> None:
    # One run, two examples, two heads, T = 3. At the last query position head 0 attends
    # uniformly and head 1 puts all weight on the last token.
    probs = torch.zeros(1, 2, 2, 3, 3, dtype=torch.float64)
    probs[..., 0, 0] = 1.0
    probs[..., 1, :2] = 0.5
    probs[:, :, 0, 2, :] = 1 / 3
    probs[:, :, 1, 2, 2] = 1.0
    scores = torch.zeros(1, 2, 2, 3, 3, dtype=torch.float64)
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    vals = torch.arange(6, dtype=torch.float64)  # the 6 causal entries hold 0..5 everywhere
    scores[..., causal] = vals
    scores[..., ~causal] = 1e6  # masked entries must not count
    out = attention_metrics([probs], [scores])
    assert float(out["attn_head_cos"][0]) == pytest.approx(1 / math.sqrt(3), rel=1e-12)
    assert float(out["attn_entropy_std"][0]) == pytest.approx(math.log(3) / 2, rel=1e-12)
    assert float(out["attn_cv"][0]) == pytest.approx(float(np.var(np.arange(6.0))), rel=1e-12)
