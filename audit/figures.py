"""The audit's figures: one dashboard per study and metric, drawn with matplotlib (Agg).

Printing only, like :mod:`grokaudit.report`: every marked number (``t_grok``, ``t_compress``,
the lag, the floor ``F`` and its band ``δ``, ``m_grok``, every censoring interval) is read from
the :class:`~grokaudit.results.AuditResult`; the curves are the log itself (the per-step median
over a cell's seeds, and the band between the lowest and highest seed).

matplotlib is the optional extra ``report``; it is imported inside the functions that need it,
never when this module is imported, and a missing install raises
:class:`~grokaudit.errors.MissingExtraError`.

SVG hooks (stable, documented in ``docs/report.md``): each marked element is an SVG ``<g>`` with a
``class`` and ``data-quantity`` / ``data-cell`` attributes —

- ``censored-median``: a censored cell median (half or more runs censored), drawn as an
  open-ended arrow from its known lower bound (never as a point);
- ``median-interval``: an uncensored cell median with its interval ``(lower, upper]``;
- ``cell-panel`` / ``cell-panel gated``: the trajectory panel of one cell (``gated`` when the cell
  failed a gate; the panel also says so in words).

Strings from the log (metric, condition and axis names, cell values, study keys) are drawn
literally: mathtext is off for every text (``text.parse_math``), so a ``$`` in a metric name is
a dollar sign, never a formula that fails to parse; control characters are drawn as visible
escapes (:func:`grokaudit.text.safe`).
"""

from __future__ import annotations

import functools
import html
import io
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import quote, unquote

import numpy as np

from .errors import MissingExtraError
from .results import AuditResult, CellSummary, Interval, StudyResult, format_number
from .schema import LogTable
from .text import format_value, safe

#: Okabe–Ito, the colour-blind-safe palette (Okabe & Ito 2008).
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "skyblue": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
}
C_METRIC = OKABE_ITO["blue"]
C_GROK = OKABE_ITO["vermillion"]
C_COMPRESS = OKABE_ITO["green"]
C_LAG = OKABE_ITO["purple"]
C_MGROK = OKABE_ITO["orange"]
C_FLOOR = OKABE_ITO["blue"]
C_TRAIN = OKABE_ITO["black"]
C_BAND = "#BBBBBB"

#: The ``gid`` prefix that :func:`svg_for_html` turns into a ``class`` and ``data-`` attributes.
GID_PREFIX = "ga:"

_RC = {
    "svg.fonttype": "none",  # real <text> in the SVG: searchable, accessible, small
    "svg.hashsalt": "grokaudit",  # deterministic clip-path ids: byte-identical reports
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # strings from the log are drawn as they are: no mathtext ("$" is a dollar sign), and no
    # mathtext in the tick labels either (the log-step axis gets plain labels, see below)
    "text.parse_math": False,
    "axes.formatter.use_mathtext": False,
}


def require_matplotlib() -> Any:
    """Import matplotlib with the Agg backend; raise MissingExtraError when it is absent."""
    try:
        import matplotlib
    except ImportError:
        raise MissingExtraError(
            "the HTML report and figures need matplotlib, which is not installed; "
            "fix: pip install 'grokaudit[report]'") from None
    matplotlib.use("Agg", force=True)
    return matplotlib


# ------------------------------------------------------------------------------------------
# trajectories: the log, aggregated per cell
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Band:
    """A cell's per-step median over its seeds and the seed band (lowest to highest seed).

    Runs logged at different steps are linearly interpolated onto the union of their steps,
    each only within its own logged range.
    """

    step: np.ndarray
    median: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_runs: int


def run_rows(log: LogTable) -> dict[str, int]:
    """Run id → the run's row number in the log."""
    return {str(r): i for i, r in enumerate(log.run_ids)}


def cell_band(log: LogTable, rows: Sequence[int] | np.ndarray, column: str
              ) -> Band | None:
    """The median and seed band of ``column`` over the runs ``rows``; None when nothing logged."""
    found: np.ndarray | None
    if column == "test_acc":
        found = log.test_acc
    elif column == "train_acc":
        found = log.train_acc
    else:
        found = log.series.get(column)
    if found is None or not len(rows):
        return None
    same = _one_grid(log, np.asarray(rows, dtype=np.int64), found)
    grid, M = same if same is not None else _on_grid(log, rows, found)
    if M is None:
        return None
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
            return Band(grid, np.nanmedian(M, axis=0), np.nanmin(M, axis=0),
                        np.nanmax(M, axis=0), M.shape[0])


