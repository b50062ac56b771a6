"""Per-condition NPZ sweeps: the real critical-norm-grokking files, and hand-made ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from grokaudit.adapters import detect_format, read_log
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import build_log_table
from helpers.tables import read_as_percent


def test_real_sweep_reads_every_seed_and_step(npz_dir: Path, prov) -> None:
    files = sorted(npz_dir.glob("*.npz"))
    assert detect_format(npz_dir) == "npz"
    t = read_log(npz_dir)
    log = build_log_table(t, path=str(npz_dir))
    with np.load(files[0]) as z:
        n_seeds, n_steps = z["test_acc"].shape
        first = z["test_acc"][3].astype(np.float64)
        alpha = float(z["alpha"])
        t_grok = z["T_grok_per_seed"].tolist()
    assert log.n_runs == len(files) * n_seeds
    df = t.to_pandas()
    run = f"{files[0].stem}/s3"
    got = df.loc[df.run == run]
    assert len(got) == n_steps
    np.testing.assert_array_equal(got["test_acc"].to_numpy(), first)
    assert got["alpha"].iloc[0] == pytest.approx(alpha) and got["seed"].iloc[0] == 3
    assert {"eff_rank_E", "weight_norm", "train_acc"} <= set(df.columns)
    # per-seed arrays stay out of the table (they would split cells), in the provenance instead
    assert "T_grok_per_seed" not in df.columns
    assert prov(t)["run_attributes"][f"{files[0].stem}/s0"]["T_grok_per_seed"] == t_grok[0]


def _write(p: Path, steps: np.ndarray, acc: np.ndarray, **extra: np.ndarray) -> None:
    np.savez(p, steps=steps, acc=acc, eff=np.ones_like(acc), rho=np.float32(0.3), **extra)


def test_aliases_nan_percent_and_resumed_steps(tmp_path: Path, codes, prov) -> None:
    # cell.npz: steps with a resumed overlap (40..60 logged twice), percent accuracy, one NaN
    steps = np.r_[np.arange(0, 70, 10), np.arange(40, 110, 10)]
    acc = np.tile(np.linspace(0, 100, steps.size), (2, 1))
    acc[1, 2] = np.nan
    _write(tmp_path / "cell.npz", steps, acc)
    t = read_log(tmp_path / "cell.npz")
    df = t.to_pandas()
    assert set(df.run) == {"cell/s0", "cell/s1"}
    assert df.groupby("run").size().tolist() == [11, 11]
    assert df["test_acc"].max() == pytest.approx(100.0)  # as logged
    assert read_as_percent(t) == pytest.approx(1.0)
    assert "eff_rank_E" in df.columns and df["rho"].iloc[0] == pytest.approx(0.3)
    assert codes(t) == ["RESUMED_DUPLICATES", "RESUMED_DUPLICATES"]


def test_many_points(tmp_path: Path) -> None:
    n = 120_000
    _write(tmp_path / "big.npz", np.arange(n), np.random.default_rng(1).random((1, n)))
    assert read_log(tmp_path / "big.npz").num_rows == n


@pytest.mark.parametrize("how,code", [("empty", ErrorCode.FILE_EMPTY),
                                      ("truncated", ErrorCode.FILE_UNREADABLE),
                                      ("no_steps", ErrorCode.MISSING_COLUMN),
                                      ("bad_shape", ErrorCode.BAD_COLUMN_TYPE)])
def test_bad_files_name_the_file(tmp_path: Path, how: str, code: ErrorCode) -> None:
    p = tmp_path / "cell.npz"
    if how == "empty":
        p.write_bytes(b"")
    elif how == "truncated":
        _write(p, np.arange(10), np.zeros((2, 10)))
        p.write_bytes(p.read_bytes()[:300])
    elif how == "no_steps":
        np.savez(p, acc=np.zeros((2, 10)))
    else:
        np.savez(p, steps=np.arange(10), acc=np.zeros((2, 9)))
    with pytest.raises(LogFormatError) as exc:
        read_log(p)
    assert exc.value.path == str(p) and exc.value.code is code
