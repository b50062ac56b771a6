"""`grokaudit reproduce`: the verdict rule, the table of the bundled logs (each row's verdict
follows from its printed numbers; each number is what the printed command gives), the docs
table, and the refusals. No torch: the bundled logs are re-audited."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path

import gen_reproductions as gen  # scripts/, on the tests' path
import pytest
from click.testing import CliRunner
from grokaudit import reproduce as rp
from grokaudit.cli import cli, run_command
from grokaudit.reproduce import Measured, judge, measure
from grokaudit.seeds import SEEDS, PaperValue

pytestmark = pytest.mark.filterwarnings("ignore")


def _m(value: float | None, low: float | None = None, high: float | None = None,
       codes: tuple[str, ...] = ()) -> Measured:
    return Measured(value, low, high, "test", codes)


# ------------------------------------------------------------------------------------------
# the rule
# ------------------------------------------------------------------------------------------

PAPER = PaperValue("0.83 [0.82, 0.85]", 0.83, 0.82, 0.85)


@pytest.mark.parametrize(("ours", "verdict", "code"), [
    (_m(0.80, 0.70, 0.90), "REPRODUCED", None),  # overlaps, above 0
    (_m(0.40, 0.20, 0.60), "DIRECTION_ONLY", None),  # above 0, excludes the paper's interval
    (_m(-0.4, -0.6, -0.2), "NOT_REPRODUCED", None),  # the other side of 0
    (_m(0.10, -0.2, 0.40), "NOT_REPRODUCED", None),  # holds 0, excludes the paper's value
    (_m(0.50, -0.2, 1.20), "NOT_SUPPORTED_BY_THE_LOG", "INTERVAL_TOO_WIDE"),  # holds both
    (_m(None, codes=("MEDIATOR_OUT_OF_RANGE",)), "NOT_SUPPORTED_BY_THE_LOG",
     "MEDIATOR_OUT_OF_RANGE"),
    (_m(None, 0.84, None), "REPRODUCED", None),  # a lower bound inside: overlaps
    (_m(None, 0.90, None), "DIRECTION_ONLY", None),  # a lower bound above the paper's
])
def test_judge_each_branch(ours: Measured, verdict: str, code: str | None) -> None:
    got, codes = judge(PAPER, ours, 0.0)
    assert got == verdict
    if code is not None:
        assert code in codes


def test_judge_without_direction_is_overlap_only() -> None:
    lam = PaperValue("0.0158 [0.0109, 0.0200]", 0.0158, 0.0109, 0.0200)
    assert judge(lam, _m(0.015, 0.01, 0.03), None)[0] == "REPRODUCED"
    assert judge(lam, _m(0.5, 0.3, 0.9), None)[0] == "NOT_REPRODUCED"


def test_a_null_claim_is_reproduced_by_an_interval_holding_the_null() -> None:
    nothing = PaperValue("≈ 0", 0.0)
    assert judge(nothing, _m(0.05, -0.1, 0.2), 0.0)[0] == "REPRODUCED"
    assert judge(nothing, _m(0.6, 0.4, 0.8), 0.0)[0] == "NOT_REPRODUCED"


def test_a_point_without_interval_never_reproduces_unless_equal() -> None:
    r2 = PaperValue("R² 0.97", 0.97)
    assert judge(r2, _m(0.6), 0.0)[0] == "DIRECTION_ONLY"
    assert judge(r2, _m(0.97), 0.0)[0] == "REPRODUCED"


def test_a_paper_without_a_number_gives_at_most_a_direction() -> None:
    words = PaperValue("tracks the phases")
    verdict, codes = judge(words, _m(0.8, 0.6, 1.0), 0.0)
    assert verdict == "DIRECTION_ONLY" and "NO_PAPER_NUMBER" in codes
    # no direction shown (the interval holds the null), or no null to show one against
    assert judge(words, _m(0.0, -0.6, 0.6), 0.0)[0] == "NOT_SUPPORTED_BY_THE_LOG"
    assert judge(words, _m(None, -0.6, 0.6), 0.0)[0] == "NOT_SUPPORTED_BY_THE_LOG"
    assert judge(words, _m(0.8, 0.6, 1.0), None)[0] == "NOT_SUPPORTED_BY_THE_LOG"


def test_inside_a_paper_interval_that_crosses_the_null_but_on_the_other_side() -> None:
    paper = PaperValue("0.2 [-0.1, 0.5]", 0.2, -0.1, 0.5)
    assert judge(paper, _m(-0.1, -0.3, -0.05), 0.0)[0] == "NOT_REPRODUCED"


def test_one_cell_is_no_range_and_a_lower_bound_has_no_upper_end() -> None:
    h = next(h for h in SEEDS["002"].headlines if h.key == "002.inflation_mlp")
    one = {"studies": [{"cells": [{"passes": True, "inflation": 1.2}]}], "findings": []}
    got = measure(h, one)
    assert not got.defined and "NO_INTERVAL" in got.codes
    two = {"studies": [{"cells": [{"passes": True, "inflation": 1.5,
                                   "inflation_is_lower_bound": True},
                                  {"passes": True, "inflation": 1.6},
                                  {"passes": False, "inflation": 9.0}]}], "findings": []}
    got = measure(h, two)
    assert (got.low, got.high) == (1.5, None)  # the gated cell is left out
    assert judge(h.paper, got, h.null)[0] == "REPRODUCED"  # [1.5, ∞) meets 3–5×


def test_a_flat_ordering_shows_no_direction() -> None:
    h = next(h for h in SEEDS["001"].headlines if h.key == "001.head_cos")
    flat = {"studies": [{"metric": "attn_head_cos", "orderings": [
        {"quantity": "floor", "identified": True, "shape": "flat", "tau_bounds": [-0.2, -0.2],
         "spearman": 0.0}]}], "findings": []}
    got = measure(h, flat)
    assert not got.defined and "ORDERING_FLAT" in got.codes
    mono = {"studies": [{"metric": "attn_head_cos", "orderings": [
        {"quantity": "floor", "identified": True, "shape": "monotone",
         "tau_bounds": [-1.0, -0.6], "spearman": -0.9}]}], "findings": []}
    got = measure(h, mono)
    assert (got.value, got.low, got.high) == (-0.8, -1.0, -0.6)
    assert judge(h.paper, got, h.null)[0] == "DIRECTION_ONLY"


def test_a_range_paper_value_sets_its_direction_from_its_middle() -> None:
    infl = PaperValue("3–5×", None, 3.0, 5.0)
    assert judge(infl, _m(1.5, 1.3, 1.7), 1.0)[0] == "DIRECTION_ONLY"
    assert judge(infl, _m(0.8, 0.7, 0.9), 1.0)[0] == "NOT_REPRODUCED"
    assert judge(infl, _m(4.0, 3.5, 4.5), 1.0)[0] == "REPRODUCED"


def test_a_refused_audit_is_not_supported() -> None:
    h = SEEDS["000"].headlines[0]
    got = measure(h, None)
    assert not got.defined and got.codes == ("AUDIT_REFUSED",)
    assert judge(h.paper, got, h.null)[0] == "NOT_SUPPORTED_BY_THE_LOG"


def test_an_estimate_without_its_interval_is_not_compared_as_a_point() -> None:
    """ν with a bootstrap that failed (too few resamples gave a value) is not a point to
    compare: NO_INTERVAL, not supported; an R² (no interval by nature) is compared."""
    nu = next(h for h in SEEDS["001"].headlines if h.key == "001.nu")
    body = {"studies": [{"study": {}, "power_law": {
        "nu": 0.75, "n_cells": 3, "nu_ci": {"estimate": 0.75, "low": None, "high": None}},
        "findings": []}], "findings": []}
    got = measure(nu, body)
    assert not got.defined and "NO_INTERVAL" in got.codes
    assert judge(nu.paper, got, nu.null)[0] == "NOT_SUPPORTED_BY_THE_LOG"
    r2 = next(h for h in SEEDS["003"].headlines if h.key == "003.r2")
    body = {"studies": [{"study": {}, "ols": {"fit": {"r2": 0.5, "n": 9}}, "findings": []}],
            "findings": []}
    got = measure(r2, body)  # an R² has no interval by nature: printed, never compared
    assert not got.defined and "NO_INTERVAL" in got.codes and "0.5" in got.how


def test_the_phase_boundary_is_the_rate_above_minus_below_with_a_wider_interval() -> None:
    from grokaudit.claims.stats import wilson

    h = next(h for h in SEEDS["003"].headlines if h.key == "003.phase_boundary")
    cells = [{"cell": {"wd": wd}, "grok_rate": {"k": k, "n": n}}
             for wd, k, n in ((0.3, 1, 4), (1.0, 4, 4), (3.0, 3, 4))]
    got = measure(h, {"studies": [{"study": {}, "cells": cells, "findings": []}],
                      "findings": []})
    assert got.value == pytest.approx(7 / 8 - 1 / 4)
    above, below = wilson(7, 8), wilson(1, 4)
    assert got.low == pytest.approx(above.low - below.high)
    assert got.high == pytest.approx(above.high - below.low)


def test_a_rows_codes_are_its_own_studys_findings() -> None:
    """A claim's findings carry their study: the CE row never shows the MSE study's code."""
    h = next(h for h in SEEDS["000"].headlines if h.key == "000.recovery_p59")
    med = {"recovery": 0.8, "recovery_ci": {"low": 0.6, "high": 0.95}}
    body = {"studies": [{"study": {"loss": "ce", "p": 59}, "mediation": med},
                        {"study": {"loss": "mse", "p": 59}, "mediation": {"recovery": None}}],
            "findings": [{"code": "MEDIATOR_OUT_OF_RANGE", "severity": "warning",
                          "study": {"loss": "mse", "p": 59}},
                         {"code": "TOO_FEW_CELLS", "severity": "warning",
                          "study": {"loss": "ce", "p": 59.0}}]}
    got = measure(h, body)
    assert got.codes == ("TOO_FEW_CELLS",)
    assert (got.value, got.low, got.high) == (0.8, 0.6, 0.95)


def test_every_headline_reads_a_known_quantity_of_a_known_audit() -> None:
    for d in SEEDS.values():
        assert set(d.configs) == {"cpu", "paper"}, d.seed
        for h in d.headlines:
            assert h.audit in d.audits, h.key
            assert h.quantity.partition(":")[0] in rp.EXTRACTORS, h.key
            assert h.key.startswith(d.seed + "."), h.key


# ------------------------------------------------------------------------------------------
# the bundled table
# ------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundled() -> Iterator[rp.ReproduceResult]:
    """The bundled table, made from the repository's root (its commands name the logs
    relative to the working folder, as the docs show them)."""
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        yield rp.reproduce_bundled(run_command)
    finally:
        os.chdir(here)


def test_the_bundled_table_has_every_seed_and_headline(bundled: rp.ReproduceResult) -> None:
    assert [s.seed for s in bundled.seeds] == list(SEEDS)
    assert [r.key for r in bundled.rows] == [h.key for d in SEEDS.values()
                                             for h in d.headlines]
    assert all(r.verdict in rp.VERDICTS for r in bundled.rows)
    # every audit ran (0 or 1: the claim's own exit), none was refused
    for s in bundled.seeds:
        assert set(s.audit_exit.values()) <= {0, 1}, (s.seed, s.audit_exit)
        assert s.train_commands, s.seed  # from the MANIFESTs


def test_each_verdict_follows_from_the_printed_numbers(bundled: rp.ReproduceResult) -> None:
    for r in bundled.rows:
        assert judge(r.paper, r.ours, r.null)[0] == r.verdict, r.key


def test_headlines_outside_the_cpu_design_are_listed_not_dropped(
        bundled: rp.ReproduceResult) -> None:
    outside = [r for r in bundled.rows if "NOT_IN_DESIGN" in r.reasons]
    assert outside and all(r.verdict == "NOT_SUPPORTED_BY_THE_LOG" for r in outside)
    assert {r.key for r in outside} == {h.key for d in SEEDS.values() for h in d.headlines
                                        if "cpu" not in h.scales}


def test_the_printed_command_regenerates_the_number(bundled: rp.ReproduceResult,
                                                    tmp_path: Path) -> None:
    """Each seed's first headline with a value: its command, run as a user would, gives the
    same JSON, hence the same number."""
    import shlex

    for d in SEEDS.values():
        row = next((r for r in bundled.rows if r.seed == d.seed and r.ours.defined), None)
        if row is None:
            continue
        out = tmp_path / f"{d.seed}.json"
        argv = shlex.split(row.command)[1:] + ["--json", str(out), "--quiet"]
        res = CliRunner().invoke(cli, argv)
        assert res.exit_code in (0, 1), res.output
        h = next(h for h in d.headlines if h.key == row.key)
        again = measure(h, json.loads(out.read_text()))
        assert again == row.ours, row.key


def test_the_docs_table_is_the_bundled_output(bundled: rp.ReproduceResult) -> None:
    from grokaudit.reproduce_text import markdown_table

    doc = gen.DOC.read_text(encoding="utf-8")
    assert gen.table_in(doc) == markdown_table(bundled), \
        "run: python scripts/gen_reproductions.py"


def test_the_json_is_versioned_and_strict(bundled: rp.ReproduceResult) -> None:
    d = json.loads(bundled.to_json())
    assert d["schema"] == "grokaudit.reproduce/1"
    assert sum(d["verdicts"].values()) == len(d["rows"])
    for row in d["rows"]:
        for k in ("value", "low", "high"):
            v = row["ours"][k]
            assert v is None or math.isfinite(v)


# ------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------

def test_cli_from_bundled_prints_the_table_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["reproduce", "004", "2", "--from-bundled", "--json",
                                   str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert [s["seed"] for s in d["seeds"]] == ["004", "002"]  # as asked, "2" is 002


@pytest.mark.parametrize(("argv", "code"), [
    (["reproduce", "007", "--from-bundled"], "UNKNOWN_VALUE"),
    (["reproduce", "--from-bundled", "--scale", "paper"], "INVALID_OPTION"),
    (["reproduce", "--from-bundled", "--resume"], "INVALID_OPTION"),
    (["reproduce", "--from-bundled", "--device", "cpu"], "INVALID_OPTION"),
    (["reproduce", "--from-bundled", "--out", "x"], "INVALID_OPTION"),
    (["reproduce", "--from-bundled", "--json", "table.csv"], "OUTPUT_EXTENSION"),
])
def test_cli_refusals_are_one_coded_line_and_exit_2(argv: list[str], code: str,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code == 2
    assert f"[{code}]" in res.output


def test_html_has_one_figure_per_headline(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["reproduce", "002", "--from-bundled", "--html", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.count("<svg") == len(SEEDS["002"].headlines)
    assert "<script" not in page
