"""`grokaudit reproduce` training here: the budget check before any work, the logs and their
MANIFESTs, --resume reusing finished logs, and the refusal to replace them without it. A tiny
design stands in for a seed's (the seeds' own CPU designs take minutes to tens of minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from grokaudit import reproduce as rp
from grokaudit.cli import cli
from grokaudit.seeds import LOGS, Headline, PaperValue, SeedDesign

pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore")

TINY = """
name = "tiny"
[base]
task = "add"
p = 11
alpha = 0.6
arch = "mlp"
d_emb = 16
hidden = 32
lr = 1e-2
steps = 120
log_every = 20
[grid]
wd = [1.0]
seed = [0, 1]
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    design = SeedDesign(
        seed="tiny", title="a tiny design", source="test",
        configs={"cpu": (str(cfg),), "paper": (str(cfg),)}, bundled=(),
        audits={"transition": ("transition", LOGS, "--by", "wd")},
        headlines=(Headline("tiny.collapse", "runs that regress at the largest wd",
                            PaperValue("1", 1.0), "transition", "regressed_at_max",
                            null=None),),
        scale_note="tiny")
    monkeypatch.setattr(rp, "SEEDS", {"tiny": design})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["reproduce", "tiny", *args])
    return res.exit_code, res.output


def test_budget_refused_before_anything_is_written(tiny: Path) -> None:
    code, out = _run("--out", "runs", "--budget-hours", "1e-9", "--threads", "1")
    assert code == 2 and "[BUDGET_EXCEEDED]" in out
    assert not list((tiny / "runs").rglob("*.parquet"))


def test_trains_audits_and_resumes(tiny: Path) -> None:
    code, out = _run("--out", "runs", "--threads", "1", "--json", "r.json")
    assert code == 0, out
    log = tiny / "runs" / "seed-tiny" / "tiny.parquet"
    manifest = tiny / "runs" / "seed-tiny" / "tiny.MANIFEST.toml"
    assert log.is_file() and manifest.is_file()
    assert "reproduce" not in manifest.read_text().split("command = ")[1].splitlines()[0]
    d = json.loads((tiny / "r.json").read_text())
    (row,) = d["rows"]
    assert row["verdict"] in rp.VERDICTS
    assert d["seeds"][0]["source"] == "trained"
    assert d["seeds"][0]["train_commands"][0].startswith("grokaudit train ")
    # again without --resume: the finished log is never replaced
    stamp = log.stat().st_mtime_ns
    code, out = _run("--out", "runs", "--threads", "1")
    assert code == 2 and "[WORK_WOULD_BE_LOST]" in out
    # with --resume: reused, not retrained, the same row
    code, out = _run("--out", "runs", "--threads", "1", "--resume", "--json", "r2.json")
    assert code == 0, out
    assert log.stat().st_mtime_ns == stamp
    assert json.loads((tiny / "r2.json").read_text())["rows"] == d["rows"]


def test_out_that_is_a_file_is_refused(tiny: Path) -> None:
    (tiny / "runs").write_text("my notes")
    code, out = _run("--out", "runs", "--threads", "1")
    assert code == 2 and "[OUTPUT_NOT_WRITABLE]" in out
    assert (tiny / "runs").read_text() == "my notes"


def test_a_foreign_file_at_a_log_path_is_refused_before_any_training(tiny: Path) -> None:
    """Even with --resume: a file that is not a log of the design's sweep (a copy of another
    log, notes) is never reused as ours, nor handed to train to refuse half-way."""
    import shutil

    from grokaudit.reproduce import bundled_path

    log = tiny / "runs" / "seed-tiny" / "tiny.parquet"
    log.parent.mkdir(parents=True)
    shutil.copy(bundled_path("seeds/s003_cpu_h64.parquet"), log)
    stamp = log.stat().st_mtime_ns
    code, out = _run("--out", "runs", "--threads", "1", "--resume")
    assert code == 2 and "[WORK_WOULD_BE_LOST]" in out
    assert log.stat().st_mtime_ns == stamp and not list(log.parent.glob("*.ckpt"))


def test_a_nan_budget_is_refused(tiny: Path) -> None:
    code, out = _run("--out", "runs", "--budget-hours", "nan")
    assert code == 2 and "[OPTION_OUT_OF_RANGE]" in out
    assert not (tiny / "runs").exists()


def test_every_seed_config_loads() -> None:
    from grokaudit.reference_runs.sweep import expand, load_sweep
    from grokaudit.seeds import SEEDS

    for d in SEEDS.values():
        for scale, cfgs in d.configs.items():
            for c in cfgs:
                specs = expand(load_sweep(rp.config_path(c)))
                assert specs, (d.seed, scale, c)
