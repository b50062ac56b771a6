"""What a table read by an adapter says of itself: its provenance and its accuracy scale."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
from grokaudit.schema import PROVENANCE_KEY, build_log_table


def provenance_of(table: pa.Table) -> dict[str, Any]:
    """The provenance a reader wrote into the table's schema metadata (reader, findings,
    warnings…)."""
    out: dict[str, Any] = json.loads(table.schema.metadata[PROVENANCE_KEY])
    return out


def read_as_percent(t: pa.Table) -> float:
    """The reader keeps accuracies as logged; the audit reads them as percent (once, over
    every input): the largest test_acc it then holds."""
    log = build_log_table(t)
    assert log.summary.accuracy_scale["test_acc"]["scale"] == 100.0
    return float(np.nanmax(log.test_acc))