def _one_grid(log: LogTable, rows: np.ndarray, found: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case read without gathering: the runs ``rows`` are consecutive in the log,
    each logs the column at every one of its steps, and all share one step grid. Their values
    are then a slice of the column, reshaped (what :func:`_on_grid` gives, exactly); None
    otherwise."""
    if not rows.size or not (np.diff(rows) == 1).all():
        return None
    off = log.offsets[int(rows[0]):int(rows[-1]) + 2].astype(np.int64)
    counts = np.diff(off)
    T = int(counts[0])
    if T < 1 or not (counts == T).all():
        return None
    a, b = int(off[0]), int(off[-1])
    v = found[a:b]
    if np.isnan(v).any():
        return None
    S = log.step[a:b].reshape(rows.size, T)
    grid = S[0].astype(float)
    if not (np.diff(grid) > 0).all() or not (S == S[0]).all():
        return None
    return grid, v.reshape(rows.size, T).astype(float)


def _on_grid(log: LogTable, rows: Sequence[int] | np.ndarray, found: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """The runs ``rows``' values of a column on the grid of all their steps (a run's values
    interpolated where it logged other steps; NaN outside its own span); None when nothing is
    logged."""
    # every run's points at once: the runs' rows gathered, missing values left out
    starts = log.offsets[np.asarray(rows, dtype=np.int64)].astype(np.int64)
    counts = log.offsets[np.asarray(rows, dtype=np.int64) + 1].astype(np.int64) - starts
    at = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    v = found[at]
    ok = ~np.isnan(v)
    # float64 as the clocks compute (a float32 column is kept as stored in the log)
    steps, vals = log.step[at][ok].astype(float), v[ok].astype(float)
    run = np.repeat(np.arange(len(rows)), counts)[ok]
    kept = np.bincount(run, minlength=len(rows))
    n_runs = int((kept > 0).sum())
    grid = np.unique(steps)
    if not n_runs:
        return grid, None
    if (kept[kept > 0] == grid.size).all() and \
            (steps.reshape(n_runs, grid.size) == grid).all():
        # every run logged at every step of the grid: its values are the row (what
        # np.interp gives at its own points, exactly), without a per-run array
        return grid, vals.reshape(n_runs, grid.size)
    bounds = np.r_[0, np.cumsum(kept)]
    return grid, np.vstack([np.interp(grid, steps[a:b], vals[a:b], left=np.nan, right=np.nan)
                            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())
                            if b > a])


# ------------------------------------------------------------------------------------------
# the dashboard
# ------------------------------------------------------------------------------------------

def _gid(cls: str, quantity: str, cell: Any) -> str:
    """The gid of a marked element; ``quantity`` and ``cell`` (a metric name, a cell value: log
    data) are percent-encoded so that no ``:``, quote or control character can break it."""
    return f"{GID_PREFIX}{cls}:{quote(safe(quantity), safe='')}:{quote(safe(cell), safe='')}"


def _cell_label(axis: str | None, c: CellSummary) -> str:
    return "all runs" if axis is None else f"{safe(axis)}={format_value(c.axis_value)}"


def _x(value: Any) -> float:
    """A cell's place on the axis panels (0 for the one cell of a study without an axis)."""
    return 0.0 if value is None else float(value)


def _mark_time(ax: Any, iv: Interval | None, color: str, ls: str, name: str, cell: Any,
               xlim: tuple[float, float], label: bool = True) -> None:
    """Mark a cell-median time on a step axis: a line at its value with its interval shaded,
    or — when censored — an open-ended arrow from the lower bound to the right edge
    (``xlim``, the panel's step limits)."""
    from matplotlib.patches import FancyArrowPatch, Rectangle

    if iv is None:
        return
    if iv.censored:
        if iv.lower is None:
            return
        tr = ax.get_xaxis_transform()  # x in data, y in axes fraction
        y = 0.90 if name == "t_grok" else 0.76
        right = xlim[1]
        arrow = FancyArrowPatch((min(iv.lower, right), y), (right, y), transform=tr,
                                arrowstyle="]->", mutation_scale=9, color=color, lw=1.4,
                                clip_on=False)
        arrow.set_gid(_gid("censored-median", name, cell))
        ax.add_patch(arrow)
        if label:  # under the arrow, inside the panel: it never runs into the next panel
            ax.text(0.98, y - 0.03, f"{name} > {format_number(iv.lower)}\n(censored)",
                    transform=ax.transAxes, color=color, fontsize=6.5, va="top", ha="right",
                    linespacing=1.1, zorder=5,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.75,
                          "edgecolor": "none"})
        return
    if iv.value is None and not iv.left_censored:
        return
    tr = ax.get_xaxis_transform()
    if iv.lower is not None and iv.upper is not None and iv.upper > iv.lower:
        # what axvspan draws, without its autoscaling (the limits are fixed)
        ax.add_patch(Rectangle((iv.lower, 0.0), iv.upper - iv.lower, 1.0, transform=tr,
                               facecolor=color, alpha=0.18, lw=0))
    if iv.value is None:  # left-censored: its interval only, no line at a value it lacks
        return
    ax.add_line(_line2d([iv.value, iv.value], [0.0, 1.0], transform=tr, color=color, ls=ls,
                        lw=1.3))


def _line2d(x: Any, y: Any, **kw: Any) -> Any:
    from matplotlib.lines import Line2D

    return Line2D(x, y, **kw)


@dataclass(frozen=True)
class CellData:
    """One cell's trajectories: the metric, test and train accuracy (None: not logged)."""

    cell: CellSummary
    metric: Band | None
    test: Band | None
    train: Band | None


@dataclass(frozen=True)
class DashboardData:
    """What one dashboard draws, read from the audit and the log: small and picklable, so
    that a worker process draws it without the log (:func:`render_dashboard`)."""

    study: StudyResult
    cells: tuple[CellData, ...]
    xlim: tuple[float, float]
    grok_threshold: float | None


@runtime_checkable
class Trajectories(Protocol):
    """Where the figures' trajectories come from when the log is not in memory as one
    :class:`~grokaudit.schema.LogTable` (:class:`grokaudit.stream.StreamTrajectories`)."""

    def dashboard_data(self, result: AuditResult, *, log_steps: bool = False
                       ) -> list[DashboardData]:
        """Each study's dashboard data, in ``result.studies`` order."""
        ...


def cell_data(cell: CellSummary, log: LogTable, rows: Sequence[int], metric: str) -> CellData:
    """One cell's trajectories, from the runs ``rows`` of ``log`` (the cell's runs)."""
    return CellData(cell, cell_band(log, rows, metric), cell_band(log, rows, "test_acc"),
                    cell_band(log, rows, "train_acc"))


def drawn_metric(study: StudyResult) -> str:
    """The metric a study's dashboard draws. An accuracy-only study has none: the report
    refuses it before any figure (:func:`grokaudit.html_report.require_metric`)."""
    if study.metric is None:
        raise ValueError("an accuracy-only study has no metric to draw")
    return study.metric


