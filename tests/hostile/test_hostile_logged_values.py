"""Values a RunLogger is handed are read as LiveRun reads them (one reading, ``values.py``):
never a bare OverflowError, never a complex number cut to its real part (issue 38)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.live import LiveRun
from grokaudit.logger import RunLogger


@pytest.mark.parametrize(("value", "code"), [
    (10**400, ErrorCode.INFINITE_VALUE),  # a bare OverflowError before
    (Decimal("1e400"), ErrorCode.INFINITE_VALUE),  # silently inf before
    (np.complex128(1 + 2j), ErrorCode.BAD_COLUMN_TYPE),  # its imaginary part dropped before
    (np.array("2"), ErrorCode.BAD_COLUMN_TYPE),  # read as 2.0 before
    (np.array(True), ErrorCode.BAD_COLUMN_TYPE),
])
def test_the_logger_and_the_live_run_refuse_the_same_values(tmp_path: Path, value: Any,
                                                            code: ErrorCode) -> None:
    with RunLogger(tmp_path, run="a") as log:
        with pytest.raises(LogFormatError) as exc:
            log.log(0, x=value)
        assert exc.value.code is code
    with pytest.raises(LogFormatError) as exc2:
        LiveRun("a").log(0, x=value)
    assert exc2.value.code is code


def test_a_real_value_is_read_exactly(tmp_path: Path) -> None:
    from fractions import Fraction

    with RunLogger(tmp_path, run="a") as log:
        log.log(0, x=np.float32(0.5), y=Fraction(1, 4), z=np.array(3))
    import pyarrow.parquet as pq

    rows = pq.read_table(next(tmp_path.glob("*.parquet"))).to_pylist()
    assert (rows[0]["x"], rows[0]["y"], rows[0]["z"]) == (0.5, 0.25, 3.0)


def test_a_refused_call_keeps_nothing_in_the_file_or_the_live_state(tmp_path: Path) -> None:
    """RunLogger(live=True) stored a row and then the live audit refused it (the file and the
    live state disagreed); a same-step call whose second value clashed kept its first."""
    import pyarrow.parquet as pq

    with RunLogger(tmp_path, run="a", live=True) as log:
        log.log(0, test_acc=0.1, emb=5.0)
        with pytest.raises(LogFormatError) as exc:
            log.log(1, test_acc=150.0, emb=4.0)  # no scale reads 150 as an accuracy
        assert exc.value.code is ErrorCode.ACCURACY_OUT_OF_RANGE
        with pytest.raises(LogFormatError) as exc:
            log.log(0, x=1.0, test_acc=0.2)  # test_acc logged twice at step 0
        assert exc.value.code is ErrorCode.DUPLICATE_ROWS
        assert log.live.row(1) == {} and "x" not in log.live.row(0)
    rows = [r for f in sorted(tmp_path.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert [(r["step"], r["test_acc"], r.get("x")) for r in rows] == [(0, 0.1, None)]


def test_an_integer_too_long_to_print_is_refused_with_its_code() -> None:
    # 10**5000: Python cannot write it as text (4 300 digits), a bare ValueError before
    with pytest.raises(LogFormatError) as exc:
        LiveRun("a").log(0, x=10**5000)
    assert exc.value.code is ErrorCode.INFINITE_VALUE
