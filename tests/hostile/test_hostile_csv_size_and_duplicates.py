"""Text tables against the size caps, and ``--on-duplicate`` in every reader.

A CSV or TSV header wider than ``--max-columns`` is refused from the header line alone
(``TOO_LARGE``), before the parser sees the file (a 5.6 MB CSV of 120 000 columns took 1.6 GB
and 31 s); a header longer than pyarrow's 1 MiB block is read (it was "Empty CSV file or
block"). The same duplicate (run, step) rows resolve the same way whether they come from a
CSV, a JSON-lines file, a CSV in a folder, a Parquet file or two files merged.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest
from grokaudit.adapters import records
from grokaudit.errors import ErrorCode, GrokauditError, LogFormatError
from grokaudit.limits import Limits
from grokaudit.loader import read_any
from grokaudit.schema import build_log_table
from helpers.hostile import cli, expect_error


def _write_wide(path: Path, columns: int, name_len: int = 6, rows: int = 4) -> None:
    """A canonical table with ``columns`` extra columns, written by the csv module (the json
    module for a ``.jsonl`` file)."""
    delim = "\t" if path.suffix == ".tsv" else ","
    names = ["run", "step", "test_acc", "emb_erank",
             *(f"c{i:0{name_len}d}" for i in range(columns))]
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(dict(zip(names, ["r0", s * 10, s / rows, 10 - s,
                                                            *([0] * columns)]))) + "\n"
                                for s in range(rows)))
        return
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, delimiter=delim)
        w.writerow(names)
        for s in range(rows):
            w.writerow(["r0", s * 10, s / rows, 10 - s, *([0] * columns)])


@pytest.mark.parametrize("layout", ["file.csv", "file.tsv", "folder/log.csv", "file.jsonl"])
def test_a_text_table_wider_than_max_columns_is_refused_from_its_header(
        tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """20 000 columns against ``--max-columns 1000``: refused from the header line (a JSON-lines
    log: its first record) before the file is parsed."""
    path = tmp_path / layout
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_wide(path, 20_000)

    def never(*a: Any, **k: Any) -> pa.Table:
        raise AssertionError("the table was parsed")

    monkeypatch.setattr(pyarrow.csv, "read_csv", never)
    monkeypatch.setattr(records, "_jsonl", never)
    target = tmp_path / layout.split("/")[0]
    expect_error(cli(["check", target, "--max-columns", "1000"]), "TOO_LARGE")
    with pytest.raises(LogFormatError) as e:
        read_any(target, limits=Limits(max_columns=1000))
    assert e.value.code is ErrorCode.TOO_LARGE


@pytest.mark.parametrize("layout", ["file.csv", "folder/log.csv"])
def test_a_header_longer_than_a_parser_block_is_read(tmp_path: Path, layout: str) -> None:
    """2 000 column names of 600 characters: a 1.2 MB header, within the column cap."""
    path = tmp_path / layout
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_wide(path, 2_000, name_len=600, rows=6)
    assert path.open("rb").readline().__len__() > 1 << 20
    t = read_any(tmp_path / layout.split("/")[0])
    assert t.num_rows == 6 and "c" + "0" * 600 in t.column_names


# ------------------------------------------------------------------------------------------
# --on-duplicate: one rule in every reader
# ------------------------------------------------------------------------------------------

COLUMNS = ["run", "step", "test_acc", "emb_erank"]


def _rows() -> list[dict[str, Any]]:
    """Two runs of eight steps; run ``a`` logs step 30 twice, with another accuracy the
    second time (a resumed run re-logging a step), and its metric only the second time."""
    rows = [{"run": r, "step": s * 10, "test_acc": s / 7, "emb_erank": 10.0 - s}
            for r in ("a", "b") for s in range(8)]
    rows[3]["emb_erank"] = None
    rows.insert(4, {"run": "a", "step": 30, "test_acc": 0.95, "emb_erank": 2.5})
    return rows


def _csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path


def _sources(root: Path) -> dict[str, Path | list[Path]]:
    rows = _rows()
    jsonl = root / "log.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = root / "log.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    return {"csv": _csv(root / "log.csv", rows), "jsonl": jsonl,
            "csv_in_folder": _csv(root / "folder" / "log.csv", rows).parent,
            "parquet": parquet,
            "two_files": [_csv(root / "one" / "log.csv", rows[:4] + rows[5:]),
                          _csv(root / "two" / "log.csv", rows[4:5])]}


def _resolved(src: Path | list[Path], policy: str) -> tuple[Any, ...] | str:
    """Run ``a``'s steps and values after validation, and the rows set aside as resolved
    duplicates; or the refusal's code."""
    try:
        log = build_log_table(read_any(src, on_duplicate=policy), on_duplicate=policy)
    except GrokauditError as exc:
        return str(exc.code)
    i = list(log.run_ids).index("a")
    rows = slice(int(log.offsets[i]), int(log.offsets[i + 1]))
    dups = {k: v for k, v in log.summary.set_aside.items() if k.startswith("duplicate")}
    return (log.step[rows].tolist(), log.test_acc[rows].tolist(),
            log.series["emb_erank"][rows].tolist(), dups, log.summary.rows_read)


