"""The CLI and the result's JSON: determinism, config sources, exit codes."""

import json
import os

import grokaudit
from click.testing import CliRunner
from grokaudit.cli import cli
from helpers.core_builders import cells_from


def log(tmp_path):
    df = cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000), (1.3, 4000, 13000)])
    p = tmp_path / "logs.parquet"
    grokaudit.write_table(df, p)
    return str(p)


def invoke(*args, cwd=None):
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_same_input_and_config_give_byte_identical_json(tmp_path):
    p = log(tmp_path)
    out = tmp_path / "a.json"
    a = invoke("check", p, "--json", str(out))
    first = out.read_bytes()
    b = invoke("check", p, "--json", str(out))  # the same command: the same trail too
    assert a.exit_code == b.exit_code == 1
    assert first == out.read_bytes()
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["schema"] == "grokaudit.audit/1"
    assert doc["summary"]["exit_code"] == 1


def test_json_to_stdout_replaces_the_text(tmp_path):
    res = invoke("check", log(tmp_path), "--json", "-")
    doc = json.loads(res.output)
    assert doc["summary"]["verdicts"][0]["verdict"] == "ONE_CLOCK_LARGE_LAG"
    assert "SNAPSHOT_TRANSIENT" in doc["summary"]["failing_codes"]


def test_exit_codes_and_fail_on(tmp_path):
    p = log(tmp_path)
    assert invoke("check", p).exit_code == 1
    assert invoke("check", p, "--fail-on", "none").exit_code == 0
    assert invoke("check", p, "--fail-on", "REBOUND,NO_GROK").exit_code == 0
    assert invoke("check", p, "--fail-on", "SHARED_ENDPOINT").exit_code == 1


def test_config_from_pyproject_and_grokaudit_toml(tmp_path):
    p = log(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.grokaudit]\nfail_on = "none"\nrule = "crossing"\n')
    res = invoke("check", p, "--json", "-", cwd=tmp_path)
    doc = json.loads(res.output)
    assert res.exit_code == 0 and doc["config"]["rule"] == "crossing"
    # grokaudit.toml wins over pyproject.toml in the same folder; flags win over both
    (tmp_path / "grokaudit.toml").write_text('fail_on = "default"\n')
    assert invoke("check", p, cwd=tmp_path).exit_code == 1
    res2 = invoke("check", p, "--rule", "settle", "--fail-on", "none", "--json", "-", cwd=tmp_path)
    assert json.loads(res2.output)["config"]["rule"] == "settle" and res2.exit_code == 0


def test_effective_config_is_echoed(tmp_path):
    res = invoke("check", log(tmp_path), "--grok-threshold", "0.95")
    assert "grok_threshold=0.95" in res.output
    doc = json.loads(invoke("check", log(tmp_path), "--grok-threshold", "0.95", "--json",
                            "-").output)
    assert doc["config"]["grok_threshold"] == 0.95


def test_python_api_matches_the_cli(tmp_path):
    p = log(tmp_path)
    api = grokaudit.audit_path(p).to_json()
    cli_json = invoke("check", p, "--json", "-").output
    a, b = json.loads(api), json.loads(cli_json)
    a["input"]["source"] = b["input"]["source"]
    ta, tb = a.pop("trail"), b.pop("trail")
    assert a == b
    # the trails name the same input, bytes and settings; only the CLI has a command line and
    # looks for a config file (the Python API reads none)
    assert ta["inputs"] == tb["inputs"] and len(ta["inputs"]) == 1
    assert ta["changed_settings"] == tb["changed_settings"]
    assert ta["command"] is None and tb["command"][:2] == ["grokaudit", "check"]


def test_lazy_command_without_its_dependency_is_a_clean_error(monkeypatch):
    import grokaudit.cli as c

    monkeypatch.setitem(c.LAZY_COMMANDS, "train", ("grokaudit_no_such_module:train", "x"))
    res = CliRunner().invoke(cli, ["train", "a.toml"])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_a_folder_of_parquet_shards_reads_as_one_dataset(tmp_path):
    df = cells_from([(1.1, 2000, 9000), (1.2, 3000, 11000), (1.3, 4000, 13000)])
    whole = tmp_path / "whole.parquet"
    grokaudit.write_table(df, whole)
    shards = tmp_path / "shards"
    for i, rho in enumerate((1.1, 1.2, 1.3)):
        grokaudit.write_table(df[df["rho"] == rho], shards / f"part-{i}.parquet")
    a = json.loads(invoke("check", str(whole), "--json", "-").output)
    b = json.loads(invoke("check", str(shards), "--json", "-").output)
    assert a["studies"] == b["studies"]
    assert b["input"]["provenance"]["shards"] == ["part-0.parquet", "part-1.parquet",
                                                   "part-2.parquet"]


