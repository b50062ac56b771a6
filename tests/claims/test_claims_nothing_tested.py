"""A claim command that could fit nothing says so as ``check`` does: ``NOTHING_AUDITABLE``
(critical, exit 1), never "0 critical; exit 0" over a law that was never fitted (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.claims.simulate import make_log
from helpers.hostile import cli


def _log(tmp_path: Path, grok: dict[float, float]) -> Path:
    """Three doses of three seeds; a dose missing from ``grok`` never groks."""
    wd = np.repeat([0.1, 0.2, 0.4], 3)
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(wd.size)], "wd": wd,
                         "seed": np.tile(np.arange(3), 3),
                         "t_grok": [grok.get(w, np.inf) + 10 * k for k, w in enumerate(wd)],
                         "budget": 4000})
    path = tmp_path / "log.csv"
    make_log(runs, every=20).to_csv(path, index=False)
    return path


def _codes(out) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    doc = json.loads(out.stdout)
    return {f["code"]: f for f in doc["findings"]}


@pytest.mark.parametrize("grok", [{}, {0.1: 400.0, 0.2: 900.0}])
def test_dose_without_a_fitted_law_is_nothing_auditable(tmp_path: Path, grok: dict) -> None:
    # no dose groks, or two of three (a law needs three cells): nothing was fitted
    out = cli(["dose", _log(tmp_path, grok), "--by", "wd", "--json", "-"])
    assert out.exit_code == 1, out
    found = _codes(out)
    assert found["NOTHING_AUDITABLE"]["severity"] == "critical"
    # the censored cells were not checked against any law, and the finding says so
    assert found["MEDIAN_CENSORED"]["evidence"]["checked_against_laws"] is False


def test_dose_with_a_fitted_law_is_auditable(tmp_path: Path) -> None:
    out = cli(["dose", _log(tmp_path, {0.1: 400.0, 0.2: 900.0, 0.4: 2000.0}), "--by", "wd",
               "--json", "-"])
    assert out.exit_code in (0, 1), out
    assert "NOTHING_AUDITABLE" not in _codes(out)


def test_onset_without_a_fit_is_nothing_auditable(tmp_path: Path) -> None:
    out = cli(["onset", _log(tmp_path, {}), "--by", "wd", "--json", "-"])
    assert out.exit_code == 1, out
    assert _codes(out)["NOTHING_AUDITABLE"]["severity"] == "critical"
