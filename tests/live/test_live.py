"""The live audit of one run (issue 24): what is missing and why, with numbers recomputed from
the generator; the settled-stop rule; a log stopped where it says stop is audited by ``check``
with t_compress uncensored; bad input refused with its code; RunLogger's plain-loop form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grokaudit import ConfigError, LogFormatError, RunLogger, audit_table
from grokaudit.errors import ErrorCode
from grokaudit.live import DEFAULT_GROK_MULTIPLE, DEFAULT_MARGIN, LiveRun, Missing

STEPS = np.arange(0, 20001, 100)


def _acc(s: np.ndarray, t_grok: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(s - t_grok) / 150.0))


def _feed(live: LiveRun, steps, **cols) -> None:
    for k, s in enumerate(steps):
        live.log(int(s), **{c: float(v[k]) for c, v in cols.items()})


def _settling(s: np.ndarray, t_grok: float = 2000.0, t_c: float = 5000.0) -> dict:
    return {"test_acc": _acc(s, t_grok), "train_acc": _acc(s, 300.0),
            "emb_erank": 10.0 + 30.0 / (1.0 + np.exp((s - t_c) / 300.0))}


def test_before_three_points_and_without_accuracy() -> None:
    live = LiveRun("r")
    live.log(0, emb_erank=5.0)
    assert [g.code for g in live.state().missing] == [Missing.TOO_FEW_POINTS]
    live.log(100, emb_erank=5.0)
    live.log(200, emb_erank=4.0)
    assert [g.code for g in live.state().missing] == [Missing.NO_ACCURACY]


def test_not_grokked_yet() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS <= 1500]
    _feed(live, s, **_settling(s, t_grok=5000.0))
    st = live.state()
    assert not st.defined and not st.grokked
    assert st.missing[0].code is Missing.NOT_GROKKED


@pytest.mark.parametrize("last_loss,code", [(0.5, Missing.NOT_GROKKED),
                                             (None, Missing.GROK_NOT_SUSTAINED)])
def test_a_loss_criterion_reports_its_own_level(last_loss, code) -> None:
    """With ``grok_on=test_loss, grok_below=0.1`` the gap's threshold is the loss level 0.1,
    not the accuracy threshold (0.9) the loss was never compared with."""
    live = LiveRun("r", metrics=["emb_erank"], grok_on="test_loss", grok_below=0.1)
    s = STEPS[STEPS <= 6000].astype(float)
    if last_loss is not None:  # falls to 0.5 only: never below 0.1
        loss = np.where(s < 1000, 2.0, last_loss)
    else:  # below 0.1 from step 1000, back up to 1.0 from step 3000
        loss = np.where(s < 1000, 2.0, np.where(s < 3000, 0.01, 1.0))
    _feed(live, s, test_loss=loss, train_acc=np.ones_like(s),
          emb_erank=10.0 + 30.0 / (1.0 + np.exp((s - 4000) / 300.0)))
    gap = live.state().missing[0]
    assert gap.code is code
    if code is Missing.NOT_GROKKED:
        assert gap.evidence["threshold"] == 0.1 and gap.evidence["final"] == last_loss
    else:
        assert gap.evidence["fell_at"] == 3000.0


def test_a_floor_still_moving_names_its_slope() -> None:
    """After grok the metric falls on a straight line of −3 per 1 000 steps (over the final
    window, more than the floor's band): the floor is moving, and the slope reported is the
    line's."""
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS <= 12000].astype(float)
    acc = _acc(s, 1000.0)
    metric = 40.0 - 3.0 * s / 1000.0
    _feed(live, s, test_acc=acc, train_acc=np.ones_like(s), emb_erank=metric)
    st = live.state()
    gap = next(g for g in st.missing if g.code is Missing.FLOOR_MOVING)
    slope = st.metrics[0].slope_per_1000
    assert slope == pytest.approx(-3.0, rel=0.02)
    lo, hi = st.metrics[0].slope_interval
    assert lo <= -3.0 * 0.999 and -3.0 * 1.001 <= hi < 0
    assert gap.evidence["slope_per_1000"] == slope
    assert not st.defined and live.should_stop() is False


def test_a_settled_run_stops_and_its_log_audits_uncensored() -> None:
    # a grok at 2 000 and a compression at 5 000: the default's 20 x t_grok (40 000) is past
    # this 40 000-step log, so the run is followed with a smaller multiple
    live = LiveRun("r", metrics=["emb_erank"], grok_multiple=4)
    stop = None
    steps = np.arange(0, 40001, 100)
    cols = _settling(steps.astype(float))
    for k, s in enumerate(steps):
        live.log(int(s), **{c: float(v[k]) for c, v in cols.items()})
        if live.should_stop():
            stop = int(s)
            break
    assert stop is not None and stop < steps[-1]
    st = live.state()
    assert st.defined and stop >= (1 + DEFAULT_MARGIN) * st.defined_from
    assert st.t_grok is not None and stop >= 4 * st.t_grok.upper
    assert st.stop_at == max((1 + DEFAULT_MARGIN) * st.defined_from, 4 * st.t_grok.upper)
    # the log a run stopped here would leave: check says what live said
    df = pd.DataFrame({"run": "r", "step": steps, **cols})
    res = audit_table(df[df["step"] <= stop], metrics=["emb_erank"])
    run = res.studies[0].runs[0]
    assert run.t_compress is not None and not run.t_compress.censored
    assert stop >= run.t_compress.upper
    assert run.t_compress.to_dict() == st.metrics[0].t_compress.to_dict()


