"""Real logs published by other projects, read with flags only (no conversion code).

Each folder here is a small extract of a public repository (licence and origin beside it,
``README.md`` lists them). Each test audits or inspects it as a user would, then checks what
was read — runs, steps, the columns read as accuracies, conditions, outcomes, findings —
against what an independent reading of the same files with the standard library (``csv``,
``json``), numpy or TensorBoard's own loader says. The expected values are derived from the
files, never copied from grokaudit's output.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from grokaudit.adversarial_suite.properties import undefined_critical_findings
from helpers.corpus import run

HERE = Path(__file__).resolve().parent


def audit(*args: Any) -> dict[str, Any]:
    code, doc, err = run("check", *args)
    assert code in (0, 1) and doc is not None, err
    assert doc["summary"]["exit_code"] == code
    # issue 19: no critical finding on a cell whose own gates say the quantity is undefined
    assert not undefined_critical_findings(doc), undefined_critical_findings(doc)
    return doc


def inspect(*args: Any) -> dict[str, Any]:
    code, doc, err = run("inspect", *args)
    assert code == 0 and doc is not None, err
    return doc


def codes(doc: dict[str, Any]) -> set[str]:
    return {f["code"] for f in doc["findings"]}


def finding(doc: dict[str, Any], code: str, **evidence: Any) -> dict[str, Any]:
    hits = [f for f in doc["findings"] if f["code"] == code
            and all(f["evidence"].get(k) == v for k, v in evidence.items())]
    assert len(hits) == 1, (code, evidence, [f["evidence"] for f in doc["findings"]
                                             if f["code"] == code])
    return hits[0]


def chosen(doc: dict[str, Any], target: str) -> str:
    return str(finding(doc, "ACCURACY_COLUMN_CHOSEN", target=target)["evidence"]["column"])


def run_ids(doc: dict[str, Any]) -> list[str]:
    return sorted(r["run"] for r in doc["studies"][0]["runs"])


# ------------------------------------------------------------------------------------------
# JSON lines with a config record first and a summary record last
# ------------------------------------------------------------------------------------------

PETER = HERE / "PeterPonyu_muon-norm-cap-grokking" / "experiments" / "results"


def _jsonl(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    steps = [r for r in recs if "step" in r]
    meta = next(r["_meta"] for r in recs if "_meta" in r)
    summary = next(r["_summary"] for r in recs if "_summary" in r)
    return steps, meta, summary


def test_jsonl_header_and_footer_records() -> None:
    """``{"_meta": …}`` first and ``{"_summary": …}`` last: set aside with a count; the config
    record's scalars are conditions under their own names, the summary's outcomes (never an
    axis or a cell); the sweep is audited along weight_decay, one study per optimizer."""
    files = sorted((PETER / "mech").glob("*.jsonl"))
    doc = audit(PETER / "mech", "--by", "weight_decay", "--cell", "optimizer")
    parsed = [_jsonl(f) for f in files]
    assert doc["input"]["runs_kept"] == len(files)
    assert doc["input"]["rows_read"] == sum(len({r["step"] for r in s}) for s, _, _ in parsed)
    metas = [m for _, m, _ in parsed]
    conditions = set(doc["input"]["conditions"])
    assert {k for m in metas for k, v in m.items() if not isinstance(v, (list, dict))} \
        <= conditions
    outcomes = {k for _, m, s in parsed for k in s if k not in m}
    assert outcomes <= set(doc["input"]["outcomes"])
    assert not set(metas[0]) & set(doc["input"]["outcomes"])  # a copied config stays one
    aside = finding(doc, "RECORDS_SET_ASIDE")
    assert aside["evidence"]["record_without_step"] == 2 * len(files)
    studies = {(s["study"]["optimizer"], s["metric"]) for s in doc["studies"]}
    assert {o for o, _ in studies} == {m["optimizer"] for m in metas}
    for s in doc["studies"]:
        wds = sorted({m["weight_decay"] for m in metas if m["optimizer"] == s["study"]["optimizer"]})
        assert [c["axis_value"] for c in s["cells"]] == wds


def test_condition_only_in_file_names_is_named_not_pooled_silently() -> None:
    """The norm cap k is written only in the file names (k1_s0, kinf_s0): with no condition
    varying, the runs are audited one by one — and the audit says the names differ in k."""
    doc = audit(PETER / "add_normctl", "--metric", "eff_rank_mean")
    f = finding(doc, "SINGLE_CONDITION")
    assert f["severity"] == "warning"
    names = [p.stem for p in sorted((PETER / "add_normctl").glob("*.jsonl"))]
    ks = sorted({re.match(r"k([a-z0-9.]+)_", n).group(1) for n in names})  # type: ignore[union-attr]
    assert sorted(f["evidence"]["name_tokens"]["k"]) == ks
    assert doc["studies"][0]["axis"] is None and doc["studies"][0]["verdict"] is None


# ------------------------------------------------------------------------------------------
# PyTorch Lightning CSVLogger: train and validation rows, percent, hparams.yaml
# ------------------------------------------------------------------------------------------

LIGHTNING = HERE / "tnediserp_MIML-grokking" / "lightning_logs" / "Different_p"


def test_lightning_metrics_csv() -> None:
    """Train and validation metrics on separate rows of one step are one row; accuracy in
    percent is read as percent (values above 1.5 in the column); the hparams.yaml beside each
    metrics.csv gives conditions; p, written only in the folder names, comes from --cond."""
    doc = audit(LIGHTNING.parent.parent, "--metric", "paramnorm_embedding.weight",
                "--cond", "p=p=([0-9]+)")
    runs = sorted(LIGHTNING.iterdir())
    rows = [list(csv.DictReader((d / "metrics.csv").open(newline=""))) for d in runs]
    assert doc["input"]["runs_kept"] == len(runs)
    assert doc["input"]["rows_read"] == sum(len({r["step"] for r in rs}) for rs in rows)
    assert chosen(doc, "test_acc") == "val_accuracy"
    pct = finding(doc, "ACCURACY_IN_PERCENT", column="test_acc")["evidence"]
    assert pct["max"] == pytest.approx(max(float(r["val_accuracy"]) for rs in rows for r in rs
                                           if r["val_accuracy"]), rel=1e-6)
    assert "RESUMED_DUPLICATES" not in codes(doc)  # the epoch shared by both rows is one value
    hparams = {line.split(":", 1)[0] for line in (runs[0] / "hparams.yaml").read_text()
               .splitlines() if ":" in line}
    assert hparams - {"random_seed"} <= set(doc["input"]["conditions"])
    study = doc["studies"][0]
    assert study["axis"] == "p"
    assert [c["axis_value"] for c in study["cells"]] == sorted(
        int(re.search(r"p=(\d+)", d.name).group(1)) for d in runs)  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------
# a folder of per-run CSVs, percent, conditions only in the names
# ------------------------------------------------------------------------------------------

NICE = HERE / "niceonelol_grok" / "fyp" / "data"
MNIST = ["mnist_1000_2.0", "MNIST 2500 5.0", "MNIST 2500 5.0 (2)"]


def test_per_run_csvs_with_conditions_in_names() -> None:
    args = [NICE / n for n in MNIST]
    doc = audit(*args, "--cond", r"size=(?i)mnist.(\d+)",
                "--cond", r"scale=(?i)mnist.\d+.([0-9.]+)", "--by", "scale",
                "--metric", "phdim_0")
    rows = [list(csv.DictReader((NICE / n / f"{n}.csv").open(newline=""))) for n in MNIST]
    assert doc["input"]["rows_read"] == sum(len(r) for r in rows)
    assert run_ids(doc) == sorted(MNIST)
    pct = finding(doc, "ACCURACY_IN_PERCENT", column="test_acc")["evidence"]
    assert pct["max"] == pytest.approx(max(float(r["val_accuracy"]) for rs in rows for r in rs))
    assert pct["why"] == "percent"
    cells = {c["axis_value"]: c["n_runs"] for c in doc["studies"][0]["cells"]}
    assert cells == {2.0: 1, 5.0: 2}


def test_a_file_appended_out_of_order_is_sorted() -> None:
    """The CIFAR log holds two appended segments, not sorted by step: read, and sorted."""
    name = "cifar_5000_5.0_L1_eps=0.5_hug=2"
    doc = audit(NICE / name, "--metric", "phdim_0")
    rows = list(csv.DictReader((NICE / name / f"{name}.csv").open(newline="")))
    steps = [int(r["step"]) for r in rows]
    assert steps != sorted(steps)
    assert doc["input"]["rows_read"] == len(set(steps))


# ------------------------------------------------------------------------------------------
# Hugging Face trainer_state.json
# ------------------------------------------------------------------------------------------

HF = HERE / "aigoncharov_trainer_state_viz" / "trainer_state.json"


def test_trainer_state_log_history() -> None:
    """``log_history`` records, one per eval set and step, are joined on the step; with six
    eval sets and no test accuracy of that name, --map names the one to audit."""
    state = json.loads(HF.read_text())
    hist = state["log_history"]
    doc = audit(HF, "--map", "eval_g0_accuracy=test_acc", "--metric", "eval_g0_loss")
    assert doc["input"]["rows_read"] == len({r["step"] for r in hist})
    assert run_ids(doc) == [HF.stem]
    (r,) = doc["studies"][0]["runs"]
    n_eval = sum("eval_g0_accuracy" in x for x in hist)
    assert n_eval == len({x["step"] for x in hist if "eval_g0_accuracy" in x})
    assert "SINGLE_CONDITION" in codes(doc)
    best = max(x["eval_g0_accuracy"] for x in hist if "eval_g0_accuracy" in x)
    if best < 0.9:  # the task's ceiling, not the run, decides: said so
        assert "ACCURACY_CEILING" in codes(doc) or r["t_grok"]["censored"]


def test_trainer_state_without_a_map_names_the_candidates() -> None:
    ins = inspect(HF)
    assert ins["refused"]["code"] == "MISSING_COLUMN"
    names = {c["name"] for c in ins["columns"]}
    assert {"eval_g0_accuracy", "eval_g5_accuracy"} <= names


# ------------------------------------------------------------------------------------------
# per-run CSV beside a JSON of config and results
# ------------------------------------------------------------------------------------------

PORTH = HERE / "porth-bot_grokking-transformer" / "runs"
PORTH_RUNS = ["p97_frac0.30_wd0_seed0", "p97_frac0.30_wd0.1_seed0", "p97_frac0.30_wd0.1_seed1",
              "p97_frac0.30_wd0.1_seed2", "p97_frac0.30_wd1_seed0"]


def test_csv_with_a_same_stem_json_sidecar() -> None:
    """``x.csv`` beside ``x.json`` ({"config": {...}, "grok_step": …}): the config's scalars
    are conditions, the rest outcomes."""
    doc = audit(*(PORTH / f"{n}.csv" for n in PORTH_RUNS), "--metric", "weight_norm",
                "--by", "weight_decay", "--cell", "patience,dropout")
    sidecars = [json.loads((PORTH / f"{n}.json").read_text()) for n in PORTH_RUNS]
    rows = [list(csv.DictReader((PORTH / f"{n}.csv").open(newline=""))) for n in PORTH_RUNS]
    assert doc["input"]["rows_read"] == sum(len(r) for r in rows)
    assert {"grok_step", "memorize_step", "final_test_acc"} <= set(doc["input"]["outcomes"])
    assert "weight_decay" not in doc["input"]["outcomes"]
    axis = sorted({c["axis_value"] for s in doc["studies"] for c in s["cells"]})
    assert axis == sorted({s["config"]["weight_decay"] for s in sidecars})


# ------------------------------------------------------------------------------------------
# run folders: a JSON of nested lists (two cadences) beside config.json and an NPZ
# ------------------------------------------------------------------------------------------

ATGUGU = HERE / "atgugu_grokking_experiments" / "results"


def test_dict_of_lists_json_with_two_cadences_and_a_config_file() -> None:
    doc = audit(ATGUGU, "--metric", "gini")
    runs = sorted(d for d in ATGUGU.iterdir() if d.is_dir())
    hist = [json.loads((d / "metrics.json").read_text())["history"] for d in runs]
    configs = [json.loads((d / "config.json").read_text()) for d in runs]
    assert doc["input"]["runs_kept"] == len(runs)
    assert doc["input"]["rows_read"] == sum(
        len(set(h["eval_epochs"]) | set(h["fourier_epochs"])) for h in hist)
    assert doc["input"]["provenance"]["step_unit"] == "epoch"
    study = doc["studies"][0]
    assert study["axis"] == "weight_decay"
    assert [c["axis_value"] for c in study["cells"]] == sorted(c["weight_decay"] for c in configs)
    assert set(doc["input"]["conditions"]) >= {"lr", "p", "seed", "train_fraction"}
    gini_points = sum(len(h["gini"]) for h in hist)
    missing = doc["input"]["missing_values"]["gini"]
    assert doc["input"]["rows_kept"] - missing == gini_points


def test_accuracy_only_without_a_metric_is_the_grok_clock_audit() -> None:
    # no --metric and no representation metric column: once refused (NO_METRIC), now the
    # accuracy clocks alone (issue 39 item 7); t_grok read from metrics.json with json
    doc = audit(ATGUGU)
    study = doc["studies"][0]
    assert study["metric"] is None and study["verdict"] is None
    assert "COMPRESSION_NOT_ASSESSED" in codes(doc)
    for r in study["runs"]:
        h = json.loads((ATGUGU / r["run"] / "metrics.json").read_text())["history"]
        up = [e for e, a in zip(h["eval_epochs"], h["test_acc"]) if a >= 0.9]
        if up:
            assert r["t_grok"]["value"] == up[0]
        else:
            assert r["t_grok"]["censored"] and r["t_grok"]["lower"] == h["eval_epochs"][-1]
        assert r["floor"] is None and r["t_compress"] is None


# ------------------------------------------------------------------------------------------
# NPZ sweep
# ------------------------------------------------------------------------------------------

NPZ = HERE / "ClevixLab_critical-norm-grokking" / "grokfss_p59"


def test_npz_sweep() -> None:
    doc = audit(NPZ, "--by", "alpha", "--metric", "eff_rank_E")
    files = sorted(NPZ.glob("*.npz"))
    arrays = [np.load(f) for f in files]
    assert doc["input"]["runs_kept"] == sum(a["test_acc"].shape[0] for a in arrays)
    assert doc["input"]["rows_read"] == sum(a["test_acc"].size for a in arrays)
    cells = sorted((c["axis_value"], c["n_runs"]) for c in doc["studies"][0]["cells"])
    expect = sorted((float(a["alpha"]), a["test_acc"].shape[0]) for a in arrays)
    assert [n for _, n in cells] == [n for _, n in expect]
    assert [v for v, _ in cells] == pytest.approx([v for v, _ in expect], rel=1e-6)


# ------------------------------------------------------------------------------------------
# TensorBoard: Lightning versions, Keras split folders, TF2 tensor scalars
# ------------------------------------------------------------------------------------------

def _tb_points(folder: Path) -> dict[str, int]:
    """Scalar points per tag in the event files under ``folder``, by TensorBoard's loader."""
    loader = pytest.importorskip(
        "tensorboard.backend.event_processing.event_file_loader").EventFileLoader
    out: dict[str, set[int]] = {}
    for f in sorted(folder.rglob("events.out.tfevents.*")):
        for ev in loader(str(f)).Load():
            for v in ev.summary.value:
                if v.HasField("simple_value") or (v.HasField("tensor") and
                                                  not v.tensor.tensor_shape.dim):
                    out.setdefault(v.tag, set()).add(ev.step)
    return {k: len(v) for k, v in out.items()}


