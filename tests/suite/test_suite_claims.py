"""The claim audits' adversarial cases: each passes, each mutant of a claim audit is caught,
the cases follow the user's thresholds, and `grokaudit suite` runs them (table, JSON, exit)."""

import json
import math

import grokaudit
import pytest
from click.testing import CliRunner
from grokaudit.adversarial_suite import claim_cases as CC
from grokaudit.adversarial_suite.claim_mutants import CLAIM_CAUGHT_BY, CLAIM_MUTANTS
from grokaudit.adversarial_suite.runner import run_claim_case, run_claim_cases
from grokaudit.cli import cli

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("case", CC.CLAIM_CASES, ids=lambda c: c.name)
def test_claim_case_passes_on_the_default_profile(case):
    out = run_claim_case(case)
    assert out.passed, "\n".join(out.mismatches)
    assert out.expected == case.instance().label and not out.notes


def test_the_issue_claim_cases_are_named_and_cover_every_command():
    required = {"onset_lognormal_uncensored", "onset_weibull_uncensored",
                "onset_censored_weibull", "onset_threshold_sensitive", "dose_exponential",
                "dose_indistinguishable", "dose_law_contradicted", "transition_separated",
                "transition_logistic", "transition_too_few_levels", "compare_paired_effect",
                "compare_censored_pairs", "compare_too_few_pairs", "pooled_arms",
                "pooled_arms_split", "precursor_genuine", "precursor_trivial"}
    assert required <= set(CC.CLAIM_CASES_BY_NAME)
    commands = set()
    for case in CC.CLAIM_CASES:
        assert case.title and case.why
        inst = case.instance()
        assert inst.checks and not inst.notes
        commands |= {c.command for c in inst.checks}
    assert commands == set(CC.COMMANDS)
    # pooled arms: every command with an axis refuses, and accepts with --cell
    refused = CC.CLAIM_CASES_BY_NAME["pooled_arms"].instance().checks
    assert {c.command for c in refused} == {"onset", "dose", "transition", "compare"}
    assert all(c.error == "DUPLICATE_AXIS_VALUES" for c in refused)
    split = CC.CLAIM_CASES_BY_NAME["pooled_arms_split"].instance().checks
    assert all(c.kwargs["cell"] == ("arch",) and c.n_studies == 2 for c in split)


def test_the_simulated_truth_is_what_the_cases_say():
    """The oracles, on the constructions alone: logged steps, censoring and the medians."""
    k = CC.CK(grokaudit.make_config())
    runs, _ = CC._onset_runs("weibull", 0.5, 20, 0, 50, 3000)
    assert all(r.tg == math.ceil(r.t_grok / 50) * 50 or (r.t_grok > 3000 and
                                                          math.isinf(r.tg)) for r in runs)
    h16 = [r for r in runs if r.conditions["H"] == 16]
    assert sum(math.isinf(r.tg) for r in h16) * 2 >= len(h16)  # the H = 16 median is censored
    med = CC.plain_median(h16, k)
    assert med == {"censored": True, "value": None, "lower": 3000.0}
    # a gap's value lies inside its interval, one cadence from its upper end
    r = CC._onset_runs("lognormal", 0.4, 3, 0, 20)[0][0]
    g = CC.plain_median([r], k, "gap")
    assert g["lower"] < g["value"] < g["upper"] and g["upper"] - g["value"] == 20
    # the expected grok counts of the logistic transition overlap: no separation
    counts = CC._logistic_counts((0.175, 0.2475, 0.35, 0.495, 0.7, 0.9899, 1.4, 1.9799), 0.7,
                                 3.0, 12)
    assert counts == [0, 1, 1, 3, 6, 9, 11, 11]  # overlapping from 0.2475 to 1.98
    # the logs follow the thresholds: test_acc below grok_threshold until the true grok time
    for g_ in (0.05, 0.5, 1.0):
        kk = CC.CK(grokaudit.make_config(grok_threshold=g_, full_threshold=max(g_, 0.1)))
        assert kk.acc_low < 0.6 * g_ and kk.train_low < kk.cfg.mem_threshold