def test_the_default_waits_for_twenty_times_the_grok() -> None:
    """Settled at every state after its compression (S0 ≈ 5 000), the run is still not stopped
    before 20 × t_grok: a metric flat over the first multiples of t_grok may not have started
    to compress; ``stop_not_before`` says so before the numbers are defined."""
    live = LiveRun("r", metrics=["emb_erank"])
    steps = np.arange(0, 60001, 100)
    cols = _settling(steps.astype(float))
    stop = None
    for k, s in enumerate(steps):
        live.log(int(s), **{c: float(v[k]) for c, v in cols.items()})
        st = live.state()
        if st.grokked and not st.defined and st.t_grok is not None:
            assert st.stop_not_before == DEFAULT_GROK_MULTIPLE * st.t_grok.upper
        if live.should_stop():
            stop = int(s)
            break
    st = live.state()
    assert st.t_grok is not None and st.defined_from is not None and stop is not None
    assert (1 + DEFAULT_MARGIN) * st.defined_from < DEFAULT_GROK_MULTIPLE * st.t_grok.upper
    assert stop == min(x for x in steps if x >= DEFAULT_GROK_MULTIPLE * st.t_grok.upper)


def test_a_second_compression_restarts_the_count() -> None:
    """The floor leaves its band (the metric compresses again): defined_from moves past it."""
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS.astype(float)
    cols = _settling(s, t_c=3000.0)
    cols["emb_erank"] = cols["emb_erank"] - 6.0 / (1.0 + np.exp(-(s - 9000.0) / 200.0))
    since = []
    for k, step in enumerate(STEPS):
        live.log(int(step), **{c: float(v[k]) for c, v in cols.items()})
        since.append(live.state().defined_from)
    seen = [d for d in since if d is not None]
    assert min(seen) < 9000 < max(seen)


def test_budget_warning_only_in_the_last_window_and_undefined() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    s = STEPS[STEPS <= 4000].astype(float)
    _feed(live, s, **_settling(s, t_grok=5000.0, t_c=9000.0))
    assert live.budget_warning(20000) is None  # the last window has not begun
    assert live.budget_warning(4200) is not None  # it has, and nothing is defined
    done = LiveRun("r", metrics=["emb_erank"])
    _feed(done, STEPS.astype(float), **_settling(STEPS.astype(float)))
    assert done.state().defined and done.budget_warning(20000) is None


def test_bad_input_is_refused_with_its_code() -> None:
    live = LiveRun("r")
    live.log(100, test_acc=0.5)
    with pytest.raises(LogFormatError) as exc:
        live.log(50, test_acc=0.5)
    assert exc.value.code is ErrorCode.STEP_DECREASING
    with pytest.raises(LogFormatError) as exc:
        live.log(100, test_acc=0.7)
    assert exc.value.code is ErrorCode.DUPLICATE_ROWS
    live.log(100, test_acc=0.5, emb_erank=3.0)  # the same value again, another name: one row
    for bad in ("x", -1, float("inf")):
        with pytest.raises(LogFormatError):
            live.log(bad, test_acc=0.5)
    with pytest.raises(ConfigError) as cexc:
        LiveRun("r", grok_treshold=0.9)
    assert cexc.value.code is ErrorCode.UNKNOWN_OPTION
    with pytest.raises(ConfigError) as cexc:
        live.should_stop(-1.0)
    assert cexc.value.code is ErrorCode.OPTION_OUT_OF_RANGE


@pytest.mark.slow
def test_runlogger_live_is_the_same_audit(tmp_path) -> None:
    s = STEPS.astype(float)
    cols = _settling(s)
    ref = LiveRun("r", metrics=["emb_erank"])
    with RunLogger(tmp_path / "logs", run="r", conditions={"wd": 1.0},
                   live={"metrics": ["emb_erank"]}) as log:
        for k, step in enumerate(STEPS):
            vals = {c: float(v[k]) for c, v in cols.items()}
            log.log(int(step), **vals)
            ref.log(int(step), **vals)
            assert log.should_stop() == ref.should_stop()
        assert log.state().to_dict() == ref.state().to_dict()
    with RunLogger(tmp_path / "logs", run="q") as plain:
        with pytest.raises(ConfigError) as exc:
            plain.state()
        assert exc.value.code is ErrorCode.INVALID_OPTION


def test_state_json_is_strict(tmp_path) -> None:
    import json

    live = LiveRun("r", metrics=["emb_erank"])
    _feed(live, STEPS.astype(float), **_settling(STEPS.astype(float)))
    d = live.state().to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["defined"] is True


def test_every_missing_code_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "live.md").read_text()
    for code in Missing:
        assert f"| `{code.value}` |" in doc, code