RASBT = HERE / "rasbt_machine-learning-book" / "ch13" / "lightning_logs"


def test_lightning_tensorboard_prefers_the_validation_curve() -> None:
    """``test_acc`` logged only by the final test (a few points) is not preferred to the
    validation curve ``valid_acc``: the audit reads valid_acc as test_acc, keeps the log's own
    test_acc as test_acc_logged, and says so."""
    pytest.importorskip("tensorboard")
    doc = audit(RASBT, "--metric", "train_loss")
    assert chosen(doc, "test_acc") == "valid_acc"
    assert "test_acc_logged" in doc["input"]["missing_values"]  # kept, as a series
    versions = sorted(d.name for d in RASBT.iterdir())
    assert run_ids(doc) == versions
    for v in versions:
        pts = _tb_points(RASBT / v)
        assert pts["valid_acc"] > 2 * pts["test_acc"]


def test_keras_train_and_validation_folders_are_one_run() -> None:
    pytest.importorskip("tensorboard")
    root = HERE / "lyhue1991_eat_tensorflow2_in_30_days" / "data" / "keras_model"
    ins = inspect(root)
    runs = sorted(d.name for d in root.iterdir() if d.is_dir())
    assert ins["runs"]["ids"] == runs
    roles = {c["role"]: c for c in ins["columns"]}
    assert roles["test_acc"]["why"].startswith("from column 'validation/epoch_accuracy'")
    assert roles["train_acc"]["why"].startswith("from column 'train/epoch_accuracy'")
    pts = _tb_points(root / runs[0] / "validation")
    assert ins["step"]["points_per_run_max"] == pts["epoch_accuracy"]


