"""How the audit holds a log: float32 columns kept as stored, a Parquet file validated column by
column, the input handed over (Owned) and freed as it is read — none of it changes a result."""

from __future__ import annotations

import dataclasses

import grokaudit
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from grokaudit.api import validated_log
from grokaudit.cli import cli
from grokaudit.config import make_config
from grokaudit.errors import ErrorCode
from grokaudit.loader import read_source
from grokaudit.schema import Owned, ParquetSource


def _log(seed: int = 3, n_runs: int = 24, scale: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for r in range(n_runs):
        n = int(rng.integers(60, 200))
        i = np.arange(n)
        tg = int(rng.uniform(0.1, 0.5) * n)
        tc = min(n - 1, tg + int(rng.uniform(0.1, 0.4) * n))
        m = np.where(i < tc, rng.uniform(30, 50), rng.uniform(5, 15)) + rng.normal(0, 0.7, n)
        # accuracies just around the thresholds, where float32 and float64 comparisons differ
        acc = np.where(i >= tg, rng.choice([0.95, 0.99, 0.9, 0.949999988079071], n),
                       rng.uniform(0, 0.5, n))
        frames.append(pd.DataFrame({
            "run": f"r{r}", "step": i * 10, "test_acc": acc * scale, "train_acc": scale,
            "emb_erank": m, "test_loss": 2.0 - acc, "rho": float(r % 4), "seed": r // 4}))
    df = pd.concat(frames, ignore_index=True)
    return df.astype({c: np.float32 for c in ("test_acc", "train_acc", "emb_erank", "test_loss")})


@pytest.mark.parametrize("options", [
    {}, {"profile": "reference"}, {"grok_threshold": 0.95, "full_threshold": 0.99},
    {"acc_scale": 100.0}, {"grok_on": "test_loss", "grok_below": 1.05},
])
def test_float32_columns_audit_as_their_float64_values(options):
    scale = 100.0 if options.get("acc_scale") else 1.0
    df32 = _log(scale=scale)
    df64 = df32.astype({c: np.float64 for c in df32.columns if df32[c].dtype == np.float32})
    log32 = validated_log(df32, make_config(by="rho", **options))
    assert log32.series["emb_erank"].dtype == np.float32  # kept as stored: half the memory
    r32 = grokaudit.audit_table(df32, by="rho", **options).to_json()
    r64 = grokaudit.audit_table(df64, by="rho", **options).to_json()
    assert r32 == r64


def test_a_parquet_file_is_validated_column_by_column(tmp_path):
    df = _log()
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=1000)
    src = read_source(str(path))
    assert isinstance(src, ParquetSource)
    lazy = grokaudit.audit_path(path, by="rho")
    eager = grokaudit.audit_table(pq.read_table(path), by="rho", source=str(path))
    assert lazy.trail is not None and eager.trail is None  # audit_path names the file it read
    assert dataclasses.replace(lazy, trail=None).to_json() == eager.to_json()


def test_other_inputs_are_read_whole(tmp_path):
    df = _log()
    csv = tmp_path / "log.csv"
    df.to_csv(csv, index=False)
    assert isinstance(read_source(str(csv)), pa.Table)
    p1, p2 = tmp_path / "a.parquet", tmp_path / "b.parquet"
    half = df["run"].isin([f"r{i}" for i in range(12)])
    df[half].to_parquet(p1, index=False)
    df[~half].to_parquet(p2, index=False)
    assert isinstance(read_source([str(p1), str(p2)]), pa.Table)


def test_owned_is_taken_once():
    t = pa.table({"run": ["a"], "step": [0], "test_acc": [0.5]})
    box = Owned(t)
    assert box.take() is t
    with pytest.raises(ValueError):
        box.take()


def test_a_corrupt_column_read_late_is_an_input_error(tmp_path):
    df = _log()
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, compression="snappy",
                   row_group_size=100_000)
    meta = pq.ParquetFile(path).metadata
    col = meta.schema.names.index("emb_erank")
    chunk = meta.row_group(0).column(col)
    raw = bytearray(path.read_bytes())
    start = chunk.data_page_offset
    # scramble the metric's data page: the footer is intact, the file opens
    for k in range(start + 8, start + min(chunk.total_compressed_size, 400)):
        raw[k] = (raw[k] * 7 + 13) % 256
    path.write_bytes(bytes(raw))
    src = read_source(str(path))
    assert isinstance(src, ParquetSource)
    res = CliRunner().invoke(cli, ["check", str(path), "--by", "rho", "--metric", "emb_erank"])
    assert res.exit_code == 2, res.output
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_path(path, by="rho", metrics=["emb_erank"])
    assert err.value.code in (ErrorCode.FILE_UNREADABLE, ErrorCode.INFINITE_VALUE,
                              ErrorCode.BAD_COLUMN_TYPE)


def test_figure_bands_of_a_float32_log_are_those_of_its_float64_values():
    pytest.importorskip("matplotlib")
    from grokaudit.figures import cell_band

    df32 = _log()
    df64 = df32.astype({c: np.float64 for c in df32.columns if df32[c].dtype == np.float32})
    cfg = make_config(by="rho")
    log32, log64 = validated_log(df32, cfg), validated_log(df64, cfg)
    for col in ("emb_erank", "test_acc", "train_acc"):
        b32, b64 = cell_band(log32, range(0, 24, 4), col), cell_band(log64, range(0, 24, 4), col)
        assert b32 is not None and b64 is not None
        for f in b64.__dataclass_fields__:
            a, b = getattr(b32, f), getattr(b64, f)
            assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), (col, f)
