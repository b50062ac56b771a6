"""The live audit inside a training loop, fed hostile values: every refusal comes at ``log()``
with its code, the call leaving nothing behind; what the audit can only judge later (an
accuracy whose scale, percent or fraction, is not decided yet) is a gap of the state; and
``state()``, ``should_stop()`` and the callbacks' hooks never raise on what ``log()`` took."""

from __future__ import annotations

import decimal
import fractions
import math
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from grokaudit import ConfigError, LogFormatError
from grokaudit.callbacks import GrokauditAuditWarning, GrokauditValueWarning, LiveAudit
from grokaudit.errors import ErrorCode, GrokauditError
from grokaudit.live import LiveRun, Missing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STEPS = np.arange(0, 6001, 100)


def _curves(s: np.ndarray) -> dict[str, np.ndarray]:
    """A run that groks at 2000 and compresses at 3000 (fractions)."""
    return {"test_acc": 1.0 / (1.0 + np.exp(-(s - 2000.0) / 150.0)),
            "train_acc": 1.0 / (1.0 + np.exp(-(s - 300.0) / 60.0)),
            "emb_erank": 10.0 + 30.0 / (1.0 + np.exp((s - 3000.0) / 300.0))}


def _codes(live: LiveRun) -> list[Missing]:
    return [g.code for g in live.state().missing]


def _refused(live: LiveRun, step: Any, **values: Any) -> ErrorCode:
    with pytest.raises(LogFormatError) as exc:
        live.log(step, **values)
    return exc.value.code


# -- the accuracy's scale --------------------------------------------------------------------

def test_an_early_percent_run_is_scale_unknown_then_read_as_check_reads_it() -> None:
    cols = _curves(STEPS)
    pct, frac = LiveRun("pct", metrics=["emb_erank"]), LiveRun("frac", metrics=["emb_erank"])
    # a percent run's first evaluations: values above 1 but fewer than 3 above 1.5
    early = [0.5, 1.2, 2.0]
    for k, a in enumerate(early):
        pct.log(int(STEPS[k]), test_acc=a, emb_erank=float(cols["emb_erank"][k]))
        frac.log(int(STEPS[k]), test_acc=a / 100, emb_erank=float(cols["emb_erank"][k]))
    assert pct.should_stop() is False
    gap = next(g for g in pct.state().missing if g.code is Missing.ACCURACY_SCALE_UNKNOWN)
    assert gap.metric == "test_acc"
    assert gap.evidence["columns"]["test_acc"]["above_1_5"] == sum(a > 1.5 for a in early)
    for k in range(len(early), len(STEPS)):
        row = {c: float(v[k]) for c, v in cols.items()}
        pct.log(int(STEPS[k]), **{**row, "test_acc": 100 * row["test_acc"],
                                   "train_acc": 100 * row["train_acc"]})
        frac.log(int(STEPS[k]), **row)
        pct.should_stop()
    a, b = pct.state(), frac.state()
    assert Missing.ACCURACY_SCALE_UNKNOWN not in [g.code for g in a.missing]
    # percent decided as check decides it: the same audit as the run logged in fractions
    assert a.grokked and a.t_grok == b.t_grok
    assert [m.t_compress for m in a.metrics] == [m.t_compress for m in b.metrics]
    assert [g.code for g in a.missing] == [g.code for g in b.missing]


def test_an_accuracy_above_one_before_the_scale_is_known_is_a_gap_not_a_crash() -> None:
    live = LiveRun("r", metrics=["emb_erank"])
    for k in range(10):
        live.log(k * 100, test_acc=0.5, emb_erank=5.0 - k / 10)
    live.log(1000, test_acc=1.004, emb_erank=4.0)
    for _ in range(3):  # and at every later call
        assert live.should_stop() is False
    st_ = live.state()
    assert not st_.defined
    gap = next(g for g in st_.missing if g.code is Missing.ACCURACY_SCALE_UNKNOWN)
    assert gap.evidence["columns"]["test_acc"]["above_1"] == 1
    assert live.row(1000)["test_acc"] == 1.004  # kept: nothing excluded
    assert live.budget_warning(1100) is not None  # the budget warning still answers


def test_an_accuracy_no_scale_can_read_is_refused_at_log() -> None:
    live = LiveRun("r")
    for bad in (-0.5, 100.5, 1e6):
        assert _refused(live, 0, test_acc=bad, emb_erank=1.0) is ErrorCode.ACCURACY_OUT_OF_RANGE
        assert _refused(live, 0, train_acc=bad) is ErrorCode.ACCURACY_OUT_OF_RANGE
    assert live.state().n_points == 0 and live.row(0) == {}  # the refused call left nothing
    fixed = LiveRun("r", acc_scale=1)  # the scale is known: a fraction
    assert _refused(fixed, 0, test_acc=1.004) is ErrorCode.ACCURACY_OUT_OF_RANGE
    fixed.log(0, test_acc=1.0)
    percent = LiveRun("r", acc_scales=("test_acc=100",))
    assert _refused(percent, 0, test_acc=100.5) is ErrorCode.ACCURACY_OUT_OF_RANGE
    percent.log(0, test_acc=100.0, train_acc=1.5)  # train_acc: decided from its values
    assert _refused(percent, 1, train_acc=100.5) is ErrorCode.ACCURACY_OUT_OF_RANGE


