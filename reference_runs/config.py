"""The training configuration: one dataclass, one field per knob, validated in one place.

A *run* is one :class:`TrainConfig`. A sweep (``sweep.py``) expands a base config and a grid into
many runs; runs whose shapes match train together as one batched model (``train.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, cast

from grokaudit.engine import usable_cpus
from grokaudit.errors import ConfigError, ErrorCode

from .recipes import DEFAULT_RECIPE, RECIPE_FIELDS, recipe_arch, resolve

TASKS = ("add", "sub", "mul", "div", "parity")
ARCHS = ("mlp", "transformer")
LOSSES = ("ce", "mse")
DTYPES = ("float32", "float64")
POSITIONS = ("learned", "rope")
ACTS = ("auto", "gelu", "relu")
WEIGHT_INITS = ("uniform", "normal")
BIAS_INITS = ("uniform", "normal", "zero")
PARAM_SETS = ("matrices", "all")
LOG_GRIDS = ("linear", "geometric")
OPTIMIZERS = ("adamw", "cv-adamw")

#: The most optimizer steps a run may take (and the largest ``t_int``, ``log_every``): past it a
#: value is a typo (``steps = 1e20``), not a schedule.
STEPS_MAX = 10 ** 9
#: The most log points a grid may ask for (``log_points``, ``early_points``).
POINTS_MAX = 10 ** 7
#: The widest layer (``d_emb``, ``hidden``, ``d_model``, ``n_heads``); the memory check
#: (:func:`memory_need`) refuses smaller models that do not fit the machine.
DIM_MAX = 1 << 20
#: The inclusive range of each integer field, checked before anything is allocated.
INT_RANGES: dict[str, tuple[int, int]] = {
    "p": (1, 1 << 16), "parity_bits": (1, 62), "parity_k": (1, 62),
    "parity_samples": (1, 10 ** 8), "d_emb": (1, DIM_MAX), "hidden": (1, DIM_MAX),
    "depth": (1, 2), "n_layers": (1, 1024), "d_model": (1, DIM_MAX), "n_heads": (1, DIM_MAX),
    "mlp_ratio": (1, 1024), "batch_size": (0, 1 << 40), "t_int": (0, STEPS_MAX),
    "steps": (1, STEPS_MAX), "log_every": (0, STEPS_MAX), "log_points": (0, POINTS_MAX),
    "early_points": (0, POINTS_MAX), "seed": (0, 2 ** 63 - 1),
}
#: The most torch threads ``--threads`` may ask for per CPU of this machine (process engine):
#: more only oversubscribes the cores, and OpenMP's per-thread stacks exhaust memory (a
#: segfault at 100 000). With ``--engine ray`` the threads are a cluster node's: THREADS_MAX.
THREADS_PER_CPU = 4
THREADS_MAX = 1024


@dataclass(frozen=True)
class TrainConfig:
    # Fields whose default is None take their value from the recipe (recipes.py): the recipe's
    # value for the run's arch, else FALLBACK. A value given here overrides the recipe.
    # --- recipe ---
    recipe: str = DEFAULT_RECIPE  # public protocol the unset fields come from (see docs/trainer.md)
    # --- task and data ---
    task: str = "add"  # add | sub | mul | div (a·b⁻¹) mod p, or parity (sparse parity)
    p: int = 59  # modulus of the modular tasks (a prime, so that div is defined)
    alpha: float = 0.4  # train fraction of all p² pairs (p(p−1) for div), or of parity samples
    shared_split: bool | None = None  # every run uses seed 0's split instead of its own seed's
    parity_bits: int = 30  # sparse parity: input bits n
    parity_k: int = 3  # sparse parity: relevant bits k (the first k)
    parity_samples: int = 4000  # sparse parity: distinct random bit strings drawn per run
    # --- model ---
    arch: str | None = None  # mlp | transformer
    d_emb: int | None = None  # MLP: embedding width d (shared embedding E ∈ R^{p×d})
    hidden: int | None = None  # MLP: hidden width H
    depth: int | None = None  # MLP: 1 or 2 hidden layers
    n_layers: int | None = None  # Transformer: blocks (1–2 in the seeds)
    d_model: int | None = None  # Transformer: residual width
    n_heads: int | None = None  # Transformer: attention heads
    mlp_ratio: int | None = None  # Transformer: MLP width = mlp_ratio · d_model
    layernorm: bool | None = None  # Transformer: pre-LayerNorm on, or off (the seed-002 ablation)
    ln_affine: bool | None = None  # Transformer: LayerNorm gains and biases trained (else fixed)
    pos: str | None = None  # Transformer: learned absolute positions or rope
    out_eq: bool | None = None  # Transformer: readout over p + 1 tokens ('=' too), not p
    act: str | None = None  # gelu | relu | auto (GELU; ReLU for a two-hidden-layer MLP)
    biases: bool | None = None  # the MLP's / Transformer MLP block's biases exist
    # --- initialization ---
    emb_std: float | None = None  # std of the token embedding's normal init; 0 = 1/√width
    pos_gain: float | None = None  # learned positions ~ N(0, (pos_gain/√d_model)²)
    weight_init: str | None = None  # other matrices: uniform ±1/√fan_in | normal std 1/√fan_in
    bias_init: str | None = None  # uniform ±1/√fan_in | normal (std bias_std) | zero
    bias_std: float | None = None  # std of the biases when bias_init = normal
    # --- optimizer ---
    lr: float | None = None  # AdamW learning rate (constant)
    beta1: float | None = None  # AdamW β1
    beta2: float | None = None  # AdamW β2
    eps: float | None = None  # AdamW ε (added to √v̂)
    wd: float | None = None  # decoupled weight decay (p ← p·(1 − lr·wd)) on the decay set
    decay: str | None = None  # decayed parameters: matrices (weight matrices) | all
    norm_params: str | None = None  # parameters in weight_norm ‖W‖ and the clamp: matrices | all
    batch_size: int | None = None  # 0 = full batch (the seeds' protocol); else a minibatch size
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
    log_grid: str | None = None  # linear (every log_every + early grid) | geometric (log_points)
    log_every: int | None = None  # log every this many steps (0 = none, geometric grid only)
    log_points: int | None = None  # geometric grid: points log-spaced on [1, steps]
    early_points: int | None = None  # linear grid: extra log points geometric in [1, log_every)
    seed: int = 0  # seeds this run's data split and initialization

    def __post_init__(self) -> None:
        """Fill every field left None from the recipe (for this run's arch)."""
        arch = self.arch if self.arch is not None else recipe_arch(self.recipe)
        values = resolve(self.recipe, arch)
        for name in RECIPE_FIELDS:
            if getattr(self, name) is None:
                object.__setattr__(self, name, values[name])

    def validate(self) -> TrainConfig:
        """Return self, or raise :class:`ConfigError` naming the field and the fix."""
        def bad(name: str, why: str) -> ConfigError:
            return ConfigError(f"config field {name!r}: {why} (got {getattr(self, name)!r})", code=ErrorCode.OPTION_OUT_OF_RANGE)

        self._check_numbers(bad)
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
        # the recipe's fields are set by __post_init__ (None only before it)
        d_model, n_heads = cast(int, self.d_model), cast(int, self.n_heads)
        if self.arch == "transformer" and d_model % n_heads:
            raise bad("d_model", "must be divisible by n_heads")
        if self.pos == "rope" and (d_model // max(n_heads, 1)) % 2:
            raise bad("pos", "rope needs an even head width d_model/n_heads")
        for name, allowed in (("act", ACTS), ("weight_init", WEIGHT_INITS),
                              ("bias_init", BIAS_INITS), ("decay", PARAM_SETS),
                              ("norm_params", PARAM_SETS), ("log_grid", LOG_GRIDS)):
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {', '.join(allowed)}")
        for name in ("lr", "tau", "steps", "pos_gain"):
            if not getattr(self, name) > 0:
                raise bad(name, "must be > 0")
        for name in ("wd", "t_int", "batch_size", "early_points", "eps", "emb_std", "bias_std",
                     "log_every", "log_points"):
            if getattr(self, name) < 0:
                raise bad(name, "must be ≥ 0")
        for name in ("beta1", "beta2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise bad(name, "must lie in [0, 1)")
        log_every, log_points = cast(int, self.log_every), cast(int, self.log_points)
        if self.log_grid == "linear" and log_every <= 0:
            raise bad("log_every", "must be > 0 with log_grid = \"linear\"")
        if self.log_grid == "geometric" and log_points < 2:
            raise bad("log_points", "must be ≥ 2 with log_grid = \"geometric\"")
        if self.rho is not None and not self.rho > 0:
            raise bad("rho", "must be > 0, or absent for no clamp")
        if self.w_c is not None and not self.w_c > 0:
            raise bad("w_c", "must be > 0, or absent to measure it from a free control run")
        return self

    def _check_numbers(self, bad: Callable[[str, str], ConfigError]) -> None:
        """Every float field finite, every integer field within :data:`INT_RANGES`: before
        any check or allocation uses them (a primality test of ``p = 1e20`` would not end)."""
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, float) and not math.isfinite(v):
                raise bad(f.name, "must be a finite number (not nan or inf)")
            if isinstance(v, int) and f.name in INT_RANGES:
                lo, hi = INT_RANGES[f.name]
                if not lo <= v <= hi:
                    raise bad(f.name, f"must lie in [{lo}, {hi}]")
        if not 0.0 <= self.cv_mem_threshold <= 1.0:
            raise bad("cv_mem_threshold", "an accuracy: must lie in [0, 1]")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELD_NAMES = tuple(f.name for f in fields(TrainConfig))

#: Fields that may differ between runs that train together as one batched model: they become
#: per-run tensors. Every other field defines the model's shape or the schedule.
BATCHABLE = ("seed", "lr", "wd", "rho", "w_c", "t_int", "tau", "beta1", "beta2", "eps")


def from_dict(d: dict[str, Any], where: str = "config") -> TrainConfig:
    """Build a validated :class:`TrainConfig` from a mapping; unknown keys are an error. Keys
    the mapping lacks come from its recipe (``recipe``, else the default recipe)."""
    unknown = sorted(set(d) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys: {', '.join(FIELD_NAMES)}", code=ErrorCode.UNKNOWN_OPTION)
    name = d.get("recipe", DEFAULT_RECIPE)
    if not isinstance(name, str):
        raise ConfigError(f"{where}: key 'recipe' needs a recipe name (got {name!r})",
                          code=ErrorCode.INVALID_OPTION)
    arch = d.get("arch")
    resolve(name, arch if isinstance(arch, str) and arch in ARCHS else recipe_arch(name, where),
            where)  # an unknown recipe, or an arch it lacks, names the file/run
    types = {f.name: f.type for f in fields(TrainConfig)}
    clean: dict[str, Any] = {}
    for k, v in d.items():
        t = str(types[k])
        try:
            if v is None:
                clean[k] = None
            elif t.startswith("int"):
                if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
                    raise ValueError  # true is not the number 1 (nor a second seed 1)
                clean[k] = int(v)
            elif t.startswith("float"):
                if isinstance(v, bool):
                    raise ValueError
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


def check_run_options(*, threads: int | None, max_retries: int, engine: str,
                      max_minutes: float | None, checkpoint_minutes: float) -> None:
    """The ranges of ``train``'s options that are not config fields; raises
    :class:`ConfigError` (``OPTION_OUT_OF_RANGE``) naming the flag."""
    def bad(flag: str, why: str) -> ConfigError:
        return ConfigError(f"{flag}: {why}", code=ErrorCode.OPTION_OUT_OF_RANGE, option=flag)

    if threads is not None:
        cpus = usable_cpus()
        cap = THREADS_MAX if engine == "ray" else min(THREADS_MAX, THREADS_PER_CPU * cpus)
        if not 1 <= threads <= cap:
            where = "per Ray task" if engine == "ray" else \
                f"on this machine ({cpus} usable CPUs × {THREADS_PER_CPU})"
            raise bad("--threads", f"must lie in [1, {cap}] {where} (got {threads})")
    if not 0 <= max_retries <= 1000:
        raise bad("--max-retries", f"must lie in [0, 1000] (got {max_retries})")
    if max_minutes is not None and not (math.isfinite(max_minutes) and max_minutes > 0):
        raise bad("--max-minutes", f"must be a finite number > 0; leave it out for no limit "
                                   f"(got {max_minutes})")
    if not (math.isfinite(checkpoint_minutes) and checkpoint_minutes >= 0):
        raise bad("--checkpoint-minutes", f"must be a finite number ≥ 0 (got "
                                          f"{checkpoint_minutes})")


def n_examples(cfg: TrainConfig) -> int:
    """The examples of the task: p² pairs (p(p−1) for div), or the parity strings drawn."""
    if cfg.task == "parity":
        return min(cfg.parity_samples, 1 << cfg.parity_bits)
    return cfg.p * (cfg.p - 1) if cfg.task == "div" else cfg.p * cfg.p


def n_parameters(cfg: TrainConfig) -> int:
    """The parameters of one run's model (weights, biases and gains), for the memory check."""
    # the recipe's fields are set by __post_init__ (None only before it)
    n_cls = 2 if cfg.task == "parity" else cfg.p
    if cfg.arch == "mlp":
        d, h = cast(int, cfg.d_emb), cast(int, cfg.hidden)
        n_in = cfg.parity_bits if cfg.task == "parity" else 2 * d
        emb = 0 if cfg.task == "parity" else cfg.p * d
        hid = h * h + h if cfg.depth == 2 else 0
        return emb + n_in * h + h + hid + h * n_cls + n_cls
    d, L = cast(int, cfg.d_model), cast(int, cfg.n_layers)
    m = cast(int, cfg.mlp_ratio) * d
    return (cfg.p + 1) * d + 3 * d + L * (4 * d * d + 2 * d * m + m + 5 * d) \
        + d * (n_cls + 1) + 2 * d


def memory_need(cfg: TrainConfig, runs: int) -> int:
    """A lower bound, in bytes, of the memory one group of ``runs`` runs of ``cfg`` allocates:
    parameters, gradients and the two AdamW moments; the logits and hidden activations of an
    evaluation over every example (one tensor, not chunked); the examples; the log rows. The
    true peak is higher, so a group refused by it could never train here."""
    elt = 8 if cfg.dtype == "float64" else 4
    n = n_examples(cfg)
    n_cls = 2 if cfg.task == "parity" else cfg.p
    width = cast(int, cfg.hidden) if cfg.arch == "mlp" \
        else 3 * cast(int, cfg.mlp_ratio) * cast(int, cfg.d_model)
    parity = cfg.task == "parity"
    # examples: int64 pairs and labels shared by the runs, or each run's float64 bit strings
    # and labels (parity); each run's train mask (bool) and train indices (int64)
    shared = 0 if parity else 24 * n
    examples = (cfg.parity_bits * 8 + 8) * n if parity else 0
    examples += n + 8 * int(round(cfg.alpha * n))
    points = 2 + (cfg.steps // cfg.log_every if cfg.log_every else 0) \
        + min(cast(int, cfg.log_points), cfg.steps) + cast(int, cfg.early_points)
    per_run = (4 * n_parameters(cfg) * elt + n * (2 * n_cls + width) * elt + examples
               + points * 16 * 8)
    return runs * per_run + shared


def check_memory(cfg: TrainConfig, runs: int, available: int | None, device: str,
                 where: str) -> None:
    """Refuse (``OUT_OF_MEMORY``) a group of ``runs`` runs of ``cfg`` whose :func:`memory_need`
    exceeds the ``available`` bytes of ``device`` (None: unknown, not checked); ``where``
    names the group in the message."""
    if available is None:
        return
    need = memory_need(cfg, runs)
    if need > available:
        dims = "d_emb, hidden" if cfg.arch == "mlp" else "d_model, n_layers, mlp_ratio"
        raise ConfigError(
            f"{where}: {runs} run(s) trained together need at least {need / 2**30:.3g} GiB, "
            f"more than the {available / 2**30:.3g} GiB of {device} memory; train a smaller "
            f"model or task (p, {dims}, parity_samples), fewer steps or log points, or fewer "
            "runs together (split the grid, or --shard)", code=ErrorCode.OUT_OF_MEMORY)
