"""Hostile inputs to the live audit and ``watch`` (issue 24 review): late rows, options that
one run cannot follow, bounds that are not numbers, a floor read before the grok, rows a
training loop cannot take back, and ``watch``'s input options, interrupts and torn files."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from grokaudit import ConfigError, LogFormatError, audit_table, make_config
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode
from grokaudit.live import LiveRun, Missing
from grokaudit.watch import Watcher, watch
from helpers.signals import as_from_a_terminal

STEPS = np.arange(0, 20001, 100)


def _cols(steps: np.ndarray, t_grok: float = 2000.0, t_c: float = 5000.0) -> dict:
    s = steps.astype(float)
    return {"test_acc": 1 / (1 + np.exp(-(s - t_grok) / 150)),
            "train_acc": 1 / (1 + np.exp(-(s - 300) / 60)),
            "emb_erank": 10 + 30 / (1 + np.exp((s - t_c) / 300))}


def _codes(live: LiveRun) -> list[Missing]:
    return [g.code for g in live.state().missing]


def test_watch_takes_late_rows_as_check_does() -> None:
    """The accuracy of a step arrives in a later read than the step's other values (two JSONL
    lines, a poll between them): the state is check's on the rows as finally read."""
    cols = _cols(STEPS)
    full = pd.DataFrame({"run": "r", "step": STEPS, **cols})
    first = full.copy()
    late = (first["step"] >= 2000) & (first["step"] <= 2100)
    first.loc[late, "test_acc"] = np.nan  # the eval lines of these steps come later
    tables = [first, full]
    w = Watcher(["x"], make_config(metrics=("emb_erank",)),
                read=lambda: pa.Table.from_pandas(tables[0], preserve_index=False))
    w.poll()
    tables.pop(0)
    w.poll()
    got = w.runs["r"].state().t_grok
    want = audit_table(full, metrics=["emb_erank"]).studies[0].runs[0].t_grok
    assert got == want


@pytest.mark.parametrize("opts", [{"grok_relative": "study"}, {"profile": "reference"}])
def test_options_one_run_cannot_follow_are_refused(opts: dict) -> None:
    with pytest.raises(ConfigError) as exc:
        LiveRun("r", **opts)
    assert exc.value.code is ErrorCode.INVALID_OPTION


def test_a_grok_before_the_first_logged_step_is_a_bound_not_a_number() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS >= 3000]
    cols = _cols(s, t_grok=1000.0, t_c=6000.0)
    for k, step in enumerate(s):
        live.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
    st = live.state()
    assert st.t_grok is not None and st.t_grok.left_censored
    assert Missing.LEFT_CENSORED in _codes(live) and not st.defined


def test_a_floor_read_before_the_grok_is_not_defined() -> None:
    """Just after grok the final window still lies before it: flat, 'no compression' — but
    not a floor of the trained network."""
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS <= 2700]
    cols = _cols(s, t_grok=2000.0, t_c=9000.0)
    cols["test_acc"] = np.where(s >= 2400, 1.0, 0.0)  # groks at 2400, held to 2700
    for k, step in enumerate(s):
        live.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
    assert live.state().grok_sustained
    assert Missing.FLOOR_BEFORE_GROK in _codes(live)
    assert not live.should_stop(0.0)