def test_check_sensitivity_reports_the_grid(tmp_path):
    res = invoke("check", log(tmp_path), "--sensitivity", "--fail-on", "none", "--json", "-")
    doc = json.loads(res.output)
    assert doc["schema"].startswith("grokaudit.sensitivity/")
    moved = {m["parameter"] for m in doc["moves"]}
    fragile = [f for f in doc["findings"] if f["code"] == "VERDICT_FRAGILE"]
    assert bool(fragile) == bool(moved)
    assert res.exit_code == 0  # --fail-on none: nothing fails, fragile or not
    strict = invoke("check", log(tmp_path), "--sensitivity", "--json", "-")
    assert strict.exit_code == 1  # the baseline has critical findings (ONE_CLOCK log)
    only = invoke("check", log(tmp_path), "--sensitivity", "--fail-on", "VERDICT_FRAGILE",
                  "--json", "-")
    assert only.exit_code == (1 if fragile else 0)


def test_check_report_writes_html(tmp_path):
    import pytest

    pytest.importorskip("matplotlib", reason="the HTML report needs the `report` extra")
    out = tmp_path / "r.html"
    res = invoke("check", log(tmp_path), "--report", str(out))
    assert res.exit_code == 1
    html = out.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "ONE_CLOCK_LARGE_LAG" in html


def test_the_core_imports_no_optional_dependency(tmp_path):
    # ARCHITECTURE.md: the audit core never imports torch, hypothesis, matplotlib or an
    # adapter's optional dependency; `check` on a canonical file stays inside the core
    import subprocess
    import sys

    p = log(tmp_path)
    code = (
        "import sys, grokaudit\n"
        "from grokaudit.cli import main\n"
        f"try:\n    main(['check', {p!r}, '-q'])\nexcept SystemExit:\n    pass\n"
        "bad = sorted(m for m in ('torch', 'hypothesis', 'matplotlib', 'tensorboard', 'wandb',"
        " 'mlflow', 'scipy.stats', 'grokaudit.adapters', 'grokaudit.reference_runs')"
        " if m in sys.modules)\n"
        "print('imported:' + ','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "imported:"


def test_train_without_torch_is_one_line_naming_the_extra(tmp_path):
    """A user without torch gets one line naming `grokaudit[train]`, exit 2, no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import importlib.util\n"
        "importlib.util.find_spec = lambda name, *a: None if name.split('.')[0] == 'torch' "
        "else __import__('importlib').machinery.PathFinder.find_spec(name)\n"
        "from grokaudit.cli import main\n"
        "main(['train', 'reference_runs/configs/mlp_wd_sweep_p59.toml', '-o', sys.argv[1]])\n")
    out = tmp_path / "x.parquet"
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True,
                          text=True, cwd=root)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "grokaudit[train]" in proc.stderr and proc.stderr.strip().endswith("[MISSING_EXTRA]")
    assert not out.exists()


def test_several_studies_print_a_summary_and_details_only_with_verbose(tmp_path):
    """Readable output: one line per study first; the per-study tables of a many-study audit
    only with -v (the failing findings are always listed)."""
    from pathlib import Path

    log = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
    short = CliRunner().invoke(cli, ["check", str(log), "--by", "wd"])
    full = CliRunner().invoke(cli, ["check", str(log), "--by", "wd", "-v"])
    assert short.exit_code == full.exit_code == 1
    assert "== study:" not in short.output and full.output.count("== study:") >= 2
    assert short.output.splitlines()[-1] == full.output.splitlines()[-1]
    assert short.output.index("summary (") < short.output.index("failing findings:")
    assert len(short.output.splitlines()) < len(full.output.splitlines()) / 2


def test_usage_errors_are_one_line_with_a_code(tmp_path):
    """click's usage errors were three lines (usage, a hint, "Error: …") with no code, where
    every other refusal is one `error: … [CODE]` line: a script testing the code saw none."""
    log = tmp_path / "log.csv"
    log.write_text("run,step,test_acc\nr,0,0.1\n")
    cases = [
        (["check", str(log), "--nope"], "UNKNOWN_OPTION"),
        (["--nope"], "UNKNOWN_OPTION"),
        (["check", str(log), "--floor-frac", "abc"], "INVALID_OPTION"),
        (["check"], "INVALID_OPTION"),
        (["chek", str(log)], "INVALID_OPTION"),
        (["compare", str(log), "--by", "m", "--pair", "seed", "--alpha", "2"],
         "INVALID_OPTION"),
    ]
    for args, code in cases:
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.count("\n") == 1, (args, r.stderr)
        assert r.stderr.startswith("error: ") and r.stderr.rstrip().endswith(f"[{code}]"), (
            args, r.stderr)
        assert "--help" in r.stderr  # where to look
    # help is still help, and a bare `grokaudit` still lists the commands
    assert CliRunner().invoke(cli, ["check", "--help"]).exit_code == 0
    bare = CliRunner().invoke(cli, [])
    assert "check" in bare.output and "[INVALID_OPTION]" not in bare.output
