"""``grokaudit train``: the written log passes the core's schema validation, ``--help`` lists
every option with its default, bad input exits 2 with one line, shards read back as one set."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit.cli import cli as main  # noqa: E402
from grokaudit.reference_runs.cli import train  # noqa: E402
from grokaudit.schema import build_log_table, read_table  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MLP = """
name = "cli"
[base]
p = 7
alpha = 0.5
d_emb = 8
hidden = 16
lr = 0.01
steps = 40
log_every = 10
[grid]
wd = [0.5, 2.0]
seed = [0, 1, 2]
"""

TRANSFORMER = """
name = "tf"
[base]
arch = "transformer"
p = 7
alpha = 0.5
d_model = 16
n_heads = 2
mlp_ratio = 2
steps = 10
log_every = 5
[grid]
layernorm = [true, false]
seed = [0]
"""


def _invoke(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["train", *args, "--threads", "1", "--progress", "none"])
    return res.exit_code, res.output


def test_written_log_passes_schema_validation(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(MLP)
    out = tmp_path / "log.parquet"
    code, text = _invoke([str(cfg), "-o", str(out)])
    assert code == 0, text
    df = read_table(out)
    table = build_log_table(df)  # raises LogFormatError on a bad table
    assert table is not None
    assert df["run"].nunique() == 6
    # Condition columns: the varying key plus seed, arch, task, p; constant within each run.
    for col in ("wd", "seed", "arch", "task", "p"):
        assert (df.groupby("run")[col].nunique() == 1).all(), col
    for col in ("emb_erank", "emb_erank2", "emb_pr", "emb_srank", "unemb_erank", "unemb_srank",
                "weight_norm", "norm_E", "norm_W1", "norm_W2", "logit_scale",
                "softmax_collapse", "train_loss", "test_loss", "train_acc"):
        assert df[col].dtype == "float64" and df[col].notna().all(), col
    assert df["test_acc"].between(0, 1).all()
    # Logged steps: 0, the early grid, multiples of log_every, the last step.
    steps = sorted(df.loc[df.run == df.run.iloc[0], "step"])
    assert steps[0] == 0 and steps[-1] == 40 and {10, 20, 30}.issubset(steps)
    assert df.attrs["grokaudit"]["sweep"] == "cli"
    man = tomllib.loads((tmp_path / "log.MANIFEST.toml").read_text())
    assert man["runs"] == 6 and man["complete"] is True
    assert {"torch", "device", "numpy"} <= set(man["environment"])
    assert man["sweep"]["grid"]["wd"] == [0.5, 2.0]
    assert not (tmp_path / "log.parquet.ckpt").exists()  # removed once the log is complete


def test_transformer_log_has_attention_columns(tmp_path: Path) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text(TRANSFORMER)
    out = tmp_path / "tf.parquet"
    code, text = _invoke([str(cfg), "-o", str(out)])
    assert code == 0, text
    df = read_table(out)
    build_log_table(df)
    assert {"attn_head_cos", "attn_entropy_std", "attn_cv"} <= set(df.columns)
    assert sorted(df["layernorm"].unique().tolist()) == [False, True]


def test_flags_override_config_and_leave_the_grid(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(MLP)
    out = tmp_path / "o.parquet"
    code, text = _invoke([str(cfg), "-o", str(out), "--wd", "1.5", "--steps", "20"])
    assert code == 0, text
    df = read_table(out)
    assert df["run"].nunique() == 3 and df["step"].max() == 20
    assert "wd" not in df.columns  # fixed by the flag: no longer a varying condition


def test_help_lists_every_option_with_its_default() -> None:
    res = CliRunner().invoke(main, ["train", "--help"], terminal_width=200)
    assert res.exit_code == 0
    for param in train.params:
        if not isinstance(param, __import__("click").Option):
            continue
        flag = max(param.opts, key=len)
        assert flag in res.output, flag
        if param.name in ("help", "output"):
            continue
        # The option's own entry: from its line in the listing to the next option's line.
        start = re.search(rf"^  (-\w, )?{re.escape(flag)}\b", res.output, re.M)
        assert start is not None, flag
        block = res.output[start.end():].split("\n  -", 1)[0]
        assert "default" in block, f"{flag} shows no default"


@pytest.mark.parametrize("body,needle", [
    ('[base]\nbogus = 1\n', "bogus"),
    ('[base]\np = 8\n', "prime"),
    ('[grid]\nwd = 3\n', "list"),
    ('[base\n', "TOML"),
])
def test_bad_config_exits_2_with_one_line(tmp_path: Path, body: str, needle: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(body)
    code, text = _invoke([str(cfg), "-o", str(tmp_path / "x.parquet")])
    assert code == 2
    assert text.startswith("error:") and needle in text and "Traceback" not in text


def test_bad_flags_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(MLP)
    for extra in (["--shard", "2/2"], ["--shard", "x"], ["-o", str(tmp_path / "x.csv")],
                  ["--loss", "hinge"]):
        args = [str(cfg), "-o", str(tmp_path / "x.parquet"), *extra]
        code, text = _invoke(args)
        assert code == 2 and text.startswith("error:"), (extra, text)
    code, text = _invoke([str(tmp_path / "missing.toml"), "-o", str(tmp_path / "x.parquet")])
    assert code == 2 and "no such config file" in text


def test_shards_partition_the_sweep_and_read_back_as_one(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text(MLP)
    full = tmp_path / "full.parquet"
    assert _invoke([str(cfg), "-o", str(full)])[0] == 0
    shards = tmp_path / "shards"
    for i in range(3):
        code, text = _invoke([str(cfg), "-o", str(shards), "--shard", f"{i}/3", "--no-manifest"])
        assert code == 0, text
    assert sorted(p.name for p in shards.iterdir()) == [
        "shard-0-of-3.parquet", "shard-1-of-3.parquet", "shard-2-of-3.parquet"]
    merged = read_table(shards).sort_values(["run", "step"]).reset_index(drop=True)
    ref = read_table(full).sort_values(["run", "step"]).reset_index(drop=True)
    # A run's log does not depend on which other runs share its batch.
    pd.testing.assert_frame_equal(merged[ref.columns], ref, check_exact=False, rtol=1e-5)
