"""The result kernel (issue 23): every command's result derives ``failing``, ``exit_code``,
``codes`` and ``to_json`` from one base; one JSON converter; one bounded value printed by one
method in every style, never as a point where only a bound is known."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re

import grokaudit
import numpy as np
import pytest
from grokaudit.claims.results import ClaimResult
from grokaudit.claims.results import plain as claim_plain
from grokaudit.claims.sensitivity import SensitivityResult
from grokaudit.reasons import Reason, Severity
from grokaudit.results import (
    AuditResult,
    Finding,
    Interval,
    Result,
    plain,
)
from grokaudit.results import format_interval as _format_interval
from helpers.core_builders import cells_from


def format_interval(iv: Interval | None, style: str) -> str:
    """The interval as each printer shows it: the text styles are ``Interval.format``'s, the
    ``html`` one is the HTML report's (results build no markup)."""
    from grokaudit.html_report import interval_html

    return interval_html(iv) if style == "html" else _format_interval(iv, style)


def _finding(code: Reason, severity: Severity) -> Finding:
    return Finding(code=code, severity=severity, scope="study", message="m")


def test_every_result_type_is_a_kernel_result():
    from grokaudit.adversarial_suite.runner import SuiteReport

    for cls in (AuditResult, ClaimResult, SensitivityResult, SuiteReport):
        assert issubclass(cls, Result)
        for name in ("failing", "exit_code", "codes", "to_json"):
            # derived once, in the kernel (SensitivityResult and the suite add to `failing`)
            if name != "failing":
                assert getattr(cls, name) is getattr(Result, name), (cls, name)


@pytest.mark.parametrize("fail_on,want", [
    (("default",), {Reason.FLOOR_UNSTABLE}), (("none",), set()),
    (("warning",), {Reason.FLOOR_UNSTABLE, Reason.ORDERING_UNDEFINED}),
    (("ORDERING_UNDEFINED",), {Reason.ORDERING_UNDEFINED})])
def test_failing_and_exit_code_follow_fail_on(fail_on, want):
    fs = (_finding(Reason.FLOOR_UNSTABLE, Severity.CRITICAL),
          _finding(Reason.ORDERING_UNDEFINED, Severity.WARNING),
          _finding(Reason.SINGLE_CONDITION, Severity.INFO))
    res = AuditResult(version="x", config={}, input={}, studies=(), findings=fs,
                      fail_on=fail_on)
    claim = ClaimResult(command="onset", version="x", params={}, config={}, input={},
                        studies=(), findings=fs, fail_on=fail_on)
    for r in (res, claim):
        assert {f.code for f in r.failing} == want
        assert r.exit_code == (1 if want else 0)
        assert r.codes == {f.code for f in fs}
        assert json.loads(r.to_json())["summary"]["exit_code"] == r.exit_code


def test_the_audit_keeps_its_fail_on():
    df = cells_from([(1.0, 2000, 9000), (1.1, 2000, 9000), (1.2, 3000, 12_000)])
    for fail_on in (("none",), ("warning",)):
        res = grokaudit.audit_table(df, by="rho", fail_on=fail_on)
        assert res.fail_on == fail_on
        assert res.failing == tuple(f for f in res.findings
                                    if grokaudit.results.fails(f, fail_on))


def test_to_json_is_strict_json():
    res = AuditResult(version="x", config={"bad": object()}, input={}, studies=(),
                      findings=())
    assert json.loads(res.to_json())["config"]["bad"].startswith("<object")
    nan_body = dataclasses.replace(res, config={})

    class Body(AuditResult):
        def to_dict(self) -> dict[str, object]:
            return {"x": math.nan}

    body = Body(**{f.name: getattr(nan_body, f.name) for f in dataclasses.fields(nan_body)})
    for write in (body.to_json, lambda: "".join(body.json_chunks())):
        with pytest.raises(ValueError):  # a subclass's own to_dict is its JSON, whichever way
            write()


class _Color(enum.Enum):
    RED = "red"


