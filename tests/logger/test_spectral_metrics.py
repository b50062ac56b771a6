"""grokaudit.metrics.spectral_metrics against matrices whose spectrum is known by hand.

numpy only: nothing here imports torch (the agreement with the trainer is
tests/trainer/test_trainer_spectral_agreement.py).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.metrics import METRIC_NAMES, singular_values, spectral_metrics


def with_singular_values(s: list[float], rows: int, cols: int, seed: int) -> np.ndarray:
    """A rows×cols matrix U·diag(s)·Vᵀ with random orthonormal U, V."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(rows, rows)))
    v, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    d = np.zeros((rows, cols))
    d[: len(s), : len(s)] = np.diag(s)
    return u @ d @ v.T


def by_formula(s: np.ndarray) -> dict[str, float]:
    """The docs/metrics.md formulas, written out independently of the module."""
    s = s[s > 0]
    q = s / s.sum()
    q2 = s**2 / (s**2).sum()
    return {"erank": math.exp(-(q * np.log(q)).sum()),
            "erank2": math.exp(-(q2 * np.log(q2)).sum()),
            "pr": (s**2).sum() ** 2 / (s**4).sum(),
            "srank": (s**2).sum() / s.max() ** 2}


@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_identity_has_every_rank_equal_to_n(n: int) -> None:
    out = spectral_metrics(np.eye(n))
    assert set(out) == set(METRIC_NAMES)
    for k in METRIC_NAMES:
        assert type(out[k]) is float
        assert out[k] == pytest.approx(n, rel=1e-12)