@pytest.mark.parametrize("policy", ["first", "last"])
def test_on_duplicate_resolves_the_same_rows_alike_in_every_reader(tmp_path: Path,
                                                                    policy: str) -> None:
    """The CSV file resolved them; the same rows as JSON lines, or as a CSV inside a folder,
    were refused whatever ``--on-duplicate`` said. Under ``error`` every reader refuses."""
    sources = _sources(tmp_path)
    results = {name: _resolved(src, policy) for name, src in sources.items()}
    assert len({json.dumps(r) for r in results.values()}) == 1, results
    steps, acc, erank, dups, _ = results["csv"]
    assert steps == sorted(set(steps)) and dups == {f"duplicate_{policy}_wins": 1}
    # the value present first (last) wins, column by column: the metric only one row holds
    assert (acc[3], erank[3]) == ((3 / 7, 2.5) if policy == "first" else (0.95, 2.5))
    refused = {name: _resolved(src, "error") for name, src in sources.items()}
    assert set(refused.values()) == {str(ErrorCode.DUPLICATE_ROWS)}, refused


@pytest.mark.parametrize("policy", ["first", "last"])
def test_check_on_duplicate_gives_one_result_for_csv_jsonl_and_a_folder(
        tmp_path: Path, policy: str) -> None:
    srcs = _sources(tmp_path)
    outs = [cli(["check", srcs[k], "--metric", "emb_erank", "--on-duplicate", policy,
                 "--json", "-", "-q"]) for k in ("csv", "jsonl", "csv_in_folder")]
    assert {o.exit_code for o in outs} == {outs[0].exit_code} and outs[0].exit_code in (0, 1)
    summaries = [json.loads(o.stdout)["input"]["set_aside"] for o in outs]
    assert all(s == summaries[0] for s in summaries), summaries


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
@pytest.mark.parametrize("keep", ["first", "last"])
def test_on_duplicate_decides_between_two_files_of_one_folder(tmp_path: Path, suffix: str,
                                                              keep: str) -> None:
    """Two table files in one folder giving one run two values at one step: --on-duplicate
    first|last was ignored there (the last read won, a RESUMED_DUPLICATES warning), while the
    same two files named as inputs followed it (issue 38's review). One rule now."""
    from helpers.hostile import sweep_df

    df = sweep_df(wds=(1.0, 2.0), seeds=(0, 1))
    other = df[(df.run == "wd1.0_s0") & df.step.between(600, 700)].assign(test_acc=0.999)
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, part in (("a", df), ("b", other)):
        p = folder / f"{name}{suffix}"
        if suffix == ".csv":
            part.to_csv(p, index=False)
        else:
            part.to_json(p, orient="records", lines=True)
    read = {}
    for how, args in (("folder", [folder]), ("inputs", [folder / f"a{suffix}",
                                                         folder / f"b{suffix}"])):
        out = cli(["check", *args, "--by", "wd", "--metric", "emb_erank", "--on-duplicate",
                   keep, "--json", "-"])
        assert out.exit_code in (0, 1), out
        doc = json.loads(out.stdout)
        assert doc["input"]["set_aside"].get(f"duplicate_{keep}_wins") == 2, doc["input"]
        runs = {r["run"]: r for r in doc["studies"][0]["runs"]}
        read[how] = runs["wd1.0_s0"]["t_grok"]
    assert read["folder"] == read["inputs"]
    if keep == "first":  # the first file's values kept: its own t_grok, as if b were absent
        alone = cli(["check", folder / f"a{suffix}", "--by", "wd", "--metric", "emb_erank",
                     "--json", "-"])
        runs = {r["run"]: r for r in json.loads(alone.stdout)["studies"][0]["runs"]}
        assert read["folder"] == runs["wd1.0_s0"]["t_grok"]


