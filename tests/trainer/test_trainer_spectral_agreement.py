"""The bundled trainer's spectral metrics and grokaudit.metrics.spectral_metrics agree to 1e-9:
a log written with RunLogger from your own loop holds the numbers the trainer would log."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.metrics import METRIC_NAMES, spectral_metrics  # noqa: E402
from grokaudit.reference_runs import metrics as trainer  # noqa: E402


def low_rank_batch(rng: np.random.Generator, r: int, rows: int, cols: int) -> np.ndarray:
    """Batches mixing full-rank, low-rank (exact zeros after masking) and ill-conditioned
    matrices: the tolerance and the 0·log 0 rule must agree, not only the SVD."""
    out = []
    for i in range(r):
        k = int(rng.integers(1, min(rows, cols) + 1))
        m = rng.normal(size=(rows, k)) @ rng.normal(size=(k, cols))
        if i % 3 == 2:
            m = m * np.logspace(0, -6, cols)[None, :]
        out.append(m * rng.uniform(1e-3, 1e3))
    return np.stack(out)


@pytest.mark.parametrize("shape", [(8, 97, 128), (5, 128, 97), (6, 12, 12), (4, 1, 30), (3, 40, 2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_trainer_and_numpy_agree_on_random_batches(shape: tuple[int, int, int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for batch in (rng.normal(size=shape), low_rank_batch(rng, *shape)):
        ref = trainer.spectral_metrics(torch.tensor(batch))
        got = spectral_metrics(batch)
        for k in METRIC_NAMES:
            np.testing.assert_allclose(got[k], ref[k].numpy(), rtol=1e-9, atol=0, err_msg=k)
            for i, m in enumerate(batch):  # one matrix at a time: Python floats
                assert abs(spectral_metrics(m)[k] - float(ref[k][i])) <= 1e-9 * float(ref[k][i])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_low_precision_weights_agree_as_the_trainer_reads_them(dtype: torch.dtype) -> None:
    # the trainer casts to float64 before its SVD; so does spectral_metrics(tensor)
    w = torch.randn(4, 33, 16, generator=torch.Generator().manual_seed(0)).to(dtype)
    ref = trainer.spectral_metrics(w)
    for i in range(4):
        got = spectral_metrics(w[i])
        for k in METRIC_NAMES:
            assert got[k] == pytest.approx(float(ref[k][i]), rel=1e-9, abs=0)


def test_a_parameter_with_grad_is_read_without_a_copy_of_the_graph() -> None:
    emb = torch.nn.Embedding(59, 24)
    out = spectral_metrics(emb.weight)  # requires_grad=True: detached, never backpropagated
    ref = trainer.spectral_metrics(emb.weight.detach()[None])
    for k in METRIC_NAMES:
        assert out[k] == pytest.approx(float(ref[k][0]), rel=1e-9, abs=0)
    assert emb.weight.grad is None


def test_the_singular_values_and_tolerance_agree() -> None:
    from grokaudit.metrics import singular_values

    rng = np.random.default_rng(7)
    batch = low_rank_batch(rng, 6, 30, 20)
    ref = trainer.singular_values(torch.tensor(batch)).numpy()
    got = singular_values(batch)
    np.testing.assert_array_equal(got > 0, ref > 0)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12 * float(ref.max()))