def test_acc_scale_percent_before_any_value_above_one_is_a_gap() -> None:
    live = LiveRun("r", acc_scale=100)
    for k in range(5):
        live.log(k * 100, test_acc=0.2 * k / 5, emb_erank=5.0 - k)
    assert live.should_stop() is False
    assert Missing.ACCURACY_SCALE_UNKNOWN in _codes(live)
    live.log(500, test_acc=40.0, emb_erank=0.5)
    assert Missing.ACCURACY_SCALE_UNKNOWN not in _codes(live)


# -- values that are not float64 numbers -----------------------------------------------------

def test_numbers_beyond_float64_are_refused_not_overflowed() -> None:
    live = LiveRun("r")
    for big in (10 ** 400, -(10 ** 400), decimal.Decimal("1e400"),
                fractions.Fraction(10 ** 400, 3)):
        assert _refused(live, 0, emb_erank=big) is ErrorCode.INFINITE_VALUE
    if np.finfo(np.longdouble).max > 1e400:  # x86: a long double holds it
        assert _refused(live, 0, emb_erank=np.longdouble("1e400")) is ErrorCode.INFINITE_VALUE
    assert live.row(0) == {} and live.nonfinite == {}
    live.log(0, emb_erank=math.inf, train_loss=decimal.Decimal("-Infinity"))  # inf itself
    assert live.nonfinite == {"emb_erank": 1, "train_loss": 1}
    live.log(1, emb_erank=10 ** 300)  # a large integer float64 holds
    assert live.row(1)["emb_erank"] == float(10 ** 300)


def test_complex_numbers_are_refused_never_truncated() -> None:
    torch = pytest.importorskip("torch", reason="torch tensors as logged values")
    live = LiveRun("r")
    for z in (np.complex128(1 + 2j), np.complex64(2 + 0j), 1 + 2j, np.array(1 + 2j),
              torch.tensor(1 + 2j)):
        assert _refused(live, 0, emb_erank=z) is ErrorCode.BAD_COLUMN_TYPE, z
    assert live.row(0) == {}


def test_zero_d_arrays_and_tensors_are_read_or_refused_by_their_type() -> None:
    torch = pytest.importorskip("torch", reason="torch tensors as logged values")
    live = LiveRun("r")
    for bad in ("0.5", b"0.5", True, np.bool_(True), np.array(True), torch.tensor(True),
                np.array("0.5"), np.array(0.5, dtype=object), np.array([0.5])):
        assert _refused(live, 0, emb_erank=bad) is ErrorCode.BAD_COLUMN_TYPE, bad
    values = {"a_erank": np.array(0.25), "b_erank": torch.tensor(0.5, dtype=torch.float64),
              "c_erank": np.float32(0.75), "d_erank": np.int64(3),
              "e_erank": fractions.Fraction(1, 8), "f_erank": None}
    live.log(0, **values)
    assert live.row(0) == {"a_erank": 0.25, "b_erank": 0.5, "c_erank": 0.75, "d_erank": 3.0,
                           "e_erank": 0.125}


def test_a_refused_call_records_nothing_of_its_row() -> None:
    live = LiveRun("r")
    live.log(5, emb_erank=2.0)
    assert _refused(live, 5, other=4.0, emb_erank=3.0) is ErrorCode.DUPLICATE_ROWS
    assert _refused(live, 5, train_loss=math.inf, test_acc=-1.0) \
        is ErrorCode.ACCURACY_OUT_OF_RANGE
    assert _refused(live, 6, emb_erank=1.0, run=1.0) is ErrorCode.RESERVED_COLUMN
    assert live.row(5) == {"emb_erank": 2.0} and live.row(6) == {}
    assert live.nonfinite == {} and live.state().n_points == 1
    live.validate(7, emb_erank=1.0)  # asks without recording
    with pytest.raises(LogFormatError) as exc:
        live.validate(7, test_acc=-1.0)
    assert exc.value.code is ErrorCode.ACCURACY_OUT_OF_RANGE and live.row(7) == {}


def test_a_reserved_metric_is_refused_when_the_run_is_created() -> None:
    for name in ("test_acc", "train_acc", "step", "run"):
        with pytest.raises(ConfigError) as exc:
            LiveRun("r", metrics=[name])
        assert exc.value.code is ErrorCode.RESERVED_COLUMN, name


