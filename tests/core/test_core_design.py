"""One study design for `check` and every claim (issue 23, grokaudit.design): the library's
errors name the parameter (``by=``, ``cell=``; ``exc.param``), the command line's the flag
(``--by``, ``--cell``), with the same code; a float32 cell value is shown as stored by `check`
and by a claim alike."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import audit_table
from grokaudit.claims.simulate import make_log
from grokaudit.claims.transition import run_transition
from grokaudit.cli import cli
from grokaudit.config import make_config
from grokaudit.errors import ErrorCode, LogFormatError

WDS = (0.5, 1.0, 2.0, 4.0)


def _runs(**extra: object) -> pd.DataFrame:
    """Two arms (``arch``) on one wd sweep, three seeds per cell; every run groks, earlier with
    more weight decay."""
    rows = [{"run": f"{a}_wd{wd}_s{s}", "t_grok": 4000.0 / wd + 300 * s + (500 if a == "b" else 0),
             "budget": 20000.0, "wd": wd, "arch": a, "seed": s, **extra}
            for a in ("a", "b") for wd in WDS for s in range(3)]
    return pd.DataFrame(rows)


def _log(runs: pd.DataFrame) -> pd.DataFrame:
    return make_log(runs, every=200,
                    series={"emb_erank": lambda r, s: 10.0 - 5.0 / (1 + np.exp(-(s - r["t_grok"])
                                                                               / 500.0))})


def _write(df: pd.DataFrame, path: Path) -> Path:
    df.to_parquet(path, index=False)
    return path


def _cli(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, args)
    return r.exit_code, r.stderr


def _flag_token(text: str, flag: str) -> bool:
    """``--by`` appears as a flag (not as part of ``--by-x``), and no ``by=`` spelling."""
    name = flag.lstrip("-")
    return bool(re.search(rf"(?<![\w-]){re.escape(flag)}\b", text)) and f"{name}=" not in text


def test_ambiguous_axis_names_by_in_the_library_and_the_flag_on_the_command_line(
        tmp_path: Path) -> None:
    df = _log(_runs())
    df["lr"] = df["wd"] * 3  # a second varying numeric condition: no single axis
    df["arch"] = "a"
    df = df.drop_duplicates(["run", "step"])
    with pytest.raises(LogFormatError) as exc:
        audit_table(df, metrics=["emb_erank"])
    assert exc.value.code is ErrorCode.AMBIGUOUS_AXIS and exc.value.param == "by"
    assert "by=COLUMN" in str(exc.value) and "--by" not in str(exc.value)
    code, err = _cli(["check", str(_write(df, tmp_path / "two_axes.parquet")),
                      "--metric", "emb_erank"])
    assert code == 2 and "[AMBIGUOUS_AXIS]" in err
    assert _flag_token(err, "--by")


def test_pooled_arms_name_cell_in_the_library_and_the_flag_on_the_command_line(
        tmp_path: Path) -> None:
    df = _log(_runs())
    for call in (lambda: audit_table(df, by="wd", metrics=["emb_erank"]),
                 lambda: run_transition(df, make_config(), by="wd", n_resamples=9)):
        with pytest.raises(LogFormatError) as exc:
            call()
        assert exc.value.code is ErrorCode.DUPLICATE_AXIS_VALUES
        assert exc.value.param == "cell" and exc.value.column == "arch"
        assert "cell=arch" in str(exc.value) and "--cell" not in str(exc.value)
    p = _write(df, tmp_path / "pooled.parquet")
    for args in (["check", str(p), "--by", "wd", "--metric", "emb_erank"],
                 ["transition", str(p), "--by", "wd", "--n-resamples", "9"]):
        code, err = _cli(args)
        assert code == 2 and "[DUPLICATE_AXIS_VALUES]" in err, (args, err)
        assert "--cell arch" in err and _flag_token(err, "--cell"), err


def test_an_axis_that_is_not_a_condition_names_by_in_both_check_and_a_claim(
        tmp_path: Path) -> None:
    df = _log(_runs())
    for call in (lambda: audit_table(df, by="emb_erank", cell=["arch"]),
                 lambda: run_transition(df, make_config(), by="emb_erank", cell=["arch"])):
        with pytest.raises(LogFormatError) as exc:
            call()
        assert exc.value.code is ErrorCode.NOT_A_CONDITION
        assert exc.value.param == "by" and exc.value.column == "emb_erank"
        assert "by=" in str(exc.value) and "--by" not in str(exc.value)
    p = _write(df, tmp_path / "series_axis.parquet")
    for cmd in ("check", "transition"):
        code, err = _cli([cmd, str(p), "--by", "emb_erank", "--cell", "arch"])
        assert code == 2 and "[NOT_A_CONDITION]" in err and _flag_token(err, "--by"), err


def test_check_and_a_claim_show_a_float32_cell_value_as_stored(tmp_path: Path) -> None:
    runs = _runs()
    runs["lr"] = np.where(runs["arch"] == "a", 0.85, 0.3)
    df = _log(runs.drop(columns="arch"))
    df["lr"] = df["lr"].astype(np.float32)
    p = _write(df, tmp_path / "f32_cell.parquet")
    stored = {str(np.float32(0.85)), str(np.float32(0.3))}
    widened = {repr(float(np.float32(0.85))), repr(float(np.float32(0.3)))}
    shown = {}
    for args in (["check", str(p), "--by", "wd", "--cell", "lr", "--metric", "emb_erank",
                  "-v"],
                 ["transition", str(p), "--by", "wd", "--cell", "lr", "--n-resamples", "9"]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code in (0, 1), r.output
        shown[args[0]] = set(re.findall(r"\blr=([0-9.e+-]+)", r.stdout))
        assert not any(w in r.stdout for w in widened), r.stdout
    assert shown["check"] == shown["transition"] == stored


def test_check_and_a_claim_show_a_boolean_cell_value_alike(tmp_path: Path) -> None:
    """A boolean study key reads ``layernorm=true`` in check and in a claim (never ``True``
    in one and ``true`` in the other)."""
    runs = _runs()
    runs["layernorm"] = runs["arch"] == "a"
    p = _write(_log(runs.drop(columns="arch")), tmp_path / "bool_cell.parquet")
    shown = {}
    for args in (["check", str(p), "--by", "wd", "--cell", "layernorm", "--metric",
                  "emb_erank", "-v"],
                 ["transition", str(p), "--by", "wd", "--cell", "layernorm",
                  "--n-resamples", "9"]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code in (0, 1), r.output
        shown[args[0]] = set(re.findall(r"\blayernorm=(\w+)", r.stdout))
    assert shown["check"] == shown["transition"] == {"true", "false"}


def test_an_inferred_axis_is_not_blamed_on_a_parameter_the_user_never_gave(tmp_path: Path
                                                                          ) -> None:
    """With no by=, the axis the audit inferred has no parameter to name: a missing value of
    it is CONDITION_MISSING with ``param`` None (the message says the axis was inferred)."""
    runs = _runs().drop(columns="arch")
    runs.loc[runs.index[0], "wd"] = np.nan
    with pytest.raises(LogFormatError) as exc:
        audit_table(_log(runs))
    assert exc.value.code is ErrorCode.CONDITION_MISSING
    assert exc.value.param is None


def test_blocks_on_the_thread_pool_see_the_callers_flag_spelling(monkeypatch) -> None:
    """A message made in a block computed on the pool names parameters as the caller's
    context says (the command line's ``--by``), not the library's default."""
    from grokaudit import blocks
    from grokaudit.errors import flag_spelling, param_name

    monkeypatch.setenv("GROKAUDIT_THREADS", "3")
    parts = [slice(i, i + 1) for i in range(9)]
    with flag_spelling():
        seen = blocks.map_blocks(lambda b: param_name("by"), parts)
    assert seen == ["--by"] * 9
    assert blocks.map_blocks(lambda b: param_name("by"), parts) == ["by="] * 9


def test_an_identifier_is_never_inferred_as_the_axis() -> None:
    """A ``model_id`` numbering three models (two runs each) was taken as the axis, and an
    ordering printed along an id (found on a public log, SatriaPriambada/darts). It is refused
    (NO_AXIS) with a fix that works (``cell=``), and ``by=`` still orders along it."""
    runs = _runs()
    runs = runs[runs.arch == "a"].drop(columns=["arch"]).assign(wd=1.0)
    runs["model_id"] = np.arange(len(runs)) % 3
    log = _log(runs)
    with pytest.raises(LogFormatError) as e:
        audit_table(log)
    assert e.value.code is ErrorCode.NO_AXIS and e.value.param == "by"
    split = audit_table(log, cell=["model_id"])
    assert sorted(s.study["model_id"] for s in split.studies) == [0, 1, 2]
    assert all(s.axis is None for s in split.studies)
    assert audit_table(log, by="model_id").studies[0].axis == "model_id"
    # an id of something else than a run is an arm even with one run per value (5 datasets):
    # refused, not pooled as replicates, whatever the run count
    one_each = runs.drop(columns=["model_id"]).iloc[:5].assign(dataset_id=range(5))
    with pytest.raises(LogFormatError) as e:
        audit_table(_log(one_each))
    assert e.value.code is ErrorCode.NO_AXIS
    # a text id: the fix offered is the cell (an axis must be numeric), and it works
    named = runs.assign(model_id=runs["model_id"].map({0: "a", 1: "b", 2: "c"}))
    with pytest.raises(LogFormatError) as e:
        audit_table(_log(named))
    assert e.value.code is ErrorCode.NO_AXIS and "--by" not in str(e.value) \
        and "by=" not in str(e.value)
    assert len(audit_table(_log(named), cell=["model_id"]).studies) == 3


def test_a_per_run_identifier_is_neither_an_axis_nor_an_arm() -> None:
    """A ``run_id`` column that differs in every run, beside the wd sweep: it made the axis
    ambiguous (AMBIGUOUS_AXIS), and with ``by="wd"`` the cells were refused for pooling runs
    of different ids (DUPLICATE_AXIS_VALUES, proposing to order along the id). It is the runs'
    identity: wd is the axis, the runs of a cell its replicates. A grouping id still splits."""
    runs = _runs()
    runs = runs[runs.arch == "a"].drop(columns=["arch"])
    runs["run_id"] = 1000 + np.arange(len(runs))
    log = _log(runs)
    inferred = audit_table(log)
    assert inferred.studies[0].axis == "wd"
    named = audit_table(log, by="wd")
    assert [s.to_dict() for s in inferred.studies] == [s.to_dict() for s in named.studies]
    assert [c.n_runs for c in inferred.studies[0].cells] == [3] * len(WDS)
    # an identifier shared by runs of different arms is no identity of a run: still refused
    runs["model_id"] = np.arange(len(runs)) % 2
    with pytest.raises(LogFormatError) as e:
        audit_table(_log(runs), by="wd")
    assert e.value.code is ErrorCode.DUPLICATE_AXIS_VALUES and e.value.param == "cell"


def test_one_setting_written_twice_is_one_axis() -> None:
    """A W&B run's ``learning_rate`` logged as a (constant) metric beside its config's, read as
    ``learning_rate_cond``: AMBIGUOUS_AXIS listed one setting twice (public log
    ADL-Group-10/lab0). A setting and its second copy (``wd``, ``wd_cond``) equal in every run
    are one axis; two settings that merely agree in every run (``width`` = ``depth``) stay
    two (the log cannot tell which one the orderings follow), and so do copies that differ in
    any run, integers compared as integers."""
    runs = _runs()
    runs = runs[runs.arch == "a"].drop(columns=["arch"])
    runs["wd_cond"] = runs["wd"]
    assert audit_table(_log(runs)).studies[0].axis == "wd"
    for other in (runs.drop(columns=["wd_cond"]).assign(width=runs["wd"]),  # two settings
                  runs.assign(wd_cond=runs["wd"].where(runs["seed"] != 2, runs["wd"] * 2))):
        with pytest.raises(LogFormatError) as e:
            audit_table(_log(other))
        assert e.value.code is ErrorCode.AMBIGUOUS_AXIS
    # integers: int32 beside int64 alike; one apart beyond 2**53 (one float) two
    big = runs.drop(columns=["wd", "wd_cond"]).assign(
        wd=2**60 + (runs["wd"] * 4).astype(np.int64))
    assert audit_table(_log(big.assign(
        wd_cond=big["wd"]))).studies[0].axis == "wd"
    small = runs.drop(columns=["wd_cond"]).assign(wd=(runs["wd"] * 4).astype(np.int64))
    assert audit_table(_log(small.assign(
        wd_cond=small["wd"].astype(np.int32)))).studies[0].axis == "wd"
    with pytest.raises(LogFormatError) as e:
        audit_table(_log(big.assign(wd_cond=big["wd"] + (big["seed"] == 1))))
    assert e.value.code is ErrorCode.AMBIGUOUS_AXIS