def test_rows_are_refused_or_taken_at_log_never_later() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    cols = _cols(STEPS)
    for k, step in enumerate(STEPS[:50]):
        live.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
    live.log(5000, train_loss=math.inf)  # not logged, counted; the audit goes on
    assert live.nonfinite == {"train_loss": 1}
    for bad_step, code in ((5100.5, ErrorCode.NON_INTEGER_STEP), (True, ErrorCode.NON_INTEGER_STEP),
                           ("6000", ErrorCode.NON_INTEGER_STEP),
                           (10 ** 400, ErrorCode.STEP_OUT_OF_RANGE)):
        with pytest.raises(LogFormatError) as exc:
            live.log(bad_step, test_acc=0.5)
        assert exc.value.code is code, bad_step
    for bad in ("abc", [1.0], np.array([2.0, 3.0]), 1 + 0j, True):
        with pytest.raises(LogFormatError) as exc:
            live.log(5100, emb_erank=bad)
        assert exc.value.code is ErrorCode.BAD_COLUMN_TYPE, bad
    live.log(5100.0, emb_erank=np.float32(3.0))  # a whole float step and a numpy scalar
    live.state()  # still answers
    for bad in ("3", float("nan"), -1, True):
        with pytest.raises(ConfigError) as cexc:
            live.should_stop(bad)
        assert cexc.value.code is ErrorCode.OPTION_OUT_OF_RANGE, bad
    for bad in ("3", float("inf"), -0.5):
        with pytest.raises(ConfigError) as cexc:
            LiveRun("r", margin=bad)
        assert cexc.value.code is ErrorCode.OPTION_OUT_OF_RANGE, bad
    for budget in (float("nan"), -5, 0):
        with pytest.raises(ConfigError):
            live.budget_warning(budget)


def test_one_metric_name_is_not_split_into_letters() -> None:
    assert LiveRun("r", metrics="emb_erank").metrics == ("emb_erank",)


def test_a_floor_that_stepped_says_so() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS <= 12000].astype(float)
    metric = np.where(s < 10900, 30.0, 20.0)  # a step down inside the final window's reach
    cols = {"test_acc": 1 / (1 + np.exp(-(s - 1000) / 150)), "train_acc": np.ones_like(s),
            "emb_erank": metric}
    for k, step in enumerate(s):
        live.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
    gap = next((g for g in live.state().missing if g.code is Missing.FLOOR_MOVING), None)
    assert gap is not None and gap.evidence["cause"] == "step"
    assert abs(gap.evidence["w1_median"] - gap.evidence["floor"]) > gap.evidence["delta"]


# -- watch --------------------------------------------------------------------------------------

def _csv(path: Path, name: str = "test_acc") -> Path:
    cols = _cols(STEPS)
    df = pd.DataFrame({"run": "r", "step": STEPS, **cols}).rename(columns={"test_acc": name})
    df.to_csv(path, index=False)
    return path


def test_watch_honours_the_input_options(tmp_path: Path) -> None:
    p = _csv(tmp_path / "log.csv", name="zz_eval")
    res = CliRunner().invoke(cli, ["watch", str(p), "--once", "--jsonl", "--metric",
                                   "emb_erank", "--map", "zz_eval=test_acc"])
    lines = [json.loads(x) for x in res.output.splitlines()]
    assert lines[0]["event"] == "trail", res.output  # the trail comes first
    run = next(x for x in lines if x["event"] == "run")
    assert run["grokked"], res.output
    res = CliRunner().invoke(cli, ["watch", str(p), "--once", "--format", "nonsense"])
    assert res.exit_code == 2 and "[UNKNOWN_FORMAT]" in res.stderr


@pytest.mark.parametrize("args,code", [(["--interval", "nan"], "OPTION_OUT_OF_RANGE"),
                                       (["--idle", "nan"], "OPTION_OUT_OF_RANGE"),
                                       (["--margin", "nan"], "OPTION_OUT_OF_RANGE"),
                                       (["--fail-on", "warning"], "INVALID_OPTION")])
def test_watch_refuses_options_it_cannot_honour(tmp_path: Path, args: list, code: str) -> None:
    p = _csv(tmp_path / "log.csv")
    res = CliRunner().invoke(cli, ["watch", str(p), "--once", *args])
    assert res.exit_code == 2 and res.stderr.strip().endswith(f"[{code}]"), res.output


def test_watch_help_does_not_list_the_option_it_refuses() -> None:
    res = CliRunner().invoke(cli, ["watch", "--help"])
    assert res.exit_code == 0
    assert "--fail-on" not in res.output and "--metric" in res.output


