"""The mutation check: each deliberate bug patched into the core makes the suite fail."""

import warnings

import grokaudit
import pytest
from grokaudit.adversarial_suite import properties as P
from grokaudit.adversarial_suite.mutants import MUTANTS
from grokaudit.adversarial_suite.runner import run_cases

pytestmark = pytest.mark.filterwarnings("ignore")

#: The named case(s) each mutant must break (documented in docs/adversarial-suite.md).
CAUGHT_BY = {
    "first_crossing": {"non_monotone_rebound", "compression_before_grok", "clean_one_clock"},
    "no_stability_check": {"late_second_collapse", "slow_drift", "noisy"},
    "ordering_without_u": {"censored_intervals_overlap"},
    "censored_dropped": {"half_seeds_censored"},
    "rebound_first_dip": {"non_monotone_rebound"},
    "lag_clipped": {"compression_before_grok"},
    "no_high_floor_gate": {"high_floor_boundary"},
    "t_grok_point": {"ties", "clean_one_clock"},
    "stale_at_grok": {"metric_gap_at_grok"},
    # issue 19: each case of a verdict that overstated catches the bug that made it overstate
    "snapshot_always_critical": {"gated_cell_transient"},
    "ratio_any_floor": {"floor_not_reached"},
    "left_as_point": {"log_starts_after_grok"},
    "no_horizon_check": {"horizon_mismatch"},
    "no_memorization_hidden": {"no_memorization"},
    "missing_metric_silent": {"metric_missing"},
    "nothing_reads_as_pass": {"all_censored", "metric_missing"},
    "values_as_stored": {"float32_spelling"},
    "copies_not_compared": {"duplicate_run", "run_id_spelling"},
    # issue 39: curves that rise before they compress, runs stuck at chance
    "rebound_from_start": {"rise_then_compress", "only_rises"},
    "plateau_as_floor": {"only_rises"},
    "chance_as_boundary": {"at_chance", "all_censored"},
}


def test_every_mutant_has_an_expected_catch():
    assert {m.name for m in MUTANTS} == set(CAUGHT_BY)
    assert len(MUTANTS) >= 5


def test_the_unmutated_core_passes_every_case():
    assert all(o.passed for o in run_cases(grokaudit.make_config()))


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_suite_fails_on_the_mutant(mutant, monkeypatch):
    mutant.apply(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = run_cases(grokaudit.make_config())
    failed = {o.name for o in outs if not o.passed}
    assert CAUGHT_BY[mutant.name] <= failed, f"{mutant.name} escaped: failed only {failed}"
    # caught by what the audit said, not by a crash of the patched core (a wrapper with the
    # wrong signature once made every case "catch" every mutant)
    crashed = {o.name: o.mismatches[0] for o in outs if o.got.startswith("crash:")}
    assert not crashed, f"{mutant.name} crashed the audit: {crashed}"


@pytest.mark.parametrize("name", ["first_crossing", "no_stability_check", "censored_dropped",
                                  "rebound_first_dip", "lag_clipped", "t_grok_point"])
def test_properties_alone_also_catch(name, monkeypatch):
    """The generated logs catch most mutants without the named cases."""
    next(m for m in MUTANTS if m.name == name).apply(monkeypatch)
    out = P.run_property("single", P.check_one_result, grokaudit.make_config(), 60)
    assert not out["pass"], f"{name} passed 60 generated logs"


def test_each_mutant_wraps_the_function_its_patch_site_looks_up():
    """A mutant wraps the original as the module that defines it holds it, and patches the
    module that looks it up by name: the two must be one function, or the patch would also
    drop whatever the looking-up module had put in its place."""
    import grokaudit.api as api
    import grokaudit.claims.onset as onset
    import grokaudit.claims.precursor as precursor
    import grokaudit.claims.runs as runs
    import grokaudit.claims.stats as stats
    import grokaudit.claims.survival as survival
    from grokaudit import cells, clocks, study

    site_and_home = {
        "api.metric_clocks": (api.metric_clocks, clocks.metric_clocks),
        "api.accuracy_clocks": (api.accuracy_clocks, clocks.accuracy_clocks),
        "api.ordering": (api.ordering, study.ordering),
        "api.snapshot_findings": (api.snapshot_findings, study.snapshot_findings),
        "onset.fit_families": (onset.fit_families, survival.fit_families),
        "runs.interval_median": (runs.interval_median, cells.interval_median),
        "precursor.mcnemar_exact": (precursor.mcnemar_exact, stats.mcnemar_exact),
        "api.summarize_cell": (api.summarize_cell, cells.summarize_cell),
    }
    assert [k for k, (site, home) in site_and_home.items() if site is not home] == []