def test_record_leaves_refused_values_out_and_says_so_in_the_state() -> None:
    cols = _curves(STEPS)
    live = LiveRun("r", metrics=["emb_erank"])
    for k, s in enumerate(STEPS):
        refused = live.record(int(s), **{c: float(v[k]) for c, v in cols.items()})
        assert refused == []
    assert live.state().defined
    refused = live.record(6100, test_acc=-0.5, emb_erank=10.0, x=np.complex128(1j))
    assert sorted(e.code.value for e in refused) == ["ACCURACY_OUT_OF_RANGE", "BAD_COLUMN_TYPE"]
    assert live.row(6100) == {"emb_erank": 10.0}  # the rest of the row is taken
    live.record(6200, test_acc=-0.5)
    st_ = live.state()
    assert not st_.defined and live.should_stop(0.0) is False
    gap = next(g for g in st_.missing if g.code is Missing.VALUE_REFUSED and
               g.metric == "test_acc")
    assert gap.evidence["count"] == 2 and gap.evidence["first_step"] == 6100
    step_refusal = live.record(100, emb_erank=1.0)  # a step going back: the row is refused
    assert [e.code for e in step_refusal] == [ErrorCode.STEP_DECREASING]


# -- the property: never raise on what log() took --------------------------------------------

_ACC = st.one_of(st.floats(-2.0, 120.0), st.sampled_from([0.0, 1.0, 1.004, 1.5, 1.6, 2.0,
                                                         99.0, 100.0]),
                 st.none(), st.just(math.nan), st.just(math.inf))
