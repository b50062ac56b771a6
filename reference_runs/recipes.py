"""Recipes: the complete training protocol of a public runner or a seed paper, as data.

A :class:`Recipe` fixes everything a public runner fixes and a sweep file would otherwise have to
repeat: the initialization of every parameter (distribution and scale), the biases, the Adam betas
and ε, which parameters decay and which count in ``‖W‖``, the batch, the split per seed, the
logging grid, and the reference widths and optimizer settings. A config names its recipe
(``recipe = "critical-norm"``, the default, or ``grokaudit train --recipe NAME``); any field the
config sets overrides the recipe, and the manifest echoes the recipe and every override.

Resolution of one field of a run, first match wins:

1. the value the config (sweep file, grid, flag, or Python call) gives;
2. the recipe's value for the run's ``arch`` (``archs[arch]``), then its ``common`` value;
3. the recipe's ``base`` recipe, resolved the same way (seed recipes fill what their paper leaves
   open from the public runner they name);
4. :data:`FALLBACK`, the values the trainer used before recipes existed (recipe ``"legacy"``).

Every recipe lists what its source leaves open (``open``) and what this project chose there. The
tables are documented in ``docs/trainer.md`` (section Recipes); a test checks the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from grokaudit.errors import ConfigError, ErrorCode

#: The recipe a config gets when it names none: the public runner behind seed 000's and seed
#: 002's MLP results (ClevixLab/critical-norm-grokking), the only recipe whose public logs this
#: project reproduces (docs/trainer.md, "Reproduction").
DEFAULT_RECIPE = "critical-norm"

#: The values of every recipe-controlled field when no recipe sets them: the trainer's defaults
#: before recipes existed. ``emb_std = 0`` means N(0, 1/width); ``act = "auto"`` means GELU, or
#: ReLU for a two-hidden-layer MLP.
FALLBACK: Mapping[str, Any] = MappingProxyType({
    "arch": "mlp", "d_emb": 128, "hidden": 256, "depth": 1,
    "n_layers": 1, "d_model": 128, "n_heads": 4, "mlp_ratio": 4, "layernorm": True,
    "pos": "learned", "pos_gain": 1.0, "ln_affine": True, "out_eq": False,
    "emb_std": 1.0, "weight_init": "uniform", "bias_init": "uniform", "bias_std": 0.0,
    "biases": True, "act": "auto",
    "lr": 1e-3, "beta1": 0.9, "beta2": 0.98, "eps": 1e-8, "wd": 1.0, "batch_size": 0,
    "decay": "matrices", "norm_params": "matrices", "shared_split": False,
    "log_grid": "linear", "log_every": 100, "log_points": 0, "early_points": 16,
})
#: The legacy Transformer's token and position embeddings were N(0, 1/d_model) already.
FALLBACK_ARCH: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "mlp": MappingProxyType({}),
    "transformer": MappingProxyType({"emb_std": 0.0}),
})

#: Fields a recipe may set (and the config may override).
RECIPE_FIELDS = tuple(FALLBACK)


@dataclass(frozen=True)
class Recipe:
    """One public training protocol: field values (``common`` to every architecture it defines,
    and per ``archs``), where they come from, and what the source leaves open."""

    name: str
    source: str  # the public runner or paper, and the files read
    summary: str
    common: Mapping[str, Any]
    archs: Mapping[str, Mapping[str, Any]]  # an architecture absent here is not defined
    base: str | None = None  # fills what this recipe does not set
    open: tuple[str, ...] = ()  # what the source leaves open, and the choice made here
    reference: str = ""  # the source's reference cells and budgets (not set by the recipe)
    metrics: Mapping[str, Any] = field(default_factory=dict)  # the source's metric definitions

    def defines(self, arch: str) -> bool:
        return arch in self.archs


_CN_METRICS = MappingProxyType({
    "primary_metric": "emb_erank2",
    "public_name": "eff_rank_E = exp(spectral entropy of E on σ²/Σσ²)",
    "grok_threshold": 0.9, "mem_threshold": 0.99,
    "clock": "first logged step with test_acc ≥ 0.9 (train_acc ≥ 0.99 for T_mem)",
    "weight_norm": "sqrt(Σ‖M‖²_F) over the weight matrices (MLP: E, W1, W2), biases excluded",
})

RECIPES: Mapping[str, Recipe] = MappingProxyType({r.name: r for r in (
    Recipe(
        name="critical-norm",
        source="ClevixLab/critical-norm-grokking: src/run_grokfss.py (MLP, the p = 59 train-"
               "fraction sweep), src/run_denserho.py (the same MLP under the norm clamp), "
               "src/run_tfgrok.py (1-layer Transformer)",
        summary="Every weight matrix N(0, 1/fan_in) (E: 1/d), biases N(0, (1e-6)²), AdamW "
                "betas (0.9, 0.999), eps 1e-8 added to sqrt(v̂), decoupled decay lr·wd on the "
                "weight matrices only, full batch, each seed its own split, 360 log-spaced log "
                "points; Transformer: parameter-free pre-LayerNorm, no biases, positions "
                "N(0, 0.01/d), a readout over p + 1 tokens.",
        common={"lr": 1e-3, "wd": 1.0, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                "batch_size": 0, "shared_split": False, "emb_std": 0.0,
                "weight_init": "normal", "decay": "matrices", "norm_params": "matrices",
                "log_grid": "geometric", "log_points": 360, "log_every": 0},
        archs={
            "mlp": {"d_emb": 128, "hidden": 256, "depth": 1, "act": "gelu", "biases": True,
                    "bias_init": "normal", "bias_std": 1e-6},
            "transformer": {"n_layers": 1, "d_model": 128, "n_heads": 4, "mlp_ratio": 4,
                            "layernorm": True, "ln_affine": False, "pos": "learned",
                            "pos_gain": 0.1, "biases": False, "act": "gelu", "out_eq": True},
        },
        open=(
            "random streams: the runner draws every seed's split and initialization, in turn, "
            "from one generator seeded by a hash of the configuration id; here each run draws "
            "its split and its initialization from its own seed, so runs are the same "
            "distribution, not the same draws",
            "budget: the runner trains 60 000 steps (100 000 at alpha ≤ 0.25) and places its "
            "360 log points on that budget; the recipe places them on `steps`",
            "Transformer: the runner queries only the last position and applies the MLP there; "
            "with one layer and a causal mask this is the same function as this trainer's "
            "(which computes the other positions and discards them); more than one layer is "
            "outside the runner",
            "layernorm = false is not a configuration of the runner (its LayerNorm is always "
            "on); it is allowed here as an extension",
            "fourier_gini and spec_entropy_W2 are logged by the runner, not by this trainer",
        ),
        reference="MLP: p ∈ {29, 41, 59, 79, 97}, alpha 0.15–0.65, d 128, H 256, lr 1e-3, "
                  "wd 1 (an lr × wd block at p 59, alpha 0.5), 20 seeds, 60 000 steps; clamp: "
                  "p 59, alpha 0.4, t_int 500, rho 0.85–1.30, 16 seeds. Transformer: p ∈ {53, "
                  "71, 97}, alpha 0.2–0.55, d 128, 4 heads, H 512, 12 seeds, 40 000 steps.",
        metrics=_CN_METRICS,
    ),
    Recipe(
        name="compression-clock",
        source="ClevixLab/grokking-compression-clock (seed 002's harness): sample_data/"
               "arch_generality/PREREGISTRATION.json, its metrics.jsonl logs (step-0 and late "
               "norms), audit/arch_generality_audit.py, paper §3 and §8",
        summary="Arm A: the MLP with E ~ N(0, 1/d) and torch-default linear layers "
                "(U(±1/sqrt(fan_in)) weights and biases); arms B/C: a 1-layer Transformer "
                "with a ReLU MLP block, no biases, N(0, 1/fan_in) matrices, LayerNorm off (B) "
                "or on (C); AdamW betas (0.9, 0.98), lr 1e-3, decay on the weight matrices "
                "(not on biases or LayerNorm gains), every parameter counted in the global "
                "norm, full batch, 60 log-spaced points plus every 250 steps.",
        common={"lr": 1e-3, "wd": 1.0, "beta1": 0.9, "beta2": 0.98, "eps": 1e-8,
                "batch_size": 0, "shared_split": False, "emb_std": 0.0,
                "decay": "matrices", "norm_params": "all",
                "log_grid": "geometric", "log_points": 60, "log_every": 250},
        archs={
            "mlp": {"d_emb": 128, "hidden": 256, "depth": 1, "act": "gelu", "biases": True,
                    "weight_init": "uniform", "bias_init": "uniform"},
            "transformer": {"n_layers": 1, "d_model": 128, "n_heads": 4, "mlp_ratio": 4,
                            "pos": "learned", "pos_gain": 1.0, "ln_affine": True,
                            "biases": False, "weight_init": "normal", "act": "relu",
                            "out_eq": False},
        },
        open=(
            "the training code is not public; initial scales are read from the step-0 "
            "Frobenius norms of the published logs: MLP E 7.6 (= sqrt(59) → N(0, 1/d)), W1 9.25 "
            "and W2 4.41 (uniform ±1/sqrt(fan_in)), global norm 12.775 (= the three matrices "
            "and the uniform biases); Transformer E, W_v 11.29, W_in 22.62, W_out 11.30, "
            "unembedding 7.78 (all N(0, 1/fan_in))",
            "which parameters decay: not stated; the weight matrices only (embeddings and "
            "positions included), read from the logs: the global norm outgrows what decayed "
            "parameters can hold (AdamW keeps a decayed entry within about 1/wd). MLP wd 4 "
            "(wd4_s0, step 30 000): global norm 56.09 against E 20.28, W1 43.79, W2 26.12, "
            "so the 315 biases carry 11.6 (decayed: at most about sqrt(315)/4 = 4.4). LayerNorm "
            "arm wd 3 (tf_ln/wd3_s1, step 60 000): global norm 120.4 while every logged matrix "
            "has shrunk below 2.1 (E 0.64, W_in 1.93, W_out 2.02, W_v 0.63, unembedding 1.13; "
            "the LN-free arm at the same wd: 24.5), which only undecayed LayerNorm gains can "
            "carry. (Until this was read, the recipe decayed every parameter.)",
            "LayerNorm (arm C): gains present (the step-0 global norm exceeds arm B's by "
            "sqrt(3·128), three LayerNorms of 128 gains) and not decayed (above); whether "
            "their biases exist is not recoverable (they start at 0): here they exist and, "
            "like the gains, are not decayed",
            "positions: learned; their scale is not recoverable from the logs (≈ 1/sqrt(d)); "
            "the readout width (p or p + 1 classes) likewise (p taken)",
            "Adam eps: not stated (torch's 1e-8); batch: the paper says full batch",
            "the harness stops a cell early when the embedding rank has plateaued (window 8000 "
            "steps, 2 %) and logs on floor(geomspace(1, 60000, 60)); this trainer runs `steps` "
            "and rounds the geometric grid",
        ),
        reference="p 59, train fraction 0.3, 2 seeds (seed_base 1234), wd: MLP {0.5, 1, 2, 4}, "
                  "Transformers {1, 1.5, 2, 3}, up to 60 000 steps; thresholds: transient "
                  "1.2, large lag 0.4 T_grok, Spearman 0.7 / 0.3.",
        metrics=MappingProxyType({
            "primary_metric": "emb_erank2",
            "public_name": "embedding.sqnorm (also .rv = emb_erank, .pr = emb_pr, "
                           ".srank = emb_srank)",
            "grok_threshold": 0.9, "mem_threshold": 0.99, "floor_frac": 0.1, "eps": 0.1,
            "weight_norm": "global_norm: every parameter",
        }),
    ),
    Recipe(
        name="seed-000",
        source="seed paper 000 (arXiv 2606.18465), §2 'Task and model', 'Clamp'",
        summary="The critical-norm MLP as the paper states it: d 128, H 256, GELU, AdamW "
                "(0.9, 0.999), lr 1e-3, wd 1, full batch, alpha 0.40 per seeded permutation, "
                "‖W‖ over E, W1, W2 without biases; the clamp and τ as configured.",
        common={"lr": 1e-3, "wd": 1.0, "beta1": 0.9, "beta2": 0.999, "batch_size": 0,
                "shared_split": False, "decay": "matrices", "norm_params": "matrices"},
        archs={"mlp": {"d_emb": 128, "hidden": 256, "depth": 1, "act": "gelu"}},
        base="critical-norm",
        open=(
            "initialization, biases, Adam eps, logging grid: not stated; taken from the "
            "critical-norm runner, whose clamp protocol (w_c measured on a free control, "
            "rho·w_c after every step from t_int) the paper describes",
            "t_int: 'before memorization in every cell'; the critical-norm clamp runner uses 500",
            "the LN-free Transformer replication is not specified; use recipe "
            "compression-clock with layernorm = false",
        ),
        reference="p ∈ {43, 59, 67, 97, 113}, alpha 0.40, 12 seeds per cell, rho and tau grids "
                  "(rho ∈ {1.00, 1.05, 1.10, 1.15} × tau ∈ {1.0, 1.3, 1.7}), loss ce or mse.",
        metrics=MappingProxyType({**_CN_METRICS,
                                  "primary_metric": "test_acc clock and logit_scale"}),
    ),
    Recipe(
        name="seed-001",
        source="seed paper 001 (arXiv 2605.20441), abstract and §1 (the setup section is not "
               "in the available text)",
        summary="A decoder-only Transformer on modular arithmetic with weight decay as the "
                "control axis; the paper's canonical post-transition cell is wd 0.05.",
        common={"wd": 0.05},
        archs={"transformer": {}},
        base="legacy",
        open=(
            "width, depth, heads, learning rate, betas, eps, batch, initialization, "
            "LayerNorm, positions, split: not stated in the available text; the trainer's "
            "legacy Transformer fills them (pre-LayerNorm, learned positions, GELU, "
            "AdamW (0.9, 0.98), lr 1e-3, full batch)",
            "time is counted in epochs; here in optimizer steps (one epoch = one step at full "
            "batch)",
            "the paper spans 0.82M–85M parameters and varies heads at fixed width (d/H)",
        ),
        reference="wd axis 1e-3–10 (memorization below ≈ 0.016, collapse at 10), canonical "
                  "wd 0.05, seed 42, 20 000-epoch long-horizon runs.",
        metrics=MappingProxyType({"primary_metric": "attn_head_cos, attn_entropy_std"}),
    ),
    Recipe(
        name="seed-003",
        source="seed paper 003 (arXiv 2609.10657), §2 model and training",
        summary="Two ReLU hidden layers over learned embeddings of width H (e ∈ R^H), "
                "AdamW (0.9, 0.98), full batch.",
        common={"beta1": 0.9, "beta2": 0.98, "batch_size": 0},
        archs={"mlp": {"depth": 2, "act": "relu", "d_emb": 256, "hidden": 256,
                       "biases": False}},
        base="legacy",
        open=(
            "the embedding width equals H: when you change hidden, set d_emb to the same value",
            "biases: the paper's formula f = W3 σ(W2 σ(W1 [e_a; e_b])) has none; followed here",
            "initialization, eps, decay set, logging grid, split seeding: not stated (legacy "
            "values)",
            "one seed per configuration in the paper",
        ),
        reference="H ∈ {128, 256, 512}, D ∈ {0.3, 0.5, 0.7, 0.97}, lr ∈ {1e-3, 3e-3, 1e-2, "
                  "3e-2}, wd ∈ {0.1, 0.3, 1, 3}, two tasks, up to 150 000 steps.",
        metrics=MappingProxyType({"primary_metric": "test_acc clock (T_grok)"}),
    ),
    Recipe(
        name="seed-004",
        source="seed paper 004 (arXiv 2607.20552), §5 setup",
        summary="A 2-layer decoder-only Transformer, d_model 128, 4 heads (d_k 32), RoPE, "
                "GELU, AdamW lr 3e-4, base weight decay 0.1, batch 512.",
        common={"arch": "transformer", "lr": 3e-4, "wd": 0.1, "batch_size": 512},
        archs={"transformer": {"n_layers": 2, "d_model": 128, "n_heads": 4, "pos": "rope",
                               "act": "gelu"}},
        base="legacy",
        open=(
            "betas, eps, initialization, LayerNorm placement, biases: not stated (legacy "
            "values: pre-LayerNorm, AdamW (0.9, 0.98))",
            "the grokking epoch: the paper counts epochs at batch 512; here optimizer steps",
            "cv-adamw's kappa/tau variant is replaced by the scale-invariant z-score form "
            "(optimizer = \"cv-adamw\"); the recipe leaves optimizer to the config",
        ),
        reference="(a + b) mod 97, 50/50 split, 10 seeds {42, 123, 256, 512, 1024, 2048, 3141, "
                  "4096, 7777, 9999}, 7 000 epochs; grok = first validation accuracy > 0.95.",
        metrics=MappingProxyType({"primary_metric": "attn_cv", "grok_threshold": 0.95}),
    ),
    Recipe(
        name="legacy",
        source="this trainer before recipes existed (the bundled logs trained before them)",
        summary="E ~ N(0, 1) for the MLP (N(0, 1/d) for the Transformer), torch-default "
                "linear layers, AdamW (0.9, 0.98), decay on the weight matrices, a linear "
                "log grid.",
        common={}, archs={"mlp": {}, "transformer": {}},
        open=("not the recipe of any public run: kept so that older logs can be regenerated",),
    ),
)})


def get_recipe(name: str, where: str = "config") -> Recipe:
    """The recipe called ``name``; an unknown name is one line naming the known ones."""
    try:
        return RECIPES[name]
    except KeyError:
        raise ConfigError(f"{where}: unknown recipe {name!r}; known recipes: "
                          f"{', '.join(RECIPES)}", code=ErrorCode.UNKNOWN_OPTION) from None


def recipe_arch(name: str, where: str = "config") -> str:
    """The architecture a run gets when its config sets none: the recipe's own, else the MLP."""
    r = get_recipe(name, where)
    while r is not None:
        if "arch" in r.common:
            return str(r.common["arch"])
        r = RECIPES[r.base] if r.base else None  # type: ignore[assignment]
    return str(FALLBACK["arch"])


