"""Recipes: a recipe's fields reach the model and optimizer, the config overrides them and the
manifest echoes both, an unknown recipe is one line with its code, the bundled logs are what
their configs (and the recipes they name) train, and docs/trainer.md shows every recipe table as
the code defines it."""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit.cli import cli as main  # noqa: E402
from grokaudit.errors import ConfigError, ErrorCode  # noqa: E402
from grokaudit.reference_runs import recipes  # noqa: E402
from grokaudit.reference_runs.config import TrainConfig, from_dict  # noqa: E402
from grokaudit.reference_runs.models import build_model  # noqa: E402
from grokaudit.reference_runs.optim import BatchedAdamW, weight_norm_sq  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parents[2]
SEEDS = list(range(8))  # enough draws for init statistics within a few percent


def _params(cfg: TrainConfig, n_classes: int | None = None) -> dict[str, torch.Tensor]:
    model = build_model(cfg, SEEDS, n_classes or cfg.p, CPU)
    return {n: p.detach().double() for n, p in model.named_parameters()}


# ---- the recipe's fields are applied -------------------------------------------------------

def test_default_recipe_is_critical_norm_and_fills_every_unset_field() -> None:
    cfg = TrainConfig()
    assert cfg.recipe == recipes.DEFAULT_RECIPE == "critical-norm"
    want = recipes.resolve("critical-norm", "mlp")
    assert {k: getattr(cfg, k) for k in recipes.RECIPE_FIELDS} == want
    assert (cfg.beta1, cfg.beta2, cfg.eps) == (0.9, 0.999, 1e-8)
    assert (cfg.weight_init, cfg.bias_init, cfg.bias_std) == ("normal", "normal", 1e-6)
    assert (cfg.decay, cfg.norm_params, cfg.log_grid, cfg.log_points) == (
        "matrices", "matrices", "geometric", 360)


def test_critical_norm_mlp_initialization_scales() -> None:
    """run_grokfss.py: E ~ N(0, 1/d), W1 ~ N(0, 1/2d), W2 ~ N(0, 1/H), biases ~ N(0, 1e-12)."""
    cfg = TrainConfig(recipe="critical-norm", p=59, d_emb=128, hidden=256)
    w = _params(cfg)
    assert set(w) == {"E", "W1", "b1", "W2", "b2"}
    for name, std in (("E", 1 / math.sqrt(128)), ("W1", 1 / math.sqrt(256)),
                      ("W2", 1 / math.sqrt(256))):
        assert w[name].std().item() == pytest.approx(std, rel=0.02), name
        # normal, not uniform: a uniform draw never exceeds √3 std
        assert w[name].abs().max().item() > 2.5 * std, name
    for name in ("b1", "b2"):
        assert w[name].std().item() == pytest.approx(1e-6, rel=0.1), name


def test_compression_clock_mlp_is_torch_default_linear_with_fan_in_embedding() -> None:
    cfg = TrainConfig(recipe="compression-clock", p=59, d_emb=128, hidden=256)
    w = _params(cfg)
    assert w["E"].std().item() == pytest.approx(1 / math.sqrt(128), rel=0.02)
    for name, fan_in in (("W1", 256), ("b1", 256), ("W2", 256), ("b2", 256)):
        bound = 1 / math.sqrt(fan_in)
        assert w[name].abs().max().item() <= bound, name
        assert w[name].std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05), name
    # the public step-0 global norm (12.775 over every parameter) is this model's, one seed
    # at a time: sqrt(‖E‖² + ‖W1‖² + ‖W2‖² + ‖b‖²) ≈ 12.8
    total = sum(w[n].pow(2).flatten(1).sum(1) for n in w).sqrt()
    assert total.mean().item() == pytest.approx(12.775, rel=0.02)
    assert (cfg.beta2, cfg.decay, cfg.norm_params) == (0.98, "matrices", "all")


