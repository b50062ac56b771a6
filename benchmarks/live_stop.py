"""The stop rule judged on long runs: where it stops, and whether the stopped audit is the long one.

    python benchmarks/live_stop.py [--margins 0.25,0.5,1,2,3] [--markdown] [--train]
                                   [--write-docs docs/live.md]

The test bed is runs whose budget is several times their settling time, so that an early stop
can be compared with what the run showed long after it:

* ``benchmarks/live_long/*.parquet``: the bundled trainer's recipes (the critical-norm MLP, the
  compression-clock Transformer with and without LayerNorm, seed 003's MLP) at a few weight
  decays and seeds, trained 4-18x past their settling step by the ``.toml`` beside each
  (``--train`` trains the missing ones on the CPU, resumably; tens of minutes on 2 cores);
* the long public logs of ``tests/corpus/`` listed in :data:`CORPUS`.

Each run is replayed row by row through :class:`grokaudit.live.LiveRun`, as a training loop
feeds it, and the live state is computed after every logged row. The state at a step is a
function of the rows up to it, so a callback that evaluates every C steps stops at the first of
its evaluation steps where the rule holds: the benchmark reads the stop step at three cadences
from the one replay (every logged row; every 500 steps; every 2 000 steps, the first logged row
at or after each multiple). The rules: the numbers defined and the run at ``(1 + margin) x S0``,
S0 being the step since which the grok and each metric's floor band have held, and at
``g x t_grok`` (g = 0, 10, 20; the library's default is marked, and the benchmark checks that
its rule is the library's ``LiveState.settled``, row for row); the same with the metric's drift
over [S0, S] projected flat; the default with every run of a cell stopped at the latest of its
runs' stops (what the sweep's horizon check compares); and, for comparison, the rule of v1.6
(the numbers defined and unchanged in every state computed since S0, stop at ``4 x S0``; its S0
depends on the cadence), at every logged row.

For every rule and cadence the sweep of stopped runs (a run the rule never stops keeps its whole
log) is audited exactly as the long sweep is, and each run is compared:

* ``stop / S0_long``: the stop step as a multiple of the long run's S0 (its t_grok and
  t_compress, or, for a metric that does not compress, the step since which it sat on its
  floor);
* agreement: the same compression status (compressed, none, censored), the t_compress within
  10 % of the long run's (or the long value inside the stopped interval), and the floor within
  the long run's band (±δ) — and, per study, the same clock verdict.

It prints counts and ratios, never seconds.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
LONG = ROOT / "benchmarks" / "live_long"


@dataclass(frozen=True)
class Source:
    """One sweep of long runs and the options it is audited with."""

    name: str
    path: Path
    metric: str
    by: str | None = None
    cell: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)


#: the trained long sweeps (``--train`` makes the missing ones from the .toml beside each)
TRAINED = (
    Source("mlp_long", LONG / "mlp_long.parquet", "emb_erank", by="wd"),
    Source("tf_long", LONG / "tf_long.parquet", "emb_erank", by="layernorm"),
    Source("s003_long", LONG / "s003_long.parquet", "emb_erank", by="wd"),
)
#: long public logs (tests/corpus), read as the corpus tests read them: the public
#: critical-norm sweep (60 000 steps on a log-spaced grid; eff_rank_E, the metric its corpus
#: test audits, settles at 2-2.7x less, the spectral entropies at 3-3.9x less) and the
#: Muon/AdamW mechanism runs (every 25 steps to 4 725)
CORPUS = (
    Source("ClevixLab eff_rank_E", ROOT / "tests/corpus/ClevixLab_critical-norm-grokking/"
           "grokfss_p59", "eff_rank_E", by="alpha"),
    Source("ClevixLab spec_entropy_W2", ROOT / "tests/corpus/ClevixLab_critical-norm-grokking/"
           "grokfss_p59", "spec_entropy_W2", by="alpha"),
    Source("PeterPonyu stable_rank_mean", ROOT / "tests/corpus/PeterPonyu_muon-norm-cap-"
           "grokking/experiments/results/mech", "stable_rank_mean", by="weight_decay",
           cell=("optimizer",)),
)

#: the multiples of t_grok a run must also reach (a compression starts long after the grok;
#: 0: no such floor)
GROK_MULTIPLES = (0.0, 10.0, 20.0)

#: the cadences a stop is read at: None = every logged row, else every N steps
CADENCES: tuple[int | None, ...] = (None, 500, 2000)


@dataclass
class Replay:
    """One run replayed: the live state after every logged row."""

    source: str
    run: str
    steps: np.ndarray
    defined: np.ndarray  #: bool per row
    s0: np.ndarray  #: defined_from per row (NaN when not defined)
    old_anchor: np.ndarray  #: the v1.6 rule's S0 (history-dependent), per row
    delta: np.ndarray  #: the floor band's half-width δ per row (NaN when none)
    metric: np.ndarray  #: the metric's logged values (NaN where not logged)
    t_grok: np.ndarray  #: t_grok's upper end per row (NaN when not grokked)
    settled: np.ndarray  #: LiveState.settled per row, under the library's default rule

    def stop(self, margin: float, cadence: int | None, grok: float = 0.0,
             drift: bool = False) -> float | None:
        """The first evaluation step at which the rule holds: the numbers defined, the run at
        ``(1 + margin) × S0`` and at ``grok × t_grok`` (``drift``: and the metric's
        Theil–Sen slope over the settled stretch [S0, S], at the far end of its 90 %
        interval, moves it by less than δ over the next ``margin × S`` steps)."""
        ok = self.defined & (self.steps >= (1.0 + margin) * self.s0) & (self.steps > self.s0)
        if grok:
            ok = ok & (self.steps >= grok * self.t_grok)
        if drift:
            ok = ok & self._flat(margin, ok)
        return self._first(ok, cadence)

    def _flat(self, margin: float, ok: np.ndarray) -> np.ndarray:
        from scipy.stats import theilslopes

        out = np.zeros_like(ok)
        for i in np.flatnonzero(ok):
            sel = (self.steps >= self.s0[i]) & (self.steps <= self.steps[i]) \
                & np.isfinite(self.metric)
            x, y = self.steps[sel], self.metric[sel]
            if x.size > 64:  # medians of 64 equal-count bins, as the floor's drift test
                parts = np.array_split(np.arange(x.size), 64)
                x = np.array([np.median(x[p]) for p in parts])
                y = np.array([np.median(y[p]) for p in parts])
            if x.size < 3:
                continue
            slope, _, lo, hi = theilslopes(y, x, alpha=0.90)
            far = max(abs(lo), abs(hi))
            out[i] = far * margin * self.steps[i] <= self.delta[i]
        return out

    def stop_v16(self, margin: float = 3.0) -> float | None:
        ok = ~np.isnan(self.old_anchor) & (self.steps >= (1.0 + margin) * self.old_anchor) \
            & (self.steps > self.old_anchor)
        return self._first(ok, None)

    def _first(self, ok: np.ndarray, cadence: int | None) -> float | None:
        if cadence is not None:
            ok = ok & _evaluated(self.steps, cadence)
        idx = np.flatnonzero(ok)
        return float(self.steps[idx[0]]) if idx.size else None


def _evaluated(steps: np.ndarray, cadence: int) -> np.ndarray:
    """The rows a callback evaluating every ``cadence`` steps sees: the first logged row at or
    after each multiple of the cadence."""
    out = np.zeros(steps.size, dtype=bool)
    bucket = np.floor(steps / cadence)
    out[0] = True
    out[1:] = bucket[1:] > bucket[:-1]
    return out


def replay(df: pd.DataFrame, source: Source) -> list[Replay]:
    from grokaudit.live import LiveRun

    out = []
    for run, g in df.groupby("run", sort=True):
        cols = [c for c in ("test_acc", "train_acc", source.metric) if c in g.columns]
        live = LiveRun(str(run), metrics=[source.metric], **source.options)
        steps, defined, s0, old, delta, metric, tgrok, settled = [], [], [], [], [], [], [], []
        anchor: tuple[float, Any, float, float] | None = None
        for rec in g.sort_values("step")[["step", *cols]].to_dict("records"):
            s = float(rec.pop("step"))
            live.log(s, **rec)
            st = live.state()
            steps.append(s)
            defined.append(st.defined)
            s0.append(math.nan if st.defined_from is None else st.defined_from)
            anchor = _v16_anchor(st, anchor)
            old.append(math.nan if anchor is None else anchor[0])
            ms = st.metrics[0] if st.metrics else None
            delta.append(math.nan if ms is None or ms.run is None or ms.run.delta is None
                         else ms.run.delta)
            metric.append(float(rec.get(source.metric, math.nan)))
            tgrok.append(math.nan if st.t_grok is None or st.t_grok.upper is None
                         or not st.grokked else st.t_grok.upper)
            settled.append(st.settled)
        out.append(Replay(source.name, str(run), np.array(steps), np.array(defined, bool),
                          np.array(s0), np.array(old), np.array(delta), np.array(metric),
                          np.array(tgrok), np.array(settled, bool)))
    return out


def _v16_anchor(st: Any, a: tuple[float, Any, float, float] | None
                ) -> tuple[float, Any, float, float] | None:
    """v1.6's history rule (one metric): S0 the step since which every state computed was
    defined with the same clocks, the floor within the band it had then, and t_compress
    before S0."""
    if not st.defined or st.step is None:
        return None
    m = st.metrics[0]
    tg = st.t_grok
    clocks = ((tg.value, tg.lower, tg.upper, tg.censored) if tg else None, m.compression)
    floor = math.nan if m.floor is None else m.floor
    band = math.nan if m.run is None or m.run.delta is None else m.run.delta
    if a is None or a[1] != clocks or not abs(floor - a[2]) <= a[3] or (
            m.t_compress is not None and m.t_compress.upper_or_inf > a[0]):
        a = (st.step, clocks, floor, band)
    return a


def audit(df: pd.DataFrame, source: Source, schema: pa.Schema) -> Any:
    """The audit of ``df`` as ``check`` audits the file (the reader's schema, whose field
    metadata marks summary columns as outcomes, is kept)."""
    from grokaudit import audit_table

    opts: dict[str, Any] = {"metrics": [source.metric], **source.options}
    if source.by:
        opts["by"] = source.by
    if source.cell:
        opts["cell"] = list(source.cell)
    return audit_table(pa.Table.from_pandas(df, schema=schema, preserve_index=False), **opts)


def runs_of(result: Any) -> dict[str, Any]:
    return {r.run: r for s in result.studies for r in s.runs}


def s0_long(r: Any) -> float | None:
    """The long run's S0: its t_grok and t_compress, or the step since which a metric that did
    not compress sat on its floor (its t_grok when unknown)."""
    tg = r.t_grok
    if tg is None or tg.censored or tg.upper is None:
        return None
    tc = r.t_compress
    if tc is not None and not tc.censored and tc.upper is not None:
        return max(tg.upper, tc.upper)
    return tg.upper


def status(r: Any) -> str:
    if r.t_grok is None or r.t_grok.censored:
        return "not grokked"
    if r.compression == "compressed":
        return "censored" if r.t_compress is None or r.t_compress.censored else "compressed"
    return r.compression


def agrees(a: Any, b: Any) -> dict[str, bool]:
    """Run ``b`` (stopped) against ``a`` (long): compression status, t_compress, floor."""
    same_status = status(a) == status(b)
    tc_ok = True
    if status(a) == "compressed" and status(b) == "compressed":
        ta, tb = a.t_compress, b.t_compress
        tc_ok = abs(tb.value - ta.value) <= 0.1 * ta.value or (
            tb.lower is not None and tb.lower <= ta.value <= tb.upper_or_inf)
    floor_ok = True
    if a.floor is not None and a.delta is not None:
        floor_ok = b.floor is not None and abs(b.floor - a.floor) <= a.delta
    return {"status": same_status, "t_compress": same_status and tc_ok, "floor": floor_ok,
            "all": same_status and tc_ok and floor_ok}


@dataclass
class Row:
    rule: str
    cadence: str
    source: str
    runs: int = 0
    stopped: int = 0
    ratios: list[float] = field(default_factory=list)
    agree: int = 0  #: the stopped sweep's audit against the long sweep's, run by run
    alone: int = 0  #: each stopped run audited alone against the long run alone
    horizon: int = 0  #: runs the stopped sweep names HORIZON_MISMATCH (and the long does not)
    verdicts_same: int = 0
    studies: int = 0
    saved: float = 0.0
    budget: float = 0.0
    disagreeing: list[str] = field(default_factory=list)


def judge(df: pd.DataFrame, schema: pa.Schema, source: Source, reps: Sequence[Replay],
          long: Any, alone_long: dict[str, Any], stops: dict[str, float | None], rule: str,
          cadence: str) -> Row:
    groups = dict(tuple(df.groupby("run", sort=True)))
    cut = pd.concat([g[g["step"] <= stops[str(run)]] if stops[str(run)] is not None else g
                     for run, g in groups.items()])
    short = audit(cut, source, schema)
    a, b = runs_of(long), runs_of(short)
    row = Row(rule, cadence, source.name)
    ha, hb = _horizon_runs(long), _horizon_runs(short)
    row.horizon = len(hb - ha)
    for rep in reps:
        ra, rb = a[rep.run], b[rep.run]
        stop = stops[rep.run]
        rb_alone = alone_long[rep.run] if stop is None else _alone(
            groups[rep.run][groups[rep.run]["step"] <= stop], source, schema)
        row.alone += agrees(alone_long[rep.run], rb_alone)["all"]
        row.runs += 1
        last = float(rep.steps[-1])
        row.budget += last
        if stop is not None:
            row.stopped += 1
            row.saved += last - stop
            s0 = s0_long(ra)
            if s0:
                row.ratios.append(stop / s0)
        ag = agrees(ra, rb)
        row.agree += ag["all"]
        if not ag["all"]:
            row.disagreeing.append(f"{rep.run} ({', '.join(k for k, v in ag.items() if not v and k != 'all')})")
    va = [s.verdict_label for s in long.studies]
    vb = [s.verdict_label for s in short.studies]
    row.studies = len(va)
    row.verdicts_same = sum(x == y for x, y in zip(va, vb))
    return row


def _alone(g: pd.DataFrame, source: Source, schema: pa.Schema) -> Any:
    """The run audited on its own (no siblings: what a callback knows)."""
    one = Source(source.name, source.path, source.metric, options=source.options)
    return next(iter(runs_of(audit(g, one, schema)).values()))


def _horizon_runs(result: Any) -> set[str]:
    out: set[str] = set()
    for s in result.studies:
        for c in s.cells:
            out |= set(getattr(c, "short_horizon_runs", ()) or ())
    return out


def _cell_stops(long: Any, stops: dict[str, float | None]) -> dict[str, float | None]:
    """Every run of a cell stopped together, at the latest of its runs' stops (never, when one
    of them never stops): the horizon the sweep's audit compares runs at."""
    out: dict[str, float | None] = {}
    for s in long.studies:
        cells: dict[Any, list[str]] = {}
        for r in s.runs:
            cells.setdefault(r.cell, []).append(r.run)
        for runs in cells.values():
            ends = [stops.get(r) for r in runs]
            end = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
            out.update({r: end for r in runs})
    return out