def resolve(name: str, arch: str, where: str = "config") -> dict[str, Any]:
    """Every recipe-controlled field's value for ``arch`` under recipe ``name`` (before the
    config's own values). Raises :class:`ConfigError` for an unknown recipe or an architecture
    the recipe does not define."""
    r = get_recipe(name, where)
    if not r.defines(arch):
        have = " or ".join(f'arch = "{a}"' for a in r.archs)
        raise ConfigError(f"{where}: recipe {name!r} defines no {arch!r} runs; use {have}, "
                          "or another recipe", code=ErrorCode.INVALID_OPTION)
    chain = []
    cur: Recipe | None = r
    while cur is not None:
        chain.append(cur)
        cur = RECIPES[cur.base] if cur.base else None
    out = {**FALLBACK, **FALLBACK_ARCH.get(arch, {})}
    for rec in reversed(chain):  # base first, the named recipe last
        out.update(rec.common)
        out.update(rec.archs.get(arch, {}))
    out["arch"] = arch
    return out


def own_fields(name: str, arch: str) -> dict[str, Any]:
    """The fields the named recipe (with its bases, not the fallback) sets for ``arch``."""
    chain = []
    cur: Recipe | None = get_recipe(name)
    while cur is not None:
        chain.append(cur)
        cur = RECIPES[cur.base] if cur.base else None
    out: dict[str, Any] = {}
    for rec in reversed(chain):
        out.update(rec.common)
        out.update(rec.archs.get(arch, {}))
    return out


