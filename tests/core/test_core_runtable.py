"""Run results as columns (issue 22): ``StudyResult.runs`` is a :class:`RunTable` from which
the audit reduces its findings without making a RunResult; a RunResult is made on demand and
equals the one the constructor makes; the Arrow form holds the same values."""

from __future__ import annotations

import dataclasses
import math
import pickle
from typing import Any

import grokaudit
import pytest
from grokaudit.reasons import Reason
from grokaudit.results import Interval, RunResult
from grokaudit.runtable import RunTable
from helpers.core_builders import censored_study


def _runs(profile: str = "default") -> RunTable:
    res = grokaudit.audit_table(censored_study(), by="rho", profile=profile, fail_on=("none",))
    runs = res.studies[0].runs
    assert isinstance(runs, RunTable)
    return runs


def _rebuilt(obj: Any) -> Any:
    cls = type(obj)
    return cls(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)})


@pytest.mark.parametrize("profile", ["default", "reference"])
def test_rows_are_the_runresults_the_constructor_makes(profile):
    runs = list(_runs(profile))
    if profile == "default":
        assert any(r.t_compress is not None and r.t_compress.censored for r in runs)
    assert all((r.reference is not None) == (profile == "reference") for r in runs)
    for r in runs:
        c = _rebuilt(r)
        assert type(r) is RunResult
        assert r == c and hash(r) == hash(c) and repr(r) == repr(c)
        assert r.to_dict() == c.to_dict()
        assert pickle.loads(pickle.dumps(r)) == c
        with pytest.raises(dataclasses.FrozenInstanceError):
            r.run = "changed"  # type: ignore[misc]


def test_a_runtable_is_the_sequence_of_its_runs():
    t = _runs()
    rows = tuple(t)
    assert len(t) == len(rows) == censored_study()["run"].nunique()
    assert t == rows and t[-1] == rows[-1] and t[0] == rows[0]
    assert t[2:5] == rows[2:5] and isinstance(t[2:5], RunTable)
    assert t[::-1] == rows[::-1]
    with pytest.raises(IndexError):
        t[len(t)]
    assert [r.run for r in t] == t.run.tolist()
    assert pickle.loads(pickle.dumps(t)) == t
    assert hash(t) == hash(pickle.loads(pickle.dumps(t)))


def test_the_audit_reduces_from_columns_without_making_runresults(monkeypatch):
    """With row construction broken, the audit still gives the same findings and verdicts;
    only rendering the runs (JSON) needs the rows."""
    want = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))

    def no_rows(self: RunTable, k: int) -> RunResult:
        raise AssertionError("a RunResult was made while auditing")

    monkeypatch.setattr(RunTable, "_row", no_rows)
    got = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    assert [f.to_dict() for f in got.findings] == [f.to_dict() for f in want.findings]
    assert [s.verdict for s in got.studies] == [s.verdict for s in want.studies]
    assert got.studies[0].cells == want.studies[0].cells
    with pytest.raises(AssertionError):
        got._reference_json()


def test_the_json_runs_are_the_rows_to_dict():
    res = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    s = res.studies[0]
    assert s.to_dict()["runs"] == [r.to_dict() for r in s.runs]


def test_run_scoped_findings_name_the_runs_that_carry_the_code():
    """The per-cell run findings, reduced from the reason columns, list exactly the runs whose
    reasons hold the code (checked against the rows)."""
    res = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    s = res.studies[0]
    run_findings = [f for f in s.findings if f.scope == "run"]
    assert run_findings
    for f in run_findings:
        want = [r.run for r in s.runs if r.cell == f.cell and f.code in r.reasons]
        assert list(f.runs) == want
    unstable = [f for f in s.findings if f.code is Reason.FLOOR_UNSTABLE]
    for f in unstable:
        want = [r.run for r in s.runs if r.cell == f.cell and r.floor_stability == "unstable"
                and not r.t_grok.censored]
        assert list(f.runs) == want


def _iv(tab: Any, name: str, k: int) -> Interval | None:
    row = {p: tab.column(f"{name}.{p}")[k].as_py() for p in ("value", "lower", "upper",
                                                            "censored")}
    if row["censored"] is None:
        return None
    return Interval(row["value"], row["lower"], row["upper"], row["censored"])


@pytest.mark.parametrize("profile", ["default", "reference"])
def test_the_arrow_table_holds_the_rows_values(profile):
    t = _runs(profile)
    tab = t.to_arrow()
    assert tab.num_rows == len(t)
    for k, r in enumerate(t):
        assert tab.column("run")[k].as_py() == r.run
        assert tab.column("cell")[k].as_py() == pytest.approx(r.cell)
        assert tab.column("reasons")[k].as_py() == [c.value for c in r.reasons]
        for name in ("floor", "m_grok", "inflation", "rel_lag"):
            v = tab.column(name)[k].as_py()
            want = getattr(r, name)
            assert (v is None or math.isnan(v)) if want is None else v == want
        for name in ("floor_stability", "compression", "snapshot"):
            assert tab.column(name)[k].as_py() == getattr(r, name)
        assert tab.column("grok_sustained")[k].as_py() == r.grok_sustained
        for name in ("t_grok", "t_compress", "lag", "t_mem"):
            assert _iv(tab, name, k) == getattr(r, name)