@pytest.mark.parametrize("values", [
    {"grok_threshold": 0.5, "full_threshold": 0.6, "mem_threshold": 0.6},
    {"grok_threshold": 0.99, "full_threshold": 0.995, "mem_threshold": 1.0, "sustain": 1},
], ids=["low-thresholds", "high-thresholds"])
@pytest.mark.slow  # a whole suite run (20-30 s)
def test_claim_cases_follow_the_users_thresholds(values):
    outs = run_claim_cases(grokaudit.make_config(**values))
    assert [o.name for o in outs if not o.passed] == [], \
        {o.name: o.mismatches[:3] for o in outs if not o.passed}


def test_every_claim_mutant_has_an_expected_catch():
    assert {m.name for m in CLAIM_MUTANTS} == set(CLAIM_CAUGHT_BY)
    assert all(CLAIM_CAUGHT_BY[m] <= set(CC.CLAIM_CASES_BY_NAME) for m in CLAIM_CAUGHT_BY)
    caught = set().union(*CLAIM_CAUGHT_BY.values())
    # every claim command has a case that catches a mutant
    assert {c for n in caught for c in CC.CLAIM_CASES_BY_NAME[n].commands().split(",")} == \
        set(CC.COMMANDS)


@pytest.mark.parametrize("mutant", CLAIM_MUTANTS, ids=lambda m: m.name)
def test_claim_cases_fail_on_the_mutant(mutant, monkeypatch):
    mutant.apply(monkeypatch)
    cases = [CC.CLAIM_CASES_BY_NAME[n] for n in sorted(CLAIM_CAUGHT_BY[mutant.name])]
    outs = [run_claim_case(c) for c in cases]
    escaped = [o.name for o in outs if o.passed]
    assert not escaped, f"{mutant.name} escaped {escaped}"
    # caught by what the command said, not by a crash of the patched code
    crashed = [o.name for o in outs if "crash:" in o.got]
    assert not crashed, f"{mutant.name} crashed {crashed}"


def test_the_claim_commands_refuse_pooled_arms_through_the_cli(tmp_path, monkeypatch):
    """exit 2 and one error line naming DUPLICATE_AXIS_VALUES; accepted with --cell."""
    monkeypatch.chdir(tmp_path)
    inst = CC.CLAIM_CASES_BY_NAME["pooled_arms"].instance()
    inst.table.to_parquet(tmp_path / "pooled.parquet", index=False)
    lines = {"onset": ["--by", "rho", "--n-resamples", "19"],
             "dose": ["--by", "rho", "--n-resamples", "19"],
             "transition": ["--by", "rho", "--n-resamples", "19"],
             "compare": ["--by", "rho", "--pair", "seed", "--arms", "1,2"]}
    for cmd, args in lines.items():
        r = CliRunner().invoke(cli, [cmd, "pooled.parquet", *args])
        assert r.exit_code == 2, (cmd, r.output)
        assert "[DUPLICATE_AXIS_VALUES]" in r.stderr and "--cell arch" in r.stderr, r.stderr
        r = CliRunner().invoke(cli, [cmd, "pooled.parquet", *args, "--cell", "arch", "--json",
                                     "-"])
        assert r.exit_code in (0, 1), (cmd, r.output)
        data = json.loads(r.stdout)
        assert [s["study"] for s in data["studies"]] == [{"arch": "mlp"},
                                                          {"arch": "transformer"}]


@pytest.mark.slow
def test_suite_reports_the_claim_cases_and_fails_on_a_claim_mutant(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "0"])
    assert r.exit_code == 0, r.output
    assert "claim case" in r.stdout and "pooled_arms_split" in r.stdout
    assert f"{len(CC.CLAIM_CASES)}/{len(CC.CLAIM_CASES)} claim cases pass; PASS" in r.stdout
    # a bug in a claim audit fails the suite (exit 1) while every core case still passes
    next(m for m in CLAIM_MUTANTS if m.name == "arms_pooled").apply(monkeypatch)
    r = CliRunner().invoke(cli, ["suite", "--max-examples", "0", "--json", "-"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert data["passed"] is False and all(c["pass"] for c in data["cases"])
    failed = {c["case"]: c for c in data["claim_cases"] if not c["pass"]}
    assert set(failed) == {"pooled_arms"}
    assert failed["pooled_arms"]["command"] == "onset,dose,transition,compare"
    assert failed["pooled_arms"]["expected"] == "error:DUPLICATE_AXIS_VALUES"