def test_tf2_tensor_scalars_split_by_folder() -> None:
    pytest.importorskip("tensorboard")
    logs = (HERE / "kubeflow_katib" / "test" / "unit" / "v1beta1" / "metricscollector"
            / "testdata" / "tfevent-metricscollector" / "logs")
    doc = audit(logs, "--metric", "train/loss")
    assert run_ids(doc) == ["logs"]
    assert chosen(doc, "test_acc") == "test/accuracy"
    assert chosen(doc, "train_acc") == "train/accuracy"
    assert doc["input"]["rows_read"] == _tb_points(logs / "test")["accuracy"]


def test_lightning_tensorboard_with_one_test_point() -> None:
    """No validation metric, one test_accuracy point per finished run: read as it is (one
    point), and the audit can only bound t_grok."""
    pytest.importorskip("tensorboard")
    root = HERE / "PacktPublishing_Deep-Learning-with-PyTorch-Lightning" / "Chapter09"
    doc = audit(root, "--metric", "train_loss")
    ev = finding(doc, "ACCURACY_COLUMN_CHOSEN", target="test_acc")["evidence"]
    total = sum(_tb_points(v).get("test_accuracy", 0) for v in (root / "lightning_logs").iterdir())
    assert ev["column"] == "test_accuracy" and ev["points"] == total
    assert all(r["t_grok"]["censored"] or r["t_grok"]["value"] is not None
               for s in doc["studies"] for r in s["runs"])