@pytest.mark.parametrize("profile", ["default", "reference"])
@pytest.mark.parametrize("indent", [2, None])
def test_the_json_written_in_pieces_is_the_json(profile: str, indent: int | None) -> None:
    """``json_chunks`` (what ``--json`` writes, run by run) gives ``to_json``'s text."""
    res = grokaudit.audit_table(censored_study(), by="rho", profile=profile, fail_on=("none",))
    assert len(res.studies[0].runs) > 1
    assert "".join(res.json_chunks(indent)) == res.to_json(indent) == res._reference_json(indent)


def test_the_json_in_pieces_makes_no_run_object(monkeypatch) -> None:
    """Runs held as columns are written from the columns: no RunResult and no run dict is
    made (a million runs were a million dicts, then 160 µs a run through json's encoder),
    and the text is ``to_json``'s."""
    res = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    want = res._reference_json()

    def no_rows(self: RunTable, k: int) -> RunResult:
        raise AssertionError("a RunResult was made while writing the JSON")

    monkeypatch.setattr(RunTable, "_row", no_rows)
    assert "".join(res.json_chunks()) == res.to_json() == want
    with pytest.raises(AssertionError):
        res._reference_json()


def test_runs_made_elsewhere_are_written_one_dict_at_a_time(monkeypatch) -> None:
    """A study whose runs are RunResults (a result built by hand, not by the audit) is
    written through their dicts: none made before writing starts, at most one alive."""
    import gc
    import weakref

    res = grokaudit.audit_table(censored_study(), by="rho", fail_on=("none",))
    res = dataclasses.replace(res, studies=tuple(
        dataclasses.replace(s, runs=tuple(s.runs)) for s in res.studies))
    alive: list[Any] = []
    most = [0]
    real = RunResult.to_dict

    class Tracked(dict):  # type: ignore[type-arg]
        pass

    def to_dict(self: RunResult) -> dict[str, Any]:
        gc.collect()
        now = [r for r in alive if r() is not None]
        most[0] = max(most[0], len(now))
        d = Tracked(real(self))
        alive.append(weakref.ref(d))
        return d

    monkeypatch.setattr(RunResult, "to_dict", to_dict)
    chunks = res.json_chunks()
    assert not alive  # nothing made before writing starts
    text = "".join(chunks)
    assert len(alive) == sum(len(s.runs) for s in res.studies) > 1
    assert most[0] <= 1
    monkeypatch.setattr(RunResult, "to_dict", real)
    assert text == res._reference_json()


def _odd_runs(profile: str) -> Any:
    """The audit of the censored study with its run columns replaced by every kind of value
    the JSON writes: ids that are not text, carry quotes, ``%``, controls, U+2028 and
    astral characters; cells that are tuples, None, text, booleans, numpy numbers;
    floats ±inf, NaN, -0.0, subnormal, whole at and beyond 2⁵³; intervals missing,
    censored, left-censored, open above, not kept; an empty reason list."""
    import numpy as np
    from grokaudit.runtable import Intervals

    res = grokaudit.audit_table(censored_study(), by="rho", profile=profile,
                                fail_on=("none",))
    s = res.studies[0]
    t = s.runs
    n = len(t)
    ids = np.array([7, "a\"b%s%d", "ctl\x1b\n\u2028", "𝔘ni", np.str_("np"), -3.5]
                   + [f"r{i}" for i in range(n - 6)], dtype=object)
    odd = np.array([np.inf, -np.inf, np.nan, -0.0, 5e-324, 2.0**53, 2.0**53 + 2, -(2.0**60),
                    0.1 + 0.2, 1e300, 3.0, -7.0, 1 / 3])
    floats = {k: np.resize(np.roll(odd, j), n) for j, k in enumerate(t.floats)}
    lower = np.resize(np.array([np.nan, 10.0, 10.0, 10.0, np.nan, 2.0**53, -0.0, 10.0]), n)
    value = np.resize(np.array([np.nan, np.nan, 20.0, 20.0, 5.0, 2.0**53, 0.5, np.nan]), n)
    upper = np.resize(np.array([np.nan, 30.0, np.inf, 30.0, np.nan, np.inf, 1.0, np.nan]), n)
    kept = np.resize(np.array([True, True, True, False, True, True, True, True]), n)
    intervals = {k: Intervals(np.roll(value, j), np.roll(lower, j), np.roll(upper, j),
                              None if j % 2 else np.roll(kept, j))
                 for j, k in enumerate(t.intervals)}
    intervals["t_grok"] = t.intervals["t_grok"]  # a run always has one
    cells = (("a", 1), None, 'q"uote\x7f', True, np.float32(0.85), np.int64(3), 2.5)
    flags = {k: np.resize(np.array([True, False, False]), n) for k in t.flags}
    reason_sets = (*t.reason_sets, ())
    odd_t = dataclasses.replace(
        t, run=ids, cell_values=cells, cell=np.arange(n) % len(cells), floats=floats,
        flags=flags, intervals=intervals,
        drift_interval=(np.resize(odd, n), np.roll(np.resize(odd, n), 3)),
        reason_sets=reason_sets, reasons=np.arange(n) % len(reason_sets),
        reference=None if t.reference is None else {
            k: (np.resize(np.array([True, False]), n) if v.dtype == bool
                else np.resize(np.roll(odd, 5), n)) for k, v in t.reference.items()})
    return dataclasses.replace(res, studies=(dataclasses.replace(s, runs=odd_t),))