def dashboard_data(study: StudyResult, log: LogTable, result: AuditResult, *,
                   log_steps: bool = False) -> DashboardData:
    """The trajectories and limits of one study's dashboard (numpy only: no matplotlib)."""
    rows = run_rows(log)
    cells = []
    metric = drawn_metric(study)
    for c in study.cells:
        cells.append(cell_data(c, log, [rows[x] for x in c.runs if x in rows], metric))
    steps = step_range(log, [rows[x] for c in study.cells for x in c.runs if x in rows])
    return assembled(study, cells, steps, result, log_steps=log_steps)


def assembled(study: StudyResult, cells: Sequence[CellData], steps: StepRange,
              result: AuditResult, *, log_steps: bool = False) -> DashboardData:
    """One study's dashboard from its cells' trajectories and the range of its runs' steps
    (gathered from the whole log, or cell by cell from a log read in parts)."""
    thr = result.config.get("grok_threshold")
    return DashboardData(study, tuple(cells), step_limits(steps, log_steps),
                         float(thr) if isinstance(thr, (int, float)) else None)


def dashboard(study: StudyResult, log: LogTable, result: AuditResult, *,
              log_steps: bool = False, max_cols: int = 4) -> Any:
    """The dashboard of one study and metric, as a matplotlib Figure.

    Top: per cell, the metric (median over seeds, seed band, floor band ``F ± δ``, ``t_grok``
    and ``t_compress`` marked) above test and train accuracy on the same step axis. Bottom:
    (b) ``m_grok`` against the floor along the axis, gated cells marked; (c) ``t_grok``,
    ``t_compress`` and the lag along the axis with their censoring intervals. ``log_steps``
    puts the step axis on a log scale (steps ≤ 0 are not drawn).
    """
    return draw_dashboard(dashboard_data(study, log, result, log_steps=log_steps),
                          log_steps=log_steps, max_cols=max_cols)


# The layout, in inches. Fixed room for every label instead of a layout engine (constrained
# layout drew each figure twice and measured every text: two thirds of the report's time).
_PAD = 0.12  # figure edge
_LINE = 1.25 / 72  # one line of text, per point of font size
_TITLE_GAP = 6 / 72 + 0.04  # axes.titlepad and a little air
_Y_LABEL = 8.5 * _LINE + 4 / 72  # a y label (rotated) and its labelpad
_X_BELOW = 0.44  # tick labels and an x label under a panel
_H_METRIC, _H_GAP, _H_ACC = 1.6, 0.1, 0.78  # a cell's metric and accuracy panels
_H_BOTTOM = 2.6  # the three panels along the axis
_BOTTOM_LEGEND = 0.48  # from the bottom panels' lower edge to the top of their legends
_LEGENDS = 0.42  # the bottom panels' legends
_FIG_LEGEND = 0.46  # the figure legend (two rows)
_COL_GAP, _BOTTOM_GAP = 0.2, 0.4  # between columns of cells; between the bottom panels
_X_LABEL = 18.8 / 72  # the top of an x label under its axes: ticks, tick labels, labelpad


#: Advance widths (em) of DejaVu Sans, the characters of tick labels; others count 0.64 em.
_EM = {**dict.fromkeys("0123456789", 0.636), ".": 0.318, ",": 0.318, " ": 0.318, "-": 0.361,
       "\u2212": 0.838, "+": 0.838, "e": 0.615}


def _ytick_room(ax: Any, size: float = 7.5) -> float:
    """Inches the y tick labels of ``ax`` take left of it (the labels the axis will draw, at
    DejaVu Sans advance widths), with the ticks and their pad."""
    axis = ax.yaxis
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-9 * ((hi - lo) or 1.0)
    locs = [v for v in axis.get_major_locator()() if lo - eps <= v <= hi + eps]
    labels = axis.get_major_formatter().format_ticks(locs) if locs else []
    ems = max((sum(_EM.get(ch, 0.64) for ch in s) for s in labels), default=0.0)
    return ems * size / 72 + 7.5 / 72


def _place_axis_labels(fig: Any) -> None:
    """Put each axis label where matplotlib would (under the x tick labels, left of the y
    tick labels, ``labelpad`` 4 pt away) from the tick-label room known from the layout,
    instead of measuring the tick labels of every axis at each draw."""
    fw, fh = fig.get_size_inches()
    for ax in fig.axes:
        pos = ax.get_position()
        if ax.get_xlabel():
            ax.xaxis.set_label_coords(0.5, -_X_LABEL / (pos.height * fh))
        if ax.get_ylabel():
            ax.yaxis.set_label_coords(-(_ytick_room(ax) + 4 / 72) / (pos.width * fw), 0.5)


#: The figure :func:`draw_dashboard` reuses in this process (``reuse=True``): its shape and
#: (figure, cell axes, bottom axes).
_REUSED: dict[tuple[Any, ...], tuple[Any, list[tuple[Any, Any]], list[Any]]] = {}


def _skeleton(n_cells: int, size: tuple[float, float], shape: tuple[Any, ...], reuse: bool
              ) -> tuple[Any, list[tuple[Any, Any]], list[Any]]:
    """A figure of ``size`` inches with a metric and an accuracy axes per cell and the three
    bottom axes, empty: new, or (``reuse``) the last one of this shape, cleared."""
    from matplotlib.figure import Figure

    key = (n_cells, *shape)
    if reuse and key in _REUSED:
        fig, grid, axes = _REUSED[key]
        fig.set_size_inches(*size)
        for ax in fig.axes:  # everything but the legends (the same for every study)
            for a in [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images]:
                a.remove()
            ax.set_gid(None)
            ax.relim()  # no data limits, as in a new axes
            if ax.get_xscale() == "linear":  # (a log step axis always gets its limits)
                ax.set_xlim(0.0, 1.0)  # the limits of a new axes, autoscaled like one
            ax.set_ylim(0.0, 1.0)
            ax.set_autoscale_on(True)
        return fig, grid, axes
    fig = Figure(figsize=size)
    grid = [(fig.add_axes((0, 0, 1, 1)), fig.add_axes((0, 0, 1, 1))) for _ in range(n_cells)]
    axes = [fig.add_axes((0, 0, 1, 1)) for _ in range(3)]
    for ax in axes:
        ax.xaxis.set_major_locator(_InView())
        ax.yaxis.set_major_locator(_InView())
    _legends(fig, axes[0], axes[1])
    if reuse:
        _REUSED.clear()  # one figure kept per process
        _REUSED[key] = (fig, grid, axes)
    return fig, grid, axes


