"""A step column checked against the length and logging cadence a run's config declares
(``grokaudit.adapters.cadence``, issue 39 item 6).

The logs are written by the writers people use — ``json.dump`` of a config beside
``DataFrame.to_csv`` of the log, a JSON-lines file whose first record is the config,
``yaml.safe_dump`` of Lightning-style ``hparams.yaml`` — and one public log of the corpus holds
both kinds side by side. A folder looks like::

    sweep/
      run0/config.json   {"num_epochs": 10000, "log_frequency": 100}
      run0/metrics.csv   epoch,train_acc,test_acc   (epoch 0, 1, …, 99: log events)
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import read_log
from grokaudit.adapters.cadence import DECLARED
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from helpers.corpus import run
from helpers.tables import provenance_of

CODE = "STEP_CADENCE_MISMATCH"
ROOT = Path(__file__).resolve().parents[2]
SANTY = ROOT / "tests" / "corpus" / "SantyJ_grokking_under_dp"


def _curve(steps: np.ndarray, t_grok: float) -> pd.DataFrame:
    s = np.arange(steps.size, dtype=np.float64)  # accuracies by log event: any shape will do
    return pd.DataFrame({
        "epoch": steps,
        "train_acc": np.minimum(1.0, 0.1 + s / max(1.0, steps.size / 4)),
        "test_acc": 1.0 / (1.0 + np.exp(-(s - t_grok) / 3.0)),
    })


def _write_run(folder: Path, config: dict[str, Any] | None, steps: np.ndarray,
               t_grok: float = 40.0) -> None:
    folder.mkdir(parents=True)
    if config is not None:
        with (folder / "config.json").open("w") as fh:
            json.dump(config, fh)
    _curve(steps, t_grok).to_csv(folder / "metrics.csv", index=False)


def _sweep(tmp_path: Path, config: dict[str, Any] | None, steps: np.ndarray) -> Path:
    """Two runs (wd 0.1 and 1.0) of one config, each a folder of config.json + metrics.csv."""
    root = tmp_path / "sweep"
    for i, wd in enumerate((0.1, 1.0)):
        cfg = None if config is None else {**config, "wd": wd}
        _write_run(root / f"run{i}", cfg, steps, t_grok=30.0 + 10 * i)
    return root


def _provenance(root: Path, **kw: Any) -> dict[str, Any]:
    return provenance_of(read_log(root, **kw))


def _mismatches(root: Path, **kw: Any) -> list[dict[str, Any]]:
    return [f for f in _provenance(root, **kw)["findings"] if f["code"] == CODE]


# ------------------------------------------------------------------------------------------
# a step column that counts log events
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [
    {"num_epochs": 10000, "log_frequency": 100},  # the example
    {"epochs": 10000, "log_every": 100},
    {"max_steps": 10000, "eval_every": 100},
    {"num_steps": 10000, "logging_steps": 100.0},  # an integral float, as json writes 100.0
    {"trainer": {"max_steps": 10000}, "logging": {"log_interval": 100}},  # nested
])
def test_a_column_counting_log_events_is_named_with_its_evidence(tmp_path: Path,
                                                                 config: dict[str, Any]) -> None:
    root = _sweep(tmp_path, config, np.arange(100))  # 0, 1, …, 99: one per log event
    (f,) = _mismatches(root)
    assert sorted(f["runs"]) == ["run0", "run1"]
    assert (f["total"], f["cadence"], f["factor"], f["step_max"]) == (10000, 100, 100, 99)
    assert f["severity"] == "warning"
    # the steps are read as logged: never rescaled by a guess
    t = read_log(root).to_pandas()
    np.testing.assert_array_equal(t[t["run"] == "run0"]["step"].to_numpy(), np.arange(100))


def test_check_and_inspect_show_the_mismatch(tmp_path: Path) -> None:
    """Fails on the code before the rule: a column 0…99 beside num_epochs 10000,
    log_frequency 100 was read as epochs without a word."""
    root = _sweep(tmp_path, {"num_epochs": 10000, "log_frequency": 100}, np.arange(100))
    code, doc, err = run("check", root, "--by", "wd")
    assert code in (0, 1) and doc is not None, err
    (f,) = [f for f in doc["findings"] if f["code"] == CODE]
    assert f["scope"] == "input" and f["severity"] == "warning"
    assert sorted(f["runs"]) == ["run0", "run1"]
    ev = f["evidence"]
    assert (ev["total_key"], ev["total"], ev["cadence_key"], ev["cadence"], ev["step_max"],
            ev["factor"]) == ("num_epochs", 10000, "log_frequency", 100, 99, 100)
    code, doc, err = run("inspect", root)
    assert code == 0 and doc is not None, err
    (shown,) = doc["step"]["counts_log_events"]
    assert sorted(shown["runs"]) == ["run0", "run1"] and shown["cadence"] == 100
    assert any(f["code"] == CODE for f in doc["findings"])
    assert "--step-scale cadence" in [x["flag"] for x in doc["flags"]]


def test_a_jsonl_config_record_declares_it_too(tmp_path: Path) -> None:
    """A JSON-lines log whose first record is the config (no file beside it)."""
    p = tmp_path / "run.jsonl"
    df = _curve(np.arange(1, 51), 20.0)  # 1, …, 50: events counted from 1
    with p.open("w") as fh:
        fh.write(json.dumps({"config": {"max_epochs": 5000, "eval_interval": 100}}) + "\n")
        for rec in df.to_dict(orient="records"):
            fh.write(json.dumps(rec) + "\n")
    (f,) = _mismatches(p)
    assert (f["runs"], f["total"], f["cadence"], f["step_max"]) == (["run"], 5000, 100, 50)


def test_a_lightning_hparams_yaml_declares_it_too(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    root = tmp_path / "version_0"
    _write_run(root, None, np.arange(40))
    (root / "hparams.yaml").write_text(yaml.safe_dump({"max_epochs": 4000,
                                                       "check_val_every_n_epoch": 100}))
    (f,) = _mismatches(root)
    assert (f["total_key"], f["cadence_key"], f["step_max"]) == (
        "max_epochs", "check_val_every_n_epoch", 39)


# ------------------------------------------------------------------------------------------
# nothing is said when the steps agree with the config, or when it declares no cadence
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("steps", [
    np.arange(0, 10001, 100),  # multiples of the cadence, up to the length
    np.arange(0, 10000, 100),  # … ending one cadence short of it
    np.arange(10000),          # a logger that writes every epoch whatever log_frequency says
    np.arange(0, 1001, 10),    # a run stopped early, its real epochs every 10: 100 × 100 = T
], ids=["to-total", "one-short", "every-epoch", "stopped-early"])
def test_steps_that_agree_with_the_config_are_not_named(tmp_path: Path,
                                                        steps: np.ndarray) -> None:
    cadence = 10 if steps[-1] == 1000 else 100
    root = _sweep(tmp_path, {"num_epochs": 10000, "log_frequency": cadence}, steps)
    prov = _provenance(root)
    assert prov["findings"] == []
    # the declaration was read (the check had something to compare against)
    t = read_log(root).to_pandas()
    assert {"num_epochs", "log_frequency"} <= set(t.columns)


@pytest.mark.parametrize("config", [
    None,                                    # no config file
    {"num_epochs": 10000},                   # a length, no cadence
    {"log_frequency": 100},                  # a cadence, no length
    {"num_epochs": 10000, "log_frequency": True},  # not a number
    {"num_epochs": 10000, "log_frequency": 1},     # every epoch: events are epochs
    {"num_epochs": 10000, "lr_decay_every": 100},  # a cadence of something else
], ids=["no-config", "length-only", "cadence-only", "bool", "cadence-1", "other-key"])
def test_without_a_declared_cadence_nothing_changes(tmp_path: Path,
                                                    config: dict[str, Any] | None) -> None:
    root = _sweep(tmp_path, config, np.arange(100))
    assert _mismatches(root) == []
    t = read_log(root).to_pandas()
    np.testing.assert_array_equal(t[t["run"] == "run0"]["step"].to_numpy(), np.arange(100))


def test_public_trainer_states_declaring_their_cadence_are_not_named() -> None:
    """Hugging Face's trainer_state.json declares max_steps and logging_steps, and logs real
    steps: nothing is said."""
    for p in (ROOT / "tests" / "corpus" / "aigoncharov_trainer_state_viz" / "trainer_state.json",
              ROOT / "tests" / "corpus" / "AguLeon_LoRA_RoBERTa_AGNews" / "results"
              / "checkpoint-1200"):
        t = read_log(p, partial=True)
        assert {"max_steps", "logging_steps"} <= set(t.column_names)
        prov = provenance_of(t)
        assert not [f for f in prov["findings"] if f["code"] == CODE]


# ------------------------------------------------------------------------------------------
# the public log: SantyJ/grokking_under_dp, index-valued and epoch-valued runs side by side
# ------------------------------------------------------------------------------------------

def _santy_runs(root: Path) -> dict[str, tuple[list[int], dict[str, Any]]]:
    """Each run folder's epochs (read with csv) and args.json (read with json)."""
    out: dict[str, tuple[list[int], dict[str, Any]]] = {}
    for f in sorted(root.rglob("metrics.csv")):
        with f.open(newline="") as fh:
            epochs = sorted({int(r["epoch"]) for r in csv.DictReader(fh)})
        out[f.parent.name] = (epochs, json.loads((f.parent / "args.json").read_text()))
    return out