def test_a_metric_name_that_never_appears_is_an_input_error(tmp_path: Path) -> None:
    from grokaudit import RunLogger

    cols = _cols(STEPS)
    with RunLogger(tmp_path / "logs", run="r", fsync=False) as log:
        for k, step in enumerate(STEPS):
            log.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "logs"), "--once", "--metric",
                                   "nosuch"])
    assert res.exit_code == 2 and "[METRIC_NOT_FOUND]" in res.stderr, res.output


def test_a_torn_last_line_is_waited_out(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    cols = _cols(STEPS)
    lines = [json.dumps({"run": "r", "step": int(s), **{c: float(v[k]) for c, v in
                                                       cols.items()}})
             for k, s in enumerate(STEPS)]
    p.write_text("\n".join(lines[:40]) + "\n" + lines[40][:17])  # the writer is mid-line
    notes: list[str] = []
    w = watch([str(p)], make_config(metrics=("emb_erank",)), interval=0.0, idle=3600.0,
              emit=lambda rw: None, note=notes.append, sleep=lambda s: None, max_polls=3)
    assert notes and "retrying" in notes[0]
    assert not w.last  # nothing audited from a torn file, nothing invented


def test_a_path_not_there_yet_is_waited_for_with_a_note(tmp_path: Path) -> None:
    notes: list[str] = []
    watch([str(tmp_path / "later")], make_config(), interval=0.0, emit=lambda rw: None,
          note=notes.append, sleep=lambda s: None, max_polls=2)
    assert len(notes) == 1 and notes[0].startswith("waiting for")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_exits_130_with_the_summary(tmp_path: Path) -> None:
    p = _csv(tmp_path / "log.csv")
    proc = subprocess.Popen([sys.executable, "-m", "grokaudit", "watch", str(p), "--interval",
                             "0.2", "--jsonl", "--metric", "emb_erank", "--margin", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=as_from_a_terminal)
    try:
        assert json.loads(proc.stdout.readline())["event"] == "trail"  # the trail first
        first = proc.stdout.readline()  # the first state: the watch is under way
        assert json.loads(first)["event"] == "run"
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # no watch left running after a failure
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Aborted" not in err
    assert json.loads(out.splitlines()[-1])["event"] == "summary"


def test_a_named_metric_constant_so_far_is_not_called_unlogged() -> None:
    """A metric with a name check does not know (``paramnorm_embedding.weight``), logged but
    constant so far: missing as a metric, and said to be constant, never "not logged"."""
    live = LiveRun("r", metrics=["paramnorm_embedding.weight"])
    cols = _cols(STEPS)
    for k, step in enumerate(STEPS[:40]):
        live.log(int(step), test_acc=float(cols["test_acc"][k]),
                 **{"paramnorm_embedding.weight": 3.0})
    gap = next(g for g in live.state().missing if g.code is Missing.METRIC_MISSING)
    assert gap.evidence["constant"] is True and gap.metric == "paramnorm_embedding.weight"


@pytest.mark.parametrize("value, code", [("nan", ErrorCode.OPTION_OUT_OF_RANGE),
                                         ("inf", ErrorCode.OPTION_OUT_OF_RANGE),
                                         ("-1", ErrorCode.INVALID_OPTION),
                                         ("abc", ErrorCode.INVALID_OPTION)])
def test_a_bad_grok_multiple_is_refused_before_anything_is_read(tmp_path: Path,
                                                                value: str,
                                                                code: ErrorCode) -> None:
    """``watch --grok-multiple`` takes a non-negative finite number: anything else is one
    coded line and exit 2, with nothing printed on stdout (no run line, no trail)."""
    p = _csv(tmp_path / "log.csv")
    res = CliRunner().invoke(cli, ["watch", str(p), "--once", "--grok-multiple", value])
    assert res.exit_code == 2 and res.stdout == ""
    assert f"[{code.value}]" in res.stderr.strip().splitlines()[-1]
    for bad in (-2, float("nan"), True, "20"):
        with pytest.raises(ConfigError) as exc:
            LiveRun("r", grok_multiple=bad)
        assert exc.value.code is ErrorCode.OPTION_OUT_OF_RANGE