def test_critical_norm_transformer_has_no_biases_no_ln_gains_and_reads_p_plus_one() -> None:
    cfg = TrainConfig(recipe="critical-norm", arch="transformer", p=11, d_model=32,
                      n_heads=4)
    w = _params(cfg)
    assert not any(n.startswith(("ln", "bin", "bout")) for n in w)
    assert w["WU"].shape[-1] == 12  # p + 1 classes: '=' is a class of the readout
    assert w["pos"].std().item() == pytest.approx(0.1 / math.sqrt(32), rel=0.1)
    assert w["Wq0"].std().item() == pytest.approx(1 / math.sqrt(32), rel=0.05)
    assert w["Wout0"].std().item() == pytest.approx(1 / math.sqrt(128), rel=0.05)
    tr = GroupTrainer([replace(cfg, steps=3, log_every=3, seed=s) for s in (0, 1)], CPU)
    tr.run()
    assert np.isfinite(tr.rows[-1]["unemb_erank2"]).all()
    assert tr.model.unemb_matrix().shape[1] == 11  # the unembedding metrics read the p numbers


def test_compression_clock_transformer_arms() -> None:
    """Arm B (LN-free) and arm C (LayerNorm added): ReLU block, no biases, N(0, 1/fan_in)."""
    free = _params(TrainConfig(recipe="compression-clock", arch="transformer", p=59,
                               layernorm=False))
    ln = _params(TrainConfig(recipe="compression-clock", arch="transformer", p=59,
                             layernorm=True))
    assert not any(n.startswith(("ln", "bin", "bout")) for n in free)
    assert {n for n in ln if n.startswith("ln")} == {"ln1_g0", "ln1_b0", "ln2_g0", "ln2_b0",
                                                     "lnf_g", "lnf_b"}
    # the public logs' step-0 Frobenius norms (one seed each): E 7.81, W_in 22.62, W_out 11.30
    for name, public in (("E", 7.81), ("Win0", 22.62), ("Wout0", 11.30), ("Wv0", 11.29)):
        fro = free[name].flatten(1).norm(dim=1).mean().item()
        assert fro == pytest.approx(public, rel=0.03), name


def test_seed_recipes_fill_what_their_paper_leaves_open_from_their_base() -> None:
    s0 = TrainConfig(recipe="seed-000")
    cn = TrainConfig(recipe="critical-norm")
    assert {k: getattr(s0, k) for k in recipes.RECIPE_FIELDS} == \
        {k: getattr(cn, k) for k in recipes.RECIPE_FIELDS}
    s4 = TrainConfig(recipe="seed-004")
    assert (s4.arch, s4.n_layers, s4.pos, s4.lr, s4.wd, s4.batch_size) == (
        "transformer", 2, "rope", 3e-4, 0.1, 512)
    s3 = TrainConfig(recipe="seed-003")
    assert (s3.depth, s3.act, s3.beta2, s3.biases, s3.d_emb, s3.hidden) == (
        2, "relu", 0.98, False, 256, 256)
    assert set(_params(replace(s3, p=7, d_emb=8, hidden=8))) == {"E", "W1", "Wh", "W2"}
    for r in recipes.RECIPES.values():
        assert r.source and r.summary and (r.open or r.name == "legacy"), r.name


