"""`grokaudit suite`: table or JSON, exit codes, the user's config, and no hypothesis."""

import json
import sys

import pytest
from click.testing import CliRunner
from grokaudit.cli import cli

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture
def no_claim_cases(monkeypatch):
    """The suite without its claim cases, for the tests of what the command does with the core
    cases, its options and its outputs: the claim cases take most of a suite's time, and they
    run under the default and the users' thresholds in test_suite_claims.py (and here in full
    for the default profile and the thresholds they follow that no other test varies)."""
    import grokaudit.adversarial_suite.runner as runner

    monkeypatch.setattr(runner, "run_claim_cases", lambda cfg=None: ())


@pytest.mark.slow  # a whole suite run (20-30 s)
def test_suite_passes_on_the_default_profile_and_writes_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no grokaudit.toml / pyproject above: the defaults
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "5", "--json", "-"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["passed"] is True and data["profile"] == "default"
    assert len(data["cases"]) >= 20 and all(c["pass"] for c in data["cases"])
    assert len(data["properties"]) == 4 and all(p["pass"] for p in data["properties"])


@pytest.mark.usefixtures("no_claim_cases")
def test_suite_reference_profile_fails_several_cases(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["suite", "--profile", "reference", "--max-examples", "0",
                                 "--json", "-"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    failed = {c["case"] for c in data["cases"] if not c["pass"]}
    assert {"non_monotone_rebound", "late_second_collapse", "half_seeds_censored"} <= failed


@pytest.mark.usefixtures("no_claim_cases")
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


@pytest.mark.usefixtures("no_claim_cases")
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


@pytest.mark.slow  # a whole suite run (20-30 s)
def test_suite_ignores_a_projects_fail_on(tmp_path):
    # fail_on is a reporting choice; the cases' exit codes are registered under the defaults
    from click.testing import CliRunner
    from grokaudit.cli import cli

    cfg = tmp_path / "grokaudit.toml"
    cfg.write_text('fail_on = "none"\n')
    res = CliRunner().invoke(cli, ["suite", "--config", str(cfg), "--max-examples", "0"])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------------------------------
# the user's thresholds (issue 10): every case's answer follows them
# ------------------------------------------------------------------------------------------

def _toml(values):
    return "".join(f"{k} = {v!r}\n" for k, v in values.items())


@pytest.mark.parametrize("values, examples", [
    ({"grok_threshold": 0.5, "full_threshold": 0.6}, 0),
    ({"grok_threshold": 0.9, "full_threshold": 0.98}, 0),
    ({"grok_threshold": 0.95, "full_threshold": 0.98}, 8),  # a few generated logs too
    ({"grok_threshold": 0.99, "full_threshold": 0.995}, 0),
    ({"rel_tol": 0.1, "transient_threshold": 2.0}, 0),
    ({"rel_tol": 0.03, "transient_threshold": 1.5, "smooth": 5, "sustain": 5}, 0),
], ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else str(v))
@pytest.mark.slow  # a whole suite run (20-30 s)
def test_suite_passes_under_the_users_thresholds(tmp_path, monkeypatch, request, values,
                                                examples):
    """`grokaudit suite --config` against a project's thresholds: no false FAIL (before, any
    grok_threshold above 0.93 failed the property run, and a rel_tol or transient_threshold
    of its own failed named cases). The claim cases run where no other test varies these
    thresholds for them (test_suite_claims.py runs them at low and high accuracy thresholds)."""
    if set(values) <= {"grok_threshold", "full_threshold"} and not examples:
        request.getfixturevalue("no_claim_cases")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grokaudit.toml").write_text(_toml(values), encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--config", "grokaudit.toml", "--max-examples",
                                 str(examples), "--json", "-"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["passed"] is True
    assert [c["case"] for c in data["cases"] if not c["pass"]] == []
    assert all(data["config"][k] == v for k, v in values.items())
    if examples:
        assert data["properties"] and all(p["pass"] for p in data["properties"])


@pytest.mark.usefixtures("no_claim_cases")
def test_suite_says_which_threshold_a_case_keeps(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grokaudit.toml").write_text("censor_warn = 0.6\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "0"])
    assert r.exit_code == 0, r.output
    assert "thresholds a case cannot follow" in r.stdout
    assert "half_seeds_censored: censor_warn = 0.6" in r.stdout


def test_suite_json_path_is_checked_before_any_case_runs(tmp_path, monkeypatch):
    import grokaudit.adversarial_suite.runner as suite_cli

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "grokaudit.toml"
    cfg.write_text("grok_threshold = 0.95\n", encoding="utf-8")
    (tmp_path / "a-folder").mkdir()

    def ran(*a, **k):
        raise AssertionError("the suite ran before --json was checked")

    monkeypatch.setattr(suite_cli, "run_suite", ran)
    for path, code in [("a-folder", "OUTPUT_IS_DIRECTORY"),
                       ("grokaudit.toml", "OUTPUT_IS_INPUT"),  # the config found upwards
                       ("grokaudit.toml/out.json", "OUTPUT_NOT_WRITABLE")]:
        r = CliRunner().invoke(cli, ["suite", "--max-examples", "0", "--json", path])
        assert r.exit_code == 2, (path, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and f"[{code}]" in lines[0]
    r = CliRunner().invoke(cli, ["suite", "--config", str(cfg), "--json", str(cfg)])
    assert r.exit_code == 2 and "[OUTPUT_IS_INPUT]" in r.stderr
    assert cfg.read_text(encoding="utf-8") == "grok_threshold = 0.95\n"


@pytest.mark.usefixtures("no_claim_cases")
def test_suite_writes_json_to_a_file_atomically(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "0", "--json", "out.json"])
    assert r.exit_code == 0, r.output
    assert "cases pass; PASS" in r.stdout  # the table still goes to stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["passed"] is True and data["properties"] is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


@pytest.mark.parametrize("text, code", [
    ("grok_threshold = 1.5\n", "OPTION_OUT_OF_RANGE"),
    ("rel_tol = -0.1\n", "OPTION_OUT_OF_RANGE"),
    ("grok_treshold = 0.9\n", "UNKNOWN_OPTION"),
    ("smooth = 'wide'\n", "INVALID_OPTION"),
    ("grok_threshold = \n", "CONFIG_SYNTAX"),
])
def test_suite_invalid_config_is_one_line_and_exit_2(tmp_path, monkeypatch, text, code):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grokaudit.toml").write_text(text, encoding="utf-8")
    for args in (["--config", "grokaudit.toml"], []):  # named, or found upwards
        r = CliRunner().invoke(cli, ["suite", *args, "--max-examples", "0", "--json", "x.json"])
        assert r.exit_code == 2, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
        assert lines[0].endswith(f"[{code}]")
        assert r.stdout == "" and not (tmp_path / "x.json").exists()
    r = CliRunner().invoke(cli, ["suite", "--config", "missing.toml"])
    assert r.exit_code == 2 and r.stderr.strip().endswith("[CONFIG_NOT_FOUND]")
