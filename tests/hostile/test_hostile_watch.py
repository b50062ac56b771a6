"""``grokaudit watch`` against a log that misbehaves while it is watched: a watched file deleted
(the only one, or one of two) ends the watch with its summary instead of a wait past --idle;
a log truncated and rewritten is said, never a silent rewind; ``--once`` (the CI form) refuses
a misspelt ``--metric`` or ``--grok-on`` as ``check`` does; SIGHUP prints the summary and exits
129; ``--on-duplicate`` is honoured as in ``check``.

Polls are driven by replacing the watch's sleep (``CtrlC.sleep``): each test's action happens
between two reads, and a guard presses Ctrl-C after a few polls, so that a watch that would
hang ends (exit 130) and the test fails instead of waiting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from grokaudit.watch import CtrlC
from helpers.hostile import cli, expect_error, sweep_df


def _drive(monkeypatch: pytest.MonkeyPatch, action: Callable[[int], None],
           guard: int = 30) -> None:
    """Between reads, call ``action(k)`` (k: the sleep's number, from 1); after ``guard``
    sleeps, Ctrl-C."""
    count = [0]

    def sleep(self: CtrlC, seconds: float) -> None:
        count[0] += 1
        if count[0] > guard:
            raise KeyboardInterrupt
        action(count[0])

    monkeypatch.setattr(CtrlC, "sleep", sleep)


def _events(stdout: str) -> list[dict]:
    return [json.loads(x) for x in stdout.splitlines() if x.strip()]


def test_deleting_the_only_watched_file_ends_the_watch_with_its_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.csv"
    sweep_df(wds=(1.0,), seeds=(0, 1)).to_csv(log, index=False)
    _drive(monkeypatch, lambda k: log.unlink() if k == 1 else None)
    out = cli(["watch", log, "--interval", "0.05", "--idle", "600", "--jsonl"], cwd=tmp_path)
    assert out.exit_code in (0, 1), out  # ended by itself: not the guard's Ctrl-C (130)
    ev = _events(out.stdout)
    gone = [e for e in ev if e["event"] == "vanished"]
    assert [e["path"] for e in gone] == [str(log)], out
    summary = ev[-1]
    assert summary["event"] == "summary" and summary["vanished"] == [str(log)], out
    last = {e["run"]: e for e in ev if e["event"] == "run"}
    assert set(last) == {"wd1.0_s0", "wd1.0_s1"}
    assert all(e["stopped"] and e["why_stopped"] == "vanished" for e in last.values()), ev


def test_a_file_deleted_before_any_run_was_read_is_file_not_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.csv"
    sweep_df(wds=(1.0,), seeds=(0,)).head(0).to_csv(log, index=False)  # a header: waited for
    _drive(monkeypatch, lambda k: log.unlink() if k == 1 else None)
    out = cli(["watch", log, "--interval", "0.05", "--idle", "600"], cwd=tmp_path)
    # the wait and the file's going are said (notes) before the one error line
    assert out.exit_code == 2 and out.stdout == "", out
    assert out.stderr.rstrip("\n").split("\n")[-1].endswith("[FILE_NOT_FOUND]"), out


def test_deleting_one_of_two_watched_files_stops_its_runs_and_watches_the_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    sweep_df(wds=(1.0,), seeds=(0,)).to_csv(a, index=False)
    sweep_df(wds=(2.0,), seeds=(0,)).to_csv(b, index=False)

    def act(k: int) -> None:
        if k == 1:
            b.unlink()
        time.sleep(0.05)  # real time: the other file's run goes idle after --idle seconds

    _drive(monkeypatch, act)
    out = cli(["watch", a, b, "--interval", "0.05", "--idle", "0.4", "--jsonl"], cwd=tmp_path)
    assert out.exit_code in (0, 1), out
    ev = _events(out.stdout)
    assert [e["path"] for e in ev if e["event"] == "vanished"] == [str(b)], out
    last = {e["run"]: e for e in ev if e["event"] == "run"}
    assert last["wd2.0_s0"]["why_stopped"] == "vanished", ev  # its log went
    assert last["wd1.0_s0"]["why_stopped"] == "idle", ev  # still read, then idle
    assert ev[-1]["event"] == "summary" and ev[-1]["vanished"] == [str(b)]


def test_a_log_truncated_and_rewritten_is_said_not_silently_rewound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.csv"
    df = sweep_df(wds=(1.0,), seeds=(0,))
    df.to_csv(log, index=False)
    last_before = int(df["step"].max())
    cut = int(df["step"].iloc[len(df) // 2])

    def rewrite(k: int) -> None:
        if k == 1:
            df[df["step"] <= cut].to_csv(log, index=False)

    _drive(monkeypatch, rewrite, guard=3)
    out = cli(["watch", log, "--interval", "0.05", "--idle", "600", "--jsonl"], cwd=tmp_path)
    assert out.exit_code == 130, out  # the guard ended it: the run is still open
    notes = [e for e in _events(out.stdout) if e["event"] == "rows_vanished"]
    assert len(notes) == 1, out
    n = notes[0]
    assert n["run"] == "wd1.0_s0" and n["last_step_before"] == last_before
    assert n["last_step"] == cut and n["rows"] < n["rows_before"]


@pytest.mark.parametrize("flag", [["--metric", "emb_eranq"],
                                  ["--grok-on", "test_los", "--grok-below", "0.1"]])
def test_once_refuses_a_misspelt_column_as_check_does(tmp_path: Path, flag: list[str]) -> None:
    """The runs of a CSV are never closed: before, `watch --once` printed them as running
    (waiting for the column) and exited 0, where check refuses the name."""
    log = tmp_path / "log.csv"
    sweep_df(wds=(1.0,), seeds=(0,)).to_csv(log, index=False)
    check_code, _ = expect_error(cli(["check", log, *flag], cwd=tmp_path))
    watch_code, _ = expect_error(cli(["watch", log, "--once", *flag], cwd=tmp_path))
    assert watch_code == check_code
    if flag[0] == "--metric":
        assert watch_code == "METRIC_NOT_FOUND"


def test_a_metric_not_logged_yet_is_waited_for_live_and_refused_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same log, before its runs log the metric: --once (nothing more will come) refuses
    the name as check does; a live watch waits, and reads the column once it is logged."""
    log = tmp_path / "log.csv"
    df = sweep_df(wds=(1.0,), seeds=(0,))
    df.drop(columns=["emb_erank"]).to_csv(log, index=False)
    expect_error(cli(["watch", log, "--once", "--metric", "emb_erank"], cwd=tmp_path),
                 "METRIC_NOT_FOUND")
    _drive(monkeypatch, lambda k: df.to_csv(log, index=False) if k == 1 else None, guard=2)
    out = cli(["watch", log, "--interval", "0.05", "--jsonl", "--metric", "emb_erank"],
              cwd=tmp_path)
    assert out.exit_code == 130, out  # the guard's Ctrl-C: the run is still open
    runs = [e for e in _events(out.stdout) if e["event"] == "run"]
    assert runs[-1]["metrics"] and runs[-1]["metrics"][0]["metric"] == "emb_erank", out


@pytest.mark.skipif(sys.platform == "win32", reason="SIGHUP")
def test_sighup_prints_the_summary_and_exits_129(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    sweep_df(wds=(1.0,), seeds=(0,)).to_csv(log, index=False)
    proc = subprocess.Popen([sys.executable, "-m", "grokaudit", "watch", str(log),
                             "--interval", "0.1", "--jsonl"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        while True:  # the watch is under way once a run's line is out
            line = proc.stdout.readline()
            assert line, proc.communicate(timeout=30)
            if json.loads(line)["event"] == "run":
                break
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 129, (proc.returncode, err)
    assert "Traceback" not in err
    summary = json.loads(out.splitlines()[-1])
    assert summary["event"] == "summary" and summary["ended"] == "hung up"


def test_on_duplicate_is_honoured_as_in_check(tmp_path: Path) -> None:
    """A plain CSV with one (run, step) logged twice with different values: refused without
    --on-duplicate (DUPLICATE_ROWS, as check), and read with the last value with
    ``--on-duplicate last``: the same states as the log with that row alone."""
    df = sweep_df(wds=(1.0,), seeds=(0,))
    twice = df.iloc[[20]].copy()
    twice["emb_erank"] = twice["emb_erank"] + 3.0
    pd.concat([df, twice], ignore_index=True).to_csv(tmp_path / "dup.csv", index=False)
    kept = df.copy()
    kept.loc[20, "emb_erank"] = twice["emb_erank"].iloc[0]
    kept.to_csv(tmp_path / "last.csv", index=False)
    expect_error(cli(["check", tmp_path / "dup.csv"], cwd=tmp_path), "DUPLICATE_ROWS")
    expect_error(cli(["watch", tmp_path / "dup.csv", "--once"], cwd=tmp_path),
                 "DUPLICATE_ROWS")
    got = cli(["watch", tmp_path / "dup.csv", "--once", "--jsonl", "--on-duplicate", "last"],
              cwd=tmp_path)
    want = cli(["watch", tmp_path / "last.csv", "--once", "--jsonl"], cwd=tmp_path)
    assert got.exit_code == want.exit_code == 0, (got, want)
    runs = [[e for e in _events(o.stdout) if e["event"] == "run"] for o in (got, want)]
    assert runs[0] == runs[1] and runs[0], (got, want)
    # and the choice is in the watch's trail, its first line, as in check's
    trail = _events(got.stdout)[0]
    assert trail["event"] == "trail" and trail["input_mapping"]["--on-duplicate"] == "last"


def test_an_early_percent_run_is_waited_for_while_its_log_grows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A live percent run logs 0.5, 1.2, 1.3, 1.4 % before any value passes 1.5: check refuses
    those rows (not clearly percent), and watch gave up after --idle seconds of failed reads
    although the log kept growing; the wait now runs from the log's last change."""
    import math
    import time

    log = tmp_path / "log.csv"
    log.write_text("run,step,test_acc,emb\nr,0,0.5,30\nr,100,1.2,29\nr,200,1.3,28\n"
                   "r,300,1.4,27\n")

    def grow(k: int) -> None:
        time.sleep(0.06)  # more than --idle passes while the log grows
        if k <= 40:
            s = 300 + 100 * k
            with log.open("a") as f:
                f.write(f"r,{s},{100 / (1 + math.exp(-(s - 1500) / 100))},"
                        f"{10 + 20 / (1 + math.exp((s - 2000) / 100))}\n")

    _drive(monkeypatch, grow, guard=120)
    out = cli(["watch", log, "--metric", "emb", "--interval", "0.05", "--idle", "0.5",
               "--jsonl"], cwd=tmp_path)
    assert out.exit_code in (0, 1), out  # not check's refusal (2), not the guard (130)
    last = [e for e in _events(out.stdout) if e["event"] == "run"][-1]
    assert last["grokked"] and last["step"] == 4300, last
    # once the log stops growing with a refusal standing, it is refused as check refuses it
    log.write_text("run,step,test_acc,emb\nr,0,0.5,30\nr,100,1.2,29\nr,200,1.3,28\n")
    _drive(monkeypatch, lambda k: time.sleep(0.06), guard=120)
    out = cli(["watch", log, "--metric", "emb", "--interval", "0.05", "--idle", "0.3"],
              cwd=tmp_path)
    # the wait is said (a note), then check's one coded line, naming the file
    assert out.exit_code == 2 and out.stdout == "", out
    last_line = out.stderr.rstrip("\n").split("\n")[-1]
    assert last_line.endswith("[ACCURACY_OUT_OF_RANGE]") and str(log) in last_line, out


def _text_in_metric(df: pd.DataFrame) -> pd.DataFrame:
    df = df.assign(emb_erank=df["emb_erank"].astype(object))
    df.loc[5, "emb_erank"] = "oops"
    return df


def _per_step_wd(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(wd=df["wd"] + df["step"] / 1e6)


def _metric_set_per_run(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(my_metric=df["wd"] * 10.0)


def _inf_metric(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df.loc[7, "emb_erank"] = float("inf")
    return df


def _conflicting_duplicate(df: pd.DataFrame) -> pd.DataFrame:
    row = df.iloc[[4]].assign(test_acc=0.123)
    return pd.concat([df, row], ignore_index=True)


def _accuracy_out_of_range(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df.loc[3, "test_acc"] = -0.5
    return df


def _with_loss(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(test_loss=1.0 - df["test_acc"])


def _text_condition_changes(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(opt=["adam" if i % 2 else "sgd" for i in range(len(df))])


# (what is wrong, how the log is broken, extra flags, the code check refuses it with)
_REFUSED = [
    ("text cell in a metric", _text_in_metric, [], "BAD_COLUMN_TYPE"),
    ("--by a per-step column", _per_step_wd, ["--by", "wd"], "NOT_A_CONDITION"),
    ("--cell a column not there", lambda d: d, ["--cell", "archh"], "NOT_A_CONDITION"),
    ("--metric set per run", _metric_set_per_run, ["--metric", "my_metric"], "NOT_A_SERIES"),
    ("inf in a metric", _inf_metric, [], "INFINITE_VALUE"),
    ("conflicting duplicate rows", _conflicting_duplicate, [], "DUPLICATE_ROWS"),
    ("accuracy below 0", _accuracy_out_of_range, [], "ACCURACY_OUT_OF_RANGE"),
    ("text condition changing in a run", _text_condition_changes, [], "NOT_CONSTANT_IN_RUN"),
    ("the loss criterion also the metric", _with_loss,
     ["--grok-on", "test_loss", "--grok-below", "0.1", "--metric", "test_loss"],
     "INVALID_OPTION"),
]


@pytest.mark.parametrize("what,broken,flags,code", _REFUSED, ids=[r[0] for r in _REFUSED])
def test_watch_refuses_what_check_refuses_with_its_code(
        tmp_path: Path, what: str, broken: Callable[[pd.DataFrame], pd.DataFrame],
        flags: list[str], code: str) -> None:
    """One refusal stage (issue 43 item 1): watch --once and check give the same code on the
    same broken log — watch keeps no copy of check's rules that could drift."""
    log = tmp_path / "log.csv"
    broken(sweep_df(wds=(1.0, 2.0), seeds=(0,))).to_csv(log, index=False)
    check_code, _ = expect_error(cli(["check", log, *flags], cwd=tmp_path))
    assert check_code == code
    once_code, _ = expect_error(cli(["watch", log, "--once", *flags], cwd=tmp_path))
    assert once_code == code


@pytest.mark.parametrize("flag", ["by", "cell"])
def test_a_misspelt_condition_is_refused_while_a_required_column_is_awaited(
        tmp_path: Path, flag: str) -> None:
    """A log with no test accuracy yet (the user forgot --grok-on, or it is not logged yet) is
    waited for; a --by or --cell naming no column is a typo, refused at the first read
    (NOT_A_CONDITION), not after --idle seconds as the missing accuracy."""
    from grokaudit.config import make_config
    from grokaudit.errors import LogFormatError
    from grokaudit.watch import Watcher

    log = tmp_path / "log.csv"
    sweep_df(wds=(1.0, 2.0), seeds=(0,)).drop(columns=["test_acc"]).to_csv(log, index=False)
    typo = {"by": "wdd", "cell": "archh"}[flag]
    waiting = Watcher([str(log)], make_config(**{flag: typo}))
    with pytest.raises(LogFormatError) as exc:
        waiting.poll()
    assert exc.value.code.value == "NOT_A_CONDITION" and exc.value.column == typo
    # spelt right, the same log is read and its runs wait for the accuracy
    states = Watcher([str(log)], make_config(**{flag: {"by": "wd", "cell": "seed"}[flag]})
                     ).poll()
    assert len(states) == 2 and not any(w.state.grokked for w in states)