def describe(name: str) -> dict[str, Any]:
    """A recipe as a plain mapping (for the manifest and ``docs/trainer.md``)."""
    r = get_recipe(name)
    return {"name": r.name, "source": r.source, "summary": r.summary, "base": r.base,
            "archs": list(r.archs), "open": list(r.open), "reference": r.reference,
            "metrics": dict(r.metrics)}


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


_MLP_ONLY = {"d_emb", "hidden", "depth"}
_TF_ONLY = {"n_layers", "d_model", "n_heads", "mlp_ratio", "layernorm", "pos", "pos_gain",
            "ln_affine", "out_eq"}


def _applies(key: str, v: Mapping[str, Any]) -> bool:
    """Whether a field has any effect on a run with the resolved values ``v``."""
    if key in _MLP_ONLY:
        return bool(v["arch"] == "mlp")
    if key in _TF_ONLY:
        return v["arch"] == "transformer" and not (
            (key == "pos_gain" and v["pos"] != "learned")
            or (key == "ln_affine" and not v["layernorm"]))
    if key in ("bias_init", "bias_std"):
        return bool(v["biases"]) and (key == "bias_init" or v["bias_init"] == "normal")
    if key == "log_points":
        return bool(v["log_grid"] == "geometric")
    if key == "early_points":
        return bool(v["log_grid"] == "linear")
    return True


