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
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from .config import TrainConfig
from .tasks import Dataset

InitFn = Callable[[torch.Generator], torch.Tensor]
Activation = Callable[[torch.Tensor], torch.Tensor]


def _uniform(shape: tuple[int, ...], fan_in: int) -> InitFn:
    # torch.nn.Linear's default: U(−1/√fan_in, 1/√fan_in) for weight and bias.
    bound = 1.0 / math.sqrt(fan_in)
    return lambda g: (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound


def _normal(shape: tuple[int, ...], std: float) -> InitFn:
    return lambda g: torch.randn(shape, generator=g, dtype=torch.float64) * std


def _const(shape: tuple[int, ...], value: float) -> InitFn:
    return lambda g: torch.full(shape, value, dtype=torch.float64)


def weight_init(cfg: TrainConfig, shape: tuple[int, ...], fan_in: int) -> InitFn:
    """A weight matrix ``[fan_in, fan_out]``: torch's ``nn.Linear`` default U(±1/√fan_in), or
    N(0, 1/fan_in) (``weight_init``)."""
    if cfg.weight_init == "normal":
        return _normal(shape, 1.0 / math.sqrt(fan_in))
    return _uniform(shape, fan_in)


def bias_init(cfg: TrainConfig, shape: tuple[int, ...], fan_in: int) -> InitFn:
    """A bias: U(±1/√fan_in) (torch's default), N(0, bias_std²), or zero (``bias_init``)."""
    if cfg.bias_init == "normal":
        return _normal(shape, float(cfg.bias_std or 0.0))
    if cfg.bias_init == "zero":
        return _const(shape, 0.0)
    return _uniform(shape, fan_in)


def emb_std(cfg: TrainConfig, width: int) -> float:
    """The token embedding's init std: ``emb_std``, or 1/√width when it is 0."""
    return float(cfg.emb_std) if cfg.emb_std else 1.0 / math.sqrt(width)


def activation(cfg: TrainConfig) -> Activation:
    """GELU or ReLU (``act``); ``auto``: ReLU for a two-hidden-layer MLP, else GELU."""
    if cfg.act == "relu" or (cfg.act == "auto" and cfg.arch == "mlp" and cfg.depth == 2):
        return cast(Activation, F.relu)
    return cast(Activation, F.gelu)


@dataclass
class Forward:
    """A forward pass: logits ``[R, n, C]`` before τ, plus attention internals (Transformer)."""

    logits: torch.Tensor
    attn_probs: list[torch.Tensor] | None = None  # per layer [R, n, heads, T, T]
    attn_scores: list[torch.Tensor] | None = None  # per layer QKᵀ/√d_k, [R, n, heads, T, T]


class BatchedModel(nn.Module):  # type: ignore[misc]  # untyped base
    """Base: parameters in a fixed order, each tagged as weight matrix or not."""

    #: names of weight matrices (per-matrix norms ``norm_<name>`` are logged for these).
    matrices: tuple[str, ...] = ()
    #: names of the parameters AdamW decays (the recipe's ``decay``: the matrices, or all).
    decayed: tuple[str, ...] = ()
    #: names of the parameters in ``‖W‖`` and rescaled by the clamp (``norm_params``).
    normed: tuple[str, ...] = ()

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
        self.decayed = self.normed = self.matrices

    def set_groups(self, cfg: TrainConfig) -> None:
        """Decay and norm sets from the config (``decay``, ``norm_params``)."""
        every = tuple(n for n, _ in self.named_parameters())
        self.decayed = every if cfg.decay == "all" else self.matrices
        self.normed = every if cfg.norm_params == "all" else self.matrices

    @property
    def n_runs(self) -> int:
        return int(next(self.parameters()).shape[0])

    def forward_idx(self, data: Dataset, idx: torch.Tensor, internals: bool = False,
                    runs: slice = slice(None)) -> Forward:
        """Logits of the runs ``runs`` (a slice of the run axis) on their examples ``idx``
        ``[len(runs), n]``. Slicing lets the trainer process a large batch in chunks of runs."""
        raise NotImplementedError

    def _w(self, name: str, runs: slice) -> torch.Tensor:
        return getattr(self, name)[runs]

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
        # the recipe's fields are set by TrainConfig.__post_init__ (None only before it)
        d, h = cast(int, cfg.d_emb), cast(int, cfg.hidden)
        self.parity = cfg.task == "parity"
        self.depth = cfg.depth
        self.biases = bool(cfg.biases)
        spec: list[tuple[str, InitFn, bool]] = []

        def linear(w: str, b: str, n_in: int, n_out: int) -> None:
            # fixed order, weight then bias: the per-run RNG streams line up across configs
            spec.append((w, weight_init(cfg, (n_in, n_out), n_in), True))
            if self.biases:
                spec.append((b, bias_init(cfg, (n_out,), n_in), False))

        if self.parity:
            linear("W1", "b1", cfg.parity_bits, h)
        else:
            spec.append(("E", _normal((cfg.p, d), emb_std(cfg, d)), True))
            linear("W1", "b1", 2 * d, h)
        if self.depth == 2:
            linear("Wh", "bh", h, h)
        linear("W2", "b2", h, n_classes)
        super().__init__(seeds, dtype, device, spec)
        self.d = d
        self.act = activation(cfg)

    def _affine(self, x: torch.Tensor, w: str, b: str, runs: slice) -> torch.Tensor:
        W = self._w(w, runs)
        if self.biases:
            return torch.baddbmm(self._w(b, runs)[:, None, :], x, W)
        return torch.bmm(x, W)

    def forward_idx(self, data: Dataset, idx: torch.Tensor, internals: bool = False,
                    runs: slice = slice(None)) -> Forward:
        R, n = idx.shape
        W1 = self._w("W1", runs)
        H = W1.shape[-1]
        if self.parity:
            xs = data.x[runs]
            x = xs.gather(1, idx[..., None].expand(R, n, xs.shape[-1])).to(W1.dtype)
            pre = self._affine(x, "W1", "b1", runs)
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
                                  mode="sum").reshape(R, n, H)
            if self.biases:
                pre = pre + self._w("b1", runs)[:, None, :]
        hid = self.act(pre)
        if self.depth == 2:
            hid = self.act(self._affine(hid, "Wh", "bh", runs))
        return Forward(self._affine(hid, "W2", "b2", runs))

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
        # the recipe's fields are set by TrainConfig.__post_init__ (None only before it)
        d, L = cast(int, cfg.d_model), cast(int, cfg.n_layers)
        m = cast(int, cfg.mlp_ratio) * d
        self.p, self.L, self.n_heads, self.ln = cfg.p, L, cfg.n_heads, cfg.layernorm
        self.affine = bool(cfg.layernorm and cfg.ln_affine)  # LayerNorm gains/biases trained
        self.biases = bool(cfg.biases)
        self.rope = cfg.pos == "rope"
        self.act = activation(cfg)
        n_out = n_classes + 1 if cfg.out_eq else n_classes  # out_eq: '=' is a class too
        spec: list[tuple[str, InitFn, bool]] = [
            ("E", _normal((cfg.p + 1, d), emb_std(cfg, d)), True)]
        if not self.rope:
            spec.append(("pos", _normal((3, d), float(cfg.pos_gain or 1.0) / math.sqrt(d)), True))

        def ln(gain: str, bias: str) -> None:
            if self.affine:
                spec.extend([(gain, _const((d,), 1.0), False), (bias, _const((d,), 0.0), False)])

        for i in range(L):
            ln(f"ln1_g{i}", f"ln1_b{i}")
            spec += [(f"W{c}{i}", weight_init(cfg, (d, d), d), True) for c in "qkvo"]
            ln(f"ln2_g{i}", f"ln2_b{i}")
            spec.append((f"Win{i}", weight_init(cfg, (d, m), d), True))
            if self.biases:
                spec.append((f"bin{i}", bias_init(cfg, (m,), d), False))
            spec.append((f"Wout{i}", weight_init(cfg, (m, d), m), True))
            if self.biases:
                spec.append((f"bout{i}", bias_init(cfg, (d,), m), False))
        ln("lnf_g", "lnf_b")
        spec.append(("WU", weight_init(cfg, (d, n_out), d), True))
        super().__init__(seeds, dtype, device, spec)

    def _norm(self, x: torch.Tensor, g: str, b: str, runs: slice) -> torch.Tensor:
        if not self.ln:
            return x
        y = F.layer_norm(x, x.shape[-1:], eps=1e-5)
        if not self.affine:  # parameter-free LayerNorm (ln_affine = false)
            return y
        gain, bias = self._w(g, runs), self._w(b, runs)
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
            x = torch.einsum("rntd,rdm->rntm", x, self._w(f"Win{i}", runs))
            if self.biases:
                x = x + self._w(f"bin{i}", runs)[:, None, None, :]
            x = self.act(x)
            h = h + torch.einsum("rntm,rmd->rntd", x, self._w(f"Wout{i}", runs))
            if self.biases:
                h = h + self._w(f"bout{i}", runs)[:, None, None, :]
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
        return self.WU[:, :, : self.p].transpose(1, 2)  # the p number classes ('=' is not one)


def build_model(cfg: TrainConfig, seeds: list[int], n_classes: int,
                device: torch.device) -> BatchedModel:
    """The batched model for ``cfg``'s group, one run per seed."""
    dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
    model: BatchedModel
    if cfg.arch == "mlp":
        model = BatchedMLP(cfg, seeds, n_classes, dtype, device)
    else:
        model = BatchedTransformer(cfg, seeds, n_classes, dtype, device)
    model.set_groups(cfg)
    return model
