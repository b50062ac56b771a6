"""The seed papers' headlines as data: what each paper claims (its numbers, as printed), the
designs that regenerate it with the bundled trainer (a CPU scale and the paper's scale), and the
claim commands that audit it. ``grokaudit reproduce`` (:mod:`grokaudit.reproduce`) reads this
table; ``docs/reproductions.md`` prints it.

Nothing here imports torch: the bundled logs are re-audited without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: The placeholder of a command's argument list that stands for the design's log files.
LOGS = "{logs}"


@dataclass(frozen=True)
class PaperValue:
    """A number as the paper prints it: a point, and an interval when the paper gives one
    (``low``/``high``; a range such as "3–5×" is an interval with no point)."""

    text: str
    value: float | None = None
    low: float | None = None
    high: float | None = None

    @property
    def span(self) -> tuple[float, float] | None:
        """The paper's interval, or its point as a zero-width one; None when neither."""
        if self.low is not None and self.high is not None:
            return (self.low, self.high)
        if self.value is not None:
            return (self.value, self.value)
        return None


@dataclass(frozen=True)
class Headline:
    """One number a seed paper headlines, and how the bundled runs measure it.

    ``audit`` names the entry of the seed's ``audits`` whose JSON holds our value;
    ``quantity`` names the extractor (:data:`grokaudit.reproduce.EXTRACTORS`) that reads it;
    ``null`` is the value of no effect: the side of it a value lies on is its direction (None:
    the headline is a value with no direction, such as a transition point). ``scales`` lists
    the scales whose design can measure it (a headline outside the CPU design is listed, with
    its reason, not dropped)."""

    key: str
    claim: str
    paper: PaperValue
    audit: str
    quantity: str
    null: float | None
    unit: str = ""
    scales: tuple[str, ...] = ("cpu", "paper")
    note: str = ""


@dataclass(frozen=True)
class SeedDesign:
    """A seed paper: its headlines, the sweep files that regenerate them at each scale
    (``configs``: scale → config paths relative to ``reference_runs/configs``), the bundled
    CPU-scale logs (relative to ``reference_runs/data``), the audits (name → the ``grokaudit``
    argument list, :data:`LOGS` standing for the logs), and what scaling down changes."""

    seed: str
    title: str
    source: str
    configs: Mapping[str, tuple[str, ...]]
    bundled: tuple[str, ...]
    audits: Mapping[str, tuple[str, ...]]
    headlines: tuple[Headline, ...]
    scale_note: str


