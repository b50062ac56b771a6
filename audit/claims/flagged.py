"""Findings that flag runs: the run-scope finding every claim command writes for a set of runs
it sets apart (stopped early, grokked before logging began, never memorized…), naming them
and counting them the same way."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..reasons import Reason
from ..results import Finding
from .results import finding


def flag_runs(code: Reason, frame: pd.DataFrame, mask: np.ndarray, message: str,
              **evidence: Any) -> Finding:
    """A run-scope finding about the runs of ``frame`` that ``mask`` selects: their names
    (sorted) and, in the evidence, their number ``n_runs`` followed by ``evidence``."""
    return finding(code, "run", message, runs=sorted(frame.loc[mask, "run"]),
                   evidence={"n_runs": int(mask.sum()), **evidence})