# ------------------------------------------------------------------------------------------
# MLflow file store, W&B run folders, a folder of several formats
# ------------------------------------------------------------------------------------------

PACKT = HERE / "PacktPublishing_Practical-Deep-Learning-at-Scale-with-MLFlow"


def test_mlflow_store_of_one_point_runs_is_refused_with_its_reason() -> None:
    code, _, err = run("check", PACKT / "chapter02" / "mlruns")
    assert code == 2 and err.rstrip().endswith("[TOO_FEW_POINTS]")
    ins = inspect(PACKT / "chapter02" / "mlruns")
    assert ins["adapters"] == ["mlflow"] and ins["refused"]["code"] == "TOO_FEW_POINTS"
    metric_files = list((PACKT / "chapter02" / "mlruns").rglob("metrics/*"))
    lines = [len(f.read_text().splitlines()) for f in metric_files if f.is_file()]
    assert max(lines) < 3  # one point each: nothing to audit, refused, never guessed


def test_folder_of_two_formats_is_refused_naming_both() -> None:
    code, _, err = run("check", PACKT)
    assert code == 2 and err.rstrip().endswith("[UNKNOWN_FORMAT]")
    assert "mlflow" in err and "tensorboard" in err


ARM = HERE / "ARM-software_keyword-transformer"


