"""Columns as pandas and Arrow write them: categorical run ids with unused categories, nested
columns. Each is read as its values, or refused with one error naming the column."""

from __future__ import annotations

import json

import grokaudit
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode


def _log() -> pd.DataFrame:
    rows = []
    for r in range(6):
        for s in range(40):
            rows.append({"run": f"r{r}", "step": s * 10, "test_acc": min(1.0, s / 20),
                         "train_acc": 1.0, "emb_erank": 30 - 0.5 * s + 0.1 * r,
                         "c": float(r % 3)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("shuffle", [False, True])
def test_categorical_run_ids_with_unused_categories(tmp_path, shuffle: bool):
    df = _log()
    if shuffle:
        df = df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    cat = df.assign(run=pd.Categorical(df["run"], categories=[f"r{i}" for i in range(12)]))
    a, b = tmp_path / "cat.parquet", tmp_path / "plain.parquet"
    cat.to_parquet(a, index=False)
    df.to_parquet(b, index=False)
    got = grokaudit.audit_path(a, by="c")
    want = grokaudit.audit_path(b, by="c")
    assert got.input["runs_read"] == 6  # the unused categories are not runs
    # the same audit; only the trail differs (two files: their own bytes and digests)
    assert json.dumps({**got.to_dict(), "trail": None}).replace(str(a), "X") == \
        json.dumps({**want.to_dict(), "trail": None}).replace(str(b), "X")


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
@pytest.mark.parametrize("split", [1, 2])
def test_unused_categories_as_many_as_a_split_runs_extra_blocks_are_not_runs(tmp_path, split,
                                                                             kernel):
    """A run logged in two blocks of rows (resumed after other runs) beside as many unused
    categories as the extra blocks: as many blocks as ids, yet not one block per run. Read as
    the plain log is, never as two runs under one id (found in round 6: each half became a run
    of its own, 'r0' twice)."""
    if kernel == "numba":
        pytest.importorskip("numba")
    df = _log()
    halves = [df[(df["run"] == f"r{r}") & (df["step"] >= 200)] for r in range(split)]
    rest = df.drop(index=pd.concat(halves).index)
    df = pd.concat([rest, *halves], ignore_index=True)  # r0's (and r1's) last steps at the end
    cats = [*(f"r{i}" for i in range(6)), *(f"unused{i}" for i in range(split))]
    cat = df.assign(run=pd.Categorical(df["run"], categories=cats))
    t = pa.Table.from_pandas(cat, preserve_index=False)
    assert len(t.column("run").chunk(0).dictionary) == 6 + split  # the unused ones kept
    a, b = tmp_path / "cat.parquet", tmp_path / "plain.parquet"
    pq.write_table(t, a)
    df.to_parquet(b, index=False)
    want = grokaudit.audit_path(b, by="c", kernel=kernel)
    assert want.input["runs_read"] == 6 and not want.input["sorted_input"]
    for got in (grokaudit.audit_path(a, by="c", kernel=kernel),
                grokaudit.audit_table(t, by="c", source=str(a), kernel=kernel)):
        assert got.input["runs_read"] == 6
        assert json.dumps({**got.to_dict(), "trail": None}).replace(str(a), "X") == \
            json.dumps({**want.to_dict(), "trail": None}).replace(str(b), "X")


def _wide_int_log(values: list[int | None]) -> pa.Table:
    rows: dict[str, list] = {k: [] for k in ("run", "step", "test_acc", "rho", "emb_erank")}
    cfg: list[int | None] = []
    for i, (c, rho) in enumerate((c, rho) for c in values for rho in (0.1, 0.3, 1.0)):
        for s in range(30):
            for k, v in zip(rows, (f"r{i}", s * 10, min(1.0, s / 10), rho, 10 - s / 10)):
                rows[k].append(v)
            cfg.append(c)
    return pa.table({**rows, "cfg": pa.array(cfg, pa.int64())})


@pytest.mark.parametrize("where", ["memory", "parquet"])
def test_integer_conditions_beyond_2_53_beside_a_missing_value_keep_their_values(tmp_path,
                                                                               where):
    """An int64 condition whose values exceed 2**53, missing for some runs: each value kept
    exactly, two settings never merged into one study (found in round 6: read as float64,
    2**62+1 and 2**62+2 became one number), and an axis of it refused for the run it lacks."""
    wide = [2**62 + 1, 2**62 + 2, None]
    t = _wide_int_log(wide)
    if where == "parquet":
        pq.write_table(t, tmp_path / "log.parquet")
        t = pq.read_table(tmp_path / "log.parquet")
    log = grokaudit.schema.build_log_table(t)
    assert log.conditions["cfg"].tolist() == [v for v in wide for _ in range(3)]
    studies = [s["study"] for s in grokaudit.audit_table(t, by="rho", cell=["cfg"])
               .to_dict()["studies"]]
    assert studies == [{"cfg": v} for v in wide]
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_table(t, by="cfg")
    assert err.value.code == ErrorCode.CONDITION_MISSING and err.value.column == "cfg"


def _listed_twice(codes: list[int], values: list[str | None]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(values))


@pytest.mark.parametrize("layout", ["one_chunk", "two_equal_chunks", "non_ascii"])
def test_a_dictionary_that_lists_an_id_twice_reads_as_the_plain_ids(layout):
    """Arrow lets a dictionary list a value twice (["r0", "r0"]): the rows coded 0 and 1 are
    one run, audited as the plain text column is (found in round 6: two runs under one id,
    or RUN_ID_AMBIGUOUS for a non-ASCII id)."""
    df = _log()
    ids = df["run"].to_numpy()
    name = {"non_ascii": "é"}.get(layout, "r0")
    half = (ids == "r0") & (df["step"].to_numpy() >= 200)
    codes = np.where(ids == "r0", np.where(half, 1, 0), [int(r[1:]) + 1 for r in ids])
    values = [name, name, *(f"r{i}" for i in range(1, 6))]
    base = pa.Table.from_pandas(df.drop(columns="run"), preserve_index=False)
    if layout == "two_equal_chunks":
        cut = len(df) // 2
        run = pa.chunked_array([_listed_twice(codes[:cut].tolist(), values),
                                _listed_twice(codes[cut:].tolist(), values)])
    else:
        run = pa.chunked_array([_listed_twice(codes.tolist(), values)])
    t = base.append_column("run", run)
    plain = base.append_column("run", pa.array(np.where(ids == "r0", name, ids).tolist()))
    got, want = grokaudit.audit_table(t, by="c"), grokaudit.audit_table(plain, by="c")
    assert got.input["runs_read"] == 6
    assert json.dumps(got.to_dict()) == json.dumps(want.to_dict())


def test_a_text_condition_listed_twice_in_its_dictionary_is_constant():
    df = _log()
    t = pa.Table.from_pandas(df, preserve_index=False).append_column(
        "tag", _listed_twice([i % 2 for i in range(len(df))], ["x", "x"]))
    log = grokaudit.schema.build_log_table(t)
    assert log.conditions["tag"].tolist() == ["x"] * 6


def test_rows_of_an_id_listed_twice_at_one_step_are_duplicate_rows():
    t = pa.table({"run": _listed_twice([0, 1] * 20, ["r0", "r0"]),
                  "step": np.repeat(np.arange(20), 2), "test_acc": np.linspace(0, 1, 40)})
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.schema.build_log_table(t)
    assert err.value.code == ErrorCode.DUPLICATE_ROWS


@pytest.mark.parametrize("run", ["binary_not_utf8", "dictionary_of_binary", "list", "struct"])
def test_a_run_column_that_holds_no_text_id_is_refused_by_name(tmp_path, run):
    """Run ids as bytes that are not UTF-8, or as lists or structs: BAD_COLUMN_TYPE naming
    'run', in memory, from a file, a folder and --stream (found in round 6: Arrow's own error,
    an "internal error" line, or a KeyError opening the file)."""
    T = 5
    col = {"binary_not_utf8": pa.array([b"\xff"] * T + [b"b"] * T, pa.binary()),
           "dictionary_of_binary": pa.array([b"\xff"] * T + [b"b"] * T,
                                            pa.binary()).dictionary_encode(),
           "list": pa.array([[1]] * T + [[2]] * T),
           "struct": pa.array([{"x": 1}] * T + [{"x": 2}] * T)}[run]
    t = pa.table({"run": col, "step": np.tile(np.arange(T), 2),
                  "test_acc": np.linspace(0, 1, 2 * T), "rho": np.repeat([0.1, 0.2], T)})
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_table(t, by="rho")
    assert err.value.code == ErrorCode.BAD_COLUMN_TYPE and err.value.column == "run"
    folder = tmp_path / "runs"
    folder.mkdir()
    pq.write_table(t, folder / "a.parquet")
    pq.write_table(t, folder / "b.parquet")
    for target in (folder / "a.parquet", folder):
        before = (folder / "a.parquet").read_bytes()
        for extra in ([], ["--stream"]):
            res = CliRunner().invoke(cli, ["check", str(target), "--by", "rho", *extra])
            assert res.exit_code == 2, res.output
            assert "[BAD_COLUMN_TYPE]" in res.output and "internal error" not in res.output
            assert len(res.output.strip().splitlines()) == 1
        assert (folder / "a.parquet").read_bytes() == before


@pytest.mark.parametrize("column", [
    pa.array([[1, 2]] * 240),
    pa.array([{"x": 1}] * 240),
    pa.array([[("k", 1)]] * 240, type=pa.map_(pa.string(), pa.int64())),
])
def test_a_nested_column_is_refused_by_name(tmp_path, column):
    t = pa.Table.from_pandas(_log(), preserve_index=False).append_column("extra", column)
    path = tmp_path / "log.parquet"
    pq.write_table(t, path)
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_path(path, by="c")
    assert err.value.code == ErrorCode.BAD_COLUMN_TYPE and err.value.column == "extra"
    res = CliRunner().invoke(cli, ["check", str(path), "--by", "c"])
    assert res.exit_code == 2
    assert "[BAD_COLUMN_TYPE]" in res.output and "internal error" not in res.output


def test_values_near_the_float_limit_bin_alike_for_equal_and_unequal_runs():
    """The floor's stability bins medians of 64 bins; two middle values near 1.8e308 average
    without overflow whether or not every run has the same number of points."""
    from grokaudit.clocks import _bin_medians

    vals = np.where(np.arange(200) % 2 == 0, 1.7e308, 1.79e308)
    X = np.tile(np.arange(200.0), (3, 1))
    Y = np.tile(vals, (3, 1))
    same = _bin_medians(X, Y, np.full(3, 200), 64)[1]
    ragged = _bin_medians(X, Y, np.array([200, 200, 199]), 64)[1]
    assert np.isfinite(same).all() and np.isfinite(ragged[:2]).all()
    assert np.array_equal(same[:2], ragged[:2])


def test_the_reference_floor_of_floors_near_the_float_limit_is_finite():
    import warnings
    from types import SimpleNamespace

    from grokaudit.cells import reference_floor

    cells = [SimpleNamespace(floor=f) for f in (1.7e308, 1.75e308, None, 1.79e308, 1.78e308)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        ref = reference_floor(cells)  # type: ignore[arg-type]
    assert ref == 1.75e308 / 2 + 1.78e308 / 2
    assert reference_floor([SimpleNamespace(floor=2.0), SimpleNamespace(floor=4.0)]) == 3.0


def _with_text_cell(df: pd.DataFrame, column: str, row: int, text: str) -> pd.DataFrame:
    out = df.astype({column: object})
    out.loc[row, column] = text
    return out


def _refused(path) -> grokaudit.LogFormatError:
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_path(path, by="c")
    return err.value


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_stray_text_cell_in_a_metric_names_its_run_and_step(tmp_path, fmt: str):
    """One ``oops`` in run r4 at step 120 makes the whole column text: the error names that
    cell, not the first run whose numbers change (r0), and is a type error, not a condition
    that varies (the CSV is read by the canonical reader, the JSONL by the adapters)."""
    df = _with_text_cell(_log(), "emb_erank", 4 * 40 + 12, "oops")
    path = tmp_path / f"log.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    err = _refused(path)
    assert err.code == ErrorCode.BAD_COLUMN_TYPE and err.column == "emb_erank"
    assert "'r4'" in str(err) and "step 120" in str(err) and "'r0'" not in str(err)
    assert "oops" in str(err)


def test_a_metric_stored_wholly_as_text_is_a_type_error(tmp_path):
    df = _log().assign(emb_erank=lambda d: d["emb_erank"].map(lambda v: f"{v:.3f}"))
    path = tmp_path / "log.parquet"
    df.to_parquet(path, index=False)
    assert pa.types.is_large_string(pq.read_schema(path).field("emb_erank").type) or \
        pa.types.is_string(pq.read_schema(path).field("emb_erank").type)
    err = _refused(path)
    assert err.code == ErrorCode.BAD_COLUMN_TYPE and err.column == "emb_erank"


@pytest.mark.parametrize("values", [("mlp", "tf"), ("n/a", "n/a", "1.5")])
def test_a_text_column_of_words_changing_in_a_run_is_still_not_a_condition(tmp_path, values):
    """Words (or mostly words) that change within a run are no metric: the error stays
    NOT_CONSTANT_IN_RUN."""
    df = _log()
    df["note"] = [values[i % len(values)] for i in range(len(df))]
    path = tmp_path / "log.parquet"
    df.to_parquet(path, index=False)
    err = _refused(path)
    assert err.code == ErrorCode.NOT_CONSTANT_IN_RUN and err.column == "note"


def test_an_unused_category_that_collides_with_a_run_id_is_not_a_second_spelling(tmp_path):
    """Run ids that collide once normalized are refused (RUN_ID_AMBIGUOUS), but an unused
    category is no run: " r1" beside "r1" among the categories only, no row of it, audits as
    the plain log does; a row of it is refused."""
    df = _log()
    cats = [*(f"r{i}" for i in range(6)), " r1"]
    cat = df.assign(run=pd.Categorical(df["run"], categories=cats))
    a, b = tmp_path / "cat.parquet", tmp_path / "plain.parquet"
    cat.to_parquet(a, index=False)
    df.to_parquet(b, index=False)
    got = grokaudit.audit_path(a, by="c")
    want = grokaudit.audit_path(b, by="c")
    assert json.dumps({**got.to_dict(), "trail": None}).replace(str(a), "X") == \
        json.dumps({**want.to_dict(), "trail": None}).replace(str(b), "X")
    used = cat.copy()
    used.loc[used.index[-1], "run"] = " r1"  # now a row is logged under the second spelling
    used.to_parquet(a, index=False)
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_path(a, by="c")
    assert err.value.code == "RUN_ID_AMBIGUOUS"


def test_a_null_in_the_run_ids_arrow_dictionary_is_a_missing_run_id():
    """An Arrow dictionary can hold a null value that valid indices point at: those rows have
    no run id (MISSING_VALUES, naming the column), as a null index would be, never a run
    named None or a TypeError."""
    df = _log()
    codes = pa.array((df["run"] == "r0").to_numpy().astype(np.int32))  # r0's rows: the null
    run = pa.DictionaryArray.from_arrays(codes, pa.array(["x", None]))
    t = pa.Table.from_pandas(df.drop(columns="run"), preserve_index=False).append_column(
        "run", run)
    assert t.column("run").null_count == 0  # the indices are all valid
    with pytest.raises(grokaudit.LogFormatError) as err:
        grokaudit.audit_table(t, by="c")
    assert err.value.code == "MISSING_VALUES" and err.value.column == "run"
