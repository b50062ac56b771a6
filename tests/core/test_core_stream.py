"""The audit of a log read in parts (``grokaudit.stream``) is the in-memory audit, byte for
byte, whatever the parts: every whole-log decision (percent accuracy, a column a condition in
some runs and a series in others, duplicate runs in different parts, a short run whose longest
sibling sits in another part) is taken over the whole log. Logs are written by pyarrow's own
Parquet writer, in small row groups that cut runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grokaudit
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from grokaudit.stream import audit_stream


def _run(run: str, wd: float, seed: int, end: int, *, grok: int, floor: float,
         rng: np.random.Generator, pct: bool = False, sched: bool = False) -> pd.DataFrame:
    steps = np.arange(0, end + 1, 100, dtype=np.int64)
    acc = np.where(steps >= grok, 0.99, 0.05) if grok >= 0 else np.full(steps.size, 0.004)
    metric = floor + 20.0 * np.exp(-steps / 3000.0) + rng.normal(0, 0.01, steps.size)
    return pd.DataFrame({
        "run": run, "step": steps, "test_acc": acc * (100 if pct else 1),
        "train_acc": np.minimum(1.0, 0.5 + steps / 2000.0) * (100 if pct else 1),
        "emb_erank": metric,
        # constant within the first runs, a per-step schedule in later ones: a series
        "lr_now": np.where(steps > 1000, 0.5, 1.0) if sched else np.full(steps.size, 1.0),
        "wd": wd, "seed": seed, "width": np.float32(wd / 3),
    })


def rich_log(pct: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frames = []
    for i, wd in enumerate((0.1, 0.3, 1.0)):
        for seed in range(4):
            # the last seed of each cell stops early, while its siblings still compress
            end = 6000 if seed == 3 else 30_000
            grok = -1 if (wd == 0.1 and seed == 2) else 1500 + 500 * i + 100 * seed
            frames.append(_run(f"wd{wd}_s{seed}", wd, seed, end, grok=grok, floor=5.0 + i,
                               rng=rng, pct=pct, sched=(i == 2)))
    dup = frames[1].copy()  # one run logged twice under two ids, far apart in the file
    dup["run"] = "copy_of_s1"
    frames.append(dup)
    short = _run("stub", 0.3, 9, 100, grok=0, floor=5.0, rng=rng, pct=pct)  # 2 points
    frames.append(short)
    blank = _run("no_acc", 1.0, 8, 3000, grok=100, floor=5.0, rng=rng, pct=pct)
    blank["test_acc"] = np.nan  # never logged its accuracy
    frames.append(blank)
    df = pd.concat(frames, ignore_index=True)
    # an identical repeated row and a row with nothing in it
    df = pd.concat([df, df.iloc[[5]]], ignore_index=True).sort_values(
        ["run", "step"], kind="stable")
    empty = df[df["run"] == "wd1.0_s0"].iloc[[40]].copy()
    empty[["test_acc", "train_acc", "emb_erank", "lr_now"]] = np.nan
    empty["step"] += 50
    order = pd.unique(df["run"])
    df = pd.concat([df, empty]).set_index("run").loc[order].reset_index()
    return df


def _write(df: pd.DataFrame, path: Path, row_group: int) -> Path:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path,
                   row_group_size=row_group)
    return path


def _same(a: grokaudit.AuditResult, b: grokaudit.AuditResult, *, provenance: bool = True
          ) -> None:
    da, db = a.to_dict(), b.to_dict()
    if not provenance:
        for d in (da, db):
            d["input"].pop("provenance")
    assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)


@pytest.mark.parametrize("part_rows", [1, 700, 4000, 10**9])
@pytest.mark.parametrize("pct", [False, True])
def test_streamed_audit_is_the_in_memory_audit(tmp_path: Path, part_rows: int,
                                               pct: bool) -> None:
    path = _write(rich_log(pct), tmp_path / "log.parquet", row_group=333)
    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"])
    lines: list[str] = []
    streamed = audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=part_rows,
                            progress=lines.append)
    _same(whole, streamed)
    # the log exercises what only the whole log can decide
    inp = whole.to_dict()["input"]
    assert inp["duplicate_runs"] == [["copy_of_s1", "wd0.1_s1"]]
    assert "lr_now" not in inp["conditions"]
    assert inp["runs_too_short"] == ["stub"] and inp["runs_without_accuracy"] == ["no_acc"]
    assert ("accuracy_scale" in inp) == pct
    assert "HORIZON_MISMATCH" in whole.codes
    if part_rows == 1:  # every run its own part: the reads again were needed
        assert any("compared exactly" in line for line in lines)
        assert any("read again" in line for line in lines)


def test_a_run_split_across_the_file_keeps_its_rows_in_one_part(tmp_path: Path) -> None:
    df = rich_log()
    # the rows of one run at the start and at the end of the file: not sorted
    first = df[df["run"] == "wd0.3_s0"]
    df = pd.concat([first.iloc[:10], df[df["run"] != "wd0.3_s0"], first.iloc[10:]])
    path = _write(df, tmp_path / "split.parquet", row_group=500)
    lines: list[str] = []
    streamed = audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=500,
                            progress=lines.append)
    _same(grokaudit.audit_path(path, by="wd", metrics=["emb_erank"]), streamed)
    assert streamed.to_dict()["input"]["sorted_input"] is False
    assert "1 part(s)" in lines[0]


def _hive(df: pd.DataFrame, root: Path) -> Path:
    table = pa.Table.from_pandas(df, preserve_index=False)
    pads.write_dataset(table.drop_columns(["wd"]).append_column("wd", table["wd"]), root,
                       format="parquet", partitioning=["wd"], partitioning_flavor="hive")
    return root


def test_a_hive_dataset_is_the_same_log_in_one_file(tmp_path: Path) -> None:
    df = rich_log()
    folder = _hive(df, tmp_path / "ds")
    whole = grokaudit.audit_path(folder, by="wd", metrics=["emb_erank"])
    streamed = audit_stream(folder, by="wd", metrics=["emb_erank"], part_rows=900)
    _same(whole, streamed)  # the provenance too: both read the folder as a dataset
    files = streamed.to_dict()["input"]["provenance"]["source_files"]
    assert len(files) == 3 and all("wd=" in f for f in files)
    # the folder is the log of one file, partition column last, as the dataset writer
    # wrote it: the same audit, rows set aside and unsorted rows included
    flat = pads.dataset(folder, format="parquet", partitioning="hive").to_table()
    one = tmp_path / "one.parquet"
    pq.write_table(flat.cast(flat.schema.set(flat.schema.get_field_index("wd"),
                                             pa.field("wd", pa.float64()))), one)
    single = grokaudit.audit_path(one, by="wd", metrics=["emb_erank"])
    a, b = single.to_dict(), whole.to_dict()
    for d in (a, b):
        d["input"].pop("source"), d["input"].pop("provenance")
        d["trail"] = None
    assert a == b


def test_a_writers_empty_part_files_are_said(tmp_path: Path) -> None:
    folder = _hive(rich_log(), tmp_path / "ds")
    empty = folder / "wd=0.3" / "part-empty.parquet"
    pq.write_table(pa.Table.from_pandas(rich_log().iloc[:0].drop(columns=["wd"]),
                                        preserve_index=False), empty)
    whole = grokaudit.audit_path(folder, by="wd", metrics=["emb_erank"])
    streamed = audit_stream(folder, by="wd", metrics=["emb_erank"], part_rows=900)
    _same(whole, streamed)
    warned = whole.to_dict()["input"]["provenance"]["warnings"]
    assert len(warned) == 1 and "wd=0.3/part-empty.parquet" in warned[0]


def test_refusals_are_the_in_memory_ones(tmp_path: Path) -> None:
    df = rich_log()
    df.loc[df["run"] == "wd1.0_s1", "seed"] = np.arange((df["run"] == "wd1.0_s1").sum())
    path = _write(df, tmp_path / "bad.parquet", row_group=333)
    for audit in (lambda: grokaudit.audit_path(path, by="wd"),
                  lambda: audit_stream(path, by="wd", part_rows=100)):
        with pytest.raises(LogFormatError) as exc:
            audit()
        assert (exc.value.code, exc.value.column) == (ErrorCode.NOT_CONSTANT_IN_RUN, "seed")
    # a --metric column constant within every run, though it differs between runs
    const = rich_log()
    const["emb_erank"] = const.groupby("run")["emb_erank"].transform("first")
    path = _write(const, tmp_path / "const.parquet", row_group=333)
    with pytest.raises(LogFormatError) as exc:
        audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=100)
    assert exc.value.code == ErrorCode.NOT_A_SERIES


@pytest.mark.parametrize("options", [
    {"profile": "reference"}, {"floor_window": "grid"}, {"grok_relative": "study"},
    {"grok_relative": "study", "cell": ["width"]}, {"grok_point": "usable"}])
def test_options_that_compare_runs_before_their_clocks_stream_too(
        tmp_path: Path, options: dict[str, Any]) -> None:
    # every run of a study short of 1: its thresholds are relative to the study's ceiling
    df = rich_log()
    df["test_acc"] = df["test_acc"] * 0.9
    path = _write(df, tmp_path / "log.parquet", row_group=333)
    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"], **options)
    lines: list[str] = []
    streamed = audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=700,
                            progress=lines.append, **options)
    _same(whole, streamed)
    deferred = options.get("profile") == "reference" or set(options) & {"floor_window",
                                                                          "grok_relative"}
    # the clocks waited for the whole log's grids or ceilings
    assert any(line.endswith(": clocks") for line in lines) == bool(deferred)
    if "grok_relative" in options:  # thresholds were read against a ceiling below 1
        relative = [f.evidence.get("relative") for f in whole.findings
                    if f.code == "ACCURACY_CEILING"]
        assert relative and all(relative)


@pytest.mark.parametrize("beside", ["config.yaml", "wd=0.1/part-0.yaml", "wd=0.3/extra.csv",
                                    "notes.json"])
def test_inputs_that_are_not_canonical_parquet_are_refused(tmp_path: Path, beside: str
                                                          ) -> None:
    rich_log().to_csv(tmp_path / "log.csv", index=False)
    with pytest.raises(LogFormatError) as exc:
        audit_stream(tmp_path / "log.csv", by="wd")
    assert exc.value.code == ErrorCode.FORMAT_MISMATCH
    # a file beside the parts that the in-memory read reads (a config file by its name or a
    # part's stem, a table in another format): its values would be lost in parts
    folder = _hive(rich_log(), tmp_path / "ds")
    assert (folder / "wd=0.1" / "part-0.parquet").is_file()  # part-0.yaml: its same-stem YAML
    target = folder / beside
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("run,step\nx,1\n" if beside.endswith(".csv")
                      else '{"lr": 1}' if beside.endswith(".json") else "lr: 1\n")
    with pytest.raises(LogFormatError) as exc:
        audit_stream(folder, by="wd")
    assert exc.value.code == ErrorCode.FORMAT_MISMATCH


def test_files_the_in_memory_read_leaves_out_are_no_part_of_the_streamed_log(
        tmp_path: Path) -> None:
    """A published dataset's licence, README, notes and sweep definition sit beside its
    parts: the in-memory read leaves them out, and so does the stream (it refused them)."""
    folder = _hive(rich_log(), tmp_path / "ds")
    (folder / "LICENSE").write_text("MIT License\n")
    (folder / "README.md").write_text("# a sweep\n")
    (folder / "wd=0.3" / "notes.txt").write_text("seed 3 stopped early\n")
    (folder / "sweep.yaml").write_text("wd: [0.1, 0.3, 1.0]\n")  # no part's stem, no config name
    whole = grokaudit.audit_path(folder, by="wd", metrics=["emb_erank"])
    streamed = audit_stream(folder, by="wd", metrics=["emb_erank"], part_rows=900)
    _same(whole, streamed)
    files = streamed.to_dict()["input"]["provenance"]["source_files"]
    assert len(files) == 3 and all(f.endswith(".parquet") for f in files)


def _cli(*args: str) -> tuple[int, str, str]:
    from click.testing import CliRunner
    from grokaudit.cli import cli

    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_check_stream_writes_the_json_check_writes(tmp_path: Path) -> None:
    path = _write(rich_log(), tmp_path / "log.parquet", row_group=333)
    outs = {}
    for name, extra in (("whole", []), ("parts", ["--stream", "--part-rows", "500"])):
        out = tmp_path / f"{name}.json"
        code, _, _ = _cli("check", str(path), "--by", "wd", "--metric", "emb_erank",
                          "--json", str(out), *extra)
        assert code == 1  # the fixture's transients are critical
        d = json.loads(out.read_text())
        outs[name] = (d.pop("trail"), d)
    assert outs["whole"][1] == outs["parts"][1]
    assert "--stream" in outs["parts"][0]["command"]  # the trail says how it was read


@pytest.mark.parametrize("extra, option", [
    (["--part-rows", "500"], "--part-rows"),
    (["--stream", "--sensitivity"], "--stream"),
    (["--stream", "--format", "table"], "--stream"),
    (["--stream", "--part-rows", "0"], "part_rows"),
])
def test_check_stream_refusals_are_one_line_and_exit_2(tmp_path: Path, extra: list[str],
                                                       option: str) -> None:
    path = _write(rich_log(), tmp_path / "log.parquet", row_group=333)
    code, out, err = _cli("check", str(path), "--by", "wd", "--json", "-", *extra)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert option.replace("_", "-") in err


def test_a_folder_of_shards_is_the_loaders_folder_of_shards(tmp_path: Path) -> None:
    df = rich_log()
    runs = pd.unique(df["run"])
    (tmp_path / "shards").mkdir()
    for k, chunk in enumerate((runs[:5], runs[5:11], runs[11:])):
        _write(df[df["run"].isin(chunk)], tmp_path / "shards" / f"part-{k}.parquet", 400)
    whole = grokaudit.audit_path(tmp_path / "shards", by="wd", metrics=["emb_erank"])
    streamed = audit_stream(tmp_path / "shards", by="wd", metrics=["emb_erank"],
                            part_rows=600)
    _same(whole, streamed)  # the provenance too: the shards named as the loader names them
    assert streamed.to_dict()["input"]["provenance"]["shards"] == [
        "part-0.parquet", "part-1.parquet", "part-2.parquet"]


def test_macos_metadata_files_beside_shards_are_no_shards(tmp_path: Path) -> None:
    """macOS writes ``._NAME`` beside each file it copies to a foreign disk (its metadata,
    not Parquet): a folder of shards carrying them reads its shards, in memory and in parts
    (the first such file was read as a shard and refused the folder as unreadable). Other
    hidden Parquet files are still shards (``test_a_folder_is_read_file_for_file…``)."""
    df = rich_log()
    runs = pd.unique(df["run"])
    (tmp_path / "shards").mkdir()
    for k, chunk in enumerate((runs[:7], runs[7:])):
        name = f"part-{k}.parquet"
        _write(df[df["run"].isin(chunk)], tmp_path / "shards" / name, 400)
        (tmp_path / "shards" / f"._{name}").write_bytes(b"\x00\x05\x16\x07Mac OS X  ")
    whole = grokaudit.audit_path(tmp_path / "shards", by="wd", metrics=["emb_erank"])
    _same(whole, audit_stream(tmp_path / "shards", by="wd", metrics=["emb_erank"],
                              part_rows=600))
    assert whole.to_dict()["input"]["provenance"]["shards"] == ["part-0.parquet",
                                                                 "part-1.parquet"]


def test_shards_are_joined_as_the_loader_joins_them(tmp_path: Path) -> None:
    df = rich_log()
    (tmp_path / "mixed").mkdir()
    # float32 beside float64, a column one shard lacks, a config file beside (not read)
    _write(df.iloc[:1500].drop(columns=["lr_now"]), tmp_path / "mixed" / "a.parquet", 500)
    _write(df.iloc[1500:].astype({"emb_erank": np.float32}), tmp_path / "mixed" / "b.parquet",
           500)
    (tmp_path / "mixed" / "notes.yaml").write_text("x: 1\n")
    whole = grokaudit.audit_path(tmp_path / "mixed", by="wd", metrics=["emb_erank"])
    _same(whole, audit_stream(tmp_path / "mixed", by="wd", metrics=["emb_erank"],
                              part_rows=400))
    assert whole.to_dict()["input"]["not_logged"]["lr_now"] > 0
    # shards that cannot be joined are refused alike
    _write(df.iloc[:900].astype({"emb_erank": str}), tmp_path / "mixed" / "c.parquet", 500)
    codes = []
    for audit in (lambda: grokaudit.audit_path(tmp_path / "mixed", by="wd"),
                  lambda: audit_stream(tmp_path / "mixed", by="wd")):
        with pytest.raises(LogFormatError) as exc:
            audit()
        codes.append(exc.value.code)
    assert codes == [ErrorCode.SHARDS_INCOMPATIBLE] * 2


@pytest.mark.parametrize("column", ["run", "opt"])
def test_a_categorical_shard_beside_a_text_one_streams_as_it_reads_whole(tmp_path: Path,
                                                                        column: str) -> None:
    """A shard written from a pandas Categorical (a dictionary column) beside one written from
    text: read whole, the shards join; --stream refused the folder (SHARDS_INCOMPATIBLE)."""
    df = rich_log().assign(opt=lambda d: np.where(d["wd"] > 0.2, "adam", "sgd"))
    (tmp_path / "mixed").mkdir()
    _write(df.iloc[:1500].astype({column: "category"}), tmp_path / "mixed" / "a.parquet", 500)
    _write(df.iloc[1500:], tmp_path / "mixed" / "b.parquet", 500)
    assert pa.types.is_dictionary(pq.read_schema(tmp_path / "mixed" / "a.parquet")
                                  .field(column).type)
    whole = grokaudit.audit_path(tmp_path / "mixed", by="wd", cell=["opt"],
                                 metrics=["emb_erank"])
    _same(whole, audit_stream(tmp_path / "mixed", by="wd", cell=["opt"],
                              metrics=["emb_erank"], part_rows=400))
    assert len(whole.studies) == 2


def test_float_run_ids_stream_as_they_read_whole(tmp_path: Path) -> None:
    """Run ids of a float column are "1.0" (as pandas spells them); the streamed audit looked
    the runs it reads again up by Arrow's spelling ("1"): a duplicate run in another part was
    missed, a horizon re-read found no rows (NO_ROWS). A null id crashed --stream."""
    df = rich_log()
    ids = {r: float(i) + (0.5 if i % 3 == 0 else 0.0) for i, r in enumerate(pd.unique(df["run"]))}
    df["run"] = df["run"].map(ids)
    path = _write(df, tmp_path / "floats.parquet", row_group=333)
    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"])
    streamed = audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=700)
    _same(whole, streamed)
    inp = whole.to_dict()["input"]
    assert inp["duplicate_runs"] == [[str(ids["copy_of_s1"]), str(ids["wd0.1_s1"])]]
    assert "HORIZON_MISMATCH" in whole.codes
    nulls = _write(df.assign(run=df["run"].where(df["run"] != ids["stub"], None)),
                   tmp_path / "nulls.parquet", row_group=333)
    codes = []
    for audit in (lambda: grokaudit.audit_path(nulls, by="wd"),
                  lambda: audit_stream(nulls, by="wd", part_rows=700)):
        with pytest.raises(LogFormatError) as exc:
            audit()
        codes.append(exc.value.code)
    assert codes == [ErrorCode.MISSING_VALUES] * 2


def test_a_run_folder_is_not_streamed(tmp_path: Path) -> None:
    from grokaudit import RunLogger

    with RunLogger(tmp_path / "runs", run="r1", conditions={"wd": 0.1}) as lg:
        for s in range(0, 500, 100):
            lg.log(s, test_acc=0.5, emb_erank=3.0)
    with pytest.raises(LogFormatError) as exc:
        audit_stream(tmp_path / "runs")
    assert exc.value.code == ErrorCode.FORMAT_MISMATCH


def test_weighted_fingerprints_agree_where_duplicate_runs_would() -> None:
    from grokaudit.identity import run_fingerprints

    off = np.array([0, 3, 6, 9, 12])
    st = np.tile(np.array([0, 100, 200]), 4)
    v = np.array([1.0, 2.0, np.nan,    # run 0
                  1.0, 2.0, np.nan,    # run 1: the same
                  1.0, np.nan, 2.0,    # run 2: the same values at other steps
                  2.0, 1.0, np.nan])   # run 3: the same values in another order
    for col in (v, v.astype(np.float32)):
        plain = run_fingerprints(off, st, [col])
        assert plain[0] == plain[1] == plain[2] == plain[3]  # the sums alone agree
        d = run_fingerprints(off, st, [col], weighted=True)
        assert d[0] == d[1] and len({d[0], d[2], d[3]}) == 3  # the positions tell them apart


def test_float32_runs_equal_as_logged_share_a_fingerprint_and_their_float64_spelling_too() -> None:
    """Equal float32 runs share a fingerprint, -0.0 read as 0.0 and NaN as NaN whatever its
    bits; a float32 log and its float64 spelling (two inputs of one stream) share theirs."""
    from grokaudit.identity import duplicate_runs, run_fingerprints

    off = np.array([0, 4, 8, 12])
    st = np.tile(np.array([0, 1, 2, 3]), 3)
    other_nan = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)[0]
    v = np.array([0.0, 0.25, np.nan, 1e38,     # run a
                  -0.0, 0.25, other_nan, 1e38,  # run b: equal as logged
                  0.0, 0.25, np.nan, 3e38],     # run c: differs
                 dtype=np.float32)
    plain = run_fingerprints(off, st, [v])
    assert plain[0] == plain[1] != plain[2]
    ids = np.array(["a", "b", "c"], dtype=object)
    assert duplicate_runs(ids, off, st, [v]) == [("a", "b")]
    wide = v.astype(np.float64)
    for weighted in (False, True):
        assert np.array_equal(run_fingerprints(off, st, [v], weighted=weighted),
                              run_fingerprints(off, st, [wide], weighted=weighted))


@pytest.mark.parametrize("damage", ["no_rows", "text_accuracy", "missing_run", "truncated"])
def test_broken_logs_are_refused_as_in_memory(tmp_path: Path, damage: str) -> None:
    table = pa.Table.from_pandas(rich_log(), preserve_index=False)
    path = tmp_path / "log.parquet"
    if damage == "no_rows":
        table = table.slice(0, 0)
    elif damage == "text_accuracy":
        i = table.schema.get_field_index("test_acc")
        table = table.set_column(i, "test_acc", pa.array(["x"] * len(table)))
    elif damage == "missing_run":
        runs = table["run"].to_pylist()
        runs[700] = None
        table = table.set_column(0, "run", pa.array(runs, pa.string()))
    pq.write_table(table, path, row_group_size=500)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:600])
    codes = []
    for audit in (lambda: grokaudit.audit_path(path, by="wd"),
                  lambda: audit_stream(path, by="wd", part_rows=300)):
        with pytest.raises(LogFormatError) as exc:
            audit()
        codes.append((exc.value.code, exc.value.column))
    assert codes[0] == codes[1]


def _small(n: int = 6) -> pd.DataFrame:
    frames = []
    for i in range(n):
        st = np.arange(0, 4000, 100)
        frames.append(pd.DataFrame({
            "run": f"r{i}", "step": st, "test_acc": np.where(st >= 500 + 200 * i, 0.99, 0.05),
            "emb_erank": 5 + 20 * np.exp(-st / 1000), "wd": [0.1, 0.3][i % 2], "seed": i // 2}))
    return pd.concat(frames, ignore_index=True)


def _codes(path: Path, **options: Any) -> list[tuple[str, str | None]]:
    out = []
    for audit in (lambda: grokaudit.audit_path(path, by="wd", **options),
                  lambda: audit_stream(path, by="wd", part_rows=40, **options)):
        with pytest.raises(LogFormatError) as exc:
            audit()
        out.append((exc.value.code, exc.value.column))
    return out


@pytest.mark.parametrize("defects", [
    "inf_accuracy_late", "ambiguous_id_and_negative_step", "seed_early_negative_step_late",
    "duplicate_early_seed_late", "seed_early_inf_metric_late"])
def test_the_first_refusal_is_the_in_memory_one_whichever_part_holds_it(
        tmp_path: Path, defects: str) -> None:
    d = _small()
    if defects == "inf_accuracy_late":
        d.loc[(d.run == "r5") & (d.step == 1000), "test_acc"] = np.inf
    elif defects == "ambiguous_id_and_negative_step":
        d.loc[d.run == "r5", "run"] = "r4 "
        d.loc[0, "step"] = -1
    elif defects == "seed_early_negative_step_late":
        d.loc[(d.run == "r0") & (d.step == 300), "seed"] = 7
        d.loc[(d.run == "r5") & (d.step == 0), "step"] = -1
    elif defects == "duplicate_early_seed_late":
        row = d.iloc[[3]].copy()
        row["emb_erank"] += 1
        d = pd.concat([d.iloc[:4], row, d.iloc[4:]], ignore_index=True)
        d.loc[(d.run == "r5") & (d.step == 300), "seed"] = 7
    else:
        d.loc[(d.run == "r0") & (d.step == 300), "seed"] = 7
        d.loc[(d.run == "r5") & (d.step == 300), "emb_erank"] = np.inf
    path = _write(d, tmp_path / "log.parquet", row_group=40)
    whole, streamed = _codes(path)
    assert whole == streamed


def test_a_partition_key_of_numbers_and_text_is_read_by_the_adapters(tmp_path: Path) -> None:
    d = _small(8).drop(columns=["wd"])
    for value, runs in (("adam", ["r0", "r2", "r4", "r6"]), ("1", ["r1", "r3", "r5", "r7"])):
        (tmp_path / "ds" / f"opt={value}").mkdir(parents=True)
        _write(d[d.run.isin(runs)], tmp_path / "ds" / f"opt={value}" / "p.parquet", 100)
    with pytest.raises(LogFormatError) as exc:  # no crash: a refusal of the design
        grokaudit.audit_path(tmp_path / "ds", by="seed")
    assert exc.value.code == ErrorCode.DUPLICATE_AXIS_VALUES
    with pytest.raises(LogFormatError) as exc:
        audit_stream(tmp_path / "ds", by="seed")
    assert exc.value.code == ErrorCode.FORMAT_MISMATCH


def _with_provenance(df: pd.DataFrame, path: Path, prov: dict[str, Any]) -> None:
    t = pa.Table.from_pandas(df, preserve_index=False)
    t = t.replace_schema_metadata({b"grokaudit": json.dumps(prov).encode()})
    pq.write_table(t, path, row_group_size=40)


@pytest.mark.parametrize("layout", ["shards", "hive"])
def test_the_folders_provenance_is_read_once_for_every_part(tmp_path: Path,
                                                            layout: str) -> None:
    d = _small(8)
    scale = {"test_acc": {"scale": 100.0, "max": 99.0, "why": "adapter",
                          "n_runs_at_most_1": 2, "runs_at_most_1": ["r0", "r1"]}}
    root = tmp_path / "ds"
    for k, (runs, down) in enumerate(((["r0", "r1", "r2", "r3"], ["r1"]),
                                      (["r4", "r5", "r6", "r7"], ["r5"]))):
        folder = root if layout == "shards" else root / f"seed={k}"
        folder.mkdir(parents=True, exist_ok=True)
        part = d[d.run.isin(runs)]
        if layout == "hive":
            part = part.drop(columns=["seed"])
        _with_provenance(part, folder / f"{'ab'[k]}.parquet",
                         {"downsampled_runs": down, "accuracy_scale": scale})
    whole = grokaudit.audit_path(root, by="wd", cell=["seed"] if layout == "hive" else [])
    streamed = audit_stream(root, by="wd", cell=["seed"] if layout == "hive" else [],
                            part_rows=1)
    _same(whole, streamed)
    assert whole.to_dict()["input"]["accuracy_scale"]["test_acc"]["n_runs_at_most_1"] == 2


@pytest.mark.parametrize("layout", ["top_and_sub", "hidden", "upper_case", "sub_no_key",
                                    "empty_shard"])
def test_a_folder_is_read_file_for_file_as_in_memory(tmp_path: Path, layout: str) -> None:
    d = _small(8)
    a, b = d[d.run.isin(["r0", "r1", "r2", "r3"])], d[~d.run.isin(["r0", "r1", "r2", "r3"])]
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    names = {"top_and_sub": ("a.parquet", "sub/b.parquet"),
             "hidden": ("a.parquet", ".b.parquet"), "upper_case": ("a.parquet", "b.PARQUET"),
             "sub_no_key": ("sub/a.parquet", "sub/b.parquet"),
             "empty_shard": ("a.parquet", "b.parquet")}[layout]
    _write(a, root / names[0], 40)
    _write(b.iloc[:0] if layout == "empty_shard" else b, root / names[1], 40)
    if layout == "top_and_sub":
        # the top-level file makes it a folder of shards, which would leave sub/ out: refused
        # on both paths, never half the runs audited in silence
        for audit in (lambda: grokaudit.audit_path(root, by="wd"),
                      lambda: audit_stream(root, by="wd", part_rows=40)):
            with pytest.raises(LogFormatError) as exc:
                audit()
            assert exc.value.code == ErrorCode.UNREAD_FILES
        return
    whole = grokaudit.audit_path(root, by="wd")
    _same(whole, audit_stream(root, by="wd", part_rows=40))
    read = 4 if layout == "empty_shard" else 8  # a .PARQUET shard is read, as in hive folders
    assert whole.to_dict()["input"]["runs_read"] == read


def test_part_rows_must_be_a_whole_number_of_rows(tmp_path: Path) -> None:
    path = _write(_small(), tmp_path / "log.parquet", row_group=40)
    for bad in (0, 2.5, float("nan"), float("inf"), True):
        with pytest.raises(ConfigError) as exc:
            audit_stream(path, by="wd", part_rows=bad)  # type: ignore[arg-type]
        assert exc.value.code == ErrorCode.OPTION_OUT_OF_RANGE


@pytest.mark.parametrize("layout", ["shards", "hive"])
def test_a_later_files_provenance_is_not_dropped(tmp_path: Path, layout: str) -> None:
    """Only the last file of a folder says its source downsampled its runs: the folder's audit
    (in memory and streamed) widens their intervals and says so, as it does for the files
    given as separate inputs — never the first file's provenance alone (which silently
    narrowed them). A later file's malformed provenance is refused as the first's is."""
    from grokaudit.schema import write_table

    df = rich_log()
    df = df[df["run"].str.startswith("wd")]
    runs = sorted(pd.unique(df["run"]))
    later = {"downsampled_runs": runs[-4:],
             "findings": [{"code": "SOURCE_DOWNSAMPLED", "detail": "every 4th step kept"}]}
    root = tmp_path / layout
    for k, (wd, g) in enumerate(df.groupby("wd")):
        path = (root / f"wd={wd}" / "part-0.parquet" if layout == "hive"
                else root / f"part-{k}.parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_table(g.drop(columns=["wd"]) if layout == "hive" else g, path,
                    provenance=later if k == 2 else {})
    whole = grokaudit.audit_path(root, by="wd", metrics=["emb_erank"])
    _same(whole, audit_stream(root, by="wd", metrics=["emb_erank"], part_rows=700))
    assert "SOURCE_DOWNSAMPLED" in whole.codes
    assert whole.to_dict()["input"]["provenance"]["downsampled_runs"] == runs[-4:]
    last = sorted(root.rglob("*.parquet"))[-1]
    t = pq.read_table(last)
    pq.write_table(t.replace_schema_metadata({b"grokaudit": b"[1, 2]"}), last)
    for audit in (lambda: grokaudit.audit_path(root, by="wd"),
                  lambda: audit_stream(root, by="wd")):
        with pytest.raises(LogFormatError) as exc:
            audit()
        assert exc.value.code == ErrorCode.PROVENANCE_MALFORMED


def test_part_rows_without_stream_is_said_before_what_stream_refuses(tmp_path: Path) -> None:
    """``--part-rows`` with ``--sensitivity`` and no ``--stream``: the missing ``--stream`` is
    the error, not "--stream … --sensitivity is not for it"."""
    path = _write(rich_log(), tmp_path / "log.parquet", row_group=333)
    code, out, err = _cli("check", str(path), "--by", "wd", "--part-rows", "100",
                          "--sensitivity")
    assert code == 2 and out == ""
    assert "--part-rows" in err and "--sensitivity" not in err


def test_one_file_is_opened_once_however_many_row_groups(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A file of many small row groups read in parts: its footer (which lists every row
    group) is parsed once per way of reading it, not once per row group read — that made a
    1 000-row-group file nine times slower in parts than whole. The same result."""
    import pyarrow.parquet as pqm

    path = _write(rich_log(), tmp_path / "log.parquet", row_group=25)
    assert pq.ParquetFile(path).metadata.num_row_groups > 100
    opened: list[str] = []
    real = pqm.ParquetFile

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(str(args[0]))
        return real(*args, **kwargs)

    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"])
    monkeypatch.setattr(pqm, "ParquetFile", counted)
    streamed = audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=400)
    _same(whole, streamed)
    # the dataset's look at the file, and the file opened once for reading with and once
    # without its run ids dictionary-encoded
    assert 0 < opened.count(str(path)) <= 4