def train_missing() -> None:
    for src in TRAINED:
        if src.path.exists() and not Path(str(src.path) + ".ckpt").exists():
            continue
        cfg = src.path.with_suffix(".toml")
        print(f"training {cfg.name} (resumable) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "grokaudit", "train", str(cfg), "-o",
                        str(src.path), "--device", "cpu", "--resume", "--progress", "lines"],
                       check=True)


def measure(margins: Sequence[float]) -> list[Row]:
    rows: list[Row] = []
    for src in (*TRAINED, *CORPUS):
        if not src.path.exists():
            print(f"skipped {src.name}: {src.path} not there (--train makes it)",
                  file=sys.stderr)
            continue
        t = _read(src)
        df = t.to_pandas()
        reps = replay(df, src)
        long = audit(df, src, t.schema)
        groups = dict(tuple(df.groupby("run", sort=True)))
        alone = {r.run: _alone(groups[r.run], src, t.schema) for r in reps}
        from grokaudit.live import DEFAULT_GROK_MULTIPLE, DEFAULT_MARGIN

        m0, g0 = DEFAULT_MARGIN, DEFAULT_GROK_MULTIPLE
        for r in reps:  # the benchmark's default rule is the library's, row for row
            ok = r.defined & (r.steps >= (1 + m0) * r.s0) & (r.steps > r.s0) \
                & (r.steps >= g0 * r.t_grok)
            assert np.array_equal(ok, r.settled), r.run
        for m in margins:
            for g in GROK_MULTIPLES:
                name = f"margin {m:g}" + (f", ≥ {g:g} × t_grok" if g else "") + (
                    " (default)" if (m, g) == (m0, g0) else "")
                for c in CADENCES if (m, g) == (m0, g0) else (None,):
                    stops = {r.run: r.stop(m, c, g) for r in reps}
                    rows.append(judge(df, t.schema, src, reps, long, alone, stops, name,
                                      "every row" if c is None else f"every {c}"))
            stops = {r.run: r.stop(m, None, drift=True) for r in reps}
            rows.append(judge(df, t.schema, src, reps, long, alone, stops,
                              f"margin {m:g} + flat drift", "every row"))
        stops = _cell_stops(long, {r.run: r.stop(m0, None, g0) for r in reps})
        rows.append(judge(df, t.schema, src, reps, long, alone, stops,
                          "default, each cell's runs stopped together", "every row"))
        stops = {r.run: r.stop_v16() for r in reps}
        rows.append(judge(df, t.schema, src, reps, long, alone, stops,
                          "v1.6 (margin 3, history)", "every row"))
    return rows


