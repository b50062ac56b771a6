"""A Parquet file's columns are read ahead of validation within a byte budget (issue 44): never
more than :meth:`ParquetSource.read_ahead_budget` held unread beside the column being
validated (one column always in flight), each column the same as a whole-file read, and the
audit the same whatever the budget."""

from __future__ import annotations

import grokaudit
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grokaudit import schema
from grokaudit.schema import ParquetSource


def _file(tmp_path, rows: int = 3000):
    rng = np.random.default_rng(7)
    t = pa.table({
        "run": pa.array([f"r{i // 300}" for i in range(rows)]),
        "step": pa.array(np.tile(np.arange(300, dtype=np.int64) * 10, rows // 300)),
        "test_acc": pa.array(rng.random(rows).astype(np.float32)),
        "train_acc": pa.array(rng.random(rows).astype(np.float32)),
        "emb_erank": pa.array(rng.random(rows) * 30),
        "flag": pa.array(rng.integers(0, 2, rows).astype(np.int8)),
        "note": pa.array([f"text {i // 300 % 3}" for i in range(rows)]),  # a condition
        "seed": pa.array(np.repeat(np.arange(rows // 300), 300)),
    })
    path = tmp_path / "log.parquet"
    pq.write_table(t, path, row_group_size=700)
    return path, t


def test_columns_read_ahead_never_hold_more_than_the_budget(tmp_path) -> None:
    path, whole = _file(tmp_path)
    src = ParquetSource(path, whole.column_names)
    order = ["run", "step", "test_acc", "train_acc", "emb_erank", "flag", "note", "seed"]
    src.plan(order)
    budget = src.read_ahead_budget()
    widths = [b for b in map(src.column_bytes, order) if b is not None]
    assert budget == int(schema.READ_AHEAD_COLUMNS * max(widths))
    assert src.column_bytes("note") is None and src.column_bytes("flag") == 3000
    started_beyond_one = False
    for name in order:
        col = src.column(name)
        ahead = src.in_flight()
        sizes = [src.column_bytes(n) for n in ahead]
        assert len(ahead) <= 1 or (None not in sizes and sum(sizes) <= budget)
        started_beyond_one |= len(ahead) > 1
        want = pq.read_table(path, columns=[name], read_dictionary=["run"]).column(0)
        assert col.combine_chunks().equals(want.combine_chunks())
    assert started_beyond_one  # narrow columns are read two at a time
    assert src.in_flight() == []


@pytest.mark.parametrize("budget", [0.0, 1.0, 1.5, 8.0])
def test_the_audit_is_the_same_whatever_the_read_ahead(tmp_path, monkeypatch, budget) -> None:
    path, _ = _file(tmp_path)
    base = grokaudit.audit_path(path, by="seed", metrics=["emb_erank"]).to_json()
    monkeypatch.setattr(schema, "READ_AHEAD_COLUMNS", budget)
    assert grokaudit.audit_path(path, by="seed", metrics=["emb_erank"]).to_json() == base


def test_text_columns_are_read_one_at_a_time(tmp_path) -> None:
    """A text column's decoded size is not in the file (a dictionary-encoded one can take a
    hundred times its footer's size): it is never read beside another column (review finding:
    every text condition was once read ahead at once)."""
    rows = 4000
    cols = {"run": pa.array([f"r{i // 400}" for i in range(rows)]),
            "step": pa.array(np.tile(np.arange(400, dtype=np.int64), rows // 400)),
            "test_acc": pa.array(np.linspace(0, 1, rows).astype(np.float32))}
    for k in range(4):
        cols[f"cond{k}"] = pa.array([("x" * 200) + str(i // 400) for i in range(rows)])
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table(cols), path, row_group_size=1000)
    names = list(cols)
    src = ParquetSource(path, names)
    src.plan(names)
    assert src.column_bytes("cond0") is None
    for name in names:
        src.column(name)
        ahead = src.in_flight()
        texts = [n for n in ahead if n.startswith("cond")]
        assert len(texts) <= 1 and (not texts or len(ahead) == 1), ahead


def test_a_refusal_part_way_reads_no_more_columns(tmp_path, monkeypatch) -> None:
    """A step column with a missing value is refused at the second stage: the columns planned
    after it and not yet being read are never read, and the reading threads end."""
    import threading

    path, t = _file(tmp_path)
    steps = t.column("step").to_pylist()
    steps[5] = None
    pq.write_table(t.set_column(1, "step", pa.array(steps, pa.int64())), path,
                   row_group_size=700)
    monkeypatch.setattr(schema, "READ_AHEAD_COLUMNS", 100.0)  # every column planned at once
    gate = threading.Event()
    started: list[str] = []
    read = ParquetSource._read

    def gated(self: ParquetSource, name: str) -> pa.ChunkedArray:
        started.append(name)
        if name not in ("run", "step"):
            gate.wait(10)  # both reading threads held while the refusal happens
        return read(self, name)

    monkeypatch.setattr(ParquetSource, "_read", gated)
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_path(path, by="seed")
    assert err.value.code == "MISSING_VALUES"
    gate.set()
    for th in threading.enumerate():
        if th.name.startswith("grokaudit-read"):
            th.join(5)
    assert not [th for th in threading.enumerate() if th.name.startswith("grokaudit-read")]
    # at most one column per reading thread had started when step was refused
    assert set(started) <= {"run", "step", "test_acc", "train_acc"}


def test_run_ids_read_row_group_by_row_group_are_the_whole_file_s(tmp_path) -> None:
    """The run ids (read as a dictionary) are read one row group at a time: the same chunks
    and dictionaries as a whole-file read, whatever their order -- runs that span row groups,
    a run whose rows come back after other runs', row groups whose dictionaries share no id --
    and the audit of the file is that of the same rows audited from memory."""
    rng = np.random.default_rng(3)
    runs = [f"run-{k}" for k in range(12)]
    rows = [(r, s) for r in runs for s in range(0, 400, 10)]
    rows += [("run-0", s) for s in range(400, 600, 10)]  # run-0 again, after every other run
    order = np.arange(len(rows))
    order[40:160] = rng.permutation(order[40:160])  # some runs' rows interleaved
    rows = [rows[i] for i in order]
    n = len(rows)
    step = np.array([s for _, s in rows], dtype=np.int64)
    t = pa.table({"run": pa.array([r for r, _ in rows]), "step": pa.array(step),
                  "test_acc": pa.array(np.clip(step / 300.0, 0, 1).astype(np.float32)),
                  "train_acc": pa.array(np.ones(n, dtype=np.float32)),
                  "emb_erank": pa.array(30 - step / 40 + rng.normal(0, 0.1, n)),
                  "lr": pa.array([float(r.split("-")[1]) % 3 for r, _ in rows])})
    path = tmp_path / "log.parquet"
    pq.write_table(t, path, row_group_size=97)
    assert pq.ParquetFile(path).num_row_groups > 4
    src = ParquetSource(path, t.column_names)
    got = src.column("run")
    src.close()
    want = pq.ParquetFile(path, read_dictionary=["run"]).read(columns=["run"]).column(0)
    assert got.type == want.type and got.num_chunks == want.num_chunks
    assert all(a.equals(b) and a.dictionary.equals(b.dictionary)
               for a, b in zip(got.chunks, want.chunks))
    read = grokaudit.audit_path(path, by="lr", metrics=["emb_erank"]).to_dict()
    held = grokaudit.audit_table(t, by="lr", metrics=["emb_erank"]).to_dict()
    for d in (read, held):
        d.pop("trail")
        d["input"].pop("source")  # the file's path, or None for rows held in memory
    assert read == held and read["studies"]
