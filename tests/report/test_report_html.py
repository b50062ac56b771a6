"""The HTML report, end to end: rendered by `grokaudit report`, opened in headless Chromium.

Cases: the bundled reference runs (``reference_runs/data/*.parquet``), a synthetic log with two
studies, and an adversarial log whose cell ``rho=2`` has two of three seeds that never settle
(a censored median ``t_compress``). Each page's DOM is checked: the verdict, one figure per
study and metric, a ``censored-median`` SVG element for every censored cell median (and an
interval marker for every other), no external request. A screenshot of each page is saved in
``$GROKAUDIT_REPORT_ARTIFACTS`` (default: a pytest temp folder) and its path printed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib: pip install 'grokaudit[report]'")

import grokaudit  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from grokaudit.api import audit_log  # noqa: E402
from grokaudit.cli import cli  # noqa: E402
from grokaudit.config import AuditConfig, build_config, make_config  # noqa: E402
from grokaudit.html_report import _study_key, render_html, write_report  # noqa: E402
from grokaudit.loader import read_any  # noqa: E402
from grokaudit.options import audit_overrides  # noqa: E402
from grokaudit.results import AuditResult  # noqa: E402
from grokaudit.schema import build_log_table  # noqa: E402
from helpers import report_builders as rb
from helpers import report_dom as dom

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "reference_runs" / "data").glob("*.parquet"))

CHROMIUM = dom.find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not found (apt-get install -y chromium); "
                             "the DOM checks need it")


def _artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("GROKAUDIT_REPORT_ARTIFACTS")
    p = Path(env) if env else tmp_path_factory.mktemp("report-artifacts")
    p.mkdir(parents=True, exist_ok=True)
    return p


def report_config(args: list[str]) -> AuditConfig:
    """The config `grokaudit report LOG ARGS` builds: its options, parsed by the command
    itself, through the one config path (profile, config file, flags)."""
    cmd = cli.commands["report"]
    params = dict(cmd.make_context("report", ["LOG", "-o", "x.html", *args]).params)
    return build_config(params.get("profile"), params.get("config_file"),
                        audit_overrides(params))


def _cli_report(log_path: Path, out: Path, *args: str) -> tuple[Path, AuditResult]:
    """Run `grokaudit report` and audit the same log the same way for the expectations."""
    res = CliRunner().invoke(cli, ["report", str(log_path), "-o", str(out), *args])
    assert res.exit_code in (0, 1), res.output
    assert out.exists()
    cfg = report_config(list(args))  # the config the command built
    result = grokaudit.audit_path(log_path, cfg)
    assert res.exit_code == result.exit_code  # the report exits like `check`
    return out, result


@pytest.fixture(scope="module")
def censored_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("censored")
    log = d / "censored.parquet"
    grokaudit.write_table(rb.censored_study(), log)
    page, result = _cli_report(log, d / "report.html", "--by", "rho", "--png", str(d / "png"))
    return {"page": page, "result": result, "log": log, "png": d / "png", "name": "censored"}


@pytest.fixture(scope="module")
def two_study_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import pandas as pd

    d = tmp_path_factory.mktemp("two-study")
    # small on purpose (two cells each): the bundled and censored cases carry the detail
    a = rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                  {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0}], seeds=2, arch="mlp")
    b = rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                  {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0, "never_settle": 2}],
                 seeds=2, arch="transformer")
    b["run"] = "tf_" + b["run"]
    log = d / "two.parquet"
    grokaudit.write_table(pd.concat([a, b], ignore_index=True), log)
    page, result = _cli_report(log, d / "report.html", "--by", "rho", "--cell", "arch")
    return {"page": page, "result": result, "log": log, "name": "two-study"}


@pytest.fixture(scope="module")
def bundled_case(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """One report per bundled reference log."""
    if not BUNDLED:
        pytest.skip("no bundled reference runs in reference_runs/data/*.parquet yet")
    cases = []
    for log in BUNDLED:
        d = tmp_path_factory.mktemp("bundled")
        page, result = _cli_report(log, d / "report.html", *_bundled_args(log))
        cases.append({"page": page, "result": result, "log": log,
                      "name": f"bundled-{log.stem}"})
    return cases


def _bundled_args(log: Path) -> list[str]:
    """The options the docs figures use for this log (``scripts/make_figures.py``): the
    ``Audit:`` line of its sweep, else ``--cell`` for each varying text condition."""
    import make_figures  # scripts/, on the tests' path (pyproject pythonpath)

    args: list[str] = make_figures.audit_args(log)
    return args


# ------------------------------------------------------------------------------------------
# checks shared by every case
# ------------------------------------------------------------------------------------------

def _censored_keys(result: AuditResult) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """(study, metric, quantity, cell) of every censored and every uncensored cell median."""
    cens, unc = set(), set()
    for s in result.studies:
        for c in s.cells:
            for q in ("t_grok", "t_compress", "lag"):
                iv = getattr(c, q)
                if iv is None:
                    continue
                key = (_study_key(s), s.metric, q, str(c.axis_value))
                if iv.censored and iv.lower is not None:
                    cens.add(key)
                elif not iv.censored and iv.value is not None:
                    unc.add(key)
    return cens, unc


def _check_source(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>")
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert dom.external_references(text) == []


def _check_dom(d: dom.DomIndex, result: AuditResult) -> None:
    verdict = d.by_id("verdict")
    assert verdict is not None
    vtext = " ".join(verdict.text)
    if result.failing:
        assert "FAIL" in vtext
        for f in result.failing:
            assert f.code.value in vtext
    else:
        assert "PASS" in vtext
    codes = {" ".join(e.text).strip() for e in d.by_class("verdict-code")}
    for s in result.studies:
        assert (s.verdict.value if s.verdict else "LOW_POWER_DESCRIPTIVE") in codes
    figs = d.by_class("dashboard", tag="figure")
    assert len(figs) == len(result.studies)  # one figure per study and metric
    assert {f.attrs["data-metric"] for f in figs} == {s.metric for s in result.studies}
    assert len([e for e in d.elements if e.tag == "svg"]) == len(result.studies)
    # every censored median is an open-ended interval marker, every other one an interval
    cens, unc = _censored_keys(result)
    drawn_cens = {(*figure_of(d, e), e.attrs["data-quantity"], e.attrs["data-cell"])
                  for e in d.by_class("censored-median")}
    drawn_int = {(*figure_of(d, e), e.attrs["data-quantity"], e.attrs["data-cell"])
                 for e in d.by_class("median-interval")}
    assert drawn_cens == cens
    assert drawn_int == unc
    assert not drawn_cens & drawn_int  # a censored median is never drawn as a point
    ids = [e.attrs["id"] for e in d.elements if "id" in e.attrs]
    assert len(ids) == len(set(ids))  # figures share the page without id clashes


def figure_of(d: dom.DomIndex, el: dom.Element) -> tuple[str, str]:
    """(study, metric) of the figure an SVG element belongs to (figures are not nested)."""
    idx = next(i for i, e in enumerate(d.elements) if e is el)
    for e in reversed(d.elements[:idx]):
        if e.tag == "figure" and "dashboard" in e.classes:
            return e.attrs["data-study"], e.attrs["data-metric"]
    raise AssertionError("element outside any dashboard figure")


def _browser_checks(case: dict[str, Any], artifacts: Path, profile: Path) -> Path:
    assert CHROMIUM is not None
    dumped, requests = dom.dump_dom(CHROMIUM, case["page"], profile)
    assert requests == []  # the page loads nothing: no network, no other file
    _check_dom(dom.parse(dumped), case["result"])
    shot = dom.screenshot(CHROMIUM, case["page"], artifacts / f"report-{case['name']}.png",
                          profile)
    assert shot.stat().st_size > 10_000
    print(f"\nscreenshot of the {case['name']} report: {shot}")
    return shot


# ------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------

def test_censored_case_is_the_adversarial_one(censored_case: dict[str, Any]) -> None:
    s = censored_case["result"].studies[0]
    c = s.cell(2.0)
    assert c is not None and c.t_compress is not None
    assert c.t_compress.censored and grokaudit.Reason.MEDIAN_CENSORED in c.notes


@pytest.mark.parametrize("case", ["censored_case", "two_study_case", "bundled_case"])
def test_page_source_is_self_contained(case: str, request: pytest.FixtureRequest) -> None:
    for c in _cases(request.getfixturevalue(case)):
        text = c["page"].read_text(encoding="utf-8")
        _check_source(text)
        _check_dom(dom.parse(text), c["result"])


@needs_chromium
@pytest.mark.parametrize("case", ["censored_case", "two_study_case", "bundled_case"])
def test_page_in_headless_chromium(case: str, request: pytest.FixtureRequest,
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    for c in _cases(request.getfixturevalue(case)):
        _browser_checks(c, _artifacts(tmp_path_factory),
                        tmp_path_factory.mktemp("chromium") / "profile")


def _cases(found: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return found if isinstance(found, list) else [found]


@needs_chromium
def test_the_request_check_sees_requests(tmp_path: Path) -> None:
    """Positive control for ``requests == []``: a page with one external image is caught."""
    assert CHROMIUM is not None
    page = tmp_path / "leaky.html"
    page.write_text("<!DOCTYPE html><img src='http://192.0.2.1/x.png'>", encoding="utf-8")
    _, requests = dom.dump_dom(CHROMIUM, page, tmp_path / "profile")
    assert requests == ["http://192.0.2.1/x.png"]


def test_censored_median_in_the_figure(censored_case: dict[str, Any]) -> None:
    d = dom.parse(censored_case["page"].read_text(encoding="utf-8"))
    marks = [e for e in d.by_class("censored-median")
             if e.attrs["data-quantity"] == "t_compress" and e.attrs["data-cell"] == "2.0"]
    assert len(marks) == 2  # the trajectory panel and the clocks panel
    assert all(e.tag == "g" for e in marks)
    assert not [e for e in d.by_class("median-interval")
                if e.attrs["data-quantity"] == "t_compress" and e.attrs["data-cell"] == "2.0"]
    gated = [e for e in d.by_class("cell-panel") if "gated" in e.classes]
    assert [e.attrs["data-cell"] for e in gated] == ["2.0"]


def test_png_per_study_and_metric(censored_case: dict[str, Any]) -> None:
    pngs = sorted(censored_case["png"].glob("*.png"))
    assert [p.name for p in pngs] == ["emb_erank.png"]
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_is_deterministic_and_write_is_atomic(tmp_path: Path) -> None:
    df = rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                   {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0, "never_settle": 2}],
                  seeds=2)
    log = build_log_table(df)
    result = audit_log(log, make_config(by="rho"))
    first = render_html(result, log)
    out = write_report(result, log, tmp_path / "sub" / "r.html")  # a second, separate render
    assert out.read_text(encoding="utf-8") == first  # byte-identical for identical input
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]  # no temp file left
    assert out.stat().st_mode & 0o044  # readable by others, like any written file


def test_log_step_axis(tmp_path: Path) -> None:
    df = rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                   {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0}], seeds=2)
    log = build_log_table(df)
    result = audit_log(log, make_config(by="rho"))
    text = render_html(result, log, log_steps=True)
    _check_source(text)
    assert len(dom.parse(text).by_class("dashboard", tag="figure")) == 1


def test_low_power_study_without_train_acc(tmp_path: Path) -> None:
    """One cell that never groks next to one that does, no train_acc column: the page still
    renders, says LOW_POWER_DESCRIPTIVE, and draws the censored t_grok as an arrow."""
    import pandas as pd

    df = rb.study([{"rho": 1.0, "t_grok": 50_000, "tau": 500, "floor": 12.0, "acc_hi": 0.5},
                   {"rho": 2.0, "t_grok": 1000, "tau": 500, "floor": 12.0}], seeds=2)
    short = df[df["run"] == "rho2.0_s0"].head(2).assign(run="short")  # set aside: TOO_SHORT
    log = build_log_table(pd.concat([df, short]).drop(columns=["train_acc"]))
    result = audit_log(log, make_config(by="rho"))
    assert result.studies[0].verdict is None
    assert result.input["set_aside"]
    text = render_html(result, log)
    _check_source(text)
    d = dom.parse(text)
    _check_dom(d, result)
    aside = d.by_class("set-aside", tag="table")  # the summary counts what was set aside
    assert len(aside) == 1
    for reason, rows in result.input["set_aside"].items():
        assert reason in " ".join(aside[0].text) and str(rows) in " ".join(aside[0].text)
    assert {(e.attrs["data-quantity"], e.attrs["data-cell"])
            for e in d.by_class("censored-median")} == {("t_grok", "1.0")}


def test_check_report_shortcut(tmp_path: Path) -> None:
    """``check --report PATH`` writes the same page as the report command, and the same page
    as rendering the audit of the log read and validated the same way; it exits like
    ``check`` (the page is written either way)."""
    df = rb.study([{"rho": 1.0, "t_grok": 1500, "tau": 500, "floor": 12.0},
                   {"rho": 2.0, "t_grok": 2500, "tau": 900, "floor": 13.0}], seeds=2)
    log_path = tmp_path / "runs.parquet"
    grokaudit.write_table(df, log_path)
    runner = CliRunner()
    checked = runner.invoke(cli, ["check", str(log_path), "--by", "rho", "--report",
                                  str(tmp_path / "c.html")])
    reported = runner.invoke(cli, ["report", str(log_path), "--by", "rho", "-o",
                                   str(tmp_path / "r.html")])
    cfg = make_config(by="rho")
    log = build_log_table(read_any(log_path), path=str(log_path))
    result = audit_log(log, cfg)
    assert checked.exit_code == reported.exit_code == result.exit_code, checked.output
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    other = (tmp_path / "r.html").read_text(encoding="utf-8")
    # the pages differ only in their audit trail's command line (check vs report), and the
    # page rendered from the Python API has no trail (no command, no config discovery)
    trail = re.compile(r"<h3>Audit trail</h3>.*?</ul>(<table class='trail-inputs'>.*?</table>)?",
                       re.S)
    assert "grokaudit check" in page and "grokaudit report" in other
    assert trail.sub("", page) == trail.sub("", other) == render_html(result, log)
