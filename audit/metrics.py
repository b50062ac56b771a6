"""Spectral metrics of a weight matrix, in numpy: the representation columns the audit reads.

``spectral_metrics(matrix)`` returns the effective rank (``erank``, on σ), the squared-normalized
effective rank (``erank2``, on σ²), the participation ratio (``pr``) and the stable rank
(``srank``) with exactly the definitions of the bundled trainer
(``grokaudit.reference_runs.metrics.spectral_metrics``, ``docs/metrics.md``): a float64 SVD;
singular values at or below ``σ_1 · max(rows, cols) · ε_float64`` count as zero (numpy's
``matrix_rank`` tolerance, so rounding noise never adds rank); ``0 · log 0 = 0``.

It needs numpy only: a torch tensor (on any device, with or without ``requires_grad``) is
detached, moved to the CPU and cast to float64 through its own methods; torch is never imported
here. Log the values as ``emb_erank``, ``emb_pr``… (a ``<matrix>_<metric>`` column name), and
``grokaudit check`` audits them by default.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import ConfigError, ErrorCode

__all__ = ["METRIC_NAMES", "singular_values", "spectral_metrics"]

#: The keys of :func:`spectral_metrics`, in order.
METRIC_NAMES = ("erank", "erank2", "pr", "srank")


def _as_float64(matrix: Any) -> npt.NDArray[np.float64]:
    """``matrix`` as a float64 numpy array, refusing what is not a real numeric array."""
    x = matrix
    if type(x).__module__.split(".")[0] == "torch":
        # a torch tensor: detach (requires_grad), move to the CPU (CUDA, MPS) and upcast there
        # (bfloat16 has no numpy dtype); the trainer also casts to float64 before its SVD
        if getattr(x, "is_complex", None) is not None and x.is_complex():
            raise ConfigError("spectral_metrics: the matrix is complex; pass a real matrix",
                              code=ErrorCode.BAD_COLUMN_TYPE, option="matrix")
        if hasattr(x, "detach"):
            x = x.detach()
        if hasattr(x, "cpu"):
            x = x.cpu()
        if hasattr(x, "double") and getattr(x, "is_floating_point", lambda: False)():
            x = x.double()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"spectral_metrics: cannot read the matrix as an array ({exc}); "
                          "pass a numpy array, a tensor or nested lists of numbers",
                          code=ErrorCode.BAD_COLUMN_TYPE, option="matrix") from None
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
        raise ConfigError(f"spectral_metrics: the matrix has dtype {arr.dtype}; it must hold "
                          "real numbers (float or int)", code=ErrorCode.BAD_COLUMN_TYPE,
                          option="matrix")
    return np.asarray(arr, dtype=np.float64)


def _validated(matrix: Any) -> npt.NDArray[np.float64]:
    arr = _as_float64(matrix)
    if arr.ndim not in (2, 3):
        raise ConfigError(f"spectral_metrics: expected a 2-D matrix (or a 3-D batch of "
                          f"matrices), got {arr.ndim}-D with shape {arr.shape}; a vector has no "
                          "spectrum: reshape it, or pass a weight matrix",
                          code=ErrorCode.INVALID_OPTION, option="matrix")
    if 0 in arr.shape:
        raise ConfigError(f"spectral_metrics: the matrix is empty (shape {arr.shape})",
                          code=ErrorCode.INVALID_OPTION, option="matrix")
    finite = np.isfinite(arr)
    if not finite.all():
        n = int((~finite).sum())
        raise ConfigError(f"spectral_metrics: the matrix holds {n} NaN or ±inf value(s) (the "
                          "weights diverged?); its spectrum is undefined",
                          code=ErrorCode.INFINITE_VALUE, option="matrix")
    zero = np.atleast_1d(~arr.any(axis=(-2, -1)))
    if arr.ndim == 2 and bool(zero[0]):
        raise ConfigError("spectral_metrics: the matrix is all zeros; it has no spectrum (every "
                          "rank measure is 0/0)", code=ErrorCode.NOT_POSITIVE, option="matrix")
    if arr.ndim == 3 and bool(zero.any()):
        raise ConfigError(f"spectral_metrics: matrix {int(np.argmax(zero))} of the batch is all "
                          "zeros; it has no spectrum (every rank measure is 0/0)",
                          code=ErrorCode.NOT_POSITIVE, option="matrix")
    return arr


def _masked_singular_values(arr: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``[..., k]`` descending float64 singular values, those at or below the tolerance set
    to exactly 0 (the trainer's ``singular_values``)."""
    s = np.linalg.svd(arr, compute_uv=False)
    tol = s[..., :1] * max(arr.shape[-2:]) * np.finfo(np.float64).eps
    out: npt.NDArray[np.float64] = np.where(s > tol, s, 0.0)
    return out


def singular_values(matrix: Any) -> npt.NDArray[np.float64]:
    """Float64 singular values of a matrix ``[rows, cols]`` (or a batch ``[R, rows, cols]``),
    descending, with values at or below ``σ_1 · max(rows, cols) · ε_float64`` set to 0."""
    return _masked_singular_values(_validated(matrix))


def _entropy_rank(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``exp(H(w / Σw))`` over the last axis, with ``0 · log 0 = 0``."""
    q = w / w.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    out: npt.NDArray[np.float64] = np.exp(-terms.sum(axis=-1))
    return out


def spectral_metrics(matrix: Any, *, batched: bool | None = None) -> dict[str, Any]:
    """Effective rank, squared-normalized effective rank, participation ratio and stable rank.

    ``matrix``: a 2-D array-like ``[rows, cols]`` (a numpy array, nested lists, a torch tensor on
    any device, with or without ``requires_grad``…) → ``{"erank", "erank2", "pr", "srank"}`` as
    Python floats. A 3-D batch ``[R, rows, cols]`` → the same keys, each a float64 array ``[R]``
    (``batched=True`` insists on a batch, ``batched=False`` on one matrix).

    With ``σ_1 ≥ … ≥ σ_k`` the masked float64 singular values:
    ``erank = exp(H(σ/Σσ))``, ``erank2 = exp(H(σ²/Σσ²))``, ``pr = (Σσ²)² / Σσ⁴``,
    ``srank = Σσ² / σ_1²``, where ``H(q) = −Σ q_i log q_i``. All lie in ``[1, min(rows, cols)]``.

    Raises :class:`~grokaudit.ConfigError` for a matrix that is not 2-D (or 3-D), is empty,
    holds NaN/±inf, is all zeros, or does not hold real numbers.
    """
    arr = _validated(matrix)
    if batched is not None and (arr.ndim == 3) != batched:
        want = "a 3-D batch [R, rows, cols]" if batched else "one 2-D matrix [rows, cols]"
        raise ConfigError(f"spectral_metrics: batched={batched} expects {want}, got shape "
                          f"{arr.shape}", code=ErrorCode.INVALID_OPTION, option="batched")
    s = _masked_singular_values(arr)
    s2 = s * s
    sum2 = s2.sum(axis=-1)
    out = {
        "erank": _entropy_rank(s),
        "erank2": _entropy_rank(s2),
        "pr": sum2 ** 2 / (s2 * s2).sum(axis=-1),
        "srank": sum2 / s2[..., 0],
    }
    if arr.ndim == 2:
        return {k: float(v) for k, v in out.items()}
    return out