def test_runs_read_again_carry_only_their_own_run_ids(tmp_path: Path) -> None:
    """A file's row groups store a dictionary of every run they hold; the rows of a few runs,
    read again, carry a dictionary of those runs alone (validation turns each entry into a
    string object: a cell read again for the report decoded every run of the log)."""
    from grokaudit.dataset import open_dataset

    n = 40
    table = pa.table({"run": [f"r{k:02d}" for k in range(n) for _ in range(5)],
                      "step": [s for _ in range(n) for s in range(5)]})
    path = tmp_path / "log.parquet"
    pq.write_table(table, path, row_group_size=100)  # 20 runs in each row group
    ds = open_dataset(path)
    wanted = ["r03", "r17", "r25"]
    got = ds.read_rows(0, n * 5, runs=pa.array(wanted))
    run = got.column("run")
    assert pa.types.is_dictionary(run.type)  # the type the other parts are read as
    assert sorted(set(run.to_pylist())) == wanted
    assert sorted({v for c in run.chunks for v in c.dictionary.to_pylist()}) == wanted
    assert got.num_rows == 15


@pytest.mark.parametrize("layout", ["file", "folder"])
@pytest.mark.parametrize("change", ["rewritten", "removed"])
def test_a_log_that_changes_between_its_parts_is_refused(tmp_path: Path, layout: str,
                                                         change: str) -> None:
    """A file rewritten (or removed) after the first part was read: its later parts would be
    of another version of the log (and the trail's sha256 of neither). Refused naming the
    file (``INPUT_CHANGED``), never audited as a mix."""
    import os

    df = rich_log()
    if layout == "file":
        path = _write(df, tmp_path / "log.parquet", row_group=300)
        target = path
    else:
        path = _hive(df, tmp_path / "ds")
        target = sorted(path.rglob("*.parquet"))[-1]  # read last
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if len(lines) == 2:  # the first part read
            if change == "removed":
                target.unlink()
            else:
                _write(df.iloc[::-1], target, row_group=300)
                st = target.stat()
                os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1))

    with pytest.raises(grokaudit.LogFormatError) as err:
        audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=600, progress=progress)
    assert err.value.code is ErrorCode.INPUT_CHANGED
    assert Path(err.value.path or "") == target
    assert len(lines) >= 2  # it was under way: the parts read before were not the refusal


