"""Two spellings of one number in a CSV condition column (``007`` and ``7``) were read as one
value by pyarrow's type inference: the runs of two arms of a CSV sweep were pooled into one
cell, while the same labels in Parquet or JSON lines stayed apart. Such a column is now read as
its text (:mod:`grokaudit.csvread`), in a CSV file, a TSV file and a CSV file holding a sweep
inside a folder alike; an axis that needs numbers says why the column is text; steps, metrics,
booleans and floats keep their values. Missing cells are the same cells in every reader. The
file is parsed twice from one read of its bytes: a log growing while it is read is read as one
version."""

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
    """Only an integer condition padded with a leading zero and spelled two ways is text;
    a step, a metric, a padded or signed number, a boolean and a float keep their values."""
    p = tmp_path / "t.csv"
    p.write_text("run,step,a,b,c,d,e,sp,z,m,q\n"
                 "r1,0100,007,True,0.1,7,+3, 7,-0,05,007\n"
                 "r1,200,007,true,0.10,8,3, 7,-0,5,008\n"
                 "r2,100,7,TRUE,0.1,7,3,7,0,5,7\n"
                 "r3,100,,,,,,,,,\n")
    for t in (read_csv_arrow(p), read_arrow(p), records.read_arrow_file(p)):
        types = dict(zip(t.column_names, t.schema.types, strict=True))
        # a condition padded and spelled two ways: text, every cell as written, missing kept
        assert t.column("a").to_pylist() == ["007", "007", "7", None]
        assert pa.types.is_boolean(types["b"])
        assert t.column("b").to_pylist() == [True, True, True, None]
        assert pa.types.is_floating(types["c"]) and t.column("c").to_pylist()[:3] == [0.1] * 3
        assert pa.types.is_integer(types["d"])
        assert pa.types.is_floating(types["e"])  # "+3": not an integer to the parser
        for name, want in (("sp", [7, 7, 7, None]), ("z", [0, 0, 0, None]),
                           ("step", [100, 200, 100, 100]), ("m", [5, 5, 5, None]),
                           ("q", [7, 8, 7, None])):
            # padded without a leading zero, signed zero; a step, a metric, a column that
            # changes within a run: their numbers
            assert pa.types.is_integer(types[name]), name
            assert t.column(name).to_pylist() == want, name


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


def test_a_log_growing_between_the_two_parses_is_read_as_one_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The integer columns' text was a second read of the file: a job appending rows in
    between made the two parses disagree in length (FILE_UNREADABLE) or, rewritten in place,
    mixed two versions' cells. Both parses now read one copy of the bytes."""
    import pyarrow.csv as pacsv
    from grokaudit import csvread

    df = _sweep(("007", "7"))
    p = _write_text(df, tmp_path / "log.csv")
    parse = pacsv.read_csv
    calls = []

    def parse_then_grow(*args: object, **kwargs: object) -> pa.Table:
        out = parse(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(out.num_rows)
        with p.open("a") as fh:  # the writer appends while the reader works
            fh.write("".join(f"arm0_s0,{10_000 + i},1.0,0.99,5.0,007,0\n" for i in range(50)))
        return out

    monkeypatch.setattr(csvread.pacsv, "read_csv", parse_then_grow)
    t = read_csv_arrow(p)
    assert len(calls) == 2 and calls == [len(df)] * 2
    assert t.num_rows == len(df) and t.column("tag").to_pylist() == df["tag"].tolist()


@pytest.mark.parametrize("run_column", [True, False])
def test_one_run_files_in_a_folder_keep_two_spellings_apart(tmp_path: Path,
                                                            run_column: bool) -> None:
    """A folder of one CSV per run: each file sees one spelling (``007`` in one arm's files,
    ``7`` in the other's), so each read the integer 7 and the arms were pooled into one cell.
    The folder compares the files' spellings; padded values without a twin stay numbers."""
    df = _sweep(("007", "7"))
    for name, tags in (("pooled", ("007", "7")), ("padded", ("007", "008"))):
        folder = tmp_path / name
        folder.mkdir()
        for run, g in _sweep(tags).groupby("run"):
            g = g if run_column else g.drop(columns="run")
            g.to_csv(folder / f"{run}.csv", index=False)
        out = cli(["check", folder, "--by", "seed", "--cell", "tag", "--metric", "emb_erank",
                   "--json", "-", "-q"])
        expect_audit(out)
        studies = sorted(json.dumps(s["study"], sort_keys=True)
                         for s in json.loads(out.stdout)["studies"])
        if name == "pooled":
            whole = cli(["check", _write_text(df, tmp_path / "one.csv"), "--by", "seed",
                         "--cell", "tag", "--metric", "emb_erank", "--json", "-", "-q"])
            assert studies == sorted(json.dumps(s["study"], sort_keys=True)
                                     for s in json.loads(whole.stdout)["studies"])
            assert studies == ['{"tag": "007"}', '{"tag": "7"}']
        else:  # no two spellings of one number: the numbers, as before
            assert studies == ['{"tag": 7}', '{"tag": 8}']
