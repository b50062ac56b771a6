"""``grokaudit watch`` (issue 24): follows a folder as it is written, prints each run's state
when it changes (text or JSON lines), ends when every run is settled or stopped, and says by
its exit code whether a run stopped with numbers that are not defined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from click.testing import CliRunner
from grokaudit import RunLogger, make_config
from grokaudit.cli import cli
from grokaudit.watch import Watcher

STEPS = np.arange(0, 40001, 200)


def _cols(t_grok: float, t_c: float) -> dict[str, np.ndarray]:
    s = STEPS.astype(float)
    return {"test_acc": 1.0 / (1.0 + np.exp(-(s - t_grok) / 150.0)),
            "train_acc": 1.0 / (1.0 + np.exp(-(s - 300.0) / 60.0)),
            "emb_erank": 10.0 + 30.0 / (1.0 + np.exp((s - t_c) / 300.0))}


def _write(folder: Path, run: str, t_grok: float, t_c: float, upto: float | None = None,
           close: bool = True) -> None:
    cols = _cols(t_grok, t_c)
    log = RunLogger(folder, run=run, conditions={"wd": t_grok}, fsync=False)
    for k, s in enumerate(STEPS):
        if upto is not None and s > upto:
            break
        log.log(int(s), **{c: float(v[k]) for c, v in cols.items()})
    if close:
        log.close()
    else:
        log.flush()


def test_once_on_closed_runs_exit_code_says_if_one_is_not_defined(tmp_path: Path) -> None:
    _write(tmp_path / "a", "good", 1000.0, 3000.0)
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "a"), "--once", "--jsonl"])
    lines = [json.loads(x) for x in res.output.splitlines()]
    assert res.exit_code == 0, res.output
    runs = [x for x in lines if x["event"] == "run"]
    assert [r["run"] for r in runs] == ["good"] and runs[0]["defined"]
    assert lines[-1]["event"] == "summary" and lines[-1]["stopped_not_defined"] == []
    # a run that never grokked, closed: stopped with numbers not defined -> exit 1
    _write(tmp_path / "a", "never", 90000.0, 95000.0)
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "a"), "--once", "--jsonl"])
    assert res.exit_code == 1, res.output
    summary = json.loads(res.output.splitlines()[-1])
    assert summary["stopped_not_defined"] == ["never"]
    never = next(json.loads(x) for x in res.output.splitlines() if '"never"' in x)
    assert never["missing"][0]["code"] == "NOT_GROKKED" and never["why_stopped"] == "closed"


def test_an_open_run_is_running_not_stopped(tmp_path: Path) -> None:
    _write(tmp_path / "b", "open", 1000.0, 3000.0, upto=2000.0, close=False)
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "b"), "--once", "--jsonl"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output.splitlines()[-1])
    assert summary["running"] == 1 and summary["stopped_not_defined"] == []


def test_watcher_follows_growth_settles_and_stops_idle_runs() -> None:
    """Rows arrive poll by poll (an injected reader and clock): lines are emitted only when a
    run's state changes; a run that settles is done; one that stops growing goes idle."""
    data = {"fast": _cols(1000.0, 2000.0), "stuck": _cols(90000.0, 95000.0)}
    upto = {"fast": 0.0, "stuck": 0.0}
    now = [0.0]

    def read() -> pa.Table:
        frames = [pd.DataFrame({"run": r, "step": STEPS, **c})[STEPS <= upto[r]]
                  for r, c in data.items()]
        return pa.Table.from_pandas(pd.concat(frames), preserve_index=False)

    w = Watcher(["x"], make_config(metrics=("emb_erank",)), idle=50.0, read=read,
                clock=lambda: now[0])
    emitted = []
    for k in range(1, 201):
        upto["fast"] = 200.0 * k
        upto["stuck"] = min(200.0 * k, 4000.0)  # stops growing at 4000
        now[0] = float(k)
        emitted += w.poll()
        if w.done:
            break
    assert w.done
    fast, stuck = w.last["fast"], w.last["stuck"]
    assert fast.settled and fast.state.defined
    assert stuck.stopped and stuck.why_stopped == "idle" and not stuck.state.defined
    # only changes are printed: far fewer lines than polls × runs
    assert len(emitted) < k
    assert all(e.state.run in data for e in emitted)


