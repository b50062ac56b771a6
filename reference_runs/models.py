"""Batched models: every parameter carries a leading run axis ``R``.

R runs train as one model: a forward pass maps per-run example indices ``[R, n]`` to logits
``[R, n, C]``; nothing mixes runs, so the gradient of the summed per-run losses is each run's own
gradient. Each run's initial parameters are drawn from a generator seeded with that run's seed
alone, in a fixed order, so run r is initialized identically whether it trains alone or in a batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import TrainConfig
from .tasks import Dataset

InitFn = Callable[[torch.Generator], torch.Tensor]


def _uniform(shape: tuple[int, ...], fan_in: int) -> InitFn:
    # torch.nn.Linear's default: U(−1/√fan_in, 1/√fan_in) for weight and bias.
    bound = 1.0 / math.sqrt(fan_in)
    return lambda g: (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound


def _normal(shape: tuple[int, ...], std: float) -> InitFn:
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64) * std


def _const(shape: tuple[int, ...], value: float) -> InitFn:
    return lambda g: torch.full(shape, value, dtype=torch.float64)


@dataclass
class Forward:
    """A forward pass: logits ``[R, n, C]`` before τ, plus attention internals (Transformer)."""

    logits: torch.Tensor
    attn_probs: list[torch.Tensor] | None = None  # per layer [R, n, heads, T, T]
    attn_scores: list[torch.Tensor] | None = None  # per layer QKᵀ/√d_k, [R, n, heads, T, T]


class BatchedModel(nn.Module):
    """Base: parameters in a fixed order, each tagged as weight matrix or not."""

    #: names of weight matrices: decayed by AdamW, counted in ‖W‖, rescaled by the clamp.
    matrices: tuple[str, ...] = ()

    def __init__(self, seeds: list[int], dtype: torch.dtype, device: torch.device,
                 spec: list[tuple[str, InitFn, bool]]) -> None:
        super().__init__()
        gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
        mats = []
        for name, init, is_matrix in spec:  # fixed order: the per-run RNG streams line up
            value = torch.stack([init(g) for g in gens]).to(device=device, dtype=dtype)
            self.register_parameter(name, nn.Parameter(value))
            if is_matrix:
                mats.append(name)
        self.matrices = tuple(mats)

    @property
    def n_runs(self) -> int:
        return int(next(self.parameters()).shape[0])

    def forward_idx(self, data: Dataset, idx: torch.Tensor, internals: bool = False,
                    runs: slice = slice(None)) -> Forward:
        """Logits of the runs ``runs`` (a slice of the run axis) on their examples ``idx``
        ``[len(runs), n]``. Slicing lets the trainer process a large batch in chunks of runs."""
        raise NotImplementedError

    def _w(self, name: str, runs: slice) -> torch.Tensor:
        return getattr(self, name)[runs]  # type: ignore[no-any-return]

    def emb_matrix(self) -> torch.Tensor:
        """The input embedding as ``[R, rows = tokens, cols = width]``."""
        raise NotImplementedError

    def unemb_matrix(self) -> torch.Tensor:
        """The unembedding (last layer) as ``[R, rows = classes, cols = width]``."""
        raise NotImplementedError


class BatchedMLP(BatchedModel):
    """Seed 000/002's MLP: ``[E_a; E_b] → Linear(2d, H) → GELU → Linear(H, p)``.

    The first layer factorizes: ``W1·[E_a; E_b] = P[a] + Q[b]`` with ``P = E·W1_top`` and
    ``Q = E·W1_bot`` (``p×H``), computed once per step instead of once per example. With
    ``depth = 2`` a second ``Linear(H, H)`` follows and both activations are ReLU (seed 003).
    For sparse parity there is no embedding: the first layer ``W1`` reads the bits and plays
    its part in the embedding metrics.
    """

    def __init__(self, cfg: TrainConfig, seeds: list[int], n_classes: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        d, h = cfg.d_emb, cfg.hidden
        self.parity = cfg.task == "parity"
        self.depth = cfg.depth
        spec: list[tuple[str, InitFn, bool]] = []
        if self.parity:
            n = cfg.parity_bits
            spec += [("W1", _uniform((n, h), n), True), ("b1", _uniform((h,), n), False)]
        else:
            spec += [("E", _normal((cfg.p, d), cfg.emb_std), True),  # N(0, emb_std²)
                     ("W1", _uniform((2 * d, h), 2 * d), True),
                     ("b1", _uniform((h,), 2 * d), False)]
        if self.depth == 2:
            spec += [("Wh", _uniform((h, h), h), True), ("bh", _uniform((h,), h), False)]
        spec += [("W2", _uniform((h, n_classes), h), True),
                 ("b2", _uniform((n_classes,), h), False)]
        super().__init__(seeds, dtype, device, spec)
        self.d = d
        self.act: Callable[[torch.Tensor], torch.Tensor] = F.relu if self.depth == 2 else F.gelu

    def forward_idx(self, data: Dataset, idx: torch.Tensor, internals: bool = False,
                    runs: slice = slice(None)) -> Forward:
        R, n = idx.shape
        W1, b1 = self._w("W1", runs), self._w("b1", runs)
        H = W1.shape[-1]
        if self.parity:
            xs = data.x[runs]
            x = xs.gather(1, idx[..., None].expand(R, n, xs.shape[-1])).to(W1.dtype)
            pre = torch.baddbmm(b1[:, None, :], x, W1)
        else:
            # Factorized first layer: two p×H tables per run, P = E·W1_top and Q = E·W1_bot,
            # stacked as rows [P; Q]; each example sums one row of each. embedding_bag does the
            # lookup and the sum in one op, with a row-wise backward (a gather/scatter_add pair
            # over [R, n, H] cost ~30% of the step).
            E = self._w("E", runs)
            p = E.shape[1]
            PQ = torch.cat([torch.bmm(E, W1[:, : self.d]), torch.bmm(E, W1[:, self.d:])], dim=1)
            base = (torch.arange(R, device=idx.device) * (2 * p))[:, None]
            rows = torch.stack([data.x[:, 0][idx] + base, data.x[:, 1][idx] + base + p], dim=-1)
            pre = F.embedding_bag(rows.reshape(R * n, 2), PQ.reshape(R * 2 * p, H),
                                  mode="sum").reshape(R, n, H) + b1[:, None, :]
        hid = self.act(pre)
        if self.depth == 2:
            hid = self.act(torch.baddbmm(self._w("bh", runs)[:, None, :], hid,
                                         self._w("Wh", runs)))
        return Forward(torch.baddbmm(self._w("b2", runs)[:, None, :], hid, self._w("W2", runs)))

    def emb_matrix(self) -> torch.Tensor:
        return self.W1.transpose(1, 2) if self.parity else self.E

    def unemb_matrix(self) -> torch.Tensor:
        return self.W2.transpose(1, 2)


def _rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on ``[..., T, heads, d_k]`` (positions 0..T−1)."""
    T, dk = x.shape[-3], x.shape[-1]
    half = dk // 2
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64, device=x.device) / half)
    ang = torch.arange(T, dtype=torch.float64, device=x.device)[:, None] * freq[None, :]
    cos = ang.cos().to(x.dtype)[:, None, :]
    sin = ang.sin().to(x.dtype)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class BatchedTransformer(BatchedModel):
    """A decoder-only Transformer on ``[a, b, =]`` (seeds 001, 002, 004), pre-LayerNorm on or off.

    Token embedding ``[p+1, d]`` (``=`` is token p), learned positions (or RoPE), ``n_layers``
    blocks of causal multi-head attention (no biases) and a GELU MLP, then an unembedding
    ``[d, p]`` read at the last position. With ``layernorm = False`` every LayerNorm is the
    identity and the model has no gains to exclude from decay.
    """

    def __init__(self, cfg: TrainConfig, seeds: list[int], n_classes: int,
                 dtype: torch.dtype, device: torch.device) -> None:
        d, L, m = cfg.d_model, cfg.n_layers, cfg.mlp_ratio * cfg.d_model
        self.p, self.L, self.n_heads, self.ln = cfg.p, L, cfg.n_heads, cfg.layernorm
        self.rope = cfg.pos == "rope"
        spec: list[tuple[str, InitFn, bool]] = [
            ("E", _normal((cfg.p + 1, d), 1.0 / math.sqrt(d)), True)]
        if not self.rope:
            spec.append(("pos", _normal((3, d), 1.0 / math.sqrt(d)), True))
        for i in range(L):
            if self.ln:
                spec += [(f"ln1_g{i}", _const((d,), 1.0), False),
                         (f"ln1_b{i}", _const((d,), 0.0), False)]
            spec += [(f"Wq{i}", _uniform((d, d), d), True), (f"Wk{i}", _uniform((d, d), d), True),
                     (f"Wv{i}", _uniform((d, d), d), True), (f"Wo{i}", _uniform((d, d), d), True)]
            if self.ln:
                spec += [(f"ln2_g{i}", _const((d,), 1.0), False),
                         (f"ln2_b{i}", _const((d,), 0.0), False)]
            spec += [(f"Win{i}", _uniform((d, m), d), True), (f"bin{i}", _uniform((m,), d), False),
                     (f"Wout{i}", _uniform((m, d), m), True), (f"bout{i}", _uniform((d,), m), False)]
        if self.ln:
            spec += [("lnf_g", _const((d,), 1.0), False), ("lnf_b", _const((d,), 0.0), False)]
        spec.append(("WU", _uniform((d, n_classes), d), True))
        super().__init__(seeds, dtype, device, spec)

    def _norm(self, x: torch.Tensor, g: str, b: str, runs: slice) -> torch.Tensor:
        if not self.ln:
            return x
        gain, bias = self._w(g, runs), self._w(b, runs)
        y = F.layer_norm(x, x.shape[-1:], eps=1e-5)
        return y * gain[:, None, None, :] + bias[:, None, None, :]

    def forward_idx(self, data: Dataset, idx: torch.Tensor, internals: bool = False,
                    runs: slice = slice(None)) -> Forward:
        R, n = idx.shape
        E = self._w("E", runs)
        d = E.shape[-1]
        heads, dk = self.n_heads, d // self.n_heads
        eq = torch.full((R, n, 1), self.p, dtype=torch.int64, device=idx.device)
        tok = torch.cat([data.x[idx], eq], dim=2)  # [R, n, 3]
        h = E.gather(1, tok.reshape(R, n * 3, 1).expand(R, n * 3, d)).reshape(R, n, 3, d)
        if not self.rope:
            h = h + self._w("pos", runs)[:, None, :, :]
        causal = torch.ones(3, 3, dtype=torch.bool, device=idx.device).tril()
        probs_all, scores_all = [], []
        for i in range(self.L):
            x = self._norm(h, f"ln1_g{i}", f"ln1_b{i}", runs)
            q, k, v = (torch.einsum("rntd,rde->rnte", x, self._w(f"W{c}{i}", runs))
                       .reshape(R, n, 3, heads, dk) for c in "qkv")
            if self.rope:
                q, k = _rope(q), _rope(k)
            scores = torch.einsum("rnthk,rnshk->rnhts", q, k) / math.sqrt(dk)
            probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
            att = torch.einsum("rnhts,rnshk->rnthk", probs, v).reshape(R, n, 3, d)
            h = h + torch.einsum("rntd,rde->rnte", att, self._w(f"Wo{i}", runs))
            x = self._norm(h, f"ln2_g{i}", f"ln2_b{i}", runs)
            x = F.gelu(torch.einsum("rntd,rdm->rntm", x, self._w(f"Win{i}", runs))
                       + self._w(f"bin{i}", runs)[:, None, None, :])
            h = h + torch.einsum("rntm,rmd->rntd", x, self._w(f"Wout{i}", runs)) \
                + self._w(f"bout{i}", runs)[:, None, None, :]
            if internals:
                probs_all.append(probs.detach())
                scores_all.append(scores.detach())
        last = self._norm(h, "lnf_g", "lnf_b", runs)[:, :, -1, :]
        logits = torch.bmm(last, self._w("WU", runs))
        if internals:
            return Forward(logits, probs_all, scores_all)
        return Forward(logits)

    def emb_matrix(self) -> torch.Tensor:
        return self.E[:, : self.p]  # the p number tokens; '=' is not an operand

    def unemb_matrix(self) -> torch.Tensor:
        return self.WU.transpose(1, 2)


def build_model(cfg: TrainConfig, seeds: list[int], n_classes: int,
                device: torch.device) -> BatchedModel:
    """The batched model for ``cfg``'s group, one run per seed."""
    dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
    if cfg.arch == "mlp":
        return BatchedMLP(cfg, seeds, n_classes, dtype, device)
    return BatchedTransformer(cfg, seeds, n_classes, dtype, device)