@pytest.mark.parametrize("profile", ["default", "reference"])
@pytest.mark.parametrize("batch", [1, 3, 4096])
def test_runs_written_from_columns_are_json_of_their_rows(monkeypatch, profile: str,
                                                          batch: int) -> None:
    """Every kind of value a run holds is written from the columns as json writes the run's
    dict, at every indent, whatever the batch size."""
    import json

    from grokaudit import runtable

    monkeypatch.setattr(runtable, "JSON_BATCH", batch)
    res = _odd_runs(profile)
    for indent in (2, 1, 4, 0, None):
        text = "".join(res.json_chunks(indent))
        assert text == res.to_json(indent) == res._reference_json(indent), indent
    runs = json.loads(res.to_json())["studies"][0]["runs"]
    assert {type(r["run"]) for r in runs} >= {int, float, str}
    assert any(r["t_mem"] is None for r in runs) and any(r["lag"] and r["lag"]["left_censored"]
                                                       for r in runs)
    assert [] in [r["reasons"] for r in runs] and ["a", 1] in [r["cell"] for r in runs]


def test_a_json_that_fails_part_way_leaves_no_file(tmp_path) -> None:
    """Written in pieces, the JSON still lands whole or not at all."""
    from grokaudit.errors import OutputError
    from grokaudit.outputs import resolve_output

    out = resolve_output(str(tmp_path / "r.json"), flag="--json")

    def chunks() -> Any:
        yield "{"
        raise OutputError("stopped", code=grokaudit.errors.ErrorCode.OUTPUT_NOT_WRITABLE)

    with pytest.raises(OutputError):
        out.write_chunks(chunks(), batch=1)
    assert list(tmp_path.iterdir()) == []
    out.write_chunks(iter(["{", '"a": 1', "}\n"]), transform=str.upper, batch=2)
    assert (tmp_path / "r.json").read_text() == '{"A": 1}\n'


def test_a_json_of_large_pieces_is_written_a_few_mib_at_a_time(tmp_path) -> None:
    """A piece may hold thousands of runs: a batch is cut at 4 Mi characters as well as at
    ``batch`` pieces, so that the text is never joined whole."""
    from grokaudit.outputs import resolve_output

    seen: list[int] = []

    def upper(text: str) -> str:
        seen.append(len(text))
        return text.upper()

    out = resolve_output(str(tmp_path / "r.json"), flag="--json")
    big = "x" * (3 << 20)
    out.write_chunks(iter([big, big, big, "y"]), transform=upper)
    assert seen == [6 << 20, (3 << 20) + 1]
    assert (tmp_path / "r.json").read_text() == (big * 3 + "y").upper()


@pytest.mark.parametrize("metric", [True, False])
def test_runs_table_says_nothing_of_sustaining_a_grok_a_run_never_had(metric: bool) -> None:
    """A run that never grokked has nothing to sustain: its row prints "—" (it printed "yes",
    the flag's vacuous value, which the JSON keeps); a grokked run's row says yes."""
    import numpy as np
    import pandas as pd
    from grokaudit.report import render_text

    s = np.arange(0, 2000, 10)
    df = pd.concat([pd.DataFrame({"run": r, "step": s, "test_acc": np.where(s >= tg, 0.98, 0.1),
                                  "train_acc": 1.0, "emb_erank": np.where(s >= 1200, 5.0, 20.0)})
                    for r, tg in (("grokked", 800), ("never", 10**9))])
    res = grokaudit.audit_table(df if metric else df.drop(columns="emb_erank"))
    runs = {r.run: r for r in res.studies[0].runs}
    assert runs["never"].t_grok.censored and runs["never"].grok_sustained  # vacuous, as before
    rows = {line.split()[0]: line.split() for line in render_text(res).splitlines()
            if line.startswith("  grokked ") or line.startswith("  never ")}
    column = (["run", "t_grok", "sustained"] if metric
              else ["run", "t_mem", "t_grok", "sustained"]).index("sustained")
    # the censored t_grok prints as two words (">1990 (cens)")
    assert rows["grokked"][column] == "yes"
    assert rows["never"][column + 1] == "—"
