"""The grok criterion on a loss, attacked with every named case: each case's log with its
accuracy replaced by the equivalent loss (1 − test_acc, grokked at or below 1 − threshold) must
give the same audit — verdicts, codes, exit code and per-run t_grok intervals. A loss clock that
moved an event by one logged point, flipped a comparison at the level, or lost the censoring
would change one of them."""

from __future__ import annotations

import dataclasses

import grokaudit
import pytest
from grokaudit.adversarial_suite import cases as C
from grokaudit.adversarial_suite import catalog
from grokaudit.errors import LogFormatError

pytestmark = pytest.mark.filterwarnings("ignore")


def _as_loss(inst: C.Instance) -> tuple[object, grokaudit.AuditConfig]:
    df = inst.table.copy()
    scale = inst.cfg.acc_scale or (100.0 if df["test_acc"].max() > 1.5 else 1.0)  # auto: as read
    df["err"] = 1.0 - df["test_acc"] / scale
    df = df.drop(columns=["test_acc"])
    cfg = dataclasses.replace(inst.cfg, grok_on="err", grok_below=1.0 - inst.cfg.grok_threshold,
                              full_below=1.0 - inst.cfg.full_threshold)
    return df, grokaudit.config.validate(cfg)


@pytest.mark.parametrize("case", catalog.CASES, ids=lambda c: c.name)
def test_every_case_audits_alike_on_its_equivalent_loss(case: C.Case) -> None:
    inst = case.instance()
    try:
        acc = grokaudit.audit_table(inst.table, inst.cfg)
    except LogFormatError:
        pytest.skip("an input-error case: nothing to compare (the accuracy column is the error)")
    table, cfg = _as_loss(inst)
    loss = grokaudit.audit_table(table, cfg)
    assert [s.verdict for s in loss.studies] == [s.verdict for s in acc.studies]
    how_read = {grokaudit.Reason.ACCURACY_IN_PERCENT}  # the loss is no accuracy: nothing to read
    assert loss.codes - how_read == acc.codes - how_read and loss.exit_code == acc.exit_code
    for sl, sa in zip(loss.studies, acc.studies):
        assert [r.t_grok for r in sl.runs] == [r.t_grok for r in sa.runs]
        assert [r.fully_generalized for r in sl.runs] == [r.fully_generalized for r in sa.runs]
        assert [r.grok_sustained for r in sl.runs] == [r.grok_sustained for r in sa.runs]
