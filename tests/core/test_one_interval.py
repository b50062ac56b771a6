"""One interval type (issue 43, item 4): the audit clocks and the claims' ranges are both
``results.Interval``, with two documented JSON forms; its HTML is the HTML report's."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from grokaudit import make_config
from grokaudit.api import audit_table
from grokaudit.claims import results as claim_results
from grokaudit.claims.compare import run_compare
from grokaudit.claims.simulate import make_log
from grokaudit.html_report import interval_html
from grokaudit.results import Interval, format_interval

_CENSORED = Interval(None, 5400.0, None, True)
_BEFORE_LOGGING = Interval(None, 0.0, 2000.0, False)
_BOUNDS_ONLY = Interval(None, 1400.0, 3400.0, False)
_POINT = Interval(1200.0, 1100.0, 1200.0, False)
_EXACT = Interval(1200.0, 1200.0, 1200.0, False)
_AUDIT = (_CENSORED, _BEFORE_LOGGING, _BOUNDS_ONLY, _POINT, _EXACT)

_AUDIT_KEYS = ["value", "lower", "upper", "censored", "left_censored"]
_CLAIM_KEYS = ["value", "low", "high", "low_closed", "high_closed"]


def _compare_log() -> pd.DataFrame:
    """Eight seed pairs, three of them censored: the summary's median is a range."""
    base = [np.inf, 3200, 3400, 3600, 3800, np.inf, 3100, np.inf]
    new = [1000, 1100, 1200, 1300, 1400, np.inf, 1500, 900]
    runs = pd.DataFrame({"run": [f"b{i}" for i in range(8)] + [f"n{i}" for i in range(8)],
                         "method": ["baseline"] * 8 + ["cv_adamw"] * 8,
                         "seed": list(range(8)) * 2, "t_grok": base + new, "budget": 5000})
    return make_log(runs, every=50)


def test_a_claim_range_and_an_audit_clock_are_one_class() -> None:
    """The claims' derived ranges (a paired difference, its median) and ``check``'s clocks
    are the same type; the claims' own type is gone."""
    log = _compare_log()
    result = run_compare(log, make_config(), by="method", pair="seed",
                         arms=["baseline", "cv_adamw"])
    body = result.body
    cell = audit_table(log, make_config(by="seed", cell=["method"])).studies[0].cells[0]
    assert cell.t_grok is not None
    kinds = {type(body.censored.median_d), type(body.censored.mean_d),
             type(cell.t_grok), *(type(p.d) for p in body.pairs),
             *(type(t) for p in body.pairs for t in p.t_grok if t is not None)}
    assert kinds == {Interval}
    assert body.censored.median_d.form == "claim" and cell.t_grok.form == "audit"
    assert not hasattr(claim_results, "Span")
    # the claim form is what the JSON of a claim writes, in its key order
    got = json.loads(result.to_json())
    median = got["studies"][0]["censored"]["median_d"]
    assert list(median) == _CLAIM_KEYS
    assert median == {"value": None, "low": 2250, "high": 2350, "low_closed": True,
                      "high_closed": True}


@pytest.mark.parametrize("iv", _AUDIT)
def test_the_audit_form_round_trips_through_its_json(iv: Interval) -> None:
    d = json.loads(json.dumps(iv.to_dict()))
    assert list(d) == _AUDIT_KEYS
    nan = math.nan
    back = Interval.make(nan if d["value"] is None else d["value"], d["lower"],
                         math.inf if d["censored"] else d["upper"])
    assert back == iv and back.to_dict() == d
    assert d["left_censored"] == (iv in (_BEFORE_LOGGING, _BOUNDS_ONLY))


@pytest.mark.parametrize("iv", [
    Interval.span(1540.0, math.inf), Interval.span(-math.inf, -20.0),
    Interval.span(2250.0, 2350.0, True, False), Interval.span(5.0, 5.0),
    Interval.span(-math.inf, math.inf), Interval.claim(300.0, 300.0, 300.0),
])
def test_the_claim_form_round_trips_through_its_json(iv: Interval) -> None:
    d = json.loads(json.dumps(iv.to_dict()))
    assert list(d) == _CLAIM_KEYS
    back = Interval.claim(**d)
    assert back == iv and back.to_dict() == d and back.format("claim") == iv.format("claim")


def test_the_forms_are_told_apart_and_keep_their_meaning() -> None:
    """Equal numbers in two forms are two intervals (they write different JSON); an
    unbounded end is never closed; the claim form rounds as the claims do."""
    assert Interval.claim(None, 1400.0, 3400.0) != _BOUNDS_ONLY
    assert Interval.span(1.0, math.inf, True, True).to_dict()["low_closed"] is True
    assert Interval.span(1.0, math.inf, True, True).high_closed is False
    assert Interval.span(1 / 3, 2 / 3).to_dict()["low"] == 0.333333333333
    assert _POINT.to_dict()["lower"] == 1100  # the audit form is not rounded
    # the audit form is (lower, upper]: open below, closed above when it has an upper end
    assert (_BOUNDS_ONLY.low_closed, _BOUNDS_ONLY.high_closed) == (False, True)
    assert _CENSORED.high_closed is False
    assert not Interval.span(1400.0, 3400.0).left_censored  # a range, not an event
    assert Interval.span(-math.inf, 7.0).format("claim_value") == "<7"
    with pytest.raises(ValueError):
        Interval.span(1.0, 2.0).format("compact")


def test_the_html_of_an_interval_is_made_by_the_html_report() -> None:
    assert interval_html(_CENSORED) == "&gt; 5400 <span class='muted'>(censored)</span>"
    assert interval_html(_BEFORE_LOGGING) == (
        "≤2000 <span class='muted'>(before logging began: (0, 2000])</span>")
    assert interval_html(_BOUNDS_ONLY) == (
        "1400–3400 <span class='muted'>(only its bounds are known: (1400, 3400])</span>")
    assert interval_html(_POINT) == "1200 <span class='muted'>(1100, 1200]</span>"
    assert interval_html(_EXACT) == "1200"
    assert interval_html(None) == "—"
    with pytest.raises(ValueError):
        interval_html(Interval.span(1.0, 2.0))


@pytest.mark.parametrize("iv", _AUDIT)
def test_a_result_builds_no_markup(iv: Interval) -> None:
    """``results`` prints text only: the ``html`` style is refused, and no text style holds
    markup or an entity."""
    with pytest.raises(ValueError):
        iv.format("html")
    with pytest.raises(ValueError):
        format_interval(iv, "html")
    for style in ("compact", "table", "claim", "claim_value"):
        text = iv.format(style)
        assert "<span" not in text and "&" not in text, (style, text)