def _m(d: dict[str, tuple[str, ...]]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType(d)


SEEDS: Mapping[str, SeedDesign] = MappingProxyType({d.seed: d for d in (
    SeedDesign(
        seed="000",
        title="Output temperature recovers the norm-induced grok delay (cross-entropy only)",
        source="seed paper 000 (arXiv 2606.18465)",
        configs=_m({"cpu": ("seeds/s000_cpu_base.toml", "seeds/s000_cpu_ce.toml",
                            "seeds/s000_cpu_mse.toml"),
                    "paper": ("seeds/s000_paper.toml",)}),
        bundled=("seeds/s000_cpu_base.parquet", "seeds/s000_cpu_ce.parquet",
                 "seeds/s000_cpu_mse.parquet"),
        audits=_m({"dose": ("dose", LOGS, "--by", "rho", "--cell", "loss,p",
                            "--mediator", "logit_scale", "--baseline", "rho=1,tau=1",
                            "--raised", "rho=1.15,tau=1", "--sweep", "tau")}),
        headlines=(
            Headline("000.recovery_p59",
                     "at clamped norm rho 1.15, the output temperature recovers most of the "
                     "norm-induced grok delay (cross-entropy, p 59)",
                     PaperValue("0.83 [0.82, 0.85]", 0.83, 0.82, 0.85),
                     "dose", "recovery:loss=ce,p=59", null=0.0),
            Headline("000.recovery_p97",
                     "the same at p 97",
                     PaperValue("0.89 [0.88, 0.91]", 0.89, 0.88, 0.91),
                     "dose", "recovery:loss=ce,p=97", null=0.0, scales=("paper",),
                     note="the CPU design trains p 59 only"),
            Headline("000.mse_nothing",
                     "under MSE the same intervention recovers nothing",
                     PaperValue("≈ 0 (does nothing)", 0.0),
                     "dose", "recovery:loss=mse,p=59", null=0.0),
            Headline("000.logit_scale_r2",
                     "the grok delay is a function of the effective logit scale (R² of ln T "
                     "on the mediator)",
                     PaperValue("R² 0.97", 0.97),
                     "dose", "collapse_r2:loss=ce,p=59", null=0.0,
                     note="R² has no interval: printed, never compared as a point"),
        ),
        scale_note=(
            "The CPU design keeps the paper's model, optimizer, train fraction (0.40) and clamp "
            "protocol at p 59, and trains 4 seeds (the paper: 12; 4 is the fewest whose "
            "bootstrap gives a 95 % interval) of the baseline rho 1.00 and the raised dose rho "
            "1.15 at tau 1.0, 1.3 and 1.7, for 16 000 steps (cross-entropy) and 4 000 (MSE, "
            "clamped from step 100: it memorizes by step 160). With 4 seeds the recovery "
            "interval rests on few units; the ratio of medians does not depend on the "
            "budget while no run is censored (the audit says so when one is). Under MSE the temperature "
            "shortens the clamped runs' delay here too (median t_grok 2 298 → 1 440 steps at "
            "tau 1.7, baseline 1 097), but the effective logit scale never returns to the "
            "baseline's (0.71 → 0.64 against 0.55), so a recovery through the mediator cannot "
            "be read: the log neither confirms nor refutes \"does nothing\". p 97 is only in the "
            "paper-scale design."),
    ),
    SeedDesign(
        seed="001",
        title="Weight decay separates memorization, grokking and collapse",
        source="seed paper 001 (arXiv 2605.20441)",
        configs=_m({"cpu": ("seeds/s001_cpu.toml",), "paper": ("seeds/s001_paper.toml",)}),
        bundled=("seeds/s001_cpu.parquet",),
        audits=_m({"transition": ("transition", LOGS, "--by", "wd"),
                   "check": ("check", LOGS, "--by", "wd", "--metric", "attn_head_cos")}),
        headlines=(
            Headline("001.lambda_c",
                     "the transition point of weight decay between memorization and grokking",
                     PaperValue("0.0158 [0.0109, 0.0200]", 0.0158, 0.0109, 0.0200),
                     "transition", "lambda_c", null=None, unit="wd", scales=("paper",),
                     note="where the transition falls depends on lr·wd, the budget and the "
                          "model size: the CPU design cannot measure the paper's value "
                          "(its λ_c is printed by the transition audit)"),
            Headline("001.nu",
                     "time to grok ∝ (λ − λc)^−ν",
                     PaperValue("0.757 [0.725, 0.799]", 0.757, 0.725, 0.799),
                     "transition", "nu", null=0.0),
            Headline("001.collapse",
                     "collapse at λ = 10: runs that generalize lose it again (share of the "
                     "grokked runs at the largest wd whose test accuracy falls back)",
                     PaperValue("collapse at λ = 10", 1.0),
                     "transition", "regressed_at_max", null=None),
            Headline("001.head_cos",
                     "head cosine similarity tracks the phases (its converged value orders "
                     "with wd)",
                     PaperValue("tracks the phases (no number)"),
                     "check", "check_ordering", null=0.0,
                     note="the paper gives no number: a monotone ordering across wd is read "
                          "as its direction"),
        ),
        scale_note=(
            "The paper's Transformers have 0.82M–85M parameters and train 20 000 epochs; the CPU "
            "design trains a 1-block, d_model 32 Transformer on a + b mod 23 (train fraction "
            "0.7, lr 2e-3) at eight wd levels from 0.003 to 10, 2 seeds, 10 000 steps. Where the "
            "transition falls depends on lr·wd, the budget and the model size, so λc at this "
            "scale is not the paper's number: a different λc here does not bear on the paper's "
            "value; the ordering (memorization below, grokking above, collapse at 10) and the "
            "sign of ν do."),
    ),
    SeedDesign(
        seed="002",
        title="The at-grok representation metric is a transient",
        source="seed paper 002 (the compression clock)",
        configs=_m({"cpu": ("mlp_wd_sweep_p59.toml", "transformer_ln_p23.toml"),
                    "paper": ("paper/mlp_rho_grid_p59.toml",
                              "paper/transformer_layernorm_p59.toml")}),
        bundled=("mlp_wd_sweep_p59.parquet", "transformer_ln_p23.parquet"),
        audits=_m({"check_mlp": ("check", "{log0}", "--metric", "emb_erank"),
                   "check_tf": ("check", "{log1}", "--by", "layernorm", "--metric",
                                "emb_erank")}),
        headlines=(
            Headline("002.inflation_mlp",
                     "the at-grok embedding effective rank overstates the converged floor "
                     "(MLP)",
                     PaperValue("3–5×", None, 3.0, 5.0),
                     "check_mlp", "inflation", null=1.0, unit="×"),
            Headline("002.inflation_tf",
                     "the same on Transformers",
                     PaperValue("1.3–1.5×", None, 1.3, 1.5),
                     "check_tf", "inflation", null=1.0, unit="×"),
            Headline("002.lag",
                     "compression lags grokking by about T_grok (lag / T_grok)",
                     PaperValue("≈ 1 (~T_grok)", 1.0),
                     "check_mlp", "rel_lag", null=0.0),
            Headline("002.frac_pre_ln",
                     "LayerNorm lowers frac_pre (the share of the compression done before "
                     "grokking) from 0.87 to 0.25",
                     PaperValue("0.25 − 0.87 = −0.62", -0.62),
                     "check_tf", "frac_pre_difference:layernorm", null=0.0),
        ),
        scale_note=(
            "The CPU logs are the two bundled sweeps: the MLP weight-decay sweep at p 59 (8 000 "
            "steps) and the LayerNorm on/off Transformer pair at p 23 with d_model 32 "
            "(10 000 steps). The paper trains to convergence (1e5 steps): a shorter budget "
            "leaves less time to compress, so a smaller overstatement here is a lower bound, "
            "not evidence against the paper's 3–5×."),
    ),
    SeedDesign(
        seed="003",
        title="An onset-scaling law for the grok time",
        source="seed paper 003 (arXiv 2609.10657)",
        configs=_m({"cpu": ("seeds/s003_cpu_h64.toml", "seeds/s003_cpu_h128.toml"),
                    "paper": ("seeds/s003_paper_h128.toml", "seeds/s003_paper_h256.toml",
                              "seeds/s003_paper_h512.toml")}),
        bundled=("seeds/s003_cpu_h64.parquet", "seeds/s003_cpu_h128.parquet"),
        audits=_m({"onset": ("onset", LOGS, "--by", "hidden,alpha,lr,wd")}),
        headlines=(
            Headline("003.exp_H", "T_grok ∝ H^a", PaperValue("a = −0.27", -0.27),
                     "onset", "exponent:hidden", null=0.0),
            Headline("003.exp_D", "T_grok ∝ D^b (train fraction)",
                     PaperValue("b = −2.04", -2.04), "onset", "exponent:alpha", null=0.0),
            Headline("003.exp_lr", "T_grok ∝ η^c", PaperValue("c = −0.50", -0.50),
                     "onset", "exponent:lr", null=0.0),
            Headline("003.exp_wd", "T_grok ∝ λ^d", PaperValue("d = −0.64", -0.64),
                     "onset", "exponent:wd", null=0.0),
            Headline("003.phase_boundary",
                     "a phase boundary near λ ≈ 1: nearly every configuration groks at "
                     "λ ≥ 1, fewer than 60 % at λ 0.1 (grok rate at wd ≥ 1 minus below)",
                     PaperValue("≥ 95 % vs < 60 %: a step of at least 0.35", None, 0.35, 1.0),
                     "onset", "grok_rate_step:wd=1", null=0.0, unit="share"),
            Headline("003.r2", "the law's R² (OLS on the grokked runs)",
                     PaperValue("R² 0.73", 0.73), "onset", "ols_r2", null=0.0,
                     note="R² has no interval: printed, never compared as a point"),
        ),
        scale_note=(
            "The paper trains p 97 (H 128–512, D 0.3–0.97, lr 1e-3–3e-2, wd 0.1–3, up to "
            "150 000 steps, one seed per configuration); the CPU design trains p 47, H 64 and "
            "128, D 0.3/0.5/0.7, lr 1e-3/3e-3, wd 0.3/1/3, one seed each, 6 000 steps. Cells "
            "that do not grok are censored: the OLS exponents (grokked runs only) are biased "
            "towards faster cells, and the audit's censored fit says by how much. The phase "
            "boundary is read at wd 1 (0.3 below it; 1 and 3 above): with 6 000 steps "
            "instead of 150 000 the train-fraction-0.3 cells grok on neither side, which "
            "lowers both rates and widens their difference's interval."),
    ),
    SeedDesign(
        seed="004",
        title="The attention specific heat precedes grokking; CvAdamW shortens the delay",
        source="seed paper 004 (arXiv 2607.20552)",
        configs=_m({"cpu": ("seeds/s004_cpu.toml",), "paper": ("seeds/s004_paper.toml",)}),
        bundled=("seeds/s004_cpu.parquet",),
        audits=_m({"precursor": ("precursor", LOGS, "--signal", "attn_cv", "--cell",
                                 "optimizer", "--grok-threshold", "0.95"),
                   "compare": ("compare", LOGS, "--by", "optimizer", "--pair", "seed",
                               "--arms", "adamw,cv-adamw", "--grok-threshold", "0.95")}),
        headlines=(
            Headline("004.cv_precedes",
                     "C_v peaks before grokking (fraction of AdamW seeds)",
                     PaperValue("10/10 seeds", 1.0),
                     "precursor", "fraction_preceding:optimizer=adamw", null=None),
            Headline("004.cvadamw_shortens",
                     "CvAdamW shortens the grok delay (mean paired difference, as a share of "
                     "AdamW's mean grok time)",
                     PaperValue("6 % (257 epochs; median 166; p 0.049; 8/10 seeds)", 0.06),
                     "compare", "relative_shortening", null=0.0, unit="share"),
        ),
        scale_note=(
            "The paper trains a 2-layer, d_model 128 Transformer with RoPE on a + b mod 97 "
            "(50/50 split, batch 512, lr 3e-4, wd 0.1) for 7 000 epochs, 10 seeds; the CPU design "
            "keeps the architecture at d_model 32 on a + b mod 23 with full batches, raises "
            "lr and wd so that runs grok within the budget, and trains the paper's 10 seeds per optimizer. "
            "The grok delay is counted in steps, not epochs, so only the relative shortening "
            "is compared. At this scale the specific heat keeps rising after grokking and "
            "peaks at 2 400–5 000 steps, after every AdamW run grokked (median 990 steps): the "
            "CPU log contradicts the precursor for this design. Whether that bears on the "
            "paper's claim is open: the design raises lr (2e-3 against 3e-4) and wd (1 "
            "against 0.1), which the paper-scale design keeps at the paper's values."),
    ),
)})


def seed_names() -> tuple[str, ...]:
    """The seeds, in order."""
    return tuple(SEEDS)