def draw_dashboard(data: DashboardData, *, log_steps: bool = False, max_cols: int = 4,
                   reuse: bool = False) -> Any:
    """The dashboard of :func:`dashboard` drawn from its :class:`DashboardData`.

    ``reuse`` draws it on this process's last figure of the same shape (cells, columns, step
    scale), cleared, instead of a new one: its axes and ticks are made once (most of the cost
    of a figure). The figure is then only valid until the next call with ``reuse``: what a
    worker does, which serializes each figure before drawing the next. The result is the same
    drawing either way (the SVG is byte-identical).
    """
    require_matplotlib()

    study = data.study
    cells = data.cells
    n = max(len(cells), 1)
    ncols = min(n, max_cols)
    nrows = math.ceil(n / ncols)
    width = max(10.0, 2.9 * ncols)
    key = ", ".join(f"{safe(k)}={format_value(v)}" for k, v in study.study.items()) or "all runs"
    verdict = study.verdict_label
    title = _wrap(f"{key} · {safe(study.metric)} along {safe(study.axis or 'no axis')} · clock verdict: "
                  f"{verdict}", width, 10)
    titles = [_cell_title(study, cd.cell) for cd in cells]
    row_lines = [max([t.count("\n") + 1 for t in titles[r * ncols:(r + 1) * ncols]] or [1])
                 for r in range(nrows)]
    head = (title.count("\n") + 1) * 10 * _LINE + 0.1
    row_h = [lines * 7.5 * _LINE + _TITLE_GAP + _H_METRIC + _H_GAP + _H_ACC + _X_BELOW
             for lines in row_lines]
    bottom_h = 8.5 * _LINE + _TITLE_GAP + _H_BOTTOM + _BOTTOM_LEGEND + _LEGENDS
    height = _PAD + head + sum(row_h) + bottom_h + _FIG_LEGEND + _PAD
    with _rc():
        fig, grid, axes = _skeleton(len(cells), (width, height), (max_cols, log_steps), reuse)
        for k, (cd, (axm, axa)) in enumerate(zip(cells, grid, strict=True)):
            _cell_panels(axm, axa, study, cd, titles[k], data.grok_threshold, log_steps,
                         data.xlim, first=(k % ncols == 0))
        _snapshot_panel(axes[0], study)
        _times_panel(axes[1], study)
        _lag_panel(axes[2], study)
        xs = _axis_x(study)
        if xs:  # one axis range for the three panels, whichever cells each one shows
            # room beside the outermost cells for a censored median's arrow and its label
            pad = max(4 * _spread(xs), 0.12 * (max(xs) - min(xs)))
            for ax in axes:
                ax.set_xlim(min(xs) - pad, max(xs) + pad)

        def place(ax: Any, x: float, top: float, w: float, h: float) -> None:
            ax.set_position((x / width, (height - top - h) / height, w / width, h / height))

        def layout(left: list[float], left_bottom: list[float]) -> None:
            """Place the cells in columns (``left``: the room left of each) and the bottom
            panels (``left_bottom``), each column as wide as the others."""
            w = (width - 2 * _PAD - 0.1 - sum(left) - _COL_GAP * (ncols - 1)) / ncols
            top = _PAD + head
            for r in range(nrows):
                y = top + row_lines[r] * 7.5 * _LINE + _TITLE_GAP
                x = _PAD
                for c in range(ncols):
                    x += left[c]
                    if r * ncols + c < len(grid):
                        axm, axa = grid[r * ncols + c]
                        place(axm, x, y, w, _H_METRIC)
                        place(axa, x, y + _H_METRIC + _H_GAP, w, _H_ACC)
                    x += w + _COL_GAP
                top += row_h[r]
            w = (width - 2 * _PAD - 0.1 - sum(left_bottom) - 2 * _BOTTOM_GAP) / 3
            x = _PAD
            for ax, room in zip(axes, left_bottom, strict=True):
                x += room
                place(ax, x, top + 8.5 * _LINE + _TITLE_GAP, w, _H_BOTTOM)
                x += w + _BOTTOM_GAP

        # first at their final heights (how many y ticks fit depends on it), then with room
        # for the y tick labels they will draw
        layout([0.5] * ncols, [0.7] * 3)
        left = [max([_ytick_room(ax) for axm, axa in grid[c::ncols] for ax in (axm, axa)]
                    or [0.3]) for c in range(ncols)]
        left[0] += _Y_LABEL
        layout(left, [_ytick_room(ax) + _Y_LABEL for ax in axes])
        _place_axis_labels(fig)
        fig.legends[0].set_bbox_to_anchor((0.5, _PAD / height))
        fig.suptitle(title, fontsize=10, fontweight="bold", y=1 - _PAD / height, va="top")
    return fig