def markdown() -> str:
    """Every recipe as the Markdown block of ``docs/trainer.md`` (section Recipes): one table per
    recipe, its values per architecture, then what its source leaves open. A value the recipe
    (or its base) does not set is the fallback's, shown in parentheses; — marks a field that
    has no effect there."""
    out: list[str] = []
    for r in RECIPES.values():
        archs = list(r.archs)
        out += [f"#### `{r.name}`", "", f"Source: {r.source}.", "", r.summary, ""]
        if r.base:
            out += [f"Fields it does not set come from recipe `{r.base}`.", ""]
        out += ["| field | " + " | ".join(archs) + " |", "|---|" + "---|" * len(archs)]
        own = {a: own_fields(r.name, a) for a in archs}
        res = {a: resolve(r.name, a) for a in archs}
        for k in RECIPE_FIELDS:
            if k == "arch":
                continue
            cells = ["—" if not _applies(k, res[a]) else _fmt(res[a][k]) if k in own[a]
                     else f"({_fmt(res[a][k])})" for a in archs]
            out.append(f"| `{k}` | " + " | ".join(cells) + " |")
        out.append("")
        if r.open:
            out += ["Left open by the source, and the choice made here:", ""]
            out += [f"- {o}" for o in r.open] + [""]
        if r.reference:
            out += [f"Reference cells (not set by the recipe): {r.reference}", ""]
        if r.metrics:
            out += ["Metrics: " + "; ".join(f"{k} = {v}" for k, v in r.metrics.items()), ""]
    return "\n".join(out)


def _write_docs(path: str) -> None:
    import re
    from pathlib import Path

    p = Path(path)
    text = p.read_text(encoding="utf-8")
    new, n = re.subn(r"(<!-- recipes:begin -->\n).*?(<!-- recipes:end -->)",
                     lambda m: m.group(1) + markdown() + m.group(2), text, flags=re.S)
    if n != 1:
        raise SystemExit(f"{p}: no <!-- recipes:begin --> … <!-- recipes:end --> block")
    p.write_text(new, encoding="utf-8")


if __name__ == "__main__":  # python -m grokaudit.reference_runs.recipes [--docs [PATH]]
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "--docs":
        _write_docs(sys.argv[2] if len(sys.argv) > 2 else "docs/trainer.md")
    else:
        print(markdown())
