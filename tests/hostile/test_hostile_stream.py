"""``check --stream`` against hostile inputs (issue 22): a damaged part of a dataset, outputs
pointed at the log it reads, odd ``--part-rows`` values and option typos are one coded line
and exit 2 (never a traceback, never exit 1), and nothing of the input is changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from helpers.hostile import (
    assert_unchanged,
    cli,
    expect_audit,
    expect_error,
    expect_usage_error,
    snapshot,
    sweep_df,
)


@pytest.fixture
def hive(tmp_path: Path) -> Path:
    """The sweep as a hive dataset folder partitioned by wd (``wd=1/part-0.parquet`` …)."""
    t = pa.Table.from_pandas(sweep_df(), preserve_index=False)
    root = tmp_path / "ds"
    pads.write_dataset(t.drop_columns(["wd"]).append_column("wd", t["wd"]), root,
                       format="parquet", partitioning=["wd"], partitioning_flavor="hive")
    return root


def test_a_streamed_dataset_is_audited(hive: Path) -> None:
    expect_audit(cli(["check", hive, "--by", "wd", "--stream", "--part-rows", "50", "-q"]))


def test_a_truncated_part_is_one_coded_line(hive: Path) -> None:
    part = sorted(hive.rglob("*.parquet"))[1]
    part.write_bytes(part.read_bytes()[:300])
    for extra in ([], ["--stream"]):
        expect_error(cli(["check", hive, "--by", "wd", *extra]), "FILE_UNREADABLE")


@pytest.mark.parametrize("where", ["inside", "the_input"])
def test_an_output_pointed_at_the_log_is_refused_before_reading(hive: Path,
                                                                 where: str) -> None:
    target = hive / "out.json" if where == "inside" else sorted(hive.rglob("*.parquet"))[0]
    before = snapshot(hive)
    code, _ = expect_error(cli(["check", hive, "--by", "wd", "--stream", "--json", target]))
    assert code in ("OUTPUT_IN_INPUT_DIR", "OUTPUT_IS_INPUT")
    assert_unchanged(before, hive)


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_part_size_below_one_row_is_refused(hive: Path, value: str) -> None:
    expect_error(cli(["check", hive, "--by", "wd", "--stream", "--part-rows", value]),
                 "OPTION_OUT_OF_RANGE")


@pytest.mark.parametrize("args", [["--part-rows", "1e6"], ["--part-row", "10"],
                                  ["--streams"]])
def test_odd_values_and_typos_are_usage_errors(hive: Path, args: list[str]) -> None:
    expect_usage_error(cli(["check", hive, "--by", "wd", "--stream", *args]))


def test_part_rows_without_stream_never_silently_reads_whole(hive: Path) -> None:
    expect_error(cli(["check", hive, "--by", "wd", "--part-rows", "10"]), "INVALID_OPTION")


@pytest.mark.parametrize("layout", ["hive", "shards"])
def test_a_part_without_a_run_column_is_never_an_internal_error(tmp_path: Path,
                                                                 layout: str) -> None:
    """One file of the folder lacks the ``run`` column (its run named by nothing): each
    command refuses it with one coded line, never guesses its runs; the run ids of the other
    files are never looked up in it (was ``KeyError: b'run'``)."""
    df = sweep_df()
    root = tmp_path / "ds"
    for k, (wd, g) in enumerate(df.groupby("wd")):
        if k == 1:
            g = g.drop(columns=["run"])
        path = (root / f"wd={wd}" / "part-0.parquet" if layout == "hive"
                else root / f"part-{k}.parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(g.drop(columns=["wd"]) if layout == "hive" else g,
                                            preserve_index=False), path)
    stream = cli(["check", root, "--by", "wd", "--stream", "--part-rows", "50", "-q"])
    whole = cli(["check", root, "--by", "wd", "-q"])
    if layout == "hive":  # read by the adapters: a file of several runs without ids, named
        expect_error(whole, "MISSING_COLUMN")
        expect_error(stream, "FORMAT_MISMATCH")
    else:  # the loader's shards: rows without a run id, refused alike
        assert expect_error(whole)[0] == expect_error(stream)[0] == "MISSING_VALUES"
    for cmd in (["inspect", root], ["precursor", root, "--signal", "emb_erank"]):
        out = cli(cmd)
        assert "internal error" not in out.stderr and out.exception is None, str(out)


def test_a_partition_folder_linked_from_elsewhere_is_read(tmp_path: Path, hive: Path) -> None:
    """A partition folder that is a symbolic link (a sweep's arm on another disk) is part of
    the log, as pyarrow's dataset reads it — never silently left out; a link back to a folder
    above it (a loop) is not followed."""
    import os
    import shutil

    import grokaudit
    from grokaudit.stream import audit_stream

    arm = sorted(hive.iterdir())[-1]
    elsewhere = tmp_path / "other-disk" / arm.name
    elsewhere.parent.mkdir()
    shutil.move(str(arm), str(elsewhere))
    os.symlink(elsewhere, arm)
    os.symlink(hive, sorted(hive.iterdir())[0] / "loop")
    n = sweep_df()["run"].nunique()
    whole = grokaudit.audit_path(hive, by="wd")
    streamed = audit_stream(hive, by="wd", part_rows=50)
    assert whole.to_dict()["input"]["runs_read"] == n
    assert streamed.to_dict()["input"] == whole.to_dict()["input"]
    # the trail names every file read, the linked arm's included, with its bytes' sha256
    import hashlib

    trail = {f["path"]: f["sha256"] for f in whole.to_dict()["trail"]["inputs"]}
    linked = sorted((hive / arm.name).rglob("*.parquet"))
    assert linked and all(trail[str(q)] == hashlib.sha256(q.read_bytes()).hexdigest()
                          for q in linked)
    from grokaudit.limits import declared

    assert declared(hive) is not None and declared(hive).rows == len(sweep_df())  # type: ignore[union-attr]


@pytest.mark.parametrize("other", ["csv_beside", "parts_below", "jsonl_below"])
def test_a_folder_of_shards_never_leaves_a_log_out_in_silence(tmp_path: Path,
                                                              other: str) -> None:
    """Top-level Parquet files make a folder of shards, which reads those files only: a log
    beside them in another format, or parts in a folder below, would be left out. Refused on
    every path (exit 2, UNREAD_FILES), never audited in part; a config or notes file beside the
    shards is no log and stays allowed."""
    df = sweep_df()
    runs = sorted(df["run"].unique())
    root = tmp_path / "shards"
    root.mkdir()
    half = df["run"].isin(runs[: len(runs) // 2])
    pq.write_table(pa.Table.from_pandas(df[half], preserve_index=False), root / "a.parquet")
    rest = df[~half]
    if other == "csv_beside":
        rest.to_csv(root / "b.csv", index=False)
    elif other == "parts_below":
        (root / "wd=9").mkdir()
        pq.write_table(pa.Table.from_pandas(rest, preserve_index=False),
                       root / "wd=9" / "part-0.parquet")
    else:
        (root / "more").mkdir()
        rest.to_json(root / "more" / "b.jsonl", orient="records", lines=True)
    for extra in ([], ["--stream"]):
        expect_error(cli(["check", root, "--by", "wd", *extra]), "UNREAD_FILES")
    if importlib.util.find_spec("matplotlib") is not None:  # else MISSING_EXTRA comes first
        expect_error(cli(["report", root, "--by", "wd", "-o", tmp_path / "r.html"]),
                     "UNREAD_FILES")
    (root / "b.csv").unlink(missing_ok=True)
    for sub in ("wd=9", "more"):
        if (root / sub).exists():
            import shutil

            shutil.rmtree(root / sub)
    (root / "notes.yaml").write_text("who: me\n")
    (root / "_SUCCESS").write_text("")
    expect_audit(cli(["check", root, "--by", "wd", "-q"]))


@pytest.mark.parametrize(("name", "value"), [("2024_01", "2024_01"), ("١", "١"),
                                             ("12345678901234567891", "12345678901234567891"),
                                             ("0.1", 0.1), ("01", 1), ("1e-3", 0.001)])
def test_a_partition_value_is_a_number_only_when_written_as_one(name: str,
                                                                value: object) -> None:
    """Python's float() reads "2024_01" as 202401 and other scripts' digits as numbers, and a
    20-digit seed rounds through a float: a partition folder's value keeps its text then, as
    pyarrow keeps it, instead of a different value in silence."""
    from grokaudit.dataset import partition_value

    got = partition_value(name)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("damage", ["zero_bytes", "column_twice"])
def test_a_damaged_part_gets_the_same_code_streamed_or_not(hive: Path, damage: str) -> None:
    part = sorted(hive.rglob("*.parquet"))[1]
    if damage == "zero_bytes":
        part.write_bytes(b"")
        want = "FILE_EMPTY"
    else:
        t = pq.read_table(part)
        pq.write_table(pa.table([t.column(0), t.column(0), *t.columns[1:]],
                                names=[t.column_names[0], *t.column_names]), part)
        want = "DUPLICATE_COLUMN"
    for extra in ([], ["--stream"]):
        expect_error(cli(["check", hive, "--by", "wd", *extra]), want)


@pytest.mark.parametrize("column", ["step", "test_acc"])
def test_text_in_one_parts_numeric_column_is_the_same_refusal_streamed(hive: Path,
                                                                       column: str) -> None:
    """One part holds its steps (or accuracies) as text: refused as a bad column type on both
    paths, never "audit it without --stream" (which a log larger than memory cannot do)."""
    part = sorted(hive.rglob("*.parquet"))[1]
    t = pq.read_table(part)
    i = t.column_names.index(column)
    pq.write_table(t.set_column(i, column, t.column(column).cast(pa.string())), part)
    for extra in ([], ["--stream"]):
        expect_error(cli(["check", hive, "--by", "wd", *extra]), "BAD_COLUMN_TYPE")


def _shards(root: Path) -> Path:
    df = sweep_df()
    runs = sorted(df["run"].unique())
    root.mkdir(parents=True)
    for k, part in enumerate((runs[: len(runs) // 2], runs[len(runs) // 2:])):
        pq.write_table(pa.Table.from_pandas(df[df["run"].isin(part)], preserve_index=False),
                       root / f"shard-{k}-of-2.parquet")
    return root


@pytest.mark.parametrize("link", ["parent", "grandparent", "itself", "top_parent",
                                  "top_itself"])
def test_a_link_out_of_the_folder_never_reads_the_folders_around_it(tmp_path: Path,
                                                                    link: str) -> None:
    """A link inside the log to a folder above it (``..``, ``/``, the home folder) or to
    itself is not followed: a sibling experiment is not read into this one (nor refused as a
    log left out), and the trail hashes none of its files."""
    import os

    import grokaudit

    exp1, exp2 = _shards(tmp_path / "logs" / "exp1"), _shards(tmp_path / "logs" / "exp2")
    (exp1 / "notes").mkdir()
    # a link in a subfolder, or beside the shards themselves
    where = exp1 if link.startswith("top_") else exp1 / "notes"
    target = {"parent": "..", "grandparent": "../..", "itself": ".", "top_parent": "..",
              "top_itself": "."}[link]
    os.symlink(target, where / "up")
    res = grokaudit.audit_path(exp1, by="wd")
    assert res.to_dict()["input"]["runs_read"] == sweep_df()["run"].nunique()
    hashed = [f["path"] for f in res.to_dict()["trail"]["inputs"]]
    assert hashed and not any(str(exp2) in p or "/up/" in p for p in hashed)


def test_a_folder_beside_the_log_that_cannot_be_listed_is_none_of_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``lost+found`` (or another user's ``.Trash``) in the log's folder cannot be listed:
    no reader reads it, so the audit runs as before instead of refusing the log."""
    import grokaudit

    root = _shards(tmp_path / "d")
    for name in ("lost+found", ".Trash-1000"):
        (root / name).mkdir()
    real = Path.iterdir

    def iterdir(self: Path) -> Any:
        if self.name in ("lost+found", ".Trash-1000"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    res = grokaudit.audit_path(root, by="wd")
    assert res.to_dict()["input"]["runs_read"] == sweep_df()["run"].nunique()


def test_a_streamed_duplicate_count_is_never_printed_as_the_whole_logs(tmp_path: Path) -> None:
    """Conflicting duplicate rows in several runs, read in parts: the part that refuses
    counts its own rows only, so its count is said as a lower bound ("at least"), never as the
    log's count (which is larger here)."""
    import re

    import grokaudit
    from grokaudit.errors import LogFormatError
    from grokaudit.stream import audit_stream

    df = sweep_df()
    runs = sorted(df["run"].unique())
    dup = df[df["run"].isin(runs[:3])].groupby("run").head(2).copy()
    dup["test_acc"] = dup["test_acc"] + 0.01
    log = tmp_path / "log.parquet"
    both = pa.Table.from_pandas(pd.concat([df, dup]).sort_values(["run", "step"], kind="stable"),
                                preserve_index=False)
    pq.write_table(both, log, row_group_size=50)
    with pytest.raises(LogFormatError) as whole:
        grokaudit.audit_path(log, by="wd")
    with pytest.raises(LogFormatError) as parts:
        audit_stream(log, by="wd", part_rows=50)
    assert whole.value.code == parts.value.code == "DUPLICATE_ROWS"
    n_whole = int(re.search(r"(\d+) duplicate", str(whole.value)).group(1))  # type: ignore[union-attr]
    m = re.search(r"(at least )?(\d+) duplicate", str(parts.value))
    assert n_whole == 2 * 3 and m is not None and int(m.group(2)) < n_whole
    assert m.group(1)  # a part's count is a bound


@pytest.mark.parametrize("odd", ["dangling_config_link", "licence_unreadable", "readme_folder",
                                 "empty_licence"])
def test_odd_files_beside_the_parts_read_alike_streamed_or_not(hive: Path, odd: str) -> None:
    """Files beside a dataset's parts that the in-memory read leaves out are left out in
    parts too, whatever they are: a config file's name on a dangling link (no reader can read
    it), a licence no one may read, a folder named like a README, an empty licence. Both paths
    audit the same runs (the streamed one never refuses the folder for them)."""
    import os

    if odd == "dangling_config_link":
        os.symlink(hive / "nowhere.yaml", hive / "config.yaml")
    elif odd == "licence_unreadable":
        (hive / "LICENSE").write_text("MIT\n")
        (hive / "LICENSE").chmod(0)
    elif odd == "readme_folder":
        (hive / "README.md").mkdir()
        (hive / "README.md" / "figure.png").write_bytes(b"\x89PNG")
    else:
        (hive / "LICENSE").write_bytes(b"")
    before = snapshot(hive)
    whole = cli(["check", hive, "--by", "wd", "--json", "-", "-q"])
    streamed = cli(["check", hive, "--by", "wd", "--stream", "--part-rows", "50", "--json", "-",
                    "-q"])
    expect_audit(whole), expect_audit(streamed)
    import json

    a, b = json.loads(whole.stdout)["input"], json.loads(streamed.stdout)["input"]
    assert a["runs_read"] == b["runs_read"] == sweep_df()["run"].nunique()
    assert a["rows_read"] == b["rows_read"]
    assert_unchanged(before, hive)


@pytest.mark.parametrize("which", ["config_name", "part_stem"])
def test_a_config_file_beside_the_parts_is_never_left_out_in_parts(hive: Path,
                                                                   which: str) -> None:
    """A config file by its well-known name, or a part's same-stem YAML (in any case of its
    suffix): its values would be conditions in memory; streamed, the folder is refused with
    one coded line rather than audited without them."""
    part = sorted(hive.rglob("*.parquet"))[0]
    target = hive / "hparams.yml" if which == "config_name" else part.with_suffix(".YAML")
    target.write_text("lr: 0.1\n")
    expect_error(cli(["check", hive, "--by", "wd", "--stream"]), "FORMAT_MISMATCH")
