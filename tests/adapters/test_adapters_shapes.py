"""The shapes people publish, read as they expect, by every command alike (issue 18).

Each file is written by the writer its shape comes from (``json``, ``csv``, pyarrow); every
test asserts what was read — runs, rows, conditions, outcomes, reason codes — not message
text.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli

STEPS = list(range(0, 6000, 50))


def curve(step: int, t_grok: float) -> dict[str, float]:
    acc = 1.0 / (1.0 + np.exp(-(step - t_grok) / 80.0))
    rank = 10.0 + 20.0 / (1.0 + np.exp((step - t_grok - 1200.0) / 200.0))
    return {"test_acc": float(acc), "train_acc": float(min(1.0, step / 300.0)),
            "emb_erank": float(rank)}


def invoke(*args: Any) -> tuple[int, dict[str, Any] | None, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    doc = None
    if "-" in [str(a) for a in args] and r.exit_code in (0, 1):
        doc = json.loads(r.stdout)
    return r.exit_code, doc, r.stderr


def check(*args: Any) -> dict[str, Any]:
    code, doc, err = invoke("check", *args, "--json", "-")
    assert code in (0, 1) and doc is not None, err
    return doc


def error_code(*args: Any) -> str:
    code, _, err = invoke("check", *args)
    assert code == 2, err
    return err.rstrip().rsplit("[", 1)[1].rstrip("]")


def codes(doc: dict[str, Any]) -> set[str]:
    return {f["code"] for f in doc["findings"]}


def one(doc: dict[str, Any], code: str) -> dict[str, Any]:
    (f,) = [f for f in doc["findings"] if f["code"] == code]
    return f


# -- JSON lines with a config record first and a summary record last -----------------------

def write_jsonl_run(path: Path, wd: float, seed: int, *, head: bool = True,
                    tail: bool = True) -> None:
    t_grok = 2000.0 / wd
    with path.open("w") as fh:
        if head:
            fh.write(json.dumps({"_meta": {"wd": wd, "seed": seed, "optimizer": "adamw"}}) + "\n")
        for s in STEPS:
            fh.write(json.dumps({"step": s, **curve(s, t_grok)}) + "\n")
        if tail:
            fh.write(json.dumps({"_summary": {"first_grok_step": int(t_grok) + seed,
                                              "final_test_acc": 1.0 - 0.001 * seed}}) + "\n")


def test_jsonl_config_and_summary_records(tmp_path: Path) -> None:
    for wd in (1.0, 2.0, 4.0):
        for seed in (0, 1, 2):
            write_jsonl_run(tmp_path / f"r_wd{wd}_s{seed}.jsonl", wd, seed)
    doc = check(tmp_path)
    assert doc["input"]["runs_kept"] == 9
    assert doc["input"]["rows_read"] == 9 * len(STEPS)
    assert {"wd", "seed", "optimizer"} <= set(doc["input"]["conditions"])
    # the summary's values differ in every run: outcomes, never a cell or a refusal
    assert {"first_grok_step", "final_test_acc"} <= set(doc["input"]["outcomes"])
    assert doc["config"]["axis"] == "wd"
    assert one(doc, "RECORDS_SET_ASIDE")["evidence"] == {"record_without_step": 18}
    code, ins, _ = invoke("inspect", tmp_path, "--json", "-")
    assert code == 0 and ins is not None
    roles = {c["name"]: c["role"] for c in ins["columns"]}
    assert roles["first_grok_step"] == "outcome" and roles["wd"] == "condition"
    assert roles["seed"] == "seed"
    assert not any("first_grok_step" in f["flag"] for f in ins["flags"])


def test_a_record_without_a_step_between_step_records_is_refused_naming_its_line(
        tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    write_jsonl_run(p, 1.0, 0)
    lines = p.read_text().splitlines()
    lines.insert(5, json.dumps({"test_acc": 0.5}))
    p.write_text("\n".join(lines) + "\n")
    code, _, err = invoke("check", p)
    assert code == 2 and err.rstrip().endswith("[MISSING_VALUES]") and "line 6" in err


def test_a_bare_null_line_is_refused_not_a_crash(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text("null\n")
    assert error_code(p) == "FILE_UNREADABLE"


# -- a JSON file of lists ---------------------------------------------------------------------

def write_dict_of_lists(path: Path, wd: float, seed: int) -> None:
    t_grok = 2000.0 / wd
    rows = [curve(s, t_grok) for s in STEPS]
    doc = {"steps": STEPS, "test_acc": [r["test_acc"] for r in rows],
           "train_acc": [r["train_acc"] for r in rows],
           "emb_erank": [r["emb_erank"] for r in rows], "seed": 1000 + seed, "wd": wd,
           "first_grok_step": int(t_grok) + 7 * seed, "final_test_acc": 1.0 - 0.01 * seed,
           "grokking_summary": {"delay": 100 + seed, "grokked": True}}
    path.write_text(json.dumps(doc))


def test_dict_of_lists_with_nested_summary(tmp_path: Path) -> None:
    for wd in (1.0, 2.0):
        for seed in (0, 1, 2):
            write_dict_of_lists(tmp_path / f"wd{wd}_s{seed}.json", wd, seed)
    doc = check(tmp_path)
    assert doc["input"]["rows_read"] == 6 * len(STEPS)
    assert doc["config"]["axis"] == "wd"
    out = set(doc["input"]["outcomes"])
    assert {"first_grok_step", "final_test_acc", "delay", "grokked"} <= out


def test_steps_key_and_map_to_step(tmp_path: Path) -> None:
    p = tmp_path / "run.json"
    write_dict_of_lists(p, 2.0, 0)
    doc = json.loads(p.read_text())
    doc["iteration_count"] = doc.pop("steps")
    p.write_text(json.dumps(doc))
    code, _, err = invoke("check", p)
    assert code == 2 and err.rstrip().endswith("[MISSING_COLUMN]")
    assert "--map iteration_count=step" in err  # the likely step column, named
    doc2 = check(p, "--map", "iteration_count=step")
    assert doc2["input"]["rows_read"] == len(STEPS)


@pytest.mark.parametrize("name", ["iteration", "iter", "global_step", "trainer/global_step",
                                  "steps", "_step"])
def test_step_names_loggers_use(tmp_path: Path, name: str) -> None:
    p = tmp_path / "m.csv"
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[name, "test_acc", "train_acc", "emb_erank"])
        w.writeheader()
        for s in STEPS:
            w.writerow({name: s, **curve(s, 1500.0)})
    doc = check(p)
    assert doc["input"]["rows_read"] == len(STEPS)
    assert doc["input"]["provenance"]["step_column"] == name


# -- Lightning: split rows, percent, a column logged once ------------------------------------

def write_lightning(path: Path, *, val_max: float = 100.0) -> None:
    """Lightning CSVLogger's layout: train rows and validation rows of a step apart, the
    epoch on both, accuracies in percent; ``train_accuracy`` logged once, at step 0."""
    fields = ["epoch", "step", "train_loss", "full_train_acc", "train_accuracy",
              "val_accuracy", "val_loss"]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerow({"epoch": 0, "step": 0, "train_accuracy": 0.0})
        for k, s in enumerate(STEPS[1:]):
            c = curve(s, 1500.0)
            w.writerow({"epoch": k, "step": s, "train_loss": 1.0 / (1 + s),
                        "full_train_acc": 100 * c["train_acc"]})
            w.writerow({"epoch": k, "step": s, "val_accuracy": val_max * c["test_acc"],
                        "val_loss": 2.0 / (1 + s)})


def test_lightning_csv(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    write_lightning(p)
    doc = check(p, "--metric", "val_loss")
    assert doc["input"]["rows_read"] == len(STEPS)  # one row per step: the two halves joined
    assert "RESUMED_DUPLICATES" not in codes(doc)
    chosen = {f["evidence"]["target"]: f["evidence"]["column"] for f in doc["findings"]
              if f["code"] == "ACCURACY_COLUMN_CHOSEN"}
    assert chosen == {"test_acc": "val_accuracy", "train_acc": "full_train_acc"}
    pct = {f["evidence"]["column"]: f["evidence"]["why"] for f in doc["findings"]
           if f["code"] == "ACCURACY_IN_PERCENT"}
    assert pct == {"test_acc": "percent", "train_acc": "percent"}
    (r,) = doc["studies"][0]["runs"]
    assert not r["t_grok"]["censored"]


def test_percent_column_below_one_beside_a_percent_column(tmp_path: Path) -> None:
    """val_accuracy never passes 1.04 (%): beside full_train_acc reaching 100, it is percent
    too (like_sibling, a warning), so the run never grokked — never a fraction that did."""
    p = tmp_path / "metrics.csv"
    write_lightning(p, val_max=1.04)
    doc = check(p, "--metric", "val_loss")
    f = [f for f in doc["findings"] if f["code"] == "ACCURACY_IN_PERCENT"
         and f["evidence"]["column"] == "test_acc"][0]
    assert f["evidence"]["why"] == "like_sibling" and f["severity"] == "warning"
    (r,) = doc["studies"][0]["runs"]
    assert r["t_grok"]["censored"]


def test_percent_rule_is_the_same_in_check_convert_and_inspect(tmp_path: Path) -> None:
    src = tmp_path / "in" / "metrics.csv"
    src.parent.mkdir()
    write_lightning(src)
    out = tmp_path / "c.parquet"
    code, _, err = invoke("convert", src, "-o", out)
    assert code == 0, err
    acc = pq.read_table(out).column("test_acc").to_numpy()
    assert np.nanmax(acc) > 1.5  # written as logged: the audit decides, once
    a, b = check(src, "--metric", "val_loss"), check(out, "--metric", "val_loss")
    assert [s["cells"] for s in a["studies"]] == [s["cells"] for s in b["studies"]]
    code, ins, _ = invoke("inspect", src, "--json", "-")
    assert code == 0 and ins is not None and ins["percent"]["test_acc"]["why"] == "percent"


# -- columns some files never had; one run ----------------------------------------------------

def test_columns_a_file_never_had_are_not_missing_values(tmp_path: Path) -> None:
    for k in range(3):
        with (tmp_path / f"wd{k + 1}.csv").open("w", newline="") as fh:
            fields = ["step", "test_acc", "train_acc", "emb_erank"] + (["grad_norm"] if k else [])
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            for s in STEPS:
                w.writerow({"step": s, **curve(s, 1000.0 * (k + 1)),
                            **({"grad_norm": 1.0 + s} if k else {})})
    doc = check(tmp_path, "--cond", "wd=wd([0-9]+)")
    assert doc["input"]["missing_values"].get("grad_norm", 0) == 0
    assert one(doc, "NOT_LOGGED_BY_EVERY_RUN")["evidence"] == {"grad_norm": 1}


def test_one_run_is_an_audit_in_every_command(tmp_path: Path) -> None:
    p = tmp_path / "my_run.csv"
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["step", "test_acc", "train_acc", "emb_erank"])
        w.writeheader()
        for s in STEPS:
            w.writerow({"step": s, **curve(s, 1500.0)})
    doc = check(p)
    (study,) = doc["studies"]
    assert study["axis"] is None and [r["run"] for r in study["runs"]] == ["my_run"]
    assert "SINGLE_CONDITION" in codes(doc) and "SNAPSHOT_TRANSIENT" in codes(doc)
    code, _, err = invoke("convert", p, "-o", tmp_path / "o.parquet")
    assert code == 0, err
    assert pq.read_table(tmp_path / "o.parquet").column("run").unique().to_pylist() == ["my_run"]
    code, ins, _ = invoke("inspect", p, "--json", "-")
    assert code == 0 and ins is not None and ins["runs"]["ids"] == ["my_run"]


def test_a_file_that_lost_its_run_column_is_refused_not_mixed(tmp_path: Path) -> None:
    rows = [{"step": s, **curve(s, t)} for t in (1000.0, 2000.0, 3000.0) for s in STEPS]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "x.parquet")
    assert error_code(tmp_path / "x.parquet") == "MISSING_COLUMN"


# -- folders classified by all their files --------------------------------------------------

def test_a_chart_export_among_tables_is_refused_naming_both(tmp_path: Path) -> None:
    with (tmp_path / "run.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["step", "test_acc", "emb_erank"])
        w.writeheader()
        for s in STEPS:
            c = curve(s, 1000.0)
            w.writerow({"step": s, "test_acc": c["test_acc"], "emb_erank": c["emb_erank"]})
    with (tmp_path / "chart.csv").open("w", newline="") as fh:
        w2 = csv.writer(fh, quoting=csv.QUOTE_ALL)
        w2.writerow(["Step", "r1 - test/acc", "r1 - test/acc__MIN", "r1 - test/acc__MAX"])
        w2.writerow([0, 0.1, 0.1, 0.1])
    code, _, err = invoke("check", tmp_path)
    assert code == 2 and err.rstrip().endswith("[FORMAT_MISMATCH]")
    assert "chart.csv" in err and "run.csv" in err


# -- config files beside a log ------------------------------------------------------------------

def write_csv_run(path: Path, t_grok: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["step", "test_acc", "train_acc", "emb_erank"])
        w.writeheader()
        for s in STEPS:
            w.writerow({"step": s, **curve(s, t_grok)})


def test_hparams_yaml_beside_each_log(tmp_path: Path) -> None:
    """Lightning's hparams.yaml: plain mappings read (nested by indentation), lists and tags
    skipped with a note, never guessed; the nearest file wins."""
    (tmp_path / "hparams.yaml").write_text("p: 97\nlr: 0.001\n")
    for wd in (1.0, 2.0):
        d = tmp_path / f"version_{int(wd)}"
        write_csv_run(d / "metrics.csv", 2000.0 / wd)
        (d / "hparams.yaml").write_text(
            f"weight_decay: {wd}\nlr: 0.003\nmodel:\n  width: 128\n  act: relu\n"
            "betas:\n- 0.9\n- 0.98\nopt: !!python/object:torch.optim.AdamW {}\n")
    doc = check(tmp_path)
    assert doc["config"]["axis"] == "weight_decay"
    assert {"p", "lr", "width", "act"} <= set(doc["input"]["conditions"])
    assert "opt" not in doc["input"]["conditions"] and "betas" not in doc["input"]["conditions"]
    cells = doc["studies"][0]["cells"]
    assert [c["axis_value"] for c in cells] == [1.0, 2.0]
    code, ins, _ = invoke("inspect", tmp_path, "--json", "-")
    assert code == 0 and ins is not None
    assert len(ins["config_files"]) == 3
    examples = {c["name"]: c["example"] for c in ins["columns"]}
    assert examples["lr"] == 0.003  # the nearer file wins over the folder's
    assert any("opt" in n for n in ins["notes"])


def test_a_config_file_without_a_log_is_named_not_read(tmp_path: Path) -> None:
    write_csv_run(tmp_path / "a" / "metrics.csv", 1000.0)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text(json.dumps({"wd": 3.0}))
    code, ins, _ = invoke("inspect", tmp_path, "--json", "-")
    assert code == 0 and ins is not None
    assert any("config file" in n and "config.json" in n for n in ins["notes"])
    assert "wd" not in {c["name"] for c in ins["columns"]}


def test_a_file_with_a_header_and_no_rows_is_left_out_of_a_folder(tmp_path: Path) -> None:
    for k in (1, 2):
        write_csv_run(tmp_path / f"run{k}.csv", 1000.0 * k)
    (tmp_path / "run3.csv").write_text("step,test_acc,train_acc,emb_erank\n")
    code, ins, _ = invoke("inspect", tmp_path, "--json", "-")
    assert code == 0 and ins is not None
    assert ins["runs"]["ids"] == ["run1", "run2"]
    assert any("run3.csv" in n for n in ins["notes"])
    code, _, err = invoke("check", tmp_path / "run3.csv")
    assert code == 2 and err.rstrip().endswith("[NO_ROWS]")


def test_inspect_names_the_runs_the_audit_sets_aside(tmp_path: Path) -> None:
    """A run that never logged test_acc is set aside by the audit (check: RUN_WITHOUT_ACCURACY);
    inspect said `set_aside: {}` and counted the runs kept without a word of it."""
    rows = []
    for run in ("a", "b", "c"):
        for step in range(0, 1000, 100):
            rows.append({"run": run, "step": step, "train_acc": 0.5,
                         "test_acc": "" if run == "b" else 0.1 + step / 2000})
    path = tmp_path / "log.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["run", "step", "train_acc", "test_acc"])
        w.writeheader()
        w.writerows(rows)
    r = CliRunner().invoke(cli, ["inspect", str(path), "--json", "-"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["runs_set_aside"] == {"run_without_accuracy": ["b"]}
    assert out["set_aside"]["run_without_accuracy"] == 10


class _Criterion:  # what yaml.dump writes for a module's loss object (its attributes below it)
    def __init__(self) -> None:
        self.reduction = "mean"
        self.training = True
        self.ignore_index = -100


def test_a_tagged_object_in_hparams_keeps_its_attributes_to_itself(tmp_path: Path) -> None:
    """Lightning's ``save_hyperparameters()`` of a module holding a loss object: ``yaml.dump``
    writes ``criterion: !!python/object:…`` with the object's attributes indented below it.
    The tag was skipped but its attributes were read as bare conditions (``reduction``,
    ``training``, ``ignore_index``), which ``--by`` then asked to split with ``--cell``
    (public log AnAccount/DLGN). What a tagged value holds is skipped with it."""
    import yaml

    for wd in (1.0, 2.0):
        d = tmp_path / f"version_{int(wd)}"
        write_csv_run(d / "metrics.csv", 2000.0 / wd)
        (d / "hparams.yaml").write_text(yaml.dump({"weight_decay": wd, "criterion": _Criterion(),
                                                   "lr": 0.003}))
    assert "  reduction: mean" in (tmp_path / "version_1" / "hparams.yaml").read_text()
    doc = check(tmp_path)
    conds = set(doc["input"]["conditions"])
    assert {"weight_decay", "lr"} <= conds
    assert not conds & {"reduction", "training", "ignore_index", "criterion"}
