"""Many runs as one model: R runs trained together log what each run logs alone."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.models import build_model  # noqa: E402
from grokaudit.reference_runs.optim import BatchedAdamW  # noqa: E402
from grokaudit.reference_runs.tasks import build_dataset  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402

CPU = torch.device("cpu")


def _train(cfgs: list[TrainConfig]) -> list[dict[str, np.ndarray]]:
    tr = GroupTrainer(cfgs, CPU)
    tr.run()
    return tr.rows


def _assert_batched_equals_separate(cfgs: list[TrainConfig], rtol: float) -> None:
    together = _train(cfgs)
    for r, cfg in enumerate(cfgs):
        alone = _train([cfg])
        assert [int(x["step"][0]) for x in alone] == [int(x["step"][0]) for x in together]
        for key in alone[0]:
            a = np.array([x[key][0] for x in alone])
            b = np.array([x[key][r] for x in together])
            np.testing.assert_allclose(b, a, rtol=rtol, atol=1e-9, err_msg=f"{key}, run {r}")


def test_mlp_batched_equals_separate_with_per_run_hyperparameters() -> None:
    base = dict(p=11, alpha=0.5, d_emb=8, hidden=16, steps=40, log_every=10, dtype="float64")
    cfgs = [TrainConfig(**base, seed=0, lr=1e-2, wd=1.0),
            TrainConfig(**base, seed=1, lr=3e-3, wd=0.1, tau=2.0),
            TrainConfig(**base, seed=2, lr=5e-3, wd=3.0, rho=0.8, w_c=5.0, t_int=10)]
    _assert_batched_equals_separate(cfgs, rtol=1e-9)


def test_depth2_mse_minibatch_batched_equals_separate() -> None:
    base = dict(p=7, alpha=0.6, d_emb=6, hidden=10, depth=2, loss="mse", batch_size=10,
                steps=20, log_every=5, dtype="float64")
    cfgs = [TrainConfig(**base, seed=s, wd=w) for s, w in ((3, 0.5), (4, 2.0))]
    _assert_batched_equals_separate(cfgs, rtol=1e-9)


@pytest.mark.parametrize("layernorm", [True, False])
def test_transformer_batched_equals_separate(layernorm: bool) -> None:
    base = dict(arch="transformer", p=7, alpha=0.5, d_model=16, n_heads=2, mlp_ratio=2,
                layernorm=layernorm, steps=12, log_every=4, dtype="float64", lr=3e-3)
    cfgs = [TrainConfig(**base, seed=s, wd=w) for s, w in ((0, 1.0), (5, 0.3))]
    _assert_batched_equals_separate(cfgs, rtol=1e-8)


def test_parity_batched_equals_separate() -> None:
    base = dict(task="parity", parity_bits=8, parity_k=2, parity_samples=120, alpha=0.5,
                hidden=12, steps=15, log_every=5, dtype="float64", lr=1e-2)
    cfgs = [TrainConfig(**base, seed=s) for s in (0, 1)]
    _assert_batched_equals_separate(cfgs, rtol=1e-9)


def test_runs_get_their_own_split_and_init_unless_shared() -> None:
    cfgs = [TrainConfig(p=11, d_emb=4, hidden=4, seed=s) for s in (0, 1)]
    data = build_dataset(cfgs, CPU)
    assert not torch.equal(data.train_mask[0], data.train_mask[1])
    assert int(data.train_mask[0].sum()) == int(data.train_mask[1].sum()) == round(0.4 * 121)
    shared = build_dataset([TrainConfig(p=11, seed=s, shared_split=True) for s in (0, 1)], CPU)
    assert torch.equal(shared.train_mask[0], shared.train_mask[1])
    model = build_model(cfgs[0], [0, 1], 11, CPU)
    assert not torch.equal(model.E[0], model.E[1])


def test_adamw_matches_torch_adamw_for_one_run() -> None:
    """Our per-run AdamW against torch.optim.AdamW with decay on the weight matrices only."""
    cfg = TrainConfig(p=7, d_emb=5, hidden=6, dtype="float64")
    model = build_model(cfg, [0], 7, CPU)
    ref = {n: torch.nn.Parameter(p.detach()[0].clone()) for n, p in model.named_parameters()}
    decay = [ref[n] for n in model.matrices]
    no_decay = [p for n, p in ref.items() if n not in model.matrices]
    torch_opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.7},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=0.01, betas=(0.9, 0.98), eps=1e-8)
    one = torch.ones(1, dtype=torch.float64)
    ours = BatchedAdamW(model, 0.01 * one, 0.7 * one, 0.9 * one, 0.98 * one, 1e-8 * one)
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        for n, p in model.named_parameters():
            grad = torch.randn(p.shape[1:], generator=g, dtype=torch.float64)
            p.grad = grad[None].clone()
            ref[n].grad = grad.clone()
        ours.step()
        torch_opt.step()
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach()[0], ref[n].detach(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("arch", ["mlp", "transformer"])
def test_chunked_step_equals_one_chunk(arch: str) -> None:
    """Processing the runs of a step in chunks (the CPU cache optimization) changes nothing."""
    extra = dict(d_model=8, n_heads=2, mlp_ratio=2) if arch == "transformer" else {}
    cfgs = [TrainConfig(arch=arch, p=7, alpha=0.5, d_emb=6, hidden=8, steps=8, log_every=4,
                        dtype="float64", seed=s, wd=w, **extra)
            for s, w in ((0, 1.0), (1, 0.3), (2, 2.0))]
    whole = GroupTrainer(cfgs, CPU, chunk_elems=0)
    split = GroupTrainer(cfgs, CPU, chunk_elems=1)  # one run per chunk
    assert len(split._chunks) == 3 and len(whole._chunks) == 1
    whole.run()
    split.run()
    for a, b in zip(whole.rows, split.rows):
        for key in a:
            np.testing.assert_allclose(b[key], a[key], rtol=1e-12, atol=1e-12, err_msg=key)