def test_one_converter():
    value = {1: np.float32(0.5), "a": (np.int64(3), np.bool_(True)), "n": math.nan,
             "i": math.inf, "w": 2.0, "e": _Color.RED, "r": Reason.NO_GROK,
             "arr": np.array([1.5, np.nan]),
             "iv": Interval(None, 100.0, None, True)}
    out = plain(value)
    assert out == {"1": 0.5, "a": [3, True], "n": None, "i": None, "w": 2, "e": "red",
                   "r": "NO_GROK", "arr": [1.5, None], "iv": Interval(
                       None, 100.0, None, True).to_dict()}
    assert type(out["w"]) is int and type(out["a"][1]) is bool
    # the claims bind the same converter with their rounding
    assert claim_plain(1 / 3) == round(1 / 3, 12) and plain(1 / 3) == 1 / 3
    assert claim_plain(value) == plain(value, 12)


_CENSORED = Interval(None, 5400.0, None, True)
_BEFORE_LOGGING = Interval(None, 0.0, 2000.0, False)
_BOUNDS_ONLY = Interval(None, 1400.0, 3400.0, False)
_POINT = Interval(1200.0, 1100.0, 1200.0, False)


@pytest.mark.parametrize("style", ["compact", "table", "html"])
def test_a_bound_is_never_printed_as_a_point(style):
    assert format_interval(_CENSORED, style).startswith((">", "&gt;"))
    assert "5400" in format_interval(_CENSORED, style)
    before = format_interval(_BEFORE_LOGGING, style)
    assert before.startswith("≤2000")
    bounds = format_interval(_BOUNDS_ONLY, style)
    assert bounds.startswith("1400–3400")
    assert format_interval(_POINT, style).startswith("1200")
    assert format_interval(None, style) == "—"


def test_only_the_html_style_shows_the_reading_interval_of_a_point():
    assert format_interval(_POINT, "html") != format_interval(_POINT, "compact")
    assert format_interval(_POINT, "table") == format_interval(_POINT, "compact")
    assert "<" not in format_interval(_CENSORED, "table")


def test_an_unknown_style_is_refused():
    with pytest.raises(ValueError):
        _POINT.format("latex")


def test_each_result_has_one_printer_ending_in_its_exit_code():
    """``printing.render`` is what the command prints: its last line states the exit code the
    result derives (audit, its sensitivity grid, a claim)."""
    from grokaudit.claims.sensitivity import run_sensitivity
    from grokaudit.config import make_config

    df = cells_from([(1.0, 2000, 9000), (1.1, 2000, 9000), (1.2, 3000, 12_000)])
    res = grokaudit.audit_table(df, by="rho")
    sens = run_sensitivity(df, make_config(by="rho"),
                           grid=(("grok_threshold", (0.85, 0.9)),))
    claim = ClaimResult(command="onset", version="x", params={}, config={}, input={},
                        studies=(), findings=(_finding(Reason.FLOOR_UNSTABLE,
                                                       Severity.CRITICAL),))
    from grokaudit.printing import render

    for r in (res, sens, claim):
        last = render(r).rstrip("\n").splitlines()[-1]
        assert re.search(rf"\bexit {r.exit_code}\b", last), (type(r).__name__, last)
        assert not re.search(rf"\bexit {1 - r.exit_code}\b", last)
    assert claim.exit_code == 1


def test_a_result_without_a_printer_is_refused_and_results_never_import_printers():
    from grokaudit.printing import render

    with pytest.raises(TypeError):
        render(object())
    import ast
    import pathlib

    import grokaudit.results as results_mod

    tree = ast.parse(pathlib.Path(results_mod.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"report", "html_report", "printing", "claims.render"}


@pytest.mark.parametrize("style", ["compact", "table", "html", "claim"])
def test_a_printed_bound_is_rounded_outwards(style):
    """A censored median of 5401.5 is known only as > 5401.5: printed ``>5401``, never
    ``>5402`` (which claims more than the log supports); an upper bound rounds up."""
    text = format_interval(Interval(None, 5401.5, None, True), style)
    assert re.search(r"5401(?!\.)", text) and "5402" not in text
    before = format_interval(Interval(None, 0.0, 1999.5, False), style)
    if style != "claim":  # the claims print a value known only by bounds by its lower end
        assert "2000" in before and "1999" not in before


def test_the_suites_report_prints_without_importing_its_printer_first():
    """``printing.render`` prints a suite report in a fresh interpreter that imported only the
    runner (the suite's printer is loaded for it)."""
    import subprocess
    import sys

    code = ("from grokaudit.adversarial_suite.runner import SuiteReport\n"
            "from grokaudit.printing import render\n"
            "print(render(SuiteReport(profile='default', cases=(), properties=None)), end='')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
