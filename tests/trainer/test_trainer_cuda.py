"""The CUDA path trains what the CPU path trains (runs only where CUDA exists)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402


def _rows(cfgs: list[TrainConfig], device: str) -> list[dict[str, np.ndarray]]:
    tr = GroupTrainer(cfgs, torch.device(device))
    tr.run()
    return tr.rows


@pytest.mark.parametrize("arch", ["mlp", "transformer"])
def test_cuda_matches_cpu_in_float64(arch: str) -> None:
    base = (dict(p=11, alpha=0.5, d_emb=8, hidden=16) if arch == "mlp"
            else dict(arch="transformer", p=7, alpha=0.5, d_model=16, n_heads=2, mlp_ratio=2))
    cfgs = [TrainConfig(**base, steps=40, log_every=10, dtype="float64", seed=s, wd=w,
                        lr=3e-3) for s, w in ((0, 1.0), (1, 0.3))]
    cpu, gpu = _rows(cfgs, "cpu"), _rows(cfgs, "cuda")
    assert [int(x["step"][0]) for x in cpu] == [int(x["step"][0]) for x in gpu]
    for key in cpu[0]:
        a = np.array([x[key] for x in cpu], dtype=float)
        b = np.array([x[key] for x in gpu], dtype=float)
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-8, err_msg=key)
