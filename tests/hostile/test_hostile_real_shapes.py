"""The hostile review of the readers of real-world shapes (issue 18), one test per finding:
what a misread would have said, and what the reader now says instead. Files are written with
``json`` and ``csv`` as the loggers write them; assertions are on exit codes, reason codes and
what was read, never on message text."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli


def curve(n: int = 60, grok: int = 30, every: int = 100, pct: bool = False,
          seed: int = 0) -> list[dict[str, float]]:
    rows = []
    for i in range(n):
        tr = min(1.0, 0.1 + i * 0.1)
        te = 0.05 if i < grok else min(1.0, 0.05 + (i - grok) * 0.2)
        if pct:
            tr, te = tr * 100, te * 100
        er = 20.0 - (10.0 if i >= grok - 5 else i * 0.05) + 0.01 * seed
        rows.append({"step": i * every, "train_acc": round(tr, 4), "test_acc": round(te, 4),
                     "train_loss": round(2.0 / (i + 1), 4), "emb_erank": round(er, 4)})
    return rows


def jsonl(p: Path, recs: list[dict[str, Any]]) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def csvw(p: Path, rows: list[dict[str, Any]]) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return p


def run(*args: Any) -> tuple[int, Any, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    doc = json.loads(r.stdout) if "-" in map(str, args) and r.exit_code in (0, 1) else None
    return r.exit_code, doc, r.stderr


def check(*args: Any) -> Any:
    code, doc, err = run("check", *args, "--json", "-")
    assert code in (0, 1) and doc is not None, err
    return doc


def inspect(*args: Any) -> Any:
    code, doc, err = run("inspect", *args, "--json", "-")
    assert code == 0 and doc is not None, err
    return doc


def refused(*args: Any) -> str:
    code, _, err = run("check", *args)
    assert code == 2 and "internal error" not in err, err
    return err.rstrip().rsplit("[", 1)[1].rstrip("]")


def chosen(doc: Any, target: str = "test_acc") -> str | None:
    hits = [f["evidence"]["column"] for f in doc["findings"]
            if f["code"] == "ACCURACY_COLUMN_CHOSEN" and f["evidence"]["target"] == target]
    return hits[0] if hits else None


# -- which column is the test accuracy --------------------------------------------------------

def test_nested_train_accuracy_is_never_the_test_accuracy(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "r.jsonl", [{"step": r["step"], "train": {"acc": r["train_acc"]},
                                      "val": {"acc": r["test_acc"]}, "emb_erank": r["emb_erank"]}
                                     for r in curve()])
    doc = check(p)
    assert chosen(doc) == "val.acc" and chosen(doc, "train_acc") == "train.acc"


def test_keras_training_accuracy_never_beats_a_sparse_validation_accuracy(tmp_path: Path) -> None:
    rows = curve()
    p = csvw(tmp_path / "log.csv", [{"epoch": i, "accuracy": r["train_acc"], "loss": 1.0,
                                     "val_accuracy": r["test_acc"] if i % 5 == 4 else "NA",
                                     "emb_erank": r["emb_erank"]} for i, r in enumerate(rows)])
    assert chosen(check(p)) == "val_accuracy"  # Keras' NA cells are missing values


def test_train_and_test_lists_of_records_keep_their_names(tmp_path: Path) -> None:
    rows = curve()
    p = tmp_path / "h.json"
    p.write_text(json.dumps({"train": [{"step": r["step"], "accuracy": r["train_acc"],
                                        "emb_erank": r["emb_erank"]} for r in rows],
                             "test": [{"step": r["step"], "accuracy": r["test_acc"]}
                                      for r in rows[::5]]}))
    doc = check(p, "--metric", "train.emb_erank")
    assert chosen(doc) == "test.accuracy" and chosen(doc, "train_acc") == "train.accuracy"
    assert "RESUMED_DUPLICATES" not in {f["code"] for f in doc["findings"]}


def test_candidates_nothing_tells_apart_are_refused(tmp_path: Path) -> None:
    rows = curve()
    p = jsonl(tmp_path / "r.jsonl", [{"step": r["step"], "eval_a_accuracy": r["test_acc"],
                                      "eval_b_accuracy": r["test_acc"],
                                      "emb_erank": r["emb_erank"]} for r in rows])
    assert refused(p) == "MISSING_COLUMN"


# -- conditions: whose they are, and which are settings ---------------------------------------

def test_records_that_name_their_run_give_values_to_that_run(tmp_path: Path) -> None:
    recs: list[dict[str, Any]] = [{"run": k, "config": {"wd": wd}}
                                  for k, wd in (("a", 0.1), ("b", 0.1), ("c", 1.0), ("d", 1.0))]
    for k, g in (("a", 20), ("b", 22), ("c", 35), ("d", 37)):
        recs += [dict(x, run=k) for x in curve(grok=g)]
    doc = check(jsonl(tmp_path / "m.jsonl", recs))
    cells = {c["axis_value"]: sorted(c["runs"]) for c in doc["studies"][0]["cells"]}
    assert cells == {0.1: ["a", "b"], 1.0: ["c", "d"]}


@pytest.mark.parametrize("layout", ["final_lr_in_meta", "args_beside_optimizer", "config_at_tail",
                                    "config_at_step_0"])
def test_settings_are_never_pooled_as_outcomes(tmp_path: Path, layout: str) -> None:
    """Six runs, three values of a setting: read as a condition the audit is along (never
    SINGLE_CONDITION, which would pool different settings as replicates)."""
    for k, (v, g) in enumerate([(0.1, 20), (0.1, 22), (1.0, 35), (1.0, 37), (10.0, 50),
                                (10.0, 52)]):
        rows = curve(grok=g, seed=k)
        if layout == "final_lr_in_meta":
            jsonl(tmp_path / f"r{k}.jsonl", [{"_meta": {"final_lr": v, "seed": k % 2}}, *rows])
        elif layout == "args_beside_optimizer":
            jsonl(tmp_path / f"r{k}" / "metrics.jsonl", rows)
            (tmp_path / f"r{k}" / "config.json").write_text(
                json.dumps({"args": {"seed": k % 2}, "optimizer": {"wd": v}}))
        elif layout == "config_at_tail":
            jsonl(tmp_path / f"r{k}.jsonl", [*rows, {"config": {"wd": v}}])
        else:
            jsonl(tmp_path / f"r{k}.jsonl", [{"step": 0, "config": {"wd": v}}, *rows[1:]])
    doc = check(tmp_path)
    (study,) = doc["studies"]
    assert study["axis"] is not None and len(study["cells"]) == 3


def test_a_per_run_unique_setting_still_refuses_mixed_cells(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = []
    for k, (wd, lr, g) in enumerate([(0.1, 1e-3, 15), (0.1, 3e-3, 40), (1.0, 1e-2, 20),
                                     (1.0, 3e-2, 45), (10.0, 0.1, 25), (10.0, 0.3, 50)]):
        rows += [dict(r, run=f"r{k}", wd=wd, lr=lr) for r in curve(grok=g, seed=k)]
    p = csvw(tmp_path / "s.csv", rows)
    code, _, err = run("check", p, "--by", "wd")
    assert code == 2 and err.rstrip().endswith("[DUPLICATE_AXIS_VALUES]")
    assert "--cell lr" not in err  # never proposed: one run per cell is no cell


def test_a_value_set_twice_by_records_without_a_step_is_refused(tmp_path: Path) -> None:
    recs: list[dict[str, Any]] = [{"_meta": {"wd": 0.1}}, *curve()[:30], {"_meta": {"wd": 1.0}},
                                  *curve()[30:]]
    assert refused(jsonl(tmp_path / "r.jsonl", recs)) == "NOT_CONSTANT_IN_RUN"


def test_an_outcome_that_repeats_across_runs_is_named_when_runs_are_pooled(tmp_path: Path) -> None:
    for k, v in enumerate([0.1, 0.1, 1.0, 1.0]):
        jsonl(tmp_path / f"r{k}.jsonl", [*curve(grok=20 + 10 * k), {"_summary": {"best_acc": v}}])
    doc = check(tmp_path)
    f = next(f for f in doc["findings"] if f["code"] == "SINGLE_CONDITION")
    assert f["severity"] == "warning" and f["evidence"]["varying_outcomes"] == ["best_acc"]


# -- percent, once over every input; --acc-scale honoured -------------------------------------

def test_percent_is_decided_once_over_every_input(tmp_path: Path) -> None:
    good, bad = curve(pct=True), curve(pct=True)
    for i, r in enumerate(bad):
        r["test_acc"] = round(0.3 + 0.7 * i / 59, 4)  # a failed run: 0.3 .. 1.0 %
    for r in good + bad:
        del r["train_acc"]
    a = csvw(tmp_path / "a" / "good.csv", good)
    b = csvw(tmp_path / "b" / "bad.csv", bad)
    doc = check(a, b)
    runs = {r["run"]: r for r in doc["studies"][0]["runs"]}
    assert runs["bad"]["t_grok"]["censored"]  # read as percent: it never grokked


def test_acc_scale_is_honoured_for_files_read_by_the_adapters(tmp_path: Path) -> None:
    p = csvw(tmp_path / "p.csv", curve(pct=True))
    assert refused(p, "--acc-scale", "1") == "ACCURACY_OUT_OF_RANGE"
    doc = check(p, "--acc-scale", "100")
    assert {f["evidence"]["why"] for f in doc["findings"]
            if f["code"] == "ACCURACY_IN_PERCENT"} == {"option"}


def test_acc_scale_per_column(tmp_path: Path) -> None:
    rows = curve(pct=True)
    for r in rows:
        r["train_acc"] = r["train_acc"] / 100  # train as a fraction, test in percent
    p = csvw(tmp_path / "m.csv", rows)
    auto = check(p)
    sib = [f for f in auto["findings"] if f["code"] == "ACCURACY_IN_PERCENT"
           and f["evidence"]["column"] == "train_acc"]
    assert sib and sib[0]["evidence"]["why"] == "like_sibling"
    doc = check(p, "--acc-scale", "test_acc=100,train_acc=1")
    cols = {f["evidence"]["column"] for f in doc["findings"] if f["code"] == "ACCURACY_IN_PERCENT"}
    assert cols == {"test_acc"}
    assert "NO_MEMORIZATION" not in {f["code"] for f in doc["findings"]}


# -- run ids ----------------------------------------------------------------------------------

def test_files_with_one_stem_are_two_runs(tmp_path: Path) -> None:
    csvw(tmp_path / "f" / "a.csv", curve(grok=20))
    jsonl(tmp_path / "f" / "a.jsonl", curve(grok=50, seed=3))
    assert inspect(tmp_path / "f")["runs"]["n"] == 2
    r1 = csvw(tmp_path / "r1" / "metrics.csv", curve(grok=20))
    r3 = csvw(tmp_path / "r3" / "metrics.csv", curve(grok=45))
    ins = inspect(r1, r3)
    assert ins["runs"]["ids"] == ["r1/metrics", "r3/metrics"]


def test_a_run_id_column_is_never_a_metric(tmp_path: Path) -> None:
    rows = [dict(r, run_id=1 + (i >= 30)) for i, r in enumerate(curve())]
    assert refused(csvw(tmp_path / "x.csv", rows)) == "MISSING_COLUMN"


def test_a_run_that_never_logged_the_accuracy_is_set_aside(tmp_path: Path) -> None:
    acc = csvw(tmp_path / "acc.csv", [{k: r[k] for k in ("step", "test_acc", "train_acc")}
                                      for r in curve()])
    erank = csvw(tmp_path / "erank.csv", [{k: r[k] for k in ("step", "emb_erank")}
                                          for r in curve()])
    doc = check(acc, erank, "--metric", "emb_erank")
    f = next(f for f in doc["findings"] if f["code"] == "RUN_WITHOUT_ACCURACY")
    assert f["runs"] == ["erank"]
    assert all(r["run"] != "erank" for s in doc["studies"] for r in s["runs"])


# -- dict of lists ------------------------------------------------------------------------------

def test_a_step_like_setting_is_no_cadence(tmp_path: Path) -> None:
    rows = curve()
    d: dict[str, Any] = {k: [r[k] for r in rows] for k in rows[0]}
    d["decay_steps"] = [1000, 2000, 3000]
    p = tmp_path / "d.json"
    p.write_text(json.dumps(d))
    doc = check(p)
    assert doc["input"]["missing_values"]["test_acc"] == 0
    assert "RESUMED_DUPLICATES" not in {f["code"] for f in doc["findings"]}


def test_two_step_lists_of_one_length_are_paired_by_name_or_refused(tmp_path: Path) -> None:
    rows = curve()
    d = {"train_steps": [10 * i for i in range(60)], "train_acc": [r["train_acc"] for r in rows],
         "eval_steps": [100 * i for i in range(60)], "eval_acc": [r["test_acc"] for r in rows],
         "eval_erank": [r["emb_erank"] for r in rows]}
    p = tmp_path / "two.json"
    p.write_text(json.dumps(d))
    doc = check(p, "--metric", "eval_erank")
    (r,) = doc["studies"][0]["runs"]
    first = next(i for i, a in enumerate(d["train_acc"]) if a >= 0.99)
    assert r["t_mem"]["value"] == d["train_steps"][first]  # train_acc on its own steps
    d["test_acc"] = d.pop("eval_acc")  # no name ties it to either step list
    p.write_text(json.dumps(d))
    assert refused(p) == "MISSING_COLUMN"


# -- ceilings --------------------------------------------------------------------------------

def test_a_ceiling_is_read_only_from_a_settled_curve(tmp_path: Path) -> None:
    for k in range(4):
        rows = [{"step": i * 100, "test_acc": 0.05 + (0.55 + 0.05 * k) * i / 59,
                 "train_acc": 1.0, "emb_erank": 20.0 - i * 0.1} for i in range(60)]
        csvw(tmp_path / f"r{k}.csv", rows)
    doc = check(tmp_path, "--grok-relative", "study")
    f = next(f for f in doc["findings"] if f["code"] == "ACCURACY_CEILING")
    assert f["evidence"].get("unsettled") is True
    assert all(r["t_grok"]["censored"] for r in doc["studies"][0]["runs"])


# -- crashes and refusals ---------------------------------------------------------------------

@pytest.mark.parametrize("content, code", [
    ('{"_meta": ' * 5000 + "1" + "}" * 5000 + "\n", "FILE_UNREADABLE"),
    ('{"_meta": {"opt.wd": 0.1, "opt": {"wd": 0.2}}}\n{"step": 0, "test_acc": 0.1}\n',
     "DUPLICATE_COLUMN"),
    ('{"step": 0, "test_acc": 0.9, "test_acc": 0.0}\n', "DUPLICATE_COLUMN"),
    ("null\n", "FILE_UNREADABLE"),
])
def test_malformed_json_lines_are_one_line_errors(tmp_path: Path, content: str, code: str) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text(content)
    assert refused(p) == code
    c, _, err = run("inspect", p)
    assert c == 2 and "internal error" not in err


@pytest.mark.parametrize("content", ["run,step,test_acc,test_acc\na,0,0.1,0.1\n",
                                     "run,step,test_acc\na,abc,0.1\n",
                                     "run,step,test_acc\na,1e30,0.1\na,0,0.2\na,5,0.3\n"])
def test_inspect_describes_logs_check_refuses(tmp_path: Path, content: str) -> None:
    p = tmp_path / "x.csv"
    p.write_text(content)
    assert refused(p)
    ins = inspect(p)
    assert ins["refused"] is not None and ins["step"].get("first") is None


def test_a_log_beside_an_unreadable_config_file_still_reads(tmp_path: Path) -> None:
    p = csvw(tmp_path / "run.csv", curve())
    (tmp_path / "run.json").write_text(json.dumps([{"step": 0}]))  # a log of its own
    (tmp_path / "config.json").write_text("{not json")
    (tmp_path / "sweep.yaml").write_text("program: train.py\ndescription: >\n  a sweep\n")
    doc = check(p)
    assert doc["input"]["runs_kept"] == 1


def test_outputs_never_overwrite_the_config_files_a_log_is_read_with(tmp_path: Path) -> None:
    p = csvw(tmp_path / "run.csv", curve())
    (tmp_path / "run.json").write_text(json.dumps({"wd": 0.1}))
    (tmp_path / "hparams.yaml").write_text("lr: 0.001\n")
    for out in ("run.json", "hparams.yaml"):
        code, _, err = run("check", p, "--json", tmp_path / out)
        assert code == 2 and err.rstrip().endswith("[OUTPUT_IS_INPUT]")
    assert json.loads((tmp_path / "run.json").read_text()) == {"wd": 0.1}


def test_an_infinite_accuracy_is_refused_with_or_without_a_run_column(tmp_path: Path) -> None:
    rows = curve()
    rows[5]["test_acc"] = float("inf")
    assert refused(csvw(tmp_path / "a.csv", rows)) == "INFINITE_VALUE"
    assert refused(csvw(tmp_path / "b.csv", [dict(r, run="x") for r in rows])) \
        == "INFINITE_VALUE"


def test_a_summary_record_after_canonical_records_is_set_aside(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "c.jsonl", [dict(r, run="a") for r in curve()]
              + [{"_summary": {"first_grok_step": 3000}}])
    doc = check(p)
    assert doc["input"]["provenance"]["set_aside"] == {"record_without_step": 1}


def test_inspect_offers_as_an_axis_only_a_condition_every_run_has(tmp_path: Path) -> None:
    """``inspect`` offered ``--by schema_version`` (2 values: one and missing) for a column
    some runs lack, which ``check --by`` then refuses (CONDITION_MISSING); ``--cell`` takes a
    missing value (those runs are a study of their own)."""
    rows = []
    for r, (wd, ver) in enumerate([(0.1, 1), (0.1, None), (1.0, 1), (1.0, None)]):
        for s in range(0, 400, 10):
            rows.append({"run": f"r{r}", "step": s, "test_acc": 0.99 if s > 100 else 0.1,
                         "emb_erank": 40.0 if s < 200 else 5.0, "wd": wd,
                         "schema_version": ver})
    p = tmp_path / "log.parquet"
    pd.DataFrame(rows).to_parquet(p, index=False)
    flags = [f["flag"] for f in inspect(p)["flags"]]
    assert "--cell schema_version" in flags and "--by schema_version" not in flags, flags
    assert refused(p, "--by", "schema_version") == "CONDITION_MISSING"


# ---- round 9: MMEngine/mmcv/detectron2 JSON lines, Sacred, run ids ------------------------

def _sacred(d: Path, series: dict[str, Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(series))
    return d / "metrics.json"


@pytest.mark.parametrize(("steps", "code"), [
    ([0, 1, 2 ** 70], "STEP_OUT_OF_RANGE"),  # an int no float64 step holds
    ([0, 1, 1e30], "STEP_OUT_OF_RANGE"),
    ([0, None, 2], "NON_INTEGER_STEP"),
    ([0, "1", 2], "NON_INTEGER_STEP"),
    ([0, 1.5, 2], "NON_INTEGER_STEP"),
    ([0, 0, 2], "DUPLICATE_ROWS"),  # one step twice, two values
])
def test_a_sacred_step_no_axis_holds_is_one_line(tmp_path: Path, steps: list[Any],
                                                 code: str) -> None:
    from helpers.hostile import cli, expect_error

    p = _sacred(tmp_path / "1", {"test.accuracy": {"steps": steps, "values": [0.1, 0.5, 0.9]}})
    expect_error(cli(["check", p]), code)


def test_outputs_pointed_at_a_sacred_or_json_lines_log_leave_it_whole(tmp_path: Path) -> None:
    from helpers.hostile import assert_unchanged, cli, expect_error, snapshot

    sac = _sacred(tmp_path / "1", {"test.accuracy": {"steps": list(range(20)),
                                                     "values": [i / 20 for i in range(20)]}})
    lines = jsonl(tmp_path / "scalars.json", curve())
    before = snapshot(tmp_path)
    for p in (sac, lines):
        expect_error(cli(["convert", p, "-o", p]), "OUTPUT_IS_INPUT")
        expect_error(cli(["check", p, "--json", p]), "OUTPUT_IS_INPUT")
    assert_unchanged(before, tmp_path)


def test_a_mmengine_log_with_epoch_stepped_validation_is_refused_in_one_line(
        tmp_path: Path) -> None:
    from helpers.hostile import cli, expect_error

    recs: list[dict[str, Any]] = []
    for e in range(1, 13):
        recs += [{"loss": 1.0 / i, "epoch": e, "iter": i, "step": i}
                 for i in range((e - 1) * 7 + 1, e * 7 + 1) if i % 5 == 0]
        recs.append({"accuracy/top1": 95.0 if e >= 6 else 10.0 * e, "step": e})
    p = jsonl(tmp_path / "scalars.json", recs)
    expect_error(cli(["check", p]), "STEP_UNITS_MIXED")
    expect_error(cli(["inspect", p]), "STEP_UNITS_MIXED")


def test_a_numeric_run_id_is_named_before_a_changing_status(tmp_path: Path) -> None:
    from helpers.hostile import cli, expect_error

    rows = [{"status": "ok" if i % 2 else "retry", "step": i, "test_acc": i / 10,
             "trial_id": i // 5} for i in range(10)]
    # the status column comes first in the file; the run ids are what to fix first
    expect_error(cli(["check", csvw(tmp_path / "log.csv", rows)]), "MISSING_COLUMN")