def test_wandb_offline_run_with_a_torn_last_record() -> None:
    pytest.importorskip("wandb")
    doc = audit(ARM, "--metric", "Training/loss")
    assert chosen(doc, "test_acc") == "Validation/accuracy"
    assert finding(doc, "ACCURACY_IN_PERCENT", column="test_acc")["evidence"]["why"] == "percent"
    assert "SOURCE_TRUNCATED" in codes(doc)
    summary = json.loads(next(ARM.rglob("run-*3ojed7lz/files/wandb-summary.json")).read_text())
    assert doc["input"]["rows_read"] <= summary["_step"] + 1


# ------------------------------------------------------------------------------------------
# a table without per-step accuracy
# ------------------------------------------------------------------------------------------

WYKLQ = HERE / "wyklq_grokking-exp" / "results" / "scans"


def test_trajectories_without_accuracy_and_without_a_run_column_are_refused() -> None:
    """Several runs in one file with no run column: refused, naming the column to add — never
    read as one run of repeated steps."""
    code, _, err = run("check", WYKLQ / "C_p113_phase1.parquet")
    assert code == 2 and err.rstrip().endswith("[MISSING_COLUMN]") and "'run'" in err


@pytest.mark.parametrize("folder", sorted(p.name for p in HERE.iterdir() if p.is_dir()))
def test_every_source_has_its_licence_and_origin(folder: str) -> None:
    d = HERE / folder
    assert (d / "LICENSE").is_file() and (d / "ORIGIN.md").is_file()
    readme = (HERE / "README.md").read_text()
    assert folder in readme, f"{folder} is not listed in tests/corpus/README.md"


def test_hhkblogi_final_train_loss_is_a_result_not_a_series_nor_an_axis() -> None:
    """hhkblogi/grok's Lightning logs end each run with one ``train_loss`` (the run's mean):
    it was written in every row and read back as a 361-point series; then, read as a result,
    inspect proposed ``--by train_loss``. A loss logged once is an outcome, never an axis."""
    root = HERE / "hhkblogi_grok"
    doc = audit(root)
    assert "train_loss" in doc["input"]["outcomes"]
    ins = inspect(root)
    roles = {c["name"]: c["role"] for c in ins["columns"]}
    assert roles["train_loss"] == "outcome" and roles["full_train_loss"] == "series"
    assert not [x for x in ins["flags"] if x["flag"] in ("--by train_loss",
                                                         "--metric train_loss")]