def _read(src: Source) -> pa.Table:
    from grokaudit.loader import read_source
    from grokaudit.readers import ADAPTERS

    if src.path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(src.path)
    out: pa.Table = read_source(src.path, readers=ADAPTERS)
    return out


def pooled(rows: Sequence[Row]) -> list[Row]:
    """The rows of every source pooled per rule and cadence."""
    out: dict[tuple[str, str], Row] = {}
    for r in rows:
        p = out.setdefault((r.rule, r.cadence), Row(r.rule, r.cadence, "all"))
        for f in ("runs", "stopped", "agree", "alone", "horizon", "verdicts_same", "studies"):
            setattr(p, f, getattr(p, f) + getattr(r, f))
        p.saved += r.saved
        p.budget += r.budget
        p.ratios += r.ratios
        p.disagreeing += r.disagreeing
    return list(out.values())


def table(rows: Sequence[Row]) -> list[str]:
    lines = ["| rule | cadence | sweep | runs stopped | stop / S0 of the long run (median, "
             "max) | run alone agrees | run in the stopped sweep agrees | new HORIZON_MISMATCH "
             "| clock verdict unchanged | steps saved |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        med = f"{np.median(r.ratios):.2f}, {max(r.ratios):.2f}" if r.ratios else "—"
        lines.append(
            f"| {r.rule} | {r.cadence} | {r.source} | {r.stopped}/{r.runs} | {med} | "
            f"{r.alone}/{r.runs} ({100 * r.alone / r.runs:.0f} %) | "
            f"{r.agree}/{r.runs} ({100 * r.agree / r.runs:.0f} %) | {r.horizon} | "
            f"{r.verdicts_same}/{r.studies} | {100 * r.saved / r.budget:.0f} % |")
    return lines


BEGIN = "<!-- live_stop table: begin (python benchmarks/live_stop.py --write-docs docs/live.md) -->"
END = "<!-- live_stop table: end -->"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--margins", default="0.25,0.5,1,2,3",
                    help="margins to compare (default 0.25,0.5,1,2,3)")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--train", action="store_true", help="train the missing long sweeps first")
    ap.add_argument("--write-docs", metavar="FILE",
                    help="replace the table between the live_stop markers in FILE")
    a = ap.parse_args(argv)
    if a.train:
        train_missing()
    margins = [float(m) for m in a.margins.split(",")]
    rows = measure(margins)
    every = pooled(rows)
    text = ["Pooled over every sweep:", "", *table(every), "", "Per sweep:", "", *table(rows)]
    if a.write_docs:
        doc = Path(a.write_docs)
        body = doc.read_text(encoding="utf-8")
        i, j = body.index(BEGIN), body.index(END)
        doc.write_text(body[:i + len(BEGIN)] + "\n" + "\n".join(text) + "\n" + body[j:],
                       encoding="utf-8")
    if a.markdown or not a.write_docs:
        print("\n".join(text))
    for r in every:
        if r.disagreeing:
            print(f"{r.rule}, {r.cadence}: disagreeing: {'; '.join(r.disagreeing[:12])}",
                  file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