def test_watch_follows_a_folder_being_written(tmp_path: Path) -> None:
    """A real writer process logs two runs while ``grokaudit watch`` reads the folder; watch
    ends on its own when both are done, and its last line of each run is the final state."""
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys, time, numpy as np\n"
        "sys.path.insert(0, {!r})\n"
        "from test_watch import _cols, STEPS\n"
        "from grokaudit import RunLogger\n"
        "logs = {{r: RunLogger({!r}, run=r, conditions={{'wd': float(i)}}, fsync=False, "
        "flush_every=10) for i, r in enumerate(['r1', 'r2'])}}\n"
        "cols = {{'r1': _cols(1000.0, 2000.0), 'r2': _cols(90000.0, 95000.0)}}\n"
        "for k, s in enumerate(STEPS):\n"
        "    for r, log in logs.items():\n"
        "        log.log(int(s), **{{c: float(v[k]) for c, v in cols[r].items()}})\n"
        "    if k % 20 == 0: time.sleep(0.05)\n"
        "for log in logs.values(): log.close()\n".format(str(Path(__file__).parent),
                                                      str(tmp_path / "logs")))
    writer = subprocess.Popen([sys.executable, str(script)])
    try:
        p = subprocess.run([sys.executable, "-m", "grokaudit", "watch", str(tmp_path / "logs"),
                            "--interval", "0.2", "--idle", "60", "--jsonl"],
                           capture_output=True, text=True, timeout=300)
    finally:
        writer.wait(timeout=300)
    assert p.returncode == 1, p.stderr  # r2 never grokked and was closed
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    final = {x["run"]: x for x in lines if x["event"] == "run"}
    assert final["r2"]["stopped"] and not final["r2"]["defined"]
    assert final["r1"]["defined"]
    assert lines[-1]["stopped_not_defined"] == ["r2"]


def _two_runs(t_c_second: float) -> pd.DataFrame:
    frames = []
    for run, t_c in (("a", 3000.0), ("b", t_c_second)):
        frames.append(pd.DataFrame({"run": run, "step": STEPS, **_cols(1000.0, t_c)}))
    return pd.concat(frames, ignore_index=True)


def test_watch_refuses_what_check_refuses_instead_of_dropping_it(tmp_path: Path) -> None:
    """A text cell in a metric made the whole column text, and rows without a run id fell out
    of the grouping: watch dropped the column (or the run) and reported the rest as defined,
    exit 0, where check refuses the log (exit 2)."""
    df = _two_runs(39000.0)  # run b: its floor still moving at the end
    text = df.astype({"emb_erank": object})
    text.loc[len(STEPS) + 5, "emb_erank"] = "oops"
    text.to_csv(tmp_path / "text.csv", index=False)
    no_id = df.astype({"run": object})
    no_id.loc[df["run"] == "b", "run"] = None
    no_id.to_parquet(tmp_path / "no_id.parquet", index=False)
    for name, code in (("text.csv", "BAD_COLUMN_TYPE"), ("no_id.parquet", "MISSING_VALUES")):
        check = CliRunner().invoke(cli, ["check", str(tmp_path / name), "-q"])
        watch = CliRunner().invoke(cli, ["watch", str(tmp_path / name), "--once", "--idle",
                                         "0"])
        assert check.exit_code == watch.exit_code == 2, (check.output, watch.output)
        assert f"[{code}]" in watch.output and f"[{code}]" in check.output