_METRIC = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5),
                    st.none(), st.just(10 ** 400), st.just(np.complex128(1 + 1j)))


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[int, dict[str, Any]]]:
    n = draw(st.integers(1, 14))
    steps = sorted(draw(st.lists(st.integers(0, 3000), min_size=n, max_size=n)))
    out = []
    for s in steps:
        row = {"test_acc": draw(_ACC), "emb_erank": draw(_METRIC)}
        if draw(st.booleans()):
            row["train_acc"] = draw(_ACC)
        if draw(st.booleans()):
            row["wd_like"] = draw(st.sampled_from([0.1, 0.1, 2.0]))
        out.append((s, row))
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), scale=st.sampled_from([None, 1.0, 100.0]))
def test_state_and_should_stop_never_raise_on_rows_log_took(
        rows: list[tuple[int, dict[str, Any]]], scale: float | None) -> None:
    live = LiveRun("r", **({} if scale is None else {"acc_scale": scale}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a value read with a loss (complex → real) fails too
        for k, (s, row) in enumerate(rows):
            try:
                live.log(s, **row)
            except GrokauditError as exc:  # a refusal at log() is coded, and leaves nothing
                assert isinstance(exc, LogFormatError) and exc.code is not None
            if k % 4 == 3 or k == len(rows) - 1:
                st_ = live.state()
                assert live.should_stop(0.0) in (True, False)
                assert st_.defined or st_.missing


# -- the callbacks' shared update path ---------------------------------------------------------

def test_the_callbacks_update_never_raises_on_an_early_percent_run() -> None:
    audit = LiveAudit({"emb": "embed.weight"}, stop_when=None)
    for k, acc in enumerate([0.5, 1.2, 2.0, 3.0]):
        row = {**audit.accuracies({"val_acc": acc}), "emb_erank": 5.0 - k, "emb_pr": 3.0}
        st_ = audit.update(k * 100, row)
        assert audit.should_stop(k * 100) is False
    assert Missing.ACCURACY_SCALE_UNKNOWN in [g.code for g in st_.missing]


def test_the_callbacks_warn_and_go_on_past_a_value_the_audit_refuses() -> None:
    audit = LiveAudit({"emb": "embed.weight"}, stop_when="settled")
    with pytest.warns(GrokauditValueWarning):
        for k in range(4):
            row = {**audit.accuracies({"val_acc": -0.5, "train_acc": np.complex128(0.5)}),
                   "emb_erank": 5.0 - k, "emb_pr": 3.0}
            audit.update(k * 100, row)
            assert audit.should_stop(k * 100) is False
    assert audit.live.row(300) == {"emb_erank": 2.0, "emb_pr": 3.0}
    assert audit.state is not None
    refused = {(g.metric, g.evidence["code"]) for g in audit.state.missing
               if g.code is Missing.VALUE_REFUSED}
    assert refused == {("test_acc", "ACCURACY_OUT_OF_RANGE"), ("train_acc", "BAD_COLUMN_TYPE")}
    # the rows a checkpoint saves are the ones taken, and restore without a warning
    audit2 = LiveAudit({"emb": "embed.weight"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        audit2.load_state_dict(audit.state_dict())
    assert audit2.live.row(300) == audit.live.row(300)


def _lightning_trainer(metrics: dict[str, Any], step: int, logged: list[dict[str, float]]
                       ) -> Any:
    logger = SimpleNamespace(log_metrics=lambda values, step: logged.append(dict(values)))
    return SimpleNamespace(
        sanity_checking=False, state=SimpleNamespace(fn="fit"), callback_metrics=metrics,
        fit_loop=SimpleNamespace(epoch_loop=SimpleNamespace(_batches_that_stepped=step)),
        loggers=[logger], should_stop=False, max_steps=10_000,
        strategy=SimpleNamespace(reduce_boolean_decision=lambda d, all: d))


def test_the_lightning_hook_goes_on_past_diverged_weights_and_refused_values() -> None:
    torch = pytest.importorskip("torch", reason="the Lightning callback measures a torch model")
    pytest.importorskip("lightning", reason="the Lightning callback needs lightning")
    from grokaudit.callbacks.lightning import GrokauditCallback

    model = torch.nn.Module()
    model.embed = torch.nn.Embedding(7, 4)
    cb = GrokauditCallback({"emb": "embed.weight"}, stop_when="settled")
    logged: list[dict[str, float]] = []
    with pytest.warns(GrokauditValueWarning):
        for k, acc in enumerate([0.1, 0.2, -0.3]):
            cb.on_validation_end(_lightning_trainer({"val_acc": torch.tensor(acc)}, k * 100,
                                                    logged), model)
    assert len(logged) == 3 and cb.live.row(200) == logged[2]  # -0.3 left out, metrics kept
    with torch.no_grad():
        model.embed.weight.fill_(math.nan)  # the weights diverged
    trainer = _lightning_trainer({"val_acc": torch.tensor(0.4)}, 300, logged)
    with pytest.warns(GrokauditAuditWarning):
        cb.on_validation_end(trainer, model)
    assert trainer.should_stop is False and len(logged) == 3
    assert [(s, what) for s, what, _ in cb.failures] == [(300, "measure")]
    assert cb.live.row(300) == {"test_acc": pytest.approx(0.4)}  # the accuracy is still fed
    assert Missing.VALUE_REFUSED in [g.code for g in cb.state.missing]


def test_the_transformers_hook_goes_on_past_diverged_weights() -> None:
    torch = pytest.importorskip("torch", reason="the HF callback measures a torch model")
    transformers = pytest.importorskip("transformers", reason="the HF callback needs it")
    from grokaudit.callbacks.transformers import GrokauditCallback

    model = torch.nn.Module()
    model.embed = torch.nn.Embedding(7, 4)
    logged: list[dict[str, float]] = []
    trainer = SimpleNamespace(log=lambda values: logged.append(dict(values)),
                              callback_handler=SimpleNamespace(callbacks=[]),
                              add_callback=lambda cb: None)
    cb = GrokauditCallback({"emb": "embed.weight"}, trainer=trainer, stop_when="settled")
    state = transformers.TrainerState(max_steps=1000)
    control = transformers.TrainerControl()
    args = SimpleNamespace(run_name="r", output_dir="out")
    cb.on_train_begin(args, state, control, model=model)
    for k in range(3):
        state.global_step = k * 100
        cb.on_evaluate(args, state, control, metrics={"eval_accuracy": 0.1 * k}, model=model)
    with torch.no_grad():
        model.embed.weight.fill_(math.nan)
    state.global_step = 300
    with pytest.warns(GrokauditAuditWarning), pytest.warns(GrokauditValueWarning):
        cb.on_evaluate(args, state, control, metrics={"eval_accuracy": 250.0}, model=model)
    assert len(logged) == 3 and not control.should_training_stop
    assert [(s, what) for s, what, _ in cb.failures] == [(300, "measure")]
    gap = next(g for g in cb.state.missing if g.code is Missing.VALUE_REFUSED)
    assert gap.metric == "test_acc" and gap.evidence["code"] == "ACCURACY_OUT_OF_RANGE"


def test_the_live_audit_reads_keras_accuracies_as_check_does() -> None:
    """Keras logs ``acc`` (training) beside ``val_acc``: check reads ``acc`` as the train
    accuracy, while the callbacks' live audit found no train accuracy in the same keys."""
    from grokaudit.callbacks import LiveAudit

    for logs in ({"acc": 0.9, "val_acc": 0.5, "loss": 0.1},
                 {"accuracy": 0.9, "val_accuracy": 0.5}):
        audit = LiveAudit({"emb": "embed.weight"})
        for _ in range(3):
            out = audit.accuracies(logs)
        assert out == {"test_acc": 0.5, "train_acc": 0.9}, (logs, out)
    audit = LiveAudit({"emb": "embed.weight"})
    assert audit.accuracies({"acc": 0.9, "test_acc": 0.5}) == {"test_acc": 0.5}