def _wrap(text: str, width_in: float, fontsize: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at ``fontsize`` points (bold
    DejaVu Sans is at most about 0.66 em a character on average). Not matplotlib's
    ``wrap=True``: that measures each line as mathtext when it holds two ``$``, which a log
    string may (and which then fails to parse)."""
    per_line = max(20, int(width_in * 72 / (fontsize * 0.66)))
    return textwrap.fill(text, per_line, break_on_hyphens=False)


def mpl_rc(name: str) -> Any:
    """The rc setting ``name`` in effect."""
    return require_matplotlib().rcParams[name]


class _rc:
    """matplotlib rc settings for every figure (a context manager)."""

    def __enter__(self) -> None:
        mpl = require_matplotlib()
        self._ctx = mpl.rc_context(_RC)
        self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)


@dataclass(frozen=True)
class StepRange:
    """The smallest and largest step of some runs, and of their positive steps (a log-scaled
    axis): what a study's step limits need, combinable over runs read apart (None: none)."""

    lo: float | None = None
    hi: float | None = None
    pos_lo: float | None = None
    pos_hi: float | None = None

    def joined(self, other: StepRange) -> StepRange:
        def pick(a: float | None, b: float | None, f: Any) -> float | None:
            return b if a is None else a if b is None else f(a, b)

        return StepRange(pick(self.lo, other.lo, min), pick(self.hi, other.hi, max),
                         pick(self.pos_lo, other.pos_lo, min),
                         pick(self.pos_hi, other.pos_hi, max))


def step_range(log: LogTable, rows: Sequence[int] | np.ndarray) -> StepRange:
    """The range of the steps of the runs ``rows`` of ``log``."""
    if not len(rows):
        return StepRange()
    steps = np.concatenate([log.step[log.offsets[i]:log.offsets[i + 1]] for i in rows]
                           ).astype(float)
    pos = steps[steps > 0]
    return StepRange(float(steps.min()), float(steps.max()),
                     float(pos.min()) if pos.size else None,
                     float(pos.max()) if pos.size else None)


def step_limits(r: StepRange, log_steps: bool) -> tuple[float, float]:
    """Shared step limits of a study's panels, with room on the right for censoring arrows
    (no runs: the steps 0 and 1)."""
    if r.lo is None or r.hi is None:
        r = StepRange(0.0, 1.0, 1.0, 1.0)
    if log_steps:
        if r.pos_lo is None or r.pos_hi is None:
            return 1.0, 10.0 * 1.5
        return r.pos_lo, r.pos_hi * 1.5
    lo, hi = r.lo, r.hi
    assert lo is not None and hi is not None
    return lo, hi + 0.08 * ((hi - lo) or 1.0)


def _legends(fig: Any, snapshot: Any, times: Any) -> None:
    """The figure's legends, the same for every study: the trajectory panels' (at the foot of
    the figure; placed by :func:`draw_dashboard`), and those under panels (b) and (c)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=C_METRIC, lw=1.4, label="metric / test acc: median over seeds"),
               Patch(facecolor=C_METRIC, alpha=0.22, label="seed range (lowest–highest seed)"),
               Patch(facecolor=C_BAND, hatch="////", edgecolor="#888888",
                     label="converged floor band F ± δ"),
               Line2D([], [], color=C_GROK, ls="--", label="t_grok (cell median, interval shaded)"),
               Line2D([], [], color=C_COMPRESS, ls=":", label="t_compress (cell median)"),
               Line2D([], [], color=C_TRAIN, ls="--", lw=1.1, label="train acc (median)"),
               Line2D([], [], color="#999999", ls="-.", lw=0.7, label="grok threshold")]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncols=4,
               frameon=False, fontsize=7, borderaxespad=0)
    below = -_BOTTOM_LEGEND / _H_BOTTOM  # under the panel's tick labels and x label
    snapshot.legend(handles=[
        Line2D([], [], marker="^", color=C_MGROK, ls="none", label="m_grok (at-grok median)"),
        Line2D([], [], marker="o", color=C_FLOOR, ls="none", label="floor F ± δ"),
        Line2D([], [], marker="x", color="black", ls="none",
               label="gated cell (hollow markers)")], frameon=False, fontsize=6.5,
        loc="upper center", bbox_to_anchor=(0.5, below), ncols=2)
    times.legend(handles=[
        Line2D([], [], marker="s", color=C_GROK, label="t_grok median (interval)"),
        Line2D([], [], marker="D", color=C_COMPRESS, label="t_compress median (interval)"),
        Line2D([], [], marker=_arrow_marker(), color="#444444", ls="none", ms=9,
               fillstyle="none", mew=1.2, label="censored median: lower bound, open-ended")],
        frameon=False, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, below),
        ncols=2)


#: Gate codes in a few words, for panel titles (the gate table gives the full codes).
_SHORT_GATE = {
    "NO_GROK": "no run grokked",
    "BOUNDARY_PARTIAL_GENERALIZATION": "partial generalization",
    "BOUNDARY_NO_COMPRESSION": "no compression",
    "HIGH_FLOOR_OUTLIER": "high-floor outlier",
    "COMPRESSION_NOT_ESTABLISHED": "compression not established",
}


def _cell_title(study: StudyResult, c: CellSummary) -> str:
    title = f"{_cell_label(study.axis, c)} · {c.n_runs} runs"
    if not c.passes:
        return title + "\nGATED: " + ";\n".join(_SHORT_GATE.get(g.value, g.value)
                                                for g in c.gates)
    return title + "\npasses every gate"


def _in_view(axis: Any, locs: Any) -> list[float]:
    lo, hi = sorted(axis.get_view_interval())
    eps = 1e-10 * ((hi - lo) or 1.0)
    return [float(v) for v in locs if lo - eps <= v <= hi + eps]


@functools.cache
def _locators() -> tuple[Any, Any]:
    """Tick locators that return only the ticks inside the view: matplotlib makes a tick
    (five artists) for every location a locator returns, drawn or not, and the default
    locators return one beyond each end (a third of the ticks, never drawn)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    class InView(MaxNLocator):
        def __call__(self) -> list[float]:
            return _in_view(self.axis, super().__call__())

    class FixedInView(FixedLocator):
        def __call__(self) -> list[float]:
            return _in_view(self.axis, super().__call__())

    return InView, FixedInView


def _InView(*args: Any, **kw: Any) -> Any:  # noqa: N802 - a class, made on first use
    """``MaxNLocator(*args, **kw)`` that keeps only the ticks in view; no arguments: the
    default ``AutoLocator``'s settings."""
    if not args and not kw:
        args, kw = ("auto",), {"steps": [1, 2, 2.5, 5, 10]}
    return _locators()[0](*args, **kw)


def _FixedInView(*args: Any, **kw: Any) -> Any:  # noqa: N802
    return _locators()[1](*args, **kw)


def _cell_panels(axm: Any, axa: Any, study: StudyResult, cd: CellData, title: str,
                 grok_thr: float | None, log_steps: bool, xlim: tuple[float, float],
                 first: bool) -> None:
    from matplotlib.patches import Rectangle

    c = cd.cell
    band = cd.metric
    gated = not c.passes
    axm.set_gid(_gid("cell-panel" + (" gated" if gated else ""), drawn_metric(study),
                     c.axis_value))
    if c.floor is not None and c.delta is not None:
        # what axhspan and axhline draw, without their autoscaling
        ytr = axm.get_yaxis_transform()  # x in axes fraction, y in data
        axm.add_patch(Rectangle((0.0, c.floor - c.delta), 1.0, 2 * c.delta, transform=ytr,
                                facecolor=C_BAND, alpha=0.45, hatch="////",
                                edgecolor="#888888", lw=0))
        axm.add_line(_line2d([0.0, 1.0], [c.floor, c.floor], transform=ytr, color="#666666",
                             lw=0.8))
    if band is not None:
        axm.fill_between(band.step, band.low, band.high, color=C_METRIC, alpha=0.22, lw=0)
        axm.plot(band.step, band.median, color=C_METRIC, lw=1.4)
    if gated:
        for sp in axm.spines.values():
            sp.set_linestyle((0, (4, 2)))
        axm.set_facecolor("#F4F4F4")
    else:  # what a new axes has (a reused one may have been gated)
        for sp in axm.spines.values():
            sp.set_linestyle("solid")
        axm.set_facecolor(mpl_rc("axes.facecolor"))
    # y given: no automatic title placement (it measured every tick label of the row)
    axm.set_title(title, fontsize=7.5, loc="left", fontweight="bold" if gated else "normal",
                  y=1.0)
    if first:
        axm.set_ylabel(safe(study.metric))
        axa.set_ylabel("accuracy")
    for b, color, ls in ((cd.test, C_METRIC, "-"), (cd.train, C_TRAIN, "--")):
        if b is None:
            continue
        if b is cd.test:
            axa.fill_between(b.step, b.low, b.high, color=color, alpha=0.2, lw=0)
        axa.plot(b.step, b.median, color=color, ls=ls, lw=1.1)
    if grok_thr is not None:
        axa.add_line(_line2d([0.0, 1.0], [grok_thr, grok_thr],
                             transform=axa.get_yaxis_transform(), color="#999999", lw=0.7,
                             ls="-."))
    axa.set_ylim(-0.03, 1.05)
    axa.set_xlabel("step")
    from matplotlib.ticker import FuncFormatter, NullFormatter, NullLocator

    # one step axis for both panels (same limits and scale; not shared: the metric panel draws
    # no x ticks, its accuracy panel below labels the steps)
    for ax in (axm, axa):
        if log_steps:
            ax.set_xscale("log", nonpositive="mask")
        ax.set_xlim(*xlim)
    if log_steps:
        # plain step numbers: the default log labels are mathtext, which is off
        axa.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_number(v)))
        axa.xaxis.set_minor_formatter(NullFormatter())
    else:
        axa.xaxis.set_major_locator(_InView(4))
    axm.xaxis.set_major_locator(NullLocator())
    axm.xaxis.set_minor_locator(NullLocator())
    axm.yaxis.set_major_locator(_InView())
    axa.yaxis.set_major_locator(_FixedInView([0.0, 0.5, 1.0]))
    _mark_time(axm, c.t_grok, C_GROK, "--", "t_grok", c.axis_value, xlim)
    _mark_time(axm, c.t_compress, C_COMPRESS, ":", "t_compress", c.axis_value, xlim)
    _mark_time(axa, c.t_grok if not (c.t_grok and c.t_grok.censored) else None, C_GROK, "--",
               "t_grok", c.axis_value, xlim)