def test_watch_refuses_the_inputs_and_options_check_refuses(tmp_path: Path) -> None:
    """Each of these made `watch --once` print states and exit 0 (or crash: a header-only CSV
    was `internal error (ValueError)`), where `check` refuses the log or the option, exit 2:
    a typo in --by or --cell, a condition named as --metric or --grok-on, one run logged
    under two spellings of its id."""
    df = _two_runs(3000.0)
    df["wd"] = np.where(df["run"] == "a", 0.1, 0.3)
    df.to_csv(tmp_path / "log.csv", index=False)
    df.head(0).to_csv(tmp_path / "header.csv", index=False)
    ws = df.copy()
    ws.loc[(ws["run"] == "b") & (ws["step"] > STEPS[3]), "run"] = "b "
    ws.to_csv(tmp_path / "ws.csv", index=False)
    cases = [
        ("header.csv", [], "NO_ROWS"),
        ("ws.csv", [], "RUN_ID_AMBIGUOUS"),
        ("log.csv", ["--by", "wdd"], "NOT_A_CONDITION"),
        ("log.csv", ["--cell", "arch"], "NOT_A_CONDITION"),
        ("log.csv", ["--by", "emb_erank"], "NOT_A_CONDITION"),
        ("log.csv", ["--metric", "wd"], "NOT_A_SERIES"),
        ("log.csv", ["--grok-on", "wd", "--grok-below", "0.2"], "NOT_A_SERIES"),
    ]
    for name, opts, code in cases:
        args = [str(tmp_path / name), *opts]
        check = CliRunner().invoke(cli, ["check", *args, "-q"])
        watch = CliRunner().invoke(cli, ["watch", *args, "--once", "--idle", "0"])
        assert check.exit_code == watch.exit_code == 2, (name, opts, check.output,
                                                         watch.output)
        assert f"[{code}]" in check.output and f"[{code}]" in watch.output, (
            name, opts, check.output, watch.output)
    # the same log with options that name what is there is watched
    ok = CliRunner().invoke(cli, ["watch", str(tmp_path / "log.csv"), "--once", "--by", "wd",
                                  "--metric", "emb_erank"])
    assert ok.exit_code == 0, ok.output


def test_watch_waits_for_a_live_metric_that_is_not_yet_a_series(tmp_path: Path) -> None:
    """A metric logged every other evaluation (NaN between) and flat so far, or flat and
    equal in every run (a just-started run): check reads the first, and neither is a
    condition set per run; watch read both as NOT_A_SERIES and stopped. A column named twice
    was `internal error (TypeError)`."""
    df = _two_runs(3000.0)
    df["sparsity"] = np.where((np.arange(len(df)) // 2) % 2 == 0, 0.0, np.nan)
    df["flat"] = 1.0
    df.to_csv(tmp_path / "log.csv", index=False)
    for opts in (["--metric", "sparsity"], ["--metric", "flat"]):
        w = CliRunner().invoke(cli, ["watch", str(tmp_path / "log.csv"), "--once", *opts])
        assert w.exit_code == 0, (opts, w.output)
    # named twice: one coded refusal, as check gives (was a TypeError)
    w = CliRunner().invoke(cli, ["watch", str(tmp_path / "log.csv"), "--once",
                                 "--metric", "emb_erank", "--metric", "emb_erank"])
    assert w.exit_code == 2 and w.stderr.rstrip().endswith("[INVALID_OPTION]"), w.output
    c = CliRunner().invoke(cli, ["check", str(tmp_path / "log.csv"), "-q", "--metric",
                                 "sparsity"])
    assert c.exit_code in (0, 1), c.output


def test_a_path_whose_folder_does_not_exist_is_refused_at_once(tmp_path: Path) -> None:
    """A mistyped path (its folder does not exist either) is no log yet to be written: one
    coded line at the first poll, not a wait without end (issue 41)."""
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "typo" / "log.csv"),
                                   "--interval", "0.05", "--idle", "3600"])
    assert res.exit_code == 2 and "[FILE_NOT_FOUND]" in res.stderr


def test_a_log_that_never_appears_is_waited_for_idle_seconds_then_refused(
        tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "log.csv"), "--interval", "0.05",
                                   "--idle", "0.3"])
    assert res.exit_code == 2 and "[FILE_NOT_FOUND]" in res.stderr
    assert "waiting for" in res.stderr  # it did wait, its folder being there
