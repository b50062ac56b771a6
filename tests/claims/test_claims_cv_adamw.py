"""CvAdamW (seed 004 §3–4, z-score form with cold start) against known answers."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from grokaudit.reference_runs.cv_adamw import CvAdamW, ZScoreDecay  # noqa: E402


def _reference(cvs: list[float], accs: list[float], cold: bool, beta: float = 0.9,
               zt: float = 2.0, base: float = 0.1, eps: float = 1e-8) -> list[float]:
    """Equations (7)–(10) written out in plain Python, one report at a time."""
    mu = var = 0.0
    prev = None
    started = opened = False
    out = []
    for cv, acc in zip(cvs, accs):
        gate = acc >= 0.99
        opened = opened or gate
        if not started and (opened or not cold):
            started, prev = True, None
        z = 0.0
        if started and prev is not None:
            v = cv - prev
            mu_new = beta * mu + (1 - beta) * v
            var = beta * var + (1 - beta) * (v - mu) * (v - mu_new)
            mu = mu_new
            z = (v - mu) / (math.sqrt(max(var, 0.0)) + eps)
        if started:
            prev = cv
        out.append(base + max(0.0, z - zt) if gate else base)
    return out


CVS = [1.0, 1.1, 0.9, 1.0, 1.05, 1.0, 1.02, 1.5, 2.4, 3.0, 2.0, 1.0, 1.0, 0.8]
ACCS = [0.3, 0.6, 0.995, 0.999, 1.0, 1.0, 1.0, 1.0, 1.0, 0.97, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("cold", [True, False])
def test_controller_follows_equations_7_to_10(cold: bool) -> None:
    c = ZScoreDecay(0.1, cold_start=cold)
    got = [float(c.update(cv, a)) for cv, a in zip(CVS, ACCS)]
    assert got == pytest.approx(_reference(CVS, ACCS, cold), abs=1e-12)


def test_first_velocity_after_a_cold_start_has_z_of_three() -> None:
    c = ZScoreDecay(0.1)
    c.update(1.0, 1.0)  # gate opens: only sets C_v(t−1)
    wd = float(c.update(1.5, 1.0))  # Z = √(0.9/0.1) = 3 → λ = 0.1 + (3 − 2)
    assert float(c.z) == pytest.approx(3.0, rel=1e-6)
    assert wd == pytest.approx(1.1, rel=1e-6)


def test_actuator_is_gated_and_flat_cv_gives_base_decay() -> None:
    c = ZScoreDecay(0.1, cold_start=False)
    assert all(float(c.update(cv, 0.5)) == pytest.approx(0.1) for cv in (1, 5, 20, 80))
    c2 = ZScoreDecay(0.1)
    assert all(float(c2.update(2.0, 1.0)) == pytest.approx(0.1) for _ in range(10))


def test_batched_controller_is_elementwise() -> None:
    c = ZScoreDecay(torch.tensor([0.1, 0.5], dtype=torch.float64), shape=(2,))
    singles = [ZScoreDecay(0.1), ZScoreDecay(0.5)]
    for cv, a in zip(CVS, ACCS):
        both = c.update(torch.tensor([cv, 2 * cv], dtype=torch.float64),
                        torch.tensor([a, 1.0], dtype=torch.float64))
        s0 = float(singles[0].update(cv, a))
        s1 = float(singles[1].update(2 * cv, 1.0))
        assert both.tolist() == pytest.approx([s0, s1], abs=1e-12)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))


def _train(opt_fn, steps: int = 6, observe: bool = False) -> list[torch.Tensor]:
    m = _model()
    opt = opt_fn(m.parameters())
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 2, (16,), generator=torch.Generator().manual_seed(2))
    for t in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        if observe:
            opt.observe(1.0 + t, 0.5)  # gate closed: λ stays at base
        opt.step()
    return [p.detach().clone() for p in m.parameters()]


def test_with_the_gate_closed_it_is_exactly_adamw() -> None:
    ref = _train(lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1))
    ours = _train(lambda ps: CvAdamW(ps, lr=1e-2, weight_decay=0.1), observe=True)
    for a, b in zip(ref, ours):
        assert torch.allclose(a, b, atol=1e-7, rtol=1e-6)


def test_a_rising_cv_after_memorization_raises_the_decay_and_state_round_trips() -> None:
    m = _model()
    opt = CvAdamW(m.parameters(), lr=1e-3, weight_decay=0.1)
    opt.observe(1.0, 1.0)
    assert opt.observe(1.5, 1.0) > 0.1
    sd = opt.state_dict()
    opt2 = CvAdamW(_model().parameters(), lr=1e-3, weight_decay=0.1)
    opt2.load_state_dict(sd)
    assert opt2.current_weight_decay == pytest.approx(opt.current_weight_decay)
    assert opt2.observe(1.6, 1.0) == pytest.approx(opt.observe(1.6, 1.0))
