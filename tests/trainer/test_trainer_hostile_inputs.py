"""``grokaudit train`` given hostile paths and numbers: every path it writes is checked against
the config file and the other outputs before any work (``--overwrite`` never permits writing
over an input); a finished log is never replaced without ``--overwrite``; every option is
range-checked (finite floats, integers within sane limits, threads this machine can run) and a
model that cannot fit the memory is refused before anything is allocated — each one coded
line, exit 2, and no file touched."""

from __future__ import annotations

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
