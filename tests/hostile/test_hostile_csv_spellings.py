"""Two spellings of one number in a CSV column (``007`` and ``7``, ``True`` and ``true``) were
read as one value by pyarrow's type inference: the runs of two arms of a CSV sweep were pooled
into one cell, while the same labels in Parquet or JSON lines stayed apart. Such a column is now
read as its text (:mod:`grokaudit.csvread`), in a CSV file, a TSV file and a CSV inside a
folder alike; an axis that needs numbers says why the column is text; float columns written by
two formatters (``0.1`` and ``0.10``) keep their numbers. Missing cells are the same cells in
every reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from grokaudit.adapters import records
from grokaudit.csvread import read_csv_arrow, spellings
from grokaudit.errors import ErrorCode
from grokaudit.schema import read_arrow
from helpers.hostile import cli, expect_audit, expect_error


def _sweep(tags: tuple[str, str]) -> pd.DataFrame:
    """Two arms labelled by ``tags``, three seeds each; the arms grok at different steps."""
    frames = []
    for arm, tag in enumerate(tags):
        for s in range(3):
            i = np.arange(120)
            tg = 30 + 40 * arm
            frames.append(pd.DataFrame({
                "run": f"arm{arm}_s{s}", "step": i * 10, "train_acc": 1.0,
                "test_acc": np.where(i >= tg, 0.99, 0.1),
                "emb_erank": np.where(i < tg + 20, 40.0, 5.0) + 0.01 * s,
                "tag": tag, "seed": s}))
    return pd.concat(frames, ignore_index=True)


def _write_text(df: pd.DataFrame, path: Path) -> Path:
    """``df`` as CSV or TSV, the ``tag`` cells written exactly as given (not re-formatted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, sep="\t" if path.suffix == ".tsv" else ",")
    return path


@pytest.mark.parametrize("where", ["file.csv", "file.tsv", "folder/log.csv"])
def test_labels_spelling_one_integer_two_ways_stay_two_arms(tmp_path: Path, where: str
                                                           ) -> None:
    df = _sweep(("007", "7"))
    src = _write_text(df, tmp_path / where)
    src = src.parent if where.startswith("folder") else src
    as_parquet = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), as_parquet)
    outs = {}
    for name, path in (("text", src), ("parquet", as_parquet)):
        out = cli(["check", path, "--by", "seed", "--cell", "tag", "--metric", "emb_erank",
                   "--json", "-", "-q"])
        expect_audit(out)
        doc = json.loads(out.stdout)
        outs[name] = sorted((json.dumps(s["study"], sort_keys=True), len(s["runs"]))
                            for s in doc["studies"])
    assert outs["text"] == outs["parquet"]
    assert len(outs["text"]) == 2 and all(n == 3 for _, n in outs["text"]), outs
    # as an axis the column is text, and the refusal names the two spellings
    code, msg = expect_error(cli(["check", src, "--by", "tag", "--metric", "emb_erank"]),
                             ErrorCode.NOT_NUMERIC)
    assert "'007'" in msg and "'7'" in msg


def test_which_columns_keep_their_text(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("run,step,a,b,c,d,e,f\n"
                 "r,1,007,True,0.1,7,1,+3\n"
                 "r,2,7,true,0.10,8,true,3\n"
                 "r,3,,,,,,\n")
    for t in (read_csv_arrow(p), read_arrow(p), records.read_arrow_file(p)):
        types = dict(zip(t.column_names, t.schema.types, strict=True))
        # spelled two ways: text, every cell as written, the empty cell missing
        assert t.column("a").to_pylist() == ["007", "7", None]
        assert t.column("b").to_pylist() == ["True", "true", None]
        assert t.column("e").to_pylist() == ["1", "true", None]
        # one spelling per value: numbers; floats written by two formatters: one number
        assert pa.types.is_integer(types["d"]) and t.column("d").to_pylist() == [7, 8, None]
        assert pa.types.is_floating(types["c"]) and t.column("c").to_pylist() == [0.1, 0.1,
                                                                                   None]
        # "+3" is not an integer to the reader: a float column, one number
        assert pa.types.is_floating(types["f"]) and t.column("f").to_pylist() == [3.0, 3.0,
                                                                                   None]
        assert pa.types.is_integer(types["step"])


def test_spellings_names_two_texts_and_ignores_missing_cells() -> None:
    assert spellings(pa.array([7, 7, 8]), pa.array(["007", "7", "8"])) == ("007", "7")
    assert spellings(pa.array([7, 7, 8]), pa.array(["7", "7", "8"])) is None
    assert spellings(pa.array([None, None, 1]), pa.array([None, None, "1"])) is None


@pytest.mark.parametrize("cell", ["NA", "None", "", "null"])
def test_a_missing_text_condition_is_missing_in_a_file_and_in_a_folder(tmp_path: Path,
                                                                       cell: str) -> None:
    """The canonical CSV reader kept ``NA``/``None``/``null`` as text labels in a text column
    (a run of condition "NA"); the same file inside a folder read them as missing."""
    body = f"run,step,test_acc,emb_erank,opt\na,1,0.5,3.0,adam\nb,1,0.5,3.0,{cell}\n"
    f = tmp_path / "log.csv"
    f.write_text(body)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "log.csv").write_text(body)
    assert read_arrow(f).column("opt").to_pylist() == ["adam", None]
    assert records.read_arrow_file(tmp_path / "d" / "log.csv").column("opt").to_pylist() \
        == ["adam", None]