@pytest.mark.parametrize("shape", [(7, 5), (5, 7), (1, 9), (9, 1)])
def test_rank_one_is_one_whatever_the_rounding(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(0)
    m = np.outer(rng.normal(size=shape[0]), rng.normal(size=shape[1]))
    out = spectral_metrics(m)
    for k in METRIC_NAMES:
        assert out[k] == pytest.approx(1.0, rel=1e-12), k


def test_hand_values_of_a_known_spectrum() -> None:
    # σ = (4, 2, 1, 1): σ/Σσ = (1/2, 1/4, 1/8, 1/8), H = 1.75 ln 2 → erank = 2^1.75;
    # σ² = (16, 4, 1, 1): Σσ² = 22, Σσ⁴ = 274.
    out = spectral_metrics(with_singular_values([4, 2, 1, 1], 6, 5, seed=0))
    assert out["erank"] == pytest.approx(2**1.75, rel=1e-12)
    q2 = np.array([16, 4, 1, 1]) / 22
    assert out["erank2"] == pytest.approx(math.exp(-(q2 * np.log(q2)).sum()), rel=1e-12)
    assert out["pr"] == pytest.approx(22**2 / 274, rel=1e-12)
    assert out["srank"] == pytest.approx(22 / 16, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_diagonal_with_given_singular_values_matches_the_formulas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = np.sort(rng.uniform(0.1, 10.0, size=6))[::-1]
    diag = np.zeros((8, 6))
    diag[:6, :6] = np.diag(rng.permutation(s) * rng.choice([-1, 1], size=6))  # signs, order
    for m in (diag, diag.T, with_singular_values(list(s), 8, 6, seed)):
        out = spectral_metrics(m)
        want = by_formula(s)
        for k in METRIC_NAMES:
            assert out[k] == pytest.approx(want[k], rel=1e-12), k


def test_rounding_noise_never_adds_rank() -> None:
    # rank 2 with equal singular values, the three zeros being float64 noise: exactly 2
    m = with_singular_values([3, 3], 7, 5, seed=1)
    assert np.count_nonzero(np.linalg.svd(m, compute_uv=False) > 0) > 2  # noise present
    out = spectral_metrics(m)
    for k in METRIC_NAMES:
        assert out[k] == pytest.approx(2.0, rel=1e-12)
    s = singular_values(m)
    assert s.shape == (5,) and np.count_nonzero(s) == 2


def test_values_lie_between_one_and_min_dimension() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        r, c = rng.integers(1, 12, size=2)
        out = spectral_metrics(rng.normal(size=(r, c)) * rng.uniform(1e-3, 1e3))
        for k in METRIC_NAMES:
            assert 1 - 1e-12 <= out[k] <= min(r, c) + 1e-9


def test_scale_invariant_and_transpose_invariant() -> None:
    m = np.random.default_rng(4).normal(size=(9, 4))
    a, b, c = spectral_metrics(m), spectral_metrics(1e-6 * m), spectral_metrics(m.T)
    for k in METRIC_NAMES:
        assert b[k] == pytest.approx(a[k], rel=1e-12)
        assert c[k] == pytest.approx(a[k], rel=1e-12)


def test_batch_gives_arrays_equal_to_one_at_a_time() -> None:
    batch = np.random.default_rng(5).normal(size=(4, 6, 3))
    out = spectral_metrics(batch)
    for k in METRIC_NAMES:
        assert out[k].shape == (4,) and out[k].dtype == np.float64
        np.testing.assert_allclose(out[k], [spectral_metrics(m)[k] for m in batch], rtol=1e-13)
    with pytest.raises(ConfigError) as e:
        spectral_metrics(batch, batched=False)
    assert e.value.code is ErrorCode.INVALID_OPTION
    with pytest.raises(ConfigError):
        spectral_metrics(batch[0], batched=True)


def test_array_likes_and_dtypes_are_read_as_float64() -> None:
    lists = [[1, 0, 0], [0, 2, 0]]
    want = spectral_metrics(np.array(lists, dtype=np.float64))
    for m in (lists, np.array(lists, dtype=np.int32), np.array(lists, dtype=np.float32),
              np.array(lists, dtype=np.float16), np.asfortranarray(np.array(lists, float))):
        assert spectral_metrics(m) == want


class FakeTensor:
    """Duck-types the parts of a torch tensor spectral_metrics uses, without torch."""

    __module__ = "torch"

    def __init__(self, a: np.ndarray, device: str = "cuda") -> None:
        self.a, self.device, self.calls = a, device, []

    def is_complex(self) -> bool:
        return False

    def is_floating_point(self) -> bool:
        return True

    def detach(self) -> FakeTensor:
        self.calls.append("detach")
        return self

    def cpu(self) -> FakeTensor:
        self.calls.append("cpu")
        self.device = "cpu"
        return self

    def double(self) -> FakeTensor:
        self.calls.append("double")
        return self

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if self.device != "cpu":
            raise TypeError("can't convert cuda tensor to numpy")
        return self.a


def test_a_device_tensor_is_detached_and_moved_to_the_cpu_first() -> None:
    t = FakeTensor(np.eye(3))
    assert spectral_metrics(t)["erank"] == pytest.approx(3.0, rel=1e-12)
    assert t.calls == ["detach", "cpu", "double"]


@pytest.mark.parametrize("bad, code", [
    (np.ones(4), ErrorCode.INVALID_OPTION),
    (np.ones((2, 2, 2, 2)), ErrorCode.INVALID_OPTION),
    (np.float64(3.0), ErrorCode.INVALID_OPTION),
    (np.zeros((0, 3)), ErrorCode.INVALID_OPTION),
    (np.zeros((3, 4)), ErrorCode.NOT_POSITIVE),
    (np.stack([np.eye(3), np.zeros((3, 3))]), ErrorCode.NOT_POSITIVE),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), ErrorCode.INFINITE_VALUE),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), ErrorCode.INFINITE_VALUE),
    (np.eye(2, dtype=complex), ErrorCode.BAD_COLUMN_TYPE),
    (np.eye(2, dtype=bool), ErrorCode.BAD_COLUMN_TYPE),
    ([["a", "b"], ["c", "d"]], ErrorCode.BAD_COLUMN_TYPE),
    ([[1.0, 2.0], [3.0]], ErrorCode.BAD_COLUMN_TYPE),
])
def test_invalid_matrices_are_refused_with_a_code(bad: object, code: ErrorCode) -> None:
    with pytest.raises(ConfigError) as e:
        spectral_metrics(bad)
    assert e.value.code is code
    assert e.value.option == "matrix"
    assert "spectral_metrics" in str(e.value)


def test_the_module_imports_no_torch() -> None:
    code = ("import sys, numpy as np; from grokaudit.metrics import spectral_metrics; "
            "spectral_metrics(np.eye(3)); import grokaudit.logger; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
