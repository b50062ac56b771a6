"""`grokaudit suite`: table or JSON, exit codes, the user's config, and no hypothesis."""

import json
import sys

import pytest
from click.testing import CliRunner
from grokaudit.cli import cli

pytestmark = pytest.mark.filterwarnings("ignore")


def test_suite_passes_on_the_default_profile_and_writes_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no grokaudit.toml / pyproject above: the defaults
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "5", "--json", "-"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["passed"] is True and data["profile"] == "default"
    assert len(data["cases"]) >= 20 and all(c["pass"] for c in data["cases"])
    assert len(data["properties"]) == 4 and all(p["pass"] for p in data["properties"])


def test_suite_reference_profile_fails_several_cases(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["suite", "--profile", "reference", "--max-examples", "0",
                                 "--json", "-"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    failed = {c["case"] for c in data["cases"] if not c["pass"]}
    assert {"non_monotone_rebound", "late_second_collapse", "half_seeds_censored"} <= failed


def test_suite_uses_the_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "mine.toml"
    cfg.write_text('rule = "crossing"\n', encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--config", str(cfg), "--max-examples", "0"])
    assert r.exit_code == 1
    assert "FAIL" in r.output
    # design fields of the user's project do not break the synthetic logs
    proj = tmp_path / "proj.toml"
    proj.write_text('metrics = ["emb_pr"]\nby = "wd"\ncell = ["arch"]\n', encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--config", str(proj), "--max-examples", "3"])
    assert r.exit_code == 0, r.output
    bad = tmp_path / "bad.toml"
    bad.write_text("no_such_option = 1\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--config", str(bad)])
    assert r.exit_code == 2


def test_suite_runs_the_cases_without_hypothesis(tmp_path, monkeypatch):
    import grokaudit.adversarial_suite as pkg

    monkeypatch.chdir(tmp_path)
    for name in ("properties", "strategies", "profiles"):
        monkeypatch.delitem(sys.modules, f"grokaudit.adversarial_suite.{name}", raising=False)
        monkeypatch.delattr(pkg, name, raising=False)
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # import hypothesis -> ImportError
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "5", "--json", "-"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["properties"] is None
    assert "hypothesis" in data["properties_skipped"]
    assert all(c["pass"] for c in data["cases"])


def test_suite_ignores_a_projects_fail_on(tmp_path):
    # fail_on is a reporting choice; the cases' exit codes are registered under the defaults
    from click.testing import CliRunner
    from grokaudit.cli import cli

    cfg = tmp_path / "grokaudit.toml"
    cfg.write_text('fail_on = "none"\n')
    res = CliRunner().invoke(cli, ["suite", "--config", str(cfg), "--max-examples", "0"])
    assert res.exit_code == 0, res.output
