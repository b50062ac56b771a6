"""The audit trail (issue 21): a config file two folders up never changes an audit unseen,
every changed setting is named, a modified profile is not printed as that profile, inputs are
named with their bytes, and identical runs give identical trails."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from grokaudit import AuditConfig, make_config
from grokaudit.cli import cli
from grokaudit.config import _CHOICES, RANGES
from grokaudit.trail import make_trail, profile_label

LOG = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
ARGS = ["--by", "wd", "--metric", "emb_erank", "--cell", "arch"]


def _other_value(name: str, default: Any) -> Any:
    """A valid value of setting ``name`` other than its default."""
    special = {"by": "wd", "cell": ["arch"], "metrics": ["emb_pr"], "acc_scale": 100.0,
               "acc_scales": ["test_acc=100"], "fail_on": ["warning"], "grok_on": "test_loss",
               "grok_below": 0.5, "full_below": 0.4}
    if name in special:
        return special[name]
    if name in _CHOICES:
        return next(c for c in _CHOICES[name] if c != default)
    if isinstance(default, bool):
        return not default
    if name in RANGES:
        r = RANGES[name]
        for v in (r.lo + (r.hi - r.lo) / 3, (r.lo + r.hi) / 2, r.lo + 1, r.hi):
            v = int(v) if isinstance(default, int) else v
            if v != default and r.contains(v):
                return v
    raise AssertionError(f"no other value for {name}")


def test_every_setting_appears_in_the_text_trail_when_changed() -> None:
    names = [f.name for f in fields(AuditConfig) if f.name not in ("extra", "profile")]
    seen = []
    for name in names:
        default = getattr(AuditConfig(), name)
        value = _other_value(name, default)
        extra: dict[str, Any] = {}
        if name in ("grok_on", "grok_below", "full_below"):
            extra = {"grok_on": "test_loss", "grok_below": 0.5}
        if name == "max_floor_frac":
            extra = {"floor_frac": 0.05}
        if name == "floor_frac":
            value, extra = 0.2, {}
        if name in ("mono_threshold", "flat_threshold"):
            value = {"mono_threshold": 0.7, "flat_threshold": 0.2}[name]
        cfg = make_config(**{name: value, **extra})
        text = "\n".join(make_trail(cfg, version="x").lines())
        assert f"{name}=" in text.split("\n")[0], (name, text)
        seen.append(name)
    assert len(seen) == len(names) >= 45


def test_a_modified_profile_is_not_printed_as_that_profile() -> None:
    assert profile_label(make_config()) == "default"
    assert profile_label(make_config(stability_check=False)) == \
        "default (modified: stability_check=false)"
    assert profile_label(make_config(profile="reference")) == "reference"
    assert profile_label(make_config(profile="reference", rule="settle")).startswith(
        "reference (modified: rule=settle")


def _run(cwd: Path, *extra: str) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(cli, ["check", str(LOG), *ARGS, *extra])
    finally:
        os.chdir(old)
    return r.exit_code, r.output


def test_a_config_file_above_the_repository_is_never_read(tmp_path: Path) -> None:
    # the case: abs_tol = 1e9 two folders up turned 7 critical findings into exit 0
    (tmp_path / "grokaudit.toml").write_text("abs_tol = 1e9\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    work = repo / "analysis"
    work.mkdir()
    code, out = _run(work)
    assert code == 1 and "abs_tol" not in out
    assert "config file: none (looked in . up to ..)" in out
    # inside the repository it is read — and named, with its digest, and the setting listed
    (repo / "grokaudit.toml").write_text("abs_tol = 1e9\n")
    code, out = _run(work)
    digest = hashlib.sha256(b"abs_tol = 1e9\n").hexdigest()
    assert "abs_tol=1000000000.0" in out
    assert f"config file: ../grokaudit.toml (sha256 {digest[:16]})" in out


def test_discovery_stops_at_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "grokaudit.toml").write_text("abs_tol = 1e9\n")
    home = tmp_path / "home"
    work = home / "project"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    code, out = _run(work)
    assert "abs_tol" not in out and "config file: none (looked in . up to ..)" in out


def test_the_trail_names_inputs_mapping_and_command_in_json(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["check", str(LOG), *ARGS, "--on-duplicate", "first",
                                 "--json", "-"])
    t = json.loads(r.output)["trail"]
    assert t["inputs"] == [{"path": str(LOG), "size": LOG.stat().st_size,
                            "sha256": hashlib.sha256(LOG.read_bytes()).hexdigest()}]
    assert t["input_mapping"] == {"--on-duplicate": "first"}
    assert t["changed_settings"]["on_duplicate"] == "first"
    assert t["command"] == ["grokaudit", "check", str(LOG), *ARGS, "--on-duplicate", "first",
                            "--json", "-"]
    again = CliRunner().invoke(cli, ["check", str(LOG), *ARGS, "--on-duplicate", "first",
                                     "--json", "-"])
    assert again.output == r.output  # identical inputs, settings and command: the same bytes


def test_claim_results_carry_the_trail() -> None:
    r = CliRunner().invoke(cli, ["onset", str(LOG), "--by", "wd", "--cell", "arch",
                                 "--n-resamples", "9", "--json", "-"])
    t = json.loads(r.output)["trail"]
    assert t["command"][:2] == ["grokaudit", "onset"] and len(t["inputs"]) == 1
    text = CliRunner().invoke(cli, ["onset", str(LOG), "--by", "wd", "--cell", "arch",
                                    "--n-resamples", "9"]).output
    assert "trail: grokaudit" in text and "sha256" in text


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_inputs_hashed_ahead_are_the_inputs_hashes(tmp_path: Path) -> None:
    from grokaudit.trail import HashAhead

    (tmp_path / "wd=0.1").mkdir()
    a, b = tmp_path / "wd=0.1" / "part-0.parquet", tmp_path / "z.blob"
    a.write_bytes(LOG.read_bytes())
    b.write_bytes(os.urandom(3 << 20))  # several hashing chunks
    with HashAhead([str(tmp_path)]) as ahead:
        files = ahead.files()
    assert [(f.path, f.size, f.sha256) for f in files] == [
        (str(p), p.stat().st_size, _digest(p)) for p in (a, b)]


def test_checkpoints_beside_a_log_are_not_hashed_as_inputs(tmp_path: Path) -> None:
    """A Lightning run's model checkpoint is no part of its log (no reader opens one):
    the trail of `check` on the folder lists the log only (issue 41)."""
    run = tmp_path / "version_0"
    (run / "checkpoints").mkdir(parents=True)
    (run / "metrics.parquet").write_bytes(LOG.read_bytes())
    for name in ("epoch=9.ckpt", "model.safetensors", "pytorch_model.bin", "opt.pt"):
        (run / "checkpoints" / name).write_bytes(os.urandom(1 << 16))
    r = CliRunner().invoke(cli, ["check", str(tmp_path), *ARGS, "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    paths = [x["path"] for x in json.loads(r.output)["trail"]["inputs"]]
    assert paths == [str(run / "metrics.parquet")]


def test_hashing_called_off_early_still_gives_the_hashes(tmp_path: Path) -> None:
    from grokaudit.trail import HashAhead

    p = tmp_path / "big.bin"
    p.write_bytes(os.urandom(4 << 20))
    ahead = HashAhead([str(p)])
    ahead.stop()  # whether or not the thread had finished, the hashes asked for are whole
    assert [f.sha256 for f in ahead.files()] == [_digest(p)]


def test_a_failed_audit_calls_its_hashing_off(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import grokaudit
    from grokaudit import trail
    from grokaudit.errors import ErrorCode, LogFormatError

    made: list[trail.HashAhead] = []

    class Recorded(trail.HashAhead):
        def __init__(self, paths: Any) -> None:
            super().__init__(paths)
            made.append(self)

    monkeypatch.setattr(trail, "HashAhead", Recorded)
    bad = tmp_path / "log.csv"
    bad.write_text("run,step,test_acc\n")  # a header, no rows
    with pytest.raises(LogFormatError) as exc:
        grokaudit.audit_path(bad)
    assert exc.value.code == ErrorCode.NO_ROWS
    assert len(made) == 1 and made[0]._stop.is_set()


def test_an_error_while_hashing_ahead_reaches_the_caller(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from grokaudit import trail

    def broken(self: Any) -> bool:
        raise ValueError("not hashable")

    monkeypatch.setattr(trail._Hashing, "step", broken)
    p = tmp_path / "f.bin"
    p.write_bytes(b"x")
    with pytest.raises(ValueError):
        trail.HashAhead([str(p)]).files()


def test_a_log_written_while_it_is_audited_is_said_in_the_trail(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log still being written (a row appended after the audit read it, before its sha256
    was taken): the trail's hash is not of the bytes audited, and the trail says so, naming
    the file, in the JSON and the text. Unchanged, the trail has no note."""
    import grokaudit.schema as schema
    import pandas as pd

    log = tmp_path / "log.csv"
    pd.read_parquet(LOG).to_csv(log, index=False)
    args = ["check", str(log), *ARGS, "--json", "-"]
    calm = json.loads(CliRunner().invoke(cli, args).output)["trail"]
    assert calm["notes"] == []

    real = schema.pacsv.read_csv

    def read_then_written(path: Any, **k: Any) -> Any:
        table = real(path, **k)
        with open(log, "a", encoding="utf-8") as fh:  # the trainer logs one more row
            fh.write("\n")
        st = log.stat()
        os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        return table

    monkeypatch.setattr(schema.pacsv, "read_csv", read_then_written)
    r = CliRunner().invoke(cli, args)
    t = json.loads(r.output)["trail"]
    assert len(t["notes"]) == 1 and str(log) in t["notes"][0]
    text = CliRunner().invoke(cli, args[:-2]).output
    assert "note: 1 input file(s) changed" in text


def test_an_audit_whose_hashing_thread_never_runs_still_names_its_input(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with no idle CPU never schedules the idle-class hashing thread: the audit
    does not wait for it (HANDOVER_WAIT), and its trail still gives the file's own size and
    sha256, hashed by the audit's thread."""
    import threading
    import time

    import grokaudit
    from grokaudit import trail

    never = threading.Event()
    monkeypatch.setattr(trail, "run_when_idle", lambda: never.wait(60))  # starved
    monkeypatch.setattr(trail, "HANDOVER_WAIT", 0.05)
    t0 = time.perf_counter()
    try:
        res = grokaudit.audit_path(LOG, by="wd", metrics=["emb_erank"], cell=["arch"])
    finally:
        never.set()
    assert time.perf_counter() - t0 < 30  # not the 60 s the thread is held for
    assert [(f.path, f.size, f.sha256) for f in res.trail.inputs] == [
        (str(LOG), LOG.stat().st_size, _digest(LOG))]