def _axis_x(study: StudyResult) -> list[float]:
    return [_x(c.axis_value) for c in study.cells]


def _spread(xs: list[float]) -> float:
    u = sorted(set(xs))
    return (min(b - a for a, b in zip(u, u[1:], strict=False)) if len(u) > 1 else 1.0) * 0.12


def _gate_marks(ax: Any, study: StudyResult) -> None:
    """Label gated cells in words along the bottom of an axis-panel (not colour alone)."""
    tr = ax.get_xaxis_transform()
    for c in study.cells:
        if not c.passes:
            ax.text(_x(c.axis_value), 0.02, "gated", transform=tr, ha="center",
                    va="bottom", fontsize=6.5, style="italic", color="#444444", rotation=90)


class _Bars:
    """Error bars with caps, gathered per colour: one collection and one cap line each,
    instead of one ``errorbar`` (three artists and a container) per point."""

    def __init__(self) -> None:
        self.segs: dict[str, list[list[tuple[float, float]]]] = {}

    def add(self, color: str, x: float, lo: float, hi: float) -> None:
        self.segs.setdefault(color, []).append([(x, lo), (x, hi)])

    def draw(self, ax: Any, lw: float = 1.2, capsize: float = 3.0) -> None:
        from matplotlib.collections import LineCollection

        for color, segs in self.segs.items():
            ax.add_collection(LineCollection(segs, colors=color, linewidths=lw, zorder=2.0))
            xs = [s[0][0] for s in segs] * 2
            ys = [s[0][1] for s in segs] + [s[1][1] for s in segs]
            ax.plot(xs, ys, ls="none", marker="_", ms=2 * capsize, mew=lw, color=color,
                    zorder=2.0)


