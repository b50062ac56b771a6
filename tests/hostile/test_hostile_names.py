"""Hostile option values and designs, read by the name the user typed: a cross-field rule
broken on the command line names both flags (the fix), and a missing value of an axis the audit
inferred is never blamed on a ``--by`` the user did not give; from Python, parameter names."""

from __future__ import annotations

from pathlib import Path

import grokaudit
import numpy as np
import pandas as pd
import pytest
from grokaudit.errors import ConfigError, ErrorCode, LogFormatError
from helpers.core_builders import cells_from
from helpers.hostile import cli, expect_error

LOG = Path(__file__).resolve().parents[2] / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"


@pytest.mark.parametrize("args,flags", [
    (["--floor-frac", "0.3"], ("--floor-frac", "--max-floor-frac")),
    (["--floor-frac", "0.2", "--max-floor-frac", "0.15"], ("--floor-frac", "--max-floor-frac")),
])
def test_a_broken_cross_field_rule_names_both_flags(args, flags):
    out = cli(["check", LOG, "--by", "wd", "--cell", "arch", *args])
    _, msg = expect_error(out, ErrorCode.OPTION_OUT_OF_RANGE)
    assert all(f in msg for f in flags), msg


def test_a_broken_cross_field_rule_from_python_names_the_fields():
    with pytest.raises(ConfigError) as exc:
        grokaudit.make_config(floor_frac=0.3)
    assert exc.value.code is ErrorCode.OPTION_OUT_OF_RANGE
    assert "max_floor_frac" in str(exc.value)


def _nan_axis(tmp_path: Path) -> Path:
    df = cells_from([(1.0, 2000, 9000), (1.1, 2500, 9000)])
    df.loc[df["run"] == df["run"].iloc[0], "rho"] = np.nan
    p = tmp_path / "nan_axis.parquet"
    df.to_parquet(p, index=False)
    return p


def test_an_inferred_axis_with_a_missing_value_is_not_blamed_on_by(tmp_path: Path):
    """No ``--by`` given: the axis was inferred, and a run without a value of it is
    CONDITION_MISSING, one line, exit 2, pointing at ``--by`` as the way to choose the axis,
    never as the flag at fault (and never the library's ``by=``)."""
    p = _nan_axis(tmp_path)
    _, msg = expect_error(cli(["check", p]), ErrorCode.CONDITION_MISSING)
    assert "inferred" in msg and "by=" not in msg
    with pytest.raises(LogFormatError) as exc:
        grokaudit.audit_table(pd.read_parquet(p))
    assert exc.value.code is ErrorCode.CONDITION_MISSING and exc.value.param is None
    assert "--by" not in str(exc.value)