def test_decay_and_norm_sets_follow_the_recipe() -> None:
    """decay = "all" shrinks a bias by (1 − lr·wd) on a zero-gradient step; "matrices" leaves
    it; norm_params = "all" counts the biases in ‖W‖."""
    for decay, shrinks in (("all", True), ("matrices", False)):
        cfg = TrainConfig(recipe="compression-clock", p=7, d_emb=4, hidden=6, decay=decay,
                          lr=0.1, wd=2.0)
        model = build_model(cfg, [0], 7, CPU)
        opt = BatchedAdamW(model, *(torch.tensor([v]) for v in (0.1, 2.0, 0.9, 0.98, 1e-8)))
        before = model.b1.detach().clone()
        for p_ in model.parameters():
            p_.grad = torch.zeros_like(p_)
        opt.step()
        factor = 1 - 0.1 * 2.0 if shrinks else 1.0
        torch.testing.assert_close(model.b1.detach(), before * factor)
    cfg = TrainConfig(recipe="critical-norm", p=7, d_emb=4, hidden=6)
    m_all = build_model(replace(cfg, norm_params="all"), [0], 7, CPU)
    m_mat = build_model(cfg, [0], 7, CPU)
    bias_sq = sum(getattr(m_all, n).detach().pow(2).sum() for n in ("b1", "b2"))
    assert weight_norm_sq(m_all).item() == pytest.approx(
        weight_norm_sq(m_mat).item() + bias_sq.item(), rel=1e-6)


# ---- the config overrides the recipe, and the manifest says so ----------------------------

def test_config_fields_override_the_recipe() -> None:
    cfg = from_dict({"recipe": "critical-norm", "beta2": 0.98, "emb_std": 1.0})
    assert (cfg.beta2, cfg.emb_std) == (0.98, 1.0)
    assert cfg.weight_init == "normal" and cfg.bias_std == 1e-6  # the rest still the recipe's
    assert TrainConfig(recipe="legacy", weight_init="normal").weight_init == "normal"


SWEEP = """
name = "rc"
[base]
recipe = "compression-clock"
p = 7
alpha = 0.5
d_emb = 8
hidden = 16
steps = 20
beta2 = 0.95
[grid]
wd = [0.5, 2.0]
seed = [0]
"""


def _train_cli(tmp_path: Path, *flags: str) -> tuple[int, str, Path]:
    cfg = tmp_path / "s.toml"
    cfg.write_text(SWEEP)
    out = tmp_path / "log.parquet"
    res = CliRunner().invoke(main, ["train", str(cfg), "-o", str(out), "--threads", "1",
                                    "--progress", "none", *flags])
    return res.exit_code, res.output, out


def test_manifest_echoes_the_recipe_and_every_override(tmp_path: Path) -> None:
    code, text, out = _train_cli(tmp_path, "--eps", "1e-6")
    assert code == 0, text
    man = tomllib.loads(out.with_name("log.MANIFEST.toml").read_text())
    rec = man["recipe"]
    assert rec["names"] == ["compression-clock"]
    assert "grokking-compression-clock" in rec["source"][0] and rec["open"]
    assert rec["compression-clock_mlp"]["beta2"] == 0.98  # what the recipe says
    assert rec["overrides"] == {"d_emb": 8, "hidden": 16, "beta2": 0.95, "eps": 1e-6,
                                "wd": [0.5, 2.0]}
    assert rec["replaced"] == {"d_emb": 128, "hidden": 256, "beta2": 0.98, "eps": 1e-8,
                               "wd": 1.0}
    df = pd.read_parquet(out)
    assert sorted(df["step"].unique())[:3] == [0, 1, 2]  # the recipe's geometric grid


def test_recipe_flag_replaces_the_files_recipe(tmp_path: Path) -> None:
    code, text, out = _train_cli(tmp_path, "--recipe", "legacy")
    assert code == 0, text
    man = tomllib.loads(out.with_name("log.MANIFEST.toml").read_text())
    assert man["recipe"]["names"] == ["legacy"]
    assert man["recipe"]["overrides"]["beta2"] == 0.95  # the file's own value still wins


# ---- refusals -------------------------------------------------------------------------------