def _snapshot_panel(ax: Any, study: StudyResult) -> None:
    """(b) the at-grok value against the converged floor, per cell, along the axis."""
    from matplotlib.collections import LineCollection

    dx = _spread(_axis_x(study))
    bars = _Bars()
    floors: dict[str, list[tuple[float, float]]] = {}
    mgroks: dict[str, list[tuple[float, float]]] = {}
    links: list[list[tuple[float, float]]] = []
    crosses: list[tuple[float, float]] = []
    for c in study.cells:
        x = _x(c.axis_value)
        gated = not c.passes
        if c.floor is not None:
            d = c.delta or 0.0
            bars.add(C_FLOOR, x + dx / 2, c.floor - d, c.floor + d)
            floors.setdefault("white" if gated else C_FLOOR, []).append((x + dx / 2, c.floor))
        if c.m_grok is not None:
            mgroks.setdefault("white" if gated else C_MGROK, []).append((x - dx / 2, c.m_grok))
        if c.floor is not None and c.m_grok is not None:
            links.append([(x - dx / 2, c.m_grok), (x + dx / 2, c.floor)])
        if gated:
            ys = [v for v in (c.floor, c.m_grok) if v is not None]
            if ys:
                crosses.append((x, max(ys)))
    bars.draw(ax)
    for face, pts in floors.items():
        ax.plot(*zip(*pts, strict=True), ls="none", marker="o", color=C_FLOOR, mfc=face, ms=6,
                zorder=2.1)
    for face, pts in mgroks.items():
        ax.plot(*zip(*pts, strict=True), ls="none", marker="^", color=C_MGROK, mfc=face, ms=7,
                zorder=2.1)
    if links:
        ax.add_collection(LineCollection(links, colors="#888888", linewidths=0.7,
                                         linestyles=":"))
    if crosses:
        ax.plot(*zip(*crosses, strict=True), marker="x", color="black", ms=7, ls="none",
                zorder=2.2)
    _gate_marks(ax, study)
    ax.set_xlabel(safe(study.axis or 'no axis'))
    ax.set_ylabel(safe(study.metric))
    ax.set_title("(b) at-grok value vs converged floor", fontsize=8.5, loc="left", wrap=True,
                 y=1.0)


def _interval_marks(ax: Any, study: StudyResult, quantity: str, color: str, marker: str,
                    offset: float, top: float) -> None:
    from matplotlib.patches import FancyArrowPatch

    bars = _Bars()
    for c in study.cells:
        iv: Interval | None = getattr(c, quantity)
        if iv is None:
            continue
        x = _x(c.axis_value) + offset
        hollow = not c.passes
        if iv.censored:
            if iv.lower is None:
                continue
            arrow = FancyArrowPatch((x, iv.lower), (x, top), arrowstyle="]->, widthA=0.6",
                                    mutation_scale=10, color=color, lw=1.4)
            arrow.set_gid(_gid("censored-median", quantity, c.axis_value))
            ax.add_patch(arrow)
            left = offset < 0  # beside the arrow, a few points clear of its stem
            ax.annotate(f">{format_number(iv.lower)}", (x, (iv.lower + top) / 2),
                        xytext=(-4 if left else 4, 0), textcoords="offset points",
                        color=color, fontsize=6.5, va="center", ha="right" if left else "left",
                        rotation=90)
            continue
        if iv.value is None:
            if iv.left_censored:  # before logging began: its interval, no point
                bars.add(color, x, float(iv.lower or 0.0), float(iv.upper or 0.0))
            continue
        lo = iv.lower if iv.lower is not None else iv.value
        hi = iv.upper if iv.upper is not None else iv.value
        bars.add(color, x, min(lo, iv.value), max(hi, iv.value))
        (point,) = ax.plot([x], [iv.value], marker=marker, ls="none", color=color,
                           mfc="white" if hollow else color, ms=6, zorder=2.1)
        point.set_gid(_gid("median-interval", quantity, c.axis_value))
    bars.draw(ax)


def _arrow_marker() -> Any:
    """An upward open-ended arrow from a bracket (``]->`` turned up), as a marker path: the
    legend key of a censored median (a mathtext marker would need mathtext, which is off)."""
    from matplotlib.path import Path

    verts = [(-0.5, -1.0), (0.5, -1.0), (0.0, -1.0), (0.0, 1.0), (-0.45, 0.45), (0.0, 1.0),
             (0.45, 0.45)]
    codes = [Path.MOVETO, Path.LINETO, Path.MOVETO, Path.LINETO, Path.MOVETO, Path.LINETO,
             Path.LINETO]
    return Path(verts, codes)


def _top(study: StudyResult, quantities: Sequence[str]) -> tuple[float, float]:
    vals = [0.0]
    for c in study.cells:
        for q in quantities:
            iv = getattr(c, q)
            if iv is None:
                continue
            vals += [v for v in (iv.lower, iv.upper, iv.value) if v is not None]
    lo, hi = min(vals), max(vals)
    span = (hi - lo) or 1.0
    return lo - 0.05 * span, hi + 0.18 * span


def _times_panel(ax: Any, study: StudyResult) -> None:
    """(c) cell-median t_grok and t_compress with their censoring intervals."""
    dx = _spread(_axis_x(study))
    lo, top = _top(study, ("t_grok", "t_compress"))
    ax.set_ylim(lo, top)
    _interval_marks(ax, study, "t_grok", C_GROK, "s", -dx / 2, top)
    _interval_marks(ax, study, "t_compress", C_COMPRESS, "D", dx / 2, top)
    _gate_marks(ax, study)
    ax.set_xlabel(safe(study.axis or 'no axis'))
    ax.set_ylabel("step")
    ax.set_title("(c) clocks along the axis", fontsize=8.5, loc="left", wrap=True, y=1.0)


