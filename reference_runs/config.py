"""The training configuration: one dataclass, one field per knob, validated in one place.

A *run* is one :class:`TrainConfig`. A sweep (``sweep.py``) expands a base config and a grid into
many runs; runs whose shapes match train together as one batched model (``train.py``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from grokaudit.errors import ConfigError, ErrorCode

TASKS = ("add", "sub", "mul", "div", "parity")
ARCHS = ("mlp", "transformer")
LOSSES = ("ce", "mse")
DTYPES = ("float32", "float64")
POSITIONS = ("learned", "rope")
OPTIMIZERS = ("adamw", "cv-adamw")


@dataclass(frozen=True)
class TrainConfig:
    # --- task and data ---
    task: str = "add"  # add | sub | mul | div (a·b⁻¹) mod p, or parity (sparse parity)
    p: int = 59  # modulus of the modular tasks (a prime, so that div is defined)
    alpha: float = 0.4  # train fraction of all p² pairs (p(p−1) for div), or of parity samples
    shared_split: bool = False  # every run uses seed 0's split instead of its own seed's
    parity_bits: int = 30  # sparse parity: input bits n
    parity_k: int = 3  # sparse parity: relevant bits k (the first k)
    parity_samples: int = 4000  # sparse parity: distinct random bit strings drawn per run
    # --- model ---
    arch: str = "mlp"  # mlp | transformer
    d_emb: int = 128  # MLP: embedding width d (shared embedding E ∈ R^{p×d})
    hidden: int = 256  # MLP: hidden width H
    depth: int = 1  # MLP: 1 (one GELU hidden layer) or 2 (two ReLU hidden layers)
    emb_std: float = 1.0  # MLP: std of the embedding's normal init (nn.Embedding's default is 1)
    n_layers: int = 1  # Transformer: blocks (1–2 in the seeds)
    d_model: int = 128  # Transformer: residual width
    n_heads: int = 4  # Transformer: attention heads
    mlp_ratio: int = 4  # Transformer: MLP width = mlp_ratio · d_model
    layernorm: bool = True  # Transformer: pre-LayerNorm on (True) or off (the seed-002 ablation)
    pos: str = "learned"  # Transformer: learned absolute positions or rope
    # --- optimizer ---
    lr: float = 1e-3  # AdamW learning rate (constant)
    beta1: float = 0.9  # AdamW β1
    beta2: float = 0.98  # AdamW β2
    eps: float = 1e-8  # AdamW ε
    wd: float = 1.0  # decoupled weight decay, on weight matrices only
    batch_size: int = 0  # 0 = full batch (the seeds' protocol); else a per-run minibatch size
    optimizer: str = "adamw"  # adamw | cv-adamw (seed 004: decay raised online from attn_cv)
    cv_beta_z: float = 0.9  # cv-adamw: EMA factor of the specific-heat velocity statistics
    cv_z_thresh: float = 2.0  # cv-adamw: z-score of the velocity above which decay is raised
    cv_mem_threshold: float = 0.99  # cv-adamw: train accuracy that opens the memorization gate
    # --- interventions ---
    rho: float | None = None  # norm budget: clamp ‖W‖ = rho·w_c from t_int on (None = no clamp)
    w_c: float | None = None  # reference norm; None = median norm at grok of a free control run
    t_int: int = 0  # first step at which the clamp acts
    tau: float = 1.0  # output temperature: logits are divided by tau (not a parameter)
    loss: str = "ce"  # ce (cross-entropy) | mse (on one-hot targets)
    dtype: str = "float32"  # float32 | float64 (parameters, optimizer state, forward pass)
    # --- schedule and logging ---
    steps: int = 10_000  # optimizer steps
    log_every: int = 100  # log every this many steps (plus an early geometric grid)
    early_points: int = 16  # extra log points on a geometric grid in [1, log_every)
    seed: int = 0  # seeds this run's data split and initialization

    def validate(self) -> TrainConfig:
        """Return self, or raise :class:`ConfigError` naming the field and the fix."""
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"config field {name!r}: {why} (got {getattr(self, name)!r})", code=ErrorCode.OPTION_OUT_OF_RANGE)

        if self.task not in TASKS:
            raise bad("task", f"must be one of {', '.join(TASKS)}")
        if self.arch not in ARCHS:
            raise bad("arch", f"must be one of {', '.join(ARCHS)}")
        if self.loss not in LOSSES:
            raise bad("loss", f"must be one of {', '.join(LOSSES)}")
        if self.dtype not in DTYPES:
            raise bad("dtype", f"must be one of {', '.join(DTYPES)}")
        if self.pos not in POSITIONS:
            raise bad("pos", f"must be one of {', '.join(POSITIONS)}")
        if self.optimizer not in OPTIMIZERS:
            raise bad("optimizer", f"must be one of {', '.join(OPTIMIZERS)}")
        if self.optimizer == "cv-adamw" and self.arch != "transformer":
            raise bad("optimizer", "cv-adamw reads the attention specific heat: use it with "
                                   "arch = \"transformer\"")
        if not 0.0 < self.cv_beta_z < 1.0:
            raise bad("cv_beta_z", "must lie in (0, 1)")
        if self.task != "parity":
            if self.p < 3 or any(self.p % q == 0 for q in range(2, int(math.isqrt(self.p)) + 1)):
                raise bad("p", "must be a prime ≥ 3")
        else:
            if self.arch != "mlp":
                raise bad("arch", "sparse parity is trained with the MLP only")
            if not 1 <= self.parity_k <= self.parity_bits <= 62:
                raise bad("parity_k", "needs 1 ≤ parity_k ≤ parity_bits ≤ 62")
        if not 0.0 < self.alpha < 1.0:
            raise bad("alpha", "train fraction must lie in (0, 1)")
        if self.depth not in (1, 2):
            raise bad("depth", "must be 1 or 2")
        if self.arch == "transformer" and self.d_model % self.n_heads:
            raise bad("d_model", "must be divisible by n_heads")
        if self.pos == "rope" and (self.d_model // max(self.n_heads, 1)) % 2:
            raise bad("pos", "rope needs an even head width d_model/n_heads")
        for name in ("lr", "tau", "steps", "log_every", "emb_std"):
            if not getattr(self, name) > 0:
                raise bad(name, "must be > 0")
        for name in ("wd", "t_int", "batch_size", "early_points", "eps"):
            if getattr(self, name) < 0:
                raise bad(name, "must be ≥ 0")
        if self.rho is not None and not self.rho > 0:
            raise bad("rho", "must be > 0, or absent for no clamp")
        if self.w_c is not None and not self.w_c > 0:
            raise bad("w_c", "must be > 0, or absent to measure it from a free control run")
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELD_NAMES = tuple(f.name for f in fields(TrainConfig))

#: Fields that may differ between runs that train together as one batched model: they become
#: per-run tensors. Every other field defines the model's shape or the schedule.
BATCHABLE = ("seed", "lr", "wd", "rho", "w_c", "t_int", "tau", "beta1", "beta2", "eps")


def from_dict(d: dict[str, Any], where: str = "config") -> TrainConfig:
    """Build a validated :class:`TrainConfig` from a mapping; unknown keys are an error."""
    unknown = sorted(set(d) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys: {', '.join(FIELD_NAMES)}", code=ErrorCode.UNKNOWN_OPTION)
    types = {f.name: f.type for f in fields(TrainConfig)}
    clean: dict[str, Any] = {}
    for k, v in d.items():
        t = str(types[k])
        try:
            if v is None:
                clean[k] = None
            elif t.startswith("int"):
                if isinstance(v, float) and not v.is_integer():
                    raise ValueError
                clean[k] = int(v)
            elif t.startswith("float"):
                clean[k] = float(v)
            elif t.startswith("bool"):
                if not isinstance(v, bool):
                    raise ValueError
                clean[k] = v
            else:
                clean[k] = str(v)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: key {k!r} needs a {t} (got {v!r})", code=ErrorCode.INVALID_OPTION) from None
    return TrainConfig(**clean).validate()


def group_key(cfg: TrainConfig) -> tuple[Any, ...]:
    """Runs with equal keys have equal shapes and schedules and can train as one batch."""
    return tuple(getattr(cfg, n) for n in FIELD_NAMES if n not in BATCHABLE)