def test_santyj_runs_whose_epoch_column_counts_log_events_are_named() -> None:
    """ORIGIN.md, shape 8: in `loggs/` two runs write the log index (0…19 of 10 000 epochs
    logged every 500), one the epoch (0…19 500 of 20 000). The expected runs are derived from
    the files: epochs 0…n−1 with n = num_epochs / log_frequency."""
    root = SANTY / "loggs"
    runs = _santy_runs(root)
    index_valued = sorted(r for r, (ep, a) in runs.items()
                          if ep == list(range(a["num_epochs"] // a["log_frequency"])))
    assert 0 < len(index_valued) < len(runs)
    (f,) = _mismatches(root)
    assert sorted(f["runs"]) == index_valued
    args = runs[index_valued[0]][1]
    assert (f["total"], f["cadence"], f["step_max"]) == (
        args["num_epochs"], args["log_frequency"], len(runs[index_valued[0]][0]) - 1)
    # --step-scale cadence: those runs in epochs, the run already in epochs untouched
    t = read_log(root, layout={"step_scale": "cadence"}).to_pandas()
    for r, (ep, a) in runs.items():
        factor = a["log_frequency"] if r in index_valued else 1
        np.testing.assert_array_equal(t[t["run"] == r]["step"].to_numpy(),
                                      np.asarray(ep) * factor)
    assert _mismatches(root, layout={"step_scale": "cadence"}) == []


# ------------------------------------------------------------------------------------------
# --step-scale
# ------------------------------------------------------------------------------------------

def test_step_scale_cadence_rescales_the_runs_and_the_audit_reads_epochs(tmp_path: Path
                                                                         ) -> None:
    root = _sweep(tmp_path, {"num_epochs": 10000, "log_frequency": 100}, np.arange(100))
    code, raw, err = run("check", root, "--by", "wd")
    code2, scaled, err2 = run("check", root, "--by", "wd", "--step-scale", "cadence")
    assert raw is not None and scaled is not None, err + err2
    assert CODE not in {f["code"] for f in scaled["findings"]}

    def t_grok(doc: dict[str, Any]) -> list[tuple[int, int, int]]:
        return [(c["t_grok"]["value"], c["t_grok"]["lower"], c["t_grok"]["upper"])
                for s in doc["studies"] for c in s["cells"]]

    assert t_grok(raw) and t_grok(scaled) == [tuple(100 * x for x in t) for t in t_grok(raw)]
    code, ins, err = run("inspect", root, "--step-scale", "cadence")
    assert ins is not None, err
    assert ins["step"]["scaled"]["runs"] == 2 and ins["step"]["last"] == 9900
    assert ins["trail"]["input_mapping"]["--step-scale"] == "cadence"


def test_step_scale_n_multiplies_every_step(tmp_path: Path) -> None:
    root = _sweep(tmp_path, None, np.arange(100))
    t = read_log(root, layout={"step_scale": "100"}).to_pandas()
    np.testing.assert_array_equal(t[t["run"] == "run1"]["step"].to_numpy(),
                                  np.arange(100) * 100)
    code, ins, err = run("inspect", root, "--step-scale", "100")
    assert ins is not None, err
    assert ins["step"]["scaled"] == {"scale": 100, "runs": 2}
    assert ins["step"]["last"] == 9900


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "", " ", "100x", "cadense"])
def test_a_step_scale_typo_is_one_coded_line(tmp_path: Path, value: str) -> None:
    root = _sweep(tmp_path, {"num_epochs": 10000, "log_frequency": 100}, np.arange(100))
    code, doc, err = run("check", root, "--by", "wd", "--step-scale", value)
    assert code == 2 and doc is None
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "[INVALID_OPTION]" in lines[0] and "--step-scale" in lines[0]
    if value.strip():
        with pytest.raises(ConfigError) as e:
            read_log(root, layout={"step_scale": value})
        assert e.value.code is ErrorCode.INVALID_OPTION


def test_a_step_scale_beyond_the_largest_step_is_refused(tmp_path: Path) -> None:
    root = _sweep(tmp_path, None, np.arange(100))
    with pytest.raises(LogFormatError) as e:
        read_log(root, layout={"step_scale": str(2**50)})
    assert e.value.code is ErrorCode.STEP_OUT_OF_RANGE
    with pytest.raises(ConfigError) as c:
        read_log(root, layout={"step_scale": str(2**60)})
    assert c.value.code is ErrorCode.OPTION_OUT_OF_RANGE


# ------------------------------------------------------------------------------------------
# the documented table is the code's
# ------------------------------------------------------------------------------------------

def test_every_declared_key_is_documented() -> None:
    doc = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    m = re.search(r"^### The step column against the config's cadence\n(.*?)^### ", doc,
                  re.S | re.M)
    assert m is not None
    rows = dict(re.findall(r"^\| (length|cadence) \| (.*) \|$", m.group(1), re.M))
    for role, label in (("total", "length"), ("cadence", "cadence")):
        assert re.findall(r"`([a-z_]+)`", rows[label]) == list(DECLARED[role])