@pytest.mark.parametrize("shape", ["keys_grow_by_record", "nested_object"])
def test_columns_found_record_by_record_are_capped_as_they_come(tmp_path: Path,
                                                                shape: str) -> None:
    """JSON lines whose later records add thousands of keys, a JSON array of records with a
    nested object of 3 000 keys: --max-columns looked at the first record only (a 1.8 MB file
    took 178 s and 391 MB; issue 38's review)."""
    if shape == "keys_grow_by_record":
        p = tmp_path / "wide.jsonl"
        p.write_text("\n".join(json.dumps({"step": i, "test_acc": 0.5,
                                           **({f"k{i}_{j}": 1.0 for j in range(3000)}
                                              if i >= 5 else {})}) for i in range(10)) + "\n")
    else:
        p = tmp_path / "nested.json"
        p.write_text(json.dumps([{"step": i, "test_acc": 0.5,
                                  "m": {f"k{j}": 1 for j in range(3000)}} for i in range(5)]))
    for cmd in ("inspect", "check"):
        expect_error(cli([cmd, p, "--max-columns", "100"]), "TOO_LARGE")


def test_a_refusal_naming_the_columns_present_stays_one_short_line(tmp_path: Path) -> None:
    p = tmp_path / "wide.jsonl"
    p.write_text("\n".join(json.dumps({"step": i, "test_acc": 0.5,
                                       **{f"k{j}": float(i + j) for j in range(3000)}})
                           for i in range(6)) + "\n")
    # (without --metric, such a log is now the accuracy clocks' audit, whose finding names 20
    # columns and a count: tests/core/test_accuracy_only.py; a misspelt --metric is refused)
    out = cli(["check", p, "--metric", "k_nosuch"])
    code, message = expect_error(out, "METRIC_NOT_FOUND")
    assert len(out.stderr) < 2000  # a few names and a count, not 3 000 names


@pytest.mark.parametrize("cmd", ["check", "inspect", "convert"])
def test_a_keras_log_table_wider_than_max_columns_is_refused_from_its_header(
        tmp_path: Path, cmd: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``training.log`` table (a header line, then numbers: Keras's CSVLogger) of 300 columns
    against ``--max-columns 100``: the cap a ``.csv`` meets. The folder rule listed text tables
    by suffix, so a ``.log`` table was parsed whatever its width."""
    p = tmp_path / "training.log"
    names = ["epoch", "accuracy", "val_accuracy", *(f"m{i}" for i in range(300))]
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for s in range(4):
            w.writerow([s, 0.5, 0.4, *([1.5] * 300)])

    def never(*a: Any, **k: Any) -> pa.Table:
        raise AssertionError("the table was parsed")

    monkeypatch.setattr(pyarrow.csv, "read_csv", never)
    args = [cmd, p, "--max-columns", "100"] + (["-o", tmp_path / "o.parquet"]
                                               if cmd == "convert" else [])
    expect_error(cli(args), "TOO_LARGE")
    assert not (tmp_path / "o.parquet").exists()
