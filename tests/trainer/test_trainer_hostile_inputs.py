"""``grokaudit train`` given hostile paths and numbers: every path it writes is checked against
the config file and the other outputs before any work (``--overwrite`` never permits writing
over an input); a finished log is never replaced without ``--overwrite``; every option is
range-checked (finite floats, integers within sane limits, threads this machine can run) and a
model that cannot fit the memory is refused before anything is allocated — each one coded
line, exit 2, and no file touched."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.errors import ErrorCode
from helpers.hostile import assert_unchanged, cli, expect_error, snapshot, sub

pytest.importorskip("torch", reason="grokaudit train needs torch")

E = ErrorCode

SWEEP = """
name = "{name}"
[base]
p = 7
alpha = 0.5
d_emb = 6
hidden = 8
steps = {steps}
log_every = 10
"""
FAST = ["--threads", "1", "--progress", "none"]


def _sweep(folder: Path, name: str = "cfg.toml", sweep: str = "a", steps: int = 20) -> Path:
    path = folder / name
    path.write_text(SWEEP.format(name=sweep, steps=steps))
    return path


def _refused(folder: Path, args: list[str], *codes: ErrorCode) -> None:
    """``train ARGS`` in ``folder`` exits 2 with one of ``codes`` and changes no file."""
    before = snapshot(folder)
    expect_error(cli(["train", *args, *FAST], cwd=folder), *codes)
    assert_unchanged(before, folder)


# -- every path train writes, against the inputs and each other ------------------------------

@pytest.mark.parametrize("extra", [[], ["--overwrite"], ["--resume"]])
def test_checkpoint_naming_the_config_is_an_input(tmp_path: Path, extra: list[str]) -> None:
    _sweep(tmp_path)
    _refused(tmp_path, ["cfg.toml", "-o", "y.parquet", "--checkpoint", "cfg.toml", *extra],
             E.OUTPUT_IS_INPUT)


def test_checkpoint_and_log_on_one_path_clash(tmp_path: Path) -> None:
    _sweep(tmp_path)
    _refused(tmp_path, ["cfg.toml", "-o", "x.parquet", "--checkpoint", "x.parquet"],
             E.OUTPUT_CLASH)


def test_manifest_beside_the_log_never_replaces_the_config(tmp_path: Path) -> None:
    # the manifest of -o x.parquet is x.MANIFEST.toml: here, the config file itself
    _sweep(tmp_path, "x.MANIFEST.toml")
    _refused(tmp_path, ["x.MANIFEST.toml", "-o", "x.parquet", "--overwrite"],
             E.OUTPUT_IS_INPUT)


def test_finished_log_is_never_replaced_without_overwrite(tmp_path: Path) -> None:
    _sweep(tmp_path, "a.toml", "a")
    _sweep(tmp_path, "b.toml", "b", steps=30)
    done = cli(["train", "a.toml", "-o", "x.parquet", *FAST], cwd=tmp_path)
    assert done.exit_code == 0, done
    finished = (tmp_path / "x.parquet").read_bytes()
    for extra in ([], ["--resume"]):  # another sweep over it; nothing to resume either
        _refused(tmp_path, ["b.toml", "-o", "x.parquet", *extra], E.WORK_WOULD_BE_LOST)
    _refused(tmp_path, ["a.toml", "-o", "x.parquet"], E.WORK_WOULD_BE_LOST)  # its own, too
    replaced = cli(["train", "b.toml", "-o", "x.parquet", "--overwrite", *FAST], cwd=tmp_path)
    assert replaced.exit_code == 0, replaced
    assert (tmp_path / "x.parquet").read_bytes() != finished


# -- numbers: finite, within limits, within the machine ----------------------------------------

@pytest.mark.parametrize("flags", [
    ["--hidden", "0"],
    ["--d-emb", "1000000000"],
    ["--seed", "-1"],
    ["--arch", "transformer", "--n-heads", "0"],
    ["--lr", "inf"],
    ["--wd", "nan"],
    ["--tau", "inf"],
    ["--max-minutes", "nan"],
    ["--checkpoint-minutes", "inf"],
], ids=lambda f: " ".join(f))
def test_option_out_of_range_is_one_coded_line(tmp_path: Path, flags: list[str]) -> None:
    _sweep(tmp_path)
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", *flags], E.OPTION_OUT_OF_RANGE)


@pytest.mark.parametrize("line", ["steps = 1e20", "p = 1000003", "log_points = 1e15"])
def test_config_integer_beyond_its_limit_is_refused(tmp_path: Path, line: str) -> None:
    (tmp_path / "cfg.toml").write_text(f"name = 'big'\n[base]\nlog_grid = 'geometric'\n{line}\n")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.OPTION_OUT_OF_RANGE)


@pytest.mark.slow  # a real process (torch's import): a few seconds
def test_threads_beyond_the_machine_are_refused(tmp_path: Path) -> None:
    # a real process: asking OpenMP for 100 000 threads used to crash it (no message)
    _sweep(tmp_path)
    before = snapshot(tmp_path)
    out = sub(["train", "cfg.toml", "-o", "o.parquet", "--progress", "none",
               "--threads", "100000"], cwd=tmp_path)
    expect_error(out, E.OPTION_OUT_OF_RANGE)
    assert_unchanged(before, tmp_path)


def test_model_larger_than_memory_is_refused_before_allocating(tmp_path: Path) -> None:
    # a 2²⁰-wide second hidden layer: 2⁴⁰ weights, terabytes, on any machine
    _sweep(tmp_path)
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", "--hidden", str(1 << 20), "--depth", "2"],
             E.OUT_OF_MEMORY)


def test_allocation_failure_while_training_is_out_of_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what torch's CPU allocator raises when a tensor cannot be had: a plain RuntimeError
    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 56000000000 bytes.")

    monkeypatch.setattr("grokaudit.reference_runs.sweep.run_sweep", fail)
    _sweep(tmp_path)
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.OUT_OF_MEMORY)


def test_diverging_run_is_logged_not_a_crash(tmp_path: Path) -> None:
    # a finite but absurd learning rate: the weights overflow to inf/nan within a few steps;
    # the run is logged to its last step (its spectra NaN), not an internal error
    _sweep(tmp_path)
    out = cli(["train", "cfg.toml", "-o", "o.parquet", "--lr", "1e30", *FAST], cwd=tmp_path)
    assert out.exit_code == 0, out
    log = pd.read_parquet(tmp_path / "o.parquet")
    assert log["step"].max() == 20
    assert not np.isfinite(log["weight_norm"].iloc[-1])


# -- files beside the log that train would replace -------------------------------------------

def _not_a_checkpoint(path: Path, kind: str) -> None:
    """A file someone keeps at the checkpoint's path: notes, a finished log, a bare pickle,
    a torch file of something else (a zip like ours, but not a grokaudit checkpoint)."""
    import pickle

    import torch

    if kind == "text":
        path.write_text("precious notes\n")
    elif kind == "parquet":
        pd.DataFrame({"run": ["r"], "step": [0], "train_acc": [0.5]}).to_parquet(path)
    elif kind == "pickle":
        path.write_bytes(pickle.dumps({"results": [1, 2, 3]}))
    else:
        torch.save({"weights": torch.ones(3)}, path)


@pytest.mark.parametrize("kind", ["text", "parquet", "pickle", "torch"])
@pytest.mark.parametrize("extra", [[], ["--overwrite"]], ids=["plain", "overwrite"])
def test_file_that_is_not_a_checkpoint_is_never_replaced(tmp_path: Path, kind: str,
                                                          extra: list[str]) -> None:
    _sweep(tmp_path)
    _not_a_checkpoint(tmp_path / "notes.txt", kind)
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", "--checkpoint", "notes.txt", *extra],
             E.OUTPUT_NOT_WRITABLE)


@pytest.mark.parametrize("extra", [[], ["--overwrite"]], ids=["plain", "overwrite"])
def test_file_at_the_default_checkpoint_path_is_never_replaced(tmp_path: Path,
                                                               extra: list[str]) -> None:
    _sweep(tmp_path)
    _not_a_checkpoint(tmp_path / "o.parquet.ckpt", "text")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", *extra], E.OUTPUT_NOT_WRITABLE)


def test_run_sweep_never_writes_over_a_file_that_is_not_a_checkpoint(tmp_path: Path) -> None:
    from grokaudit.errors import ConfigError
    from grokaudit.reference_runs.sweep import expand, load_sweep, run_sweep

    notes = tmp_path / "notes.txt"
    _not_a_checkpoint(notes, "text")
    with pytest.raises(ConfigError) as info:
        run_sweep(expand(load_sweep(_sweep(tmp_path))), device="cpu", checkpoint=notes,
                  progress="none")
    assert info.value.code is E.OUTPUT_NOT_WRITABLE
    assert notes.read_text() == "precious notes\n"


def test_real_checkpoint_is_still_replaced_with_overwrite(tmp_path: Path) -> None:
    # the refusal above is for foreign files only: a stopped sweep's own checkpoint is
    # refused without a flag (saved work) and replaced with --overwrite
    _sweep(tmp_path)
    stop = cli(["train", "cfg.toml", "-o", "o.parquet", "--checkpoint", "c.bin",
                "--max-minutes", "1e-9", *FAST], cwd=tmp_path)
    assert stop.exit_code == 0, stop
    assert (tmp_path / "c.bin").exists()
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", "--checkpoint", "c.bin"],
             E.WORK_WOULD_BE_LOST)
    _not_a_checkpoint(tmp_path / "notes.txt", "text")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", "--checkpoint", "notes.txt", "--overwrite"],
             E.OUTPUT_NOT_WRITABLE)
    done = cli(["train", "cfg.toml", "-o", "o.parquet", "--checkpoint", "c.bin", "--overwrite",
                *FAST], cwd=tmp_path)
    assert done.exit_code == 0, done
    assert not (tmp_path / "c.bin").exists()  # the sweep completed: its checkpoint is gone


@pytest.mark.parametrize("extra", [[], ["--resume"]], ids=["plain", "resume"])
def test_existing_manifest_is_never_replaced_without_overwrite(tmp_path: Path,
                                                               extra: list[str]) -> None:
    _sweep(tmp_path)
    (tmp_path / "o.MANIFEST.toml").write_text("precious\n")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet", *extra], E.WORK_WOULD_BE_LOST)
    assert cli(["train", "cfg.toml", "-o", "o.parquet", "--no-manifest", *FAST],
               cwd=tmp_path).exit_code == 0  # writing no manifest replaces nothing
    assert (tmp_path / "o.MANIFEST.toml").read_text() == "precious\n"
    (tmp_path / "o.parquet").unlink()
    replaced = cli(["train", "cfg.toml", "-o", "o.parquet", "--overwrite", *FAST], cwd=tmp_path)
    assert replaced.exit_code == 0, replaced
    assert (tmp_path / "o.MANIFEST.toml").read_text() != "precious\n"


def test_resumed_sweep_rewrites_its_own_manifest(tmp_path: Path) -> None:
    _sweep(tmp_path)
    stop = cli(["train", "cfg.toml", "-o", "o.parquet", "--max-minutes", "1e-9", *FAST],
               cwd=tmp_path)
    assert stop.exit_code == 0, stop
    assert _manifest(tmp_path / "o.MANIFEST.toml")["complete"] is False
    # without a flag, the stopped sweep's manifest is saved work like its checkpoint
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.WORK_WOULD_BE_LOST)
    (tmp_path / "o.parquet.ckpt").unlink()  # a partial log alone is resumed too
    (tmp_path / "elsewhere.MANIFEST.toml").write_text("precious\n")
    _refused(tmp_path, ["cfg.toml", "-o", "elsewhere.parquet", "--resume"],
             E.WORK_WOULD_BE_LOST)
    resumed = cli(["train", "cfg.toml", "-o", "o.parquet", "--resume", *FAST], cwd=tmp_path)
    assert resumed.exit_code == 0, resumed
    assert _manifest(tmp_path / "o.MANIFEST.toml")["complete"] is True


def _manifest(path: Path) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    data: dict[str, object] = tomllib.loads(path.read_text())
    return data


# -- metrics of a diverged run ---------------------------------------------------------------

def test_spectral_metrics_of_a_nan_matrix_are_all_nan() -> None:
    import torch
    from grokaudit.reference_runs.metrics import spectral_metrics

    mats = torch.randn(3, 6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    mats[1, 2, 3] = float("nan")  # one entry of run 1
    mats[2] = 0.0  # no spectrum at all: every rank measure is 0/0
    out = spectral_metrics(mats)
    assert set(out) == {"erank", "erank2", "pr", "srank"}
    for name, v in out.items():
        assert bool(torch.isfinite(v[0])), name  # the healthy run keeps its spectrum
        assert bool(torch.isnan(v[1])), name
        assert bool(torch.isnan(v[2])), name


def test_diverged_run_logs_no_fake_collapse(tmp_path: Path) -> None:
    # lr = 1e308: the weights turn NaN; an effective rank of exactly 1.0 would read as a
    # collapse to rank one, while the other rank measures are NaN
    _sweep(tmp_path)
    out = cli(["train", "cfg.toml", "-o", "o.parquet", "--lr", "1e308", *FAST], cwd=tmp_path)
    assert out.exit_code == 0, out
    log = pd.read_parquet(tmp_path / "o.parquet")
    for m in ("emb", "unemb"):
        undefined = log[f"{m}_pr"].isna()
        assert undefined.any()
        for col in (f"{m}_erank", f"{m}_erank2", f"{m}_srank"):
            assert (log[col].isna() == undefined).all(), col


# -- the grid ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["seed = [0, 0.0]", "wd = [1, 1.0]", "seed = [1, true]",
                                  "lr = [0.001, true]"])
def test_grid_values_equal_as_numbers_are_one_value(tmp_path: Path, line: str) -> None:
    # 0 and 0.0 are one seed (one run trained twice under two ids); true is not a number
    (tmp_path / "cfg.toml").write_text(
        SWEEP.format(name="t", steps=20) + f"[grid]\n{line}\n")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.INVALID_OPTION)


def test_grid_beyond_the_run_cap_is_refused_before_expanding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grokaudit.reference_runs import sweep

    def expanded(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run of the grid was built")

    monkeypatch.setattr(sweep, "from_dict", expanded)
    values = ", ".join(str(i) for i in range(30))  # 30⁵: 24.3 million runs
    keys = "".join(f"{k} = [{values}]\n" for k in ("seed", "t_int", "lr", "wd", "tau"))
    (tmp_path / "cfg.toml").write_text(SWEEP.format(name="t", steps=20) + "[grid]\n" + keys)
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.OPTION_OUT_OF_RANGE)
    one_over = ", ".join(str(i) for i in range(sweep.MAX_RUNS + 1))
    (tmp_path / "cfg.toml").write_text(
        SWEEP.format(name="t", steps=20) + f"[grid]\nseed = [{one_over}]\n")
    _refused(tmp_path, ["cfg.toml", "-o", "o.parquet"], E.OPTION_OUT_OF_RANGE)
