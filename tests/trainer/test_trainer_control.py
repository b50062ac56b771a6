"""w_c from a free control run, and --max-minutes: a clean stop that --resume completes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit.cli import cli  # noqa: E402
from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.models import build_model  # noqa: E402
from grokaudit.reference_runs.train import measure_wc  # noqa: E402

CPU = torch.device("cpu")
SMALL = dict(p=7, alpha=0.5, d_emb=6, hidden=8, steps=10, log_every=5, rho=0.9)


def test_measure_wc_is_the_median_norm_at_grok_of_free_controls() -> None:
    # With a grok threshold of 0 every control "groks" at step 0, so w_c must be the median
    # initial norm of the three seeds' models, computed here directly from their parameters.
    cfgs = [TrainConfig(**SMALL, seed=s) for s in (0, 1, 2)]
    got = measure_wc(cfgs, CPU, grok_threshold=0.0)
    norms = []
    for s in (0, 1, 2):
        m = build_model(cfgs[0], [s], 7, CPU)
        norms.append(np.sqrt(sum(float((getattr(m, n).detach().double() ** 2).sum())
                                 for n in ("E", "W1", "W2"))))
    assert got == pytest.approx(float(np.median(norms)), rel=1e-6)


def test_every_tau_of_a_cell_clamps_to_the_free_runs_norm(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The reference norm comes from the free run without the temperature: the controls of a
    cell's tau values are one set, trained at tau 1 (each tau measured its own before)."""
    from grokaudit.reference_runs import sweep
    from grokaudit.reference_runs.sweep import RunSpec

    seen: list[list[float]] = []

    def fake(cfgs: list[TrainConfig], device: object) -> float:
        seen.append([c.tau for c in cfgs])
        return 5.0

    monkeypatch.setattr(sweep, "measure_wc", fake)
    specs = [RunSpec(f"r{i}", TrainConfig(**SMALL, seed=s, tau=t), {})
             for i, (s, t) in enumerate([(0, 1.7), (0, 1.0), (1, 1.3)])]
    out = sweep.resolve_wc(specs, CPU)
    assert seen == [[1.0, 1.0]]  # one measurement: seeds 0 and 1, both at tau 1
    assert [s.cfg.w_c for s in out] == [5.0, 5.0, 5.0]
    assert [s.cfg.tau for s in out] == [1.7, 1.0, 1.3]  # the runs keep their temperature


def test_measure_wc_refuses_when_no_control_groks() -> None:
    with pytest.raises(ValueError, match="no free control run grokked"):
        measure_wc([TrainConfig(**SMALL, seed=0)], CPU, grok_threshold=1.01)


def test_clamped_sweep_without_wc_and_no_grok_exits_2(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text("[base]\np = 7\nd_emb = 6\nhidden = 8\nsteps = 10\nlog_every = 5\n"
                   "rho = 0.9\n")
    res = CliRunner().invoke(cli, ["train", str(cfg), "-o", str(tmp_path / "o.parquet"),
                                   "--progress", "none"])
    assert res.exit_code == 2
    assert res.output.startswith("error:") and "w_c" in res.output


def test_max_minutes_stops_cleanly_and_resume_completes(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text("name = 'mm'\n[base]\np = 7\nalpha = 0.5\nd_emb = 6\nhidden = 8\n"
                   "steps = 200\nlog_every = 20\nlr = 0.01\n[grid]\nseed = [0, 1]\n")
    out = tmp_path / "o.parquet"
    base = ["train", str(cfg), "-o", str(out), "--progress", "none", "--threads", "1"]
    res = CliRunner().invoke(cli, [*base, "--max-minutes", "1e-9"])
    assert res.exit_code == 0, res.output
    assert "stopped at --max-minutes" in res.output
    partial = pd.read_parquet(out)
    assert partial["step"].max() < 200  # a partial log, marked incomplete
    assert "complete = false" in (tmp_path / "o.MANIFEST.toml").read_text()
    assert (tmp_path / "o.parquet.ckpt").exists()
    res = CliRunner().invoke(cli, [*base, "--resume"])
    assert res.exit_code == 0, res.output
    ref = tmp_path / "ref.parquet"
    res = CliRunner().invoke(cli, ["train", str(cfg), "-o", str(ref), "--progress", "none",
                                   "--threads", "1"])
    assert res.exit_code == 0, res.output
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(ref), check_exact=True)


def test_resume_refuses_a_checkpoint_of_another_sweep(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text("name = 'mm'\n[base]\np = 7\nd_emb = 6\nhidden = 8\nsteps = 50\n"
                   "log_every = 10\n[grid]\nseed = [0, 1]\n")
    out = tmp_path / "o.parquet"
    base = ["train", str(cfg), "-o", str(out), "--progress", "none", "--threads", "1"]
    assert CliRunner().invoke(cli, [*base, "--max-minutes", "1e-9"]).exit_code == 0
    res = CliRunner().invoke(cli, [*base, "--resume", "--wd", "0.5"])  # a changed config
    assert res.exit_code == 2
    assert res.output.startswith("error:") and "different sweep" in res.output


def test_train_never_discards_a_checkpoint_or_a_partial_log(tmp_path: Path) -> None:
    """The issue's case: a sweep stopped by --max-minutes said "continue with --resume"; the
    same command without it exited 0 after replacing the checkpoint and the partial log."""
    cfg = tmp_path / "s.toml"
    cfg.write_text("name = 'mm'\n[base]\np = 7\nalpha = 0.5\nd_emb = 6\nhidden = 8\n"
                   "steps = 200\nlog_every = 20\nlr = 0.01\n[grid]\nseed = [0, 1]\n")
    out = tmp_path / "o.parquet"
    base = ["train", str(cfg), "-o", str(out), "--progress", "none", "--threads", "1"]
    assert CliRunner().invoke(cli, [*base, "--max-minutes", "1e-9"]).exit_code == 0
    ckpt = tmp_path / "o.parquet.ckpt"
    before = (out.read_bytes(), ckpt.read_bytes())
    res = CliRunner().invoke(cli, base)
    assert res.exit_code == 2 and "[WORK_WOULD_BE_LOST]" in res.output
    assert "--resume" in res.output and "--overwrite" in res.output
    assert (out.read_bytes(), ckpt.read_bytes()) == before  # nothing touched
    # the partial log alone (its checkpoint removed) is still work
    ckpt.unlink()
    res = CliRunner().invoke(cli, base)
    assert res.exit_code == 2 and "partial log" in res.output
    assert CliRunner().invoke(cli, [*base, "--resume", "--overwrite"]).exit_code == 2
    res = CliRunner().invoke(cli, [*base, "--overwrite"])
    assert res.exit_code == 0, res.output
    assert pd.read_parquet(out)["step"].max() == 200