def _lag_panel(ax: Any, study: StudyResult) -> None:
    """(d) the cell-median lag t_compress − t_grok with its interval."""
    lo, top = _top(study, ("lag",))
    ax.set_ylim(min(lo, 0.0), top)
    ax.axhline(0, color="#999999", lw=0.7)
    _interval_marks(ax, study, "lag", C_LAG, "o", 0.0, top)
    _gate_marks(ax, study)
    ax.set_xlabel(safe(study.axis or 'no axis'))
    ax.set_ylabel("steps")
    # a panel title's width is not room that the layout keeps: wrap at the figure edge
    ax.set_title("(d) lag = t_compress − t_grok", fontsize=8.5, loc="left", wrap=True, y=1.0)


# ------------------------------------------------------------------------------------------
# output: SVG for inlining, PNG files
# ------------------------------------------------------------------------------------------

def figure_svg(fig: Any) -> str:
    """The figure as SVG text (deterministic: no date, fixed hash salt)."""
    buf = io.StringIO()
    with _rc():
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


_ID = re.compile(r'\bid="([^"]*)"')
_PATH_D = re.compile(r' d="([^"]*)"')
_DIGITS = re.compile(r"(\d\.\d\d)\d+")
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^)"]*)')
_TAG = re.compile(r"(<[^>]*>)")


def _first_group(m: re.Match[str]) -> str:
    return m.group(1)  # faster than the template r"\1" (expanded in Python for each match)


def svg_for_html(svg: str, prefix: str) -> str:
    """Make matplotlib's SVG fit inline in an HTML page.

    Drops the XML prolog, DOCTYPE and metadata; rounds path coordinates to 0.01 pt; prefixes
    every id (and every reference to one) with ``prefix`` so several figures can share one
    page; turns each ``ga:`` gid into a ``class`` plus ``data-quantity``/``data-cell``
    attributes; and makes the figure scale to the page width. Only tags are rewritten: the
    text of the figure (which may quote the log, ``id="…"`` included) is left as drawn.
    """
    s = svg[svg.index("<svg"):]
    s = re.sub(r"<metadata>.*?</metadata>\s*", "", s, flags=re.S)
    counter = {"n": 0}

    def fix_id(m: re.Match[str]) -> str:
        raw = html.unescape(m.group(1))
        if raw.startswith(GID_PREFIX):
            cls, quantity, cell = (raw[len(GID_PREFIX):].split(":", 2) + ["", ""])[:3]
            counter["n"] += 1
            slug = re.sub(r"[^A-Za-z0-9_-]+", "-", cls)
            return (f'id="{prefix}-{slug}-{counter["n"]}" class="{html.escape(cls)}" '
                    f'data-quantity="{html.escape(unquote(quantity))}" '
                    f'data-cell="{html.escape(unquote(cell))}"')
        return f'id="{prefix}-{m.group(1)}"'

    def fix_d(m: re.Match[str]) -> str:
        return ' d="' + _DIGITS.sub(_first_group, m.group(1)) + '"'

    def fix_ref(m: re.Match[str]) -> str:
        return f"{m.group(1)}{prefix}-{m.group(2)}"

    def fix_tag(tag: str) -> str:
        # each substitution only where it can apply (most tags have none: the cheap test first)
        if 'id="' in tag:
            tag = _ID.sub(fix_id, tag)
        if ' d="' in tag:  # path coordinates to 0.01 pt: a third of the bytes, no visible change
            tag = _PATH_D.sub(fix_d, tag)
        if "#" in tag:
            tag = _REF.sub(fix_ref, tag)
        return tag

    s = "".join(fix_tag(part) if i % 2 else part for i, part in enumerate(_TAG.split(s)))
    s = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"',
               r'<svg \1width="100%" preserveAspectRatio="xMidYMin meet"', s, count=1)
    return s


def figure_png(fig: Any, dpi: int = 120) -> bytes:
    """The figure as PNG bytes (no software tag: the same figure gives the same bytes)."""
    buf = io.BytesIO()
    with _rc():
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def render_dashboard(data: DashboardData, prefix: str, *, log_steps: bool = False,
                     png_dpi: int | None = None) -> tuple[str, bytes | None]:
    """Draw one dashboard once and serialize it: its SVG ready to inline in the page
    (:func:`svg_for_html` with ``prefix``) and, with ``png_dpi``, its PNG bytes.

    A module-level function of picklable arguments that returns plain data: what a worker
    process runs (:class:`grokaudit.html_report.FigureWorkers`), under ``fork`` or ``spawn``.
    """
    fig = draw_dashboard(data, log_steps=log_steps, reuse=True)
    svg = svg_for_html(figure_svg(fig), prefix)
    return svg, (figure_png(fig, png_dpi) if png_dpi else None)


def warm_up() -> None:
    """Import matplotlib and draw a tiny figure to SVG and PNG (backends, fonts): what a
    worker process does while the main process reads and audits the log."""
    require_matplotlib()
    from matplotlib.figure import Figure

    with _rc():
        fig = Figure(figsize=(1, 1))
        ax = fig.add_axes((0.2, 0.2, 0.7, 0.7))
        ax.plot([0, 1], [0, 1])
        ax.set_title("warm", fontweight="bold")
    figure_svg(fig)
    figure_png(fig, 10)


def check_matplotlib() -> None:
    """Raise :class:`MissingExtraError` when matplotlib is not installed, without importing
    it (the import takes a third of a second, which the figure workers pay instead)."""
    import importlib.util
    import sys

    if "matplotlib" in sys.modules:
        found = sys.modules["matplotlib"] is not None
    else:
        try:
            found = importlib.util.find_spec("matplotlib") is not None
        except (ImportError, ValueError):
            found = False
    if not found:
        require_matplotlib()  # raises the MissingExtraError


def save_png(fig: Any, path: Any, dpi: int = 120) -> None:
    """Write the figure as a PNG file, atomically (a temporary file beside it, renamed over
    it; nothing is left behind on failure; permissions from the umask)."""
    from .outputs import atomic_write_with

    with _rc():
        atomic_write_with(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi,
                                                        metadata={"Software": None}),
                          flag="--png")
