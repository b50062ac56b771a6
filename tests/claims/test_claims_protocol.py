"""One result protocol for every result type; typed frozen bodies; the one formatter."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from grokaudit import make_config
from grokaudit.api import audit_table
from grokaudit.claims.compare import CompareBody, run_compare
from grokaudit.claims.dose import DoseBody, run_dose
from grokaudit.claims.onset import OnsetBody, run_onset
from grokaudit.claims.precursor import PrecursorBody, run_precursor
from grokaudit.claims.render import ci, interval, known
from grokaudit.claims.sensitivity import run_sensitivity
from grokaudit.claims.simulate import make_log
from grokaudit.claims.stats import BootstrapCI
from grokaudit.claims.transition import TransitionBody, run_transition
from grokaudit.results import Interval


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    wd = np.repeat([0.5, 1.0, 2.0, 4.0, 8.0], 4)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(wd.size)], "wd": wd,
                         "seed": np.tile(np.arange(4), 5),
                         "t_grok": np.round(400 * wd ** 0.5 * rng.uniform(0.9, 1.1, wd.size)),
                         "budget": 3000})

    def bump(r: pd.Series, s: np.ndarray) -> np.ndarray:
        return np.exp(-(((s - r["t_grok"] + 300) / 100) ** 2))

    df = make_log(runs, every=20, series={"attn_cv": bump,
                                          "emb_erank": lambda r, s: 10 - 8 * (s > r["t_grok"])})
    return df


PROTOCOL = ("findings", "failing", "exit_code", "codes", "to_dict", "to_json")


def test_every_result_type_offers_the_one_protocol(log: pd.DataFrame) -> None:
    cfg = make_config()
    results = {
        "onset": (run_onset(log, cfg, by=["wd"], n_resamples=20), OnsetBody),
        "dose": (run_dose(log, cfg, by="wd", n_resamples=20), DoseBody),
        "transition": (run_transition(log, cfg, by="wd", n_resamples=20), TransitionBody),
        "precursor": (run_precursor(log, cfg, signal="attn_cv", n_perm=20), PrecursorBody),
        "compare": (run_compare(log, cfg, by="wd", pair="seed", arms=["1", "2"]), CompareBody),
    }
    for name, (r, body_type) in results.items():
        for attr in PROTOCOL:
            assert hasattr(r, attr), (name, attr)
        assert isinstance(r.body, body_type)
        assert r.exit_code == (1 if r.failing else 0)
        assert r.codes == frozenset(f.code for f in r.findings)
        d = json.loads(r.to_json())
        assert d == json.loads(json.dumps(r.to_dict()))
        assert d["schema"] == f"grokaudit.{name}/2"
        # the body is a typed frozen dataclass whose JSON is its fields
        fields = [f.name for f in dataclasses.fields(r.body)]
        assert list(d["studies"][0]) == ["study", *fields]
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.body.step_unit = "x"  # type: ignore[misc]
    for other in (run_sensitivity(log, make_config(by="wd")), audit_table(log, make_config())):
        for attr in PROTOCOL:
            assert hasattr(other, attr), (type(other).__name__, attr)
        assert other.exit_code == (1 if other.failing else 0)


def test_the_one_formatter_prints_bounds_and_never_a_zero_width_interval() -> None:
    assert known(Interval(None, 3000.0, None, True)) == ">3000"
    assert known(Interval(1075.0, 1025.0, 1075.0, False)) == "1075 (1025, 1075]"
    assert known(Interval.span(1540.0, float("inf"))) == ">1540"
    assert known(Interval.span(float("-inf"), -20.0)) == "<-20"
    assert known(Interval.span(2250.0, 2350.0)) == "(2250, 2350)"
    assert known(Interval.span(5.0, 5.0)) == "5"
    assert known(Interval.span(float("-inf"), float("inf"))) == "unknown"
    assert interval(1.0, 1.0) == "1"  # equal ends: the value, not [1, 1]
    assert interval(3900.0, None) == "[3900, ∞)"
    none = BootstrapCI(5.0, None, None, 0.95, "percentile", 99, 99, 0, "no spread")
    assert ci(none) == "—" and ci(none, why=True) == "(no interval: no spread)"