def test_unknown_recipe_is_one_line_with_its_code(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        TrainConfig(recipe="nanda")
    assert exc.value.code == ErrorCode.UNKNOWN_OPTION and "critical-norm" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        from_dict({"recipe": "nanda"}, where="sweep 'x'")
    assert exc.value.code == ErrorCode.UNKNOWN_OPTION and str(exc.value).startswith("sweep 'x'")
    code, text, _ = _train_cli(tmp_path, "--recipe", "nanda")
    assert code == 2
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and "[UNKNOWN_OPTION]" in lines[0] and "nanda" in lines[0]


def test_recipe_without_the_arch_is_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        TrainConfig(recipe="seed-004", arch="mlp")
    assert exc.value.code == ErrorCode.INVALID_OPTION and 'arch = "transformer"' in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        from_dict({"recipe": 3})
    assert exc.value.code == ErrorCode.INVALID_OPTION


@pytest.mark.parametrize("field,value", [("weight_init", "xavier"), ("decay", "none"),
                                         ("log_grid", "log"), ("act", "tanh")])
def test_bad_recipe_field_values_are_refused(field: str, value: str) -> None:
    with pytest.raises(ConfigError) as exc:
        from_dict({field: value})
    assert exc.value.code == ErrorCode.OPTION_OUT_OF_RANGE and field in str(exc.value)


# ---- the bundled logs are what their configs train -----------------------------------------

SEED_LOGS = sorted(p.stem for p in (ROOT / "reference_runs" / "data" / "seeds").glob("*.parquet"))


@pytest.mark.parametrize("name", ["mlp_wd_sweep_p59", "transformer_ln_p23",
                                  *(f"seeds/{n}" for n in SEED_LOGS)])
def test_bundled_log_is_what_its_config_trains(name: str) -> None:
    """Retraining the first 50 steps of one run of each bundled log from its sweep file (with
    the recipe the file names) gives the logged values: the bundled data, its config and the
    recipe tables agree. (``reproduce``'s seed logs too: a clamp acts from ``t_int`` ≥ 100
    there, after these 50 steps, so they train without it.)

    Within ``rtol = 1e-3``: the logs were trained on one CPU, and float32 kernels sum in
    another order on another (AVX-512 against AVX2): on an AMD EPYC host the 128-wide seed
    run's test loss differs from the Intel-trained log by 2.5e-4 at step 50, every other
    value by less than 6e-5 (most by 1e-7 or less). Another seed differs by 8e-3 to 1.5e-2
    in its test loss and weight norm within these 50 steps (measured on the same host), a
    wrong recipe or config by more."""
    from grokaudit.reference_runs.sweep import expand, load_sweep

    bundled = pd.read_parquet(ROOT / "reference_runs" / "data" / f"{name}.parquet")
    sw = load_sweep(ROOT / "reference_runs" / "configs" / f"{name}.toml")
    assert "recipe" in sw.base  # every bundled config names its recipe
    spec = expand(sw)[-1]
    cfg = spec.cfg
    if cfg.rho is not None:
        assert cfg.t_int > 50
        cfg = replace(cfg, rho=None, t_int=0)
    tr = GroupTrainer([replace(cfg, steps=50)], CPU)
    tr.run()
    mine = pd.DataFrame({k: [r[k][0] for r in tr.rows] for k in ("step", "test_loss",
                                                                 "emb_erank", "weight_norm")})
    mine = mine[mine["step"].isin(bundled["step"])]
    assert len(mine) >= 5
    theirs = bundled[bundled["run"] == spec.run_id].set_index("step").loc[mine["step"]]
    for col in ("test_loss", "emb_erank", "weight_norm"):
        np.testing.assert_allclose(mine[col].to_numpy(), theirs[col].to_numpy(), rtol=1e-3,
                                   err_msg=col)


# ---- the docs show the tables the code defines ---------------------------------------------

def test_docs_show_every_recipe_table_as_defined() -> None:
    doc = (ROOT / "docs" / "trainer.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- recipes:begin -->\n(.*?)<!-- recipes:end -->", doc, re.S)
    assert m, "docs/trainer.md lacks the recipes block"
    assert m.group(1) == recipes.markdown(), \
        "run: python -m grokaudit.reference_runs.recipes --docs"