def _twin_log() -> pd.DataFrame:
    """Runs whose test accuracy climbs through many values; ``also_s1`` holds ``wd0.3_s1``'s
    accuracies at every step beside another metric (one run's files read as two runs)."""
    rng = np.random.default_rng(3)
    frames = []
    for wd in (0.1, 0.3, 1.0):
        for seed in range(3):
            f = _run(f"wd{wd}_s{seed}", wd, seed, 20_000, grok=2000, floor=5.0, rng=rng)
            f["test_acc"] = np.clip(np.linspace(0.05, 1.0, len(f)) + rng.normal(0, 0.01, len(f)),
                                    0, 1)
            frames.append(f)
    twin = frames[4].copy()
    twin["run"] = "also_s1"
    twin["emb_erank"] = twin["emb_erank"] + 1.0
    frames.append(twin)
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("part_rows", [1, 10**9])
def test_accuracy_twins_are_found_across_parts(tmp_path: Path, part_rows: int) -> None:
    path = _write(_twin_log(), tmp_path / "log.parquet", row_group=333)
    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"])
    _same(whole, audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=part_rows))
    inp = whole.to_dict()["input"]
    assert inp["accuracy_twins"] == [["also_s1", "wd0.3_s1"]] and "duplicate_runs" not in inp
    f = next(f for f in whole.findings if f.code is grokaudit.Reason.DUPLICATE_RUN)
    assert f.evidence["identical_in"] == "accuracy" and f.runs == ("also_s1", "wd0.3_s1")


@pytest.mark.parametrize("part_rows", [1, 10**9])
def test_a_curve_many_runs_share_is_no_twin_in_any_part(tmp_path: Path, part_rows: int) -> None:
    """More than MAX_TWIN_GROUP runs on one accuracy curve share a coarse curve: no twins over
    the whole log, and none in a part that holds fewer of them."""
    from grokaudit.identity import MAX_TWIN_GROUP

    frames = _twin_log()
    base = frames[frames["run"] == "wd0.3_s1"]
    extra = [base.assign(run=f"copy{k:02d}", emb_erank=base["emb_erank"] + k + 2)
             for k in range(MAX_TWIN_GROUP)]
    path = _write(pd.concat([frames, *extra], ignore_index=True), tmp_path / "log.parquet",
                  row_group=333)
    whole = grokaudit.audit_path(path, by="wd", metrics=["emb_erank"])
    _same(whole, audit_stream(path, by="wd", metrics=["emb_erank"], part_rows=part_rows))
    assert "accuracy_twins" not in whole.to_dict()["input"]
