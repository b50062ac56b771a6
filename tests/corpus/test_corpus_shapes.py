"""Public logs of three new shapes, read with flags only: long ("tidy") tables, header-less
numeric text, and mixed folders (run logs beside summaries, plots and notes).

As in ``test_corpus_public.py``, each test reads the extract as a user would and checks what was
read against an independent reading of the same files with the standard library (``csv``); the
expected values are derived from the files, never copied from grokaudit's output.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from grokaudit.loader import read_any
from helpers.corpus import run

HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------------------------------
# SantyJ/grokking_under_dp: a long table `epoch, input_type, metric_name, layer, value`
# ------------------------------------------------------------------------------------------

SANTY = HERE / "SantyJ_grokking_under_dp"


def _long_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _series(row: dict[str, str]) -> str:
    """The documented rule: the non-empty name and key values, in file order, joined by /."""
    return "/".join(v for v in (row["input_type"], row["metric_name"], row["layer"]) if v)


def test_santyj_long_tables_are_pivoted_and_inspect_shows_it() -> None:
    code, doc, err = run("inspect", SANTY)
    assert code == 0 and doc is not None, err
    files = sorted(SANTY.rglob("metrics.csv"))
    series = {_series(r) for f in files for r in _long_rows(f)}
    lt = doc["shape"]["long_table"]
    assert (lt["name"], lt["value"], lt["keys"]) == ("metric_name", "value",
                                                     ["input_type", "layer"])
    assert lt["files"] == len(files) and lt["series"] == len(series)
    assert doc["runs"]["n"] == len(files)
    assert any(f["flag"] == lt["flag"] for f in doc["flags"])
    roles = {c["role"]: c for c in doc["columns"] if c["role"] in ("test_acc", "train_acc")}
    assert "'test/accuracy'" in roles["test_acc"]["why"]
    assert "'train/accuracy'" in roles["train_acc"]["why"]


def test_santyj_runs_read_match_the_csv_files() -> None:
    root = SANTY / "loggs_complete_bkp"
    t = read_any(root).to_pandas()
    for f in sorted(root.rglob("metrics.csv")):
        rows = _long_rows(f)
        got = t[t["run"] == f.parent.name].sort_values("step")
        for target, series in (("test_acc", "test/accuracy"), ("train_acc", "train/accuracy"),
                               ("general/weights_l2/layers.0.weight",
                                "general/weights_l2/layers.0.weight")):
            want = sorted((int(r["epoch"]), float(r["value"])) for r in rows
                          if _series(r) == series)
            np.testing.assert_array_equal(got["step"].to_numpy(), [s for s, _ in want])
            np.testing.assert_array_equal(got[target].to_numpy(), [v for _, v in want])
    code, doc, err = run("check", root, "--cell", "binary_operation",
                         "--metric", "general/weights_l2/layers.0.weight")
    assert code in (0, 1) and doc is not None, err
    ops = {json.loads((f.parent / "args.json").read_text())["binary_operation"]
           for f in root.rglob("metrics.csv")}
    assert len(doc["studies"]) == len(ops)


# ------------------------------------------------------------------------------------------
# sytelus/nanuGPT: header-less `step<TAB>loss`
# ------------------------------------------------------------------------------------------

NANU = HERE / "sytelus_nanuGPT" / "scripts" / "loss_curve_fitting" / "loss_data.txt"


def test_nanugpt_headerless_text_reads_with_columns() -> None:
    code, _, err = run("check", NANU)
    assert code == 2 and "--columns" in err and "[MISSING_COLUMN]" in err
    code, doc, err = run("inspect", NANU, "--columns", "step,loss")
    assert code == 0 and doc is not None, err
    with NANU.open(newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r]
    assert doc["rows"] == len(rows) and doc["runs"]["ids"] == [NANU.stem]
    t = read_any(NANU, layout={"columns": ("step", "loss")}, partial=True).to_pandas()
    np.testing.assert_array_equal(t["step"].to_numpy(), [int(r[0]) for r in rows])
    np.testing.assert_array_equal(t["loss"].to_numpy(), [float(r[1]) for r in rows])
    # loss only: check still refuses it for lacking an accuracy
    code, _, err = run("check", NANU, "--columns", "step,loss")
    assert code == 2 and "[MISSING_COLUMN]" in err


# ------------------------------------------------------------------------------------------
# Sapar-hub/transfer-grokking and xmucane-ai/ep-oja-grokking-mult: mixed folders
# ------------------------------------------------------------------------------------------

SAPAR = HERE / "Sapar-hub_transfer-grokking"
XMUCANE = HERE / "xmucane-ai_ep-oja-grokking-mult"


def test_sapar_mixed_folder_reads_its_one_log_and_sets_the_rest_aside() -> None:
    log = SAPAR / "artifacts" / "ce_projection" / "ce_training_log.csv"
    code, doc, err = run("check", SAPAR, "--metric", "train_loss")
    assert code in (0, 1) and doc is not None, err
    code, ins, err = run("inspect", SAPAR)
    assert code == 0 and ins is not None, err
    others = {q.relative_to(SAPAR).as_posix() for q in SAPAR.rglob("*")
              if q.is_file() and q != log and q.suffix not in (".md", "")}
    assert set(ins["shape"]["files_set_aside"]) == others
    with log.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    t = read_any(SAPAR).to_pandas()
    np.testing.assert_array_equal(t["step"].to_numpy(), [int(r["epoch"]) for r in rows])
    np.testing.assert_array_equal(t["test_acc"].to_numpy(), [float(r["val_acc"]) for r in rows])
    np.testing.assert_array_equal(t["train_acc"].to_numpy(),
                                  [float(r["train_acc"]) for r in rows])
    # still refused: a folder with no run log at all. xmucane's JSON files hold no per-step rows (a sweep summary, per-seed results); its
    # console log is UTF-16 text: no run log here, refused rather than an empty audit
    code, _, err = run("check", XMUCANE)
    assert code == 2 and "[MISSING_COLUMN]" in err
    # Sapar's natural_adapter: a per-layer summary beside one-number text files
    code, _, err = run("check", SAPAR / "artifacts" / "natural_adapter")
    assert code == 2 and "[MISSING_COLUMN]" in err
