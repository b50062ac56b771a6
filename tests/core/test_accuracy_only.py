"""`check` on accuracy-only logs (issue 39 item 7): the grok clock, its censoring and the
sustained-grok audit need no metric, so a log without a representation metric column is
audited for them, and the compression part is said not assessed (COMPRESSION_NOT_ASSESSED).

Logs are hand-built on the grid of ``core_builders`` (a point every 100 steps): test accuracy
0.05 before ``t_grok`` and 1.0 from it on, so ``t_grok`` is read in ``(t_grok − 100, t_grok]``;
a run that never groks is censored at its last logged step. Every expected number follows from
that construction. Before this change every test here that audits was refused as NO_METRIC.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import grokaudit
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit import Reason
from grokaudit.cli import cli
from grokaudit.results import AuditResult, StudyResult
from grokaudit.stream import audit_stream
from helpers.core_builders import grid, step_acc

R = Reason
END, CAD = 10_000, 100
#: t_grok of each cell along ``wd``: decreasing with wd (None: no run groks)
T_GROK = {0.3: 6000, 1.0: 3000, 2.0: 1500}
#: the numbers of a metric, which an accuracy-only audit never reports
METRIC_NUMBERS = ("floor", "delta", "m_grok", "t_compress", "lag", "rel_lag", "frac_pre",
                  "inflation")


def acc_run(run: str, t_grok: int | None, *, start: int = 0, fall_at: int | None = None,
            t_mem: int = 500, **conds: object) -> pd.DataFrame:
    """One run without a metric: test accuracy up at ``t_grok`` (never if None), back down
    from ``fall_at`` on (a grok not sustained); train accuracy 1.0 from ``t_mem``; a training
    loss (a per-step column that is no representation metric, a little different in each run:
    no run is a copy of another); logged from ``start``."""
    s = grid(END, CAD)
    s = s[s >= start]
    test = step_acc(s, t_grok)
    if fall_at is not None:
        test = np.where(s >= fall_at, 0.05, test)
    df = pd.DataFrame({"run": run, "step": s, "test_acc": test,
                       "train_acc": np.where(s >= t_mem, 1.0, 0.5),
                       "train_loss": np.linspace(2.0, 0.01, s.size)
                       + zlib.crc32(run.encode()) % 1000 * 1e-6})
    for k, v in conds.items():
        df[k] = v
    return df


def sweep(t_grok: dict[float, int | None] = T_GROK, seeds: int = 3, **conds: object
          ) -> pd.DataFrame:
    """Cells along ``wd`` with ``seeds`` identical runs each."""
    return pd.concat([acc_run(f"wd{wd}_s{k}", tg, wd=wd, seed=k, **conds)
                      for wd, tg in t_grok.items() for k in range(seeds)], ignore_index=True)


def parquet(df: pd.DataFrame, tmp_path: Path, name: str = "log.parquet") -> Path:
    p = tmp_path / name
    grokaudit.write_table(df, p)
    return p


def cli_run(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def finding(res: AuditResult, code: Reason, cell: object = None) -> grokaudit.Finding:
    hits = [f for f in res.findings if f.code is code and (cell is None or f.cell == cell)]
    assert len(hits) == 1, (code, cell, hits)
    return hits[0]


def no_metric_number(study: StudyResult) -> None:
    """Nothing a metric decides is reported as known, in the objects or the JSON."""
    for c in study.cells:
        assert all(getattr(c, q) is None for q in METRIC_NUMBERS), c
        d = c.to_dict()
        assert all(d[q] is None for q in METRIC_NUMBERS)
        assert all(d[k] is None for k in ("n_no_compression", "n_established", "n_tc_censored",
                                          "floor_stability", "n_transient", "n_judged"))
    for r in study.runs:
        assert all(getattr(r, q) is None for q in (*METRIC_NUMBERS, "m_start", "m_peak",
                                                     "w1_median", "drift", "mad", "undershoot"))
        assert {r.floor_stability, r.compression, r.snapshot} == {"not_assessed"}


# ------------------------------------------------------------------------------------------
# the audit
# ------------------------------------------------------------------------------------------

def test_an_accuracy_only_log_is_audited_for_its_grok_clock(tmp_path: Path) -> None:
    res = grokaudit.audit_path(parquet(sweep(), tmp_path))  # NO_METRIC before issue 39.7
    (st,) = res.studies
    assert st.metric is None and st.axis == "wd" and st.verdict is None
    assert st.verdict_label == R.COMPRESSION_NOT_ASSESSED.value
    assert [c.axis_value for c in st.cells] == sorted(T_GROK)
    for c in st.cells:
        tg = T_GROK[c.axis_value]
        assert (c.t_grok.value, c.t_grok.lower, c.t_grok.upper) == (tg, tg - CAD, tg)
        assert c.passes and c.n_grokked == c.n_fully_generalized == c.n_runs == 3
    for r in st.runs:
        tg = T_GROK[r.cell]
        assert (r.t_grok.value, r.t_grok.lower, r.t_grok.upper) == (tg, tg - CAD, tg)
        assert (r.t_mem.value, r.t_mem.lower) == (500, 400)
        assert r.grok_sustained and r.fully_generalized and r.reasons == ()
    o = st.ordering("t_grok")
    assert o is not None and o.identified and o.direction == -1 and o.shape == "monotone"
    assert [q.quantity for q in st.orderings] == ["t_grok"]
    no_metric_number(st)
    f = finding(res, R.COMPRESSION_NOT_ASSESSED)
    assert f.severity.value == "info" and f.scope == "input"
    assert f.evidence["per_step_columns"] == ["train_loss"]
    assert f.evidence["fix"] == "--metric COLUMN"
    assert res.exit_code == 0 and not res.failing
    assert R.NOTHING_AUDITABLE not in res.codes and R.DUPLICATE_RUN not in res.codes
    assert not {R.SNAPSHOT_TRANSIENT, R.FLOOR_TOO_FEW_POINTS, R.NO_METRIC_POINTS,
                R.METRIC_MISSING, R.BOUNDARY_NO_COMPRESSION,
                R.COMPRESSION_NOT_ESTABLISHED} & res.codes


def test_the_json_holds_no_metric_number_and_is_strict(tmp_path: Path) -> None:
    res = grokaudit.audit_path(parquet(sweep(), tmp_path))
    text = res.to_json()
    assert text == res._reference_json()  # the runs written from their columns: the same
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    (st,) = doc["studies"]
    assert st["metric"] is None and st["verdict"] is None
    assert st["verdict_evidence"]["compression_assessed"] is False
    assert doc["summary"]["verdicts"] == [{"study": {}, "metric": None, "verdict": None}]
    for r in st["runs"]:
        assert r["t_compress"] is None and r["lag"] is None and r["floor"] is None
        assert r["t_grok"]["value"] == T_GROK[r["cell"]]


def test_a_censored_run_and_a_cell_that_never_grokked(tmp_path: Path) -> None:
    df = pd.concat([sweep({1.0: 3000, 2.0: 1500}),
                    acc_run("wd1.0_late", None, wd=1.0, seed=9),
                    sweep({0.1: None}, seeds=2)], ignore_index=True)
    res = grokaudit.audit_table(df, by="wd")
    st = res.studies[0]
    late = next(r for r in st.runs if r.run == "wd1.0_late")
    assert late.t_grok.censored and late.t_grok.lower == END and late.t_grok.upper is None
    assert finding(res, R.NO_GROK, cell=1.0).runs == ("wd1.0_late",)
    assert finding(res, R.NO_GROK, cell=1.0).scope == "run"
    # the cell that never grokked: gated NO_GROK, a censored median, out of the ordering
    none = st.cell(0.1)
    assert none is not None and none.gates == (R.NO_GROK,) and none.t_grok.censored
    assert R.MEDIAN_CENSORED in none.notes
    assert any(f.code is R.NO_GROK and f.scope == "cell" and f.cell == 0.1 for f in res.findings)
    assert finding(res, R.MEDIAN_CENSORED, cell=0.1).severity.value == "warning"
    # three of four runs of wd=1.0 grokked at 3000: the censored one is above the median
    c1 = st.cell(1.0)
    assert c1 is not None and c1.t_grok.value == 3000 and c1.passes
    assert [c.axis_value for c in st.cells if c.passes] == [1.0, 2.0]
    o = st.ordering("t_grok")
    assert o is not None and not o.identified and o.sub_reason is R.TOO_FEW_CELLS
    assert finding(res, R.ORDERING_UNDEFINED).evidence["quantity"] == "t_grok"
    assert res.exit_code == 0
    no_metric_number(st)


def test_a_grok_not_sustained_is_found_and_dated() -> None:
    df = pd.concat([sweep(), acc_run("wd1.0_fell", 3000, fall_at=4000, wd=1.0, seed=7)],
                   ignore_index=True)
    res = grokaudit.audit_table(df, by="wd")
    fell = next(r for r in res.studies[0].runs if r.run == "wd1.0_fell")
    assert not fell.grok_sustained and fell.grok_fell_at == 4000
    assert not fell.fully_generalized
    assert set(fell.reasons) == {R.GROK_NOT_SUSTAINED, R.NOT_FULLY_GENERALIZED}
    assert finding(res, R.GROK_NOT_SUSTAINED, cell=1.0).runs == ("wd1.0_fell",)
    assert finding(res, R.NOT_FULLY_GENERALIZED, cell=1.0).runs == ("wd1.0_fell",)
    assert res.exit_code == 0  # warnings: nothing critical


def test_a_grok_before_logging_began_is_left_censored() -> None:
    df = pd.concat([sweep(), acc_run("wd2.0_late_log", 1500, start=2000, wd=2.0, seed=5)],
                   ignore_index=True)
    res = grokaudit.audit_table(df, by="wd")
    r = next(r for r in res.studies[0].runs if r.run == "wd2.0_late_log")
    assert r.t_grok.left_censored and (r.t_grok.lower, r.t_grok.upper) == (0, 2000)
    f = finding(res, R.LEFT_CENSORED, cell=2.0)
    assert f.runs == ("wd2.0_late_log",) and f.evidence["first_logged_steps"] == [2000.0]
    assert res.studies[0].cell(2.0).n_left_censored == 1


def test_nothing_grokked_is_nothing_auditable_never_a_pass(tmp_path: Path) -> None:
    res = grokaudit.audit_table(sweep({0.1: None, 1.0: None, 2.0: None}), by="wd")
    f = finding(res, R.NOTHING_AUDITABLE)
    assert f.severity.value == "critical" and f.evidence["accuracy"]["grokked_runs"] == 0
    assert res.exit_code == 1 and res.studies[0].verdict_label == "NOTHING_AUDITABLE"
    assert R.COMPRESSION_NOT_ASSESSED in res.codes


def test_studies_split_by_cell_each_judged_one_compression_finding() -> None:
    a = sweep(arch="mlp")
    b = sweep({0.3: None, 1.0: None, 2.0: None}, arch="tf")
    b["run"] = "tf_" + b["run"]
    res = grokaudit.audit_table(pd.concat([a, b], ignore_index=True), by="wd", cell=["arch"])
    assert [(s.study, s.metric) for s in res.studies] == [({"arch": "mlp"}, None),
                                                         ({"arch": "tf"}, None)]
    assert [f.study for f in res.findings if f.code is R.NOTHING_AUDITABLE] == [{"arch": "tf"}]
    assert sum(f.code is R.COMPRESSION_NOT_ASSESSED for f in res.findings) == 1
    mlp = res.study(arch="mlp").ordering("t_grok")
    assert mlp is not None and mlp.identified and mlp.direction == -1


def test_one_condition_audits_each_run() -> None:
    df = pd.concat([acc_run(f"s{k}", 2000 + 100 * k, seed=k) for k in range(3)])
    res = grokaudit.audit_table(df)
    (st,) = res.studies
    assert st.axis is None and st.orderings == () and st.metric is None
    assert [r.t_grok.value for r in st.runs] == [2000, 2100, 2200]
    assert st.cells[0].t_grok.value == 2100
    assert R.SINGLE_CONDITION in res.codes and res.exit_code == 0
    no_metric_number(st)


def test_a_log_with_a_metric_is_audited_as_before(tmp_path: Path) -> None:
    df = sweep()
    df["emb_erank"] = np.where(df["step"] >= 8000, 10.0, 40.0)
    res = grokaudit.audit_table(df, by="wd")
    assert [s.metric for s in res.studies] == ["emb_erank"]
    assert R.COMPRESSION_NOT_ASSESSED not in res.codes
    assert all(c.floor is not None for c in res.studies[0].cells)
    # a column of the accuracy-only log named as the metric: a metric audit of it
    named = grokaudit.audit_table(sweep(), by="wd", metrics=["train_loss"])
    assert [s.metric for s in named.studies] == ["train_loss"]
    assert R.COMPRESSION_NOT_ASSESSED not in named.codes


def test_streamed_in_parts_gives_the_same_result(tmp_path: Path) -> None:
    p = parquet(sweep(), tmp_path)
    whole = grokaudit.audit_path(p).to_dict()
    parts = audit_stream(p, part_rows=500).to_dict()
    whole.pop("trail")
    parts.pop("trail")
    assert parts == whole


def test_the_text_report_renders(tmp_path: Path) -> None:
    from grokaudit.printing import render

    for res in (grokaudit.audit_table(sweep(), by="wd"),
                grokaudit.audit_table(acc_run("one", 2000))):
        assert render(res).endswith("(exit 0)\n")


# ------------------------------------------------------------------------------------------
# the command line: exit codes
# ------------------------------------------------------------------------------------------

def test_check_exits_0_on_a_clean_grokked_accuracy_only_csv(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    sweep().to_csv(p, index=False)
    code, out, err = cli_run("check", p, "--json", "-")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["exit_code"] == 0 and doc["summary"]["failing_codes"] == []
    assert "COMPRESSION_NOT_ASSESSED" in {f["code"] for f in doc["findings"]}
    cells = doc["studies"][0]["cells"]
    assert [c["t_grok"]["value"] for c in cells] == [T_GROK[c["axis_value"]] for c in cells]


def test_check_exits_1_when_nothing_grokked(tmp_path: Path) -> None:
    p = parquet(sweep({0.3: None, 1.0: None, 2.0: None}), tmp_path)
    code, out, err = cli_run("check", p, "--json", "-")
    assert code == 1, err
    assert json.loads(out)["summary"]["failing_codes"] == ["NOTHING_AUDITABLE"]
    code, out, _ = cli_run("check", p, "--json", "-", "--fail-on", "none")
    assert code == 0 and "NOTHING_AUDITABLE" in {f["code"] for f in json.loads(out)["findings"]}


def test_check_fails_on_an_accuracy_code_when_asked(tmp_path: Path) -> None:
    df = pd.concat([sweep(), acc_run("wd1.0_fell", 3000, fall_at=4000, wd=1.0, seed=7)])
    p = parquet(df, tmp_path)
    assert cli_run("check", p)[0] == 0
    code, out, _ = cli_run("check", p, "--fail-on", "GROK_NOT_SUSTAINED", "--json", "-")
    assert code == 1 and json.loads(out)["summary"]["failing_codes"] == ["GROK_NOT_SUSTAINED"]


def test_a_missing_metric_is_still_refused(tmp_path: Path) -> None:
    code, out, err = cli_run("check", parquet(sweep(), tmp_path), "--metric", "missing_col")
    assert code == 2 and err.rstrip().endswith("[METRIC_NOT_FOUND]") and out == ""
    assert len(err.strip().splitlines()) == 1


def test_the_html_report_refuses_an_accuracy_only_log(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the HTML report needs the [report] extra")
    p = parquet(sweep(), tmp_path)
    for args in (("report", p, "-o", tmp_path / "r.html"),
                 ("check", p, "--report", tmp_path / "c.html")):
        code, _, err = cli_run(*args)
        assert code == 2 and err.rstrip().endswith("[NO_METRIC]")
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "c.html").exists()


def test_no_metric_number_is_nan_in_the_cells() -> None:
    # the t_grok of a cell is a number; nothing else of a metric is, not even NaN
    st = grokaudit.audit_table(sweep(), by="wd").studies[0]
    for c in st.cells:
        assert c.t_grok is not None and not math.isnan(c.t_grok.value)
        assert c.floor is None and c.delta is None


def test_one_passing_cell_is_descriptive_only() -> None:
    res = grokaudit.audit_table(sweep({0.3: None, 1.0: 3000}), by="wd")
    assert R.LOW_POWER_DESCRIPTIVE in res.codes and R.NOTHING_AUDITABLE not in res.codes
    assert res.exit_code == 0


def test_a_wide_log_names_twenty_columns_and_counts_the_rest(tmp_path: Path) -> None:
    # the columns that NO_METRIC named (one short line) are now the finding's evidence
    log = sweep({1.0: 3000, 2.0: 1500}, seeds=1)
    steps = log["step"].to_numpy(dtype=float)[:, None]
    series = pd.DataFrame(steps + np.arange(3000)[None, :],
                          columns=[f"k{j}" for j in range(3000)])  # a series per column
    p = tmp_path / "wide.parquet"
    pd.concat([log, series], axis=1).to_parquet(p)
    code, out, err = cli_run("check", p, "--json", "-")
    assert code == 0, err
    f = next(f for f in json.loads(out)["findings"] if f["code"] == "COMPRESSION_NOT_ASSESSED")
    assert len(f["evidence"]["per_step_columns"]) == 20
    assert f["evidence"]["n_per_step_columns"] == 3001  # the k columns and train_loss
    assert len(f["message"]) < 2000
