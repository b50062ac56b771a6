"""Every threshold of the audit in one place, with its default (AUDIT_SPEC §1–§5).

``AuditConfig`` is frozen; build one with :func:`make_config`, which applies, in order, the
profile's defaults, a ``[tool.grokaudit]`` table from ``pyproject.toml`` or a ``grokaudit.toml``,
and explicit overrides (CLI flags). The effective config is echoed in every report.

Each field carries its :class:`Option` (``field(metadata=opt(...))``): flag, valid range or
choices, help text, how it is set and echoed, its place in the text report. Every table other
modules read — :data:`RANGES`, :data:`FILE_ONLY`, :data:`PROFILE_SWITCHES`, the flags of
``grokaudit.options``, the text report's ``config:`` line … — is derived from those records, so one fact has one definition and a
new field declared with its metadata appears in all of them at once.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from .errors import ConfigError, ErrorCode
from .limits import DEFAULT_MAX_COLUMNS, DEFAULT_MAX_ROWS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Rule = Literal["settle", "crossing"]
PROFILES = ("default", "reference")

#: Largest value of any integer option: far beyond any real log, small enough for numpy.
INT_MAX = 1_000_000


@dataclass(frozen=True)
class Range:
    """The valid values of a numeric option: ``lo``/``hi`` with open or closed ends."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def contains(self, v: float) -> bool:
        """Whether ``v`` is a finite number inside the range (nan and ±inf never are)."""
        if not math.isfinite(v):
            return False
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def __str__(self) -> str:
        hi = "∞" if math.isinf(self.hi) else _bound_text(self.hi)
        return (f"{'(' if self.lo_open else '['}{_bound_text(self.lo)}, {hi}"
                f"{')' if self.hi_open or math.isinf(self.hi) else ']'}")


def _bound_text(x: float) -> str:
    """A range bound as ``--help`` states it: ``1``, ``0.05``, ``1e+06``."""
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


_INF = math.inf

#: How a value is read (:func:`_coerce` picks the coercer by it): ``bool``, ``int``, ``float``;
#: ``level`` (a number or unset: the loss levels), ``scale`` (a number, or ``auto``/unset),
#: ``columns`` (a list of column names), ``column`` (one name or unset), ``text`` (a string:
#: the choices), ``criterion`` (the grok column, stripped), ``fail_on``, ``pairs``
#: (``COLUMN=SCALE`` items). Left out of :func:`opt`, it follows the field's type.
Kind = Literal["bool", "int", "float", "level", "scale", "columns", "column", "text",
               "criterion", "fail_on", "pairs"]
#: The kind of a field declared without one, by its annotation.
_KIND_OF_TYPE: dict[str, Kind] = {"bool": "bool", "int": "int", "float": "float",
                                  "float | None": "level", "tuple[str, ...]": "columns",
                                  "str | None": "column", "str": "text"}
#: How an option is set: its own ``flag``; a config ``file`` (or the Python API) only; or a
#: profile ``switch``, set by ``--profile`` or a config file (``docs/profiles.md``).
SetBy = Literal["flag", "file", "switch"]
#: When the text report's ``config:`` line shows an option: ``always``; with the
#: ``accuracy`` or a ``loss`` grok criterion only; or when ``set`` (not unset, ``off`` or empty).
ShownWhen = Literal["always", "accuracy", "loss", "set"]


@dataclass(frozen=True)
class Shown:
    """An option's place on the text report's ``config:`` line: position ``at`` (ascending),
    ``when`` it is shown, and the ``key`` it is shown under when not its own name (the axis is
    the resolved one, ``by`` or the inferred column)."""

    at: int
    when: ShownWhen = "always"
    key: str = ""


@dataclass(frozen=True)
class Option:
    """Everything grokaudit states about one config option, declared once on its field.

    ``help`` is the flag's ``--help`` text; ``note`` its bracket: ``None`` for the usual
    ``[default D; valid R]`` (``[default D]`` without a range), ``""`` for none, else a
    template over ``{default}`` and ``{range}``. ``flag`` defaults to ``--name-with-dashes``
    for an option ``set_by`` a flag and is ``None`` for the others (resolved in
    :data:`OPTIONS`). ``threshold``: a numeric flag of every auditing command
    (``grokaudit.options.THRESHOLD_FLAGS``). ``echo_when_set``: echoed in
    :meth:`AuditConfig.to_dict` only when not at its default."""

    help: str = ""
    note: str | None = None
    flag: str | None = None
    set_by: SetBy = "flag"
    kind: Kind | None = None
    range: Range | None = None
    choices: tuple[str, ...] = ()
    threshold: bool = False
    echo_when_set: bool = False
    report: Shown | None = None


_KEY = "grokaudit"  # the key of the Option in a field's metadata


def opt(**kw: Any) -> dict[str, Option]:
    """A field's ``metadata``: the :class:`Option` built from ``kw``."""
    return {_KEY: Option(**kw)}


def _v15_switch(*choices: str) -> dict[str, Option]:
    """A profile switch: a choice of definition, echoed only when changed (the v1.5 ones)."""
    return opt(set_by="switch", choices=choices, echo_when_set=True)


def _unit(help: str, *, lo_open: bool = True, hi_open: bool = False,
          report: Shown | None = None) -> dict[str, Option]:
    """A threshold flag valued in the unit interval (closed at 1 unless ``hi_open``)."""
    return opt(help=help, threshold=True, report=report,
               range=Range(0, 1, lo_open=lo_open, hi_open=hi_open))


def _count(help: str, *, report: Shown | None = None) -> dict[str, Option]:
    """A threshold flag counting points: an integer in ``[1, INT_MAX]``."""
    return opt(help=help, threshold=True, report=report, range=Range(1, INT_MAX))


@dataclass(frozen=True)
class AuditConfig:
    """The audit's parameters. Times are in logged steps; fractions are of a run's step span.

    Each field's ``metadata`` holds its :class:`Option` (flag, range, choices, help)."""

    profile: str = field(default="default", metadata=opt(
        choices=PROFILES, help="default, or reference (the public v1.5 analyzer)", note=""))
    # -- what to audit ----------------------------------------------------------------------
    #: metric columns; empty = every known metric column present
    metrics: tuple[str, ...] = field(default=(), metadata=opt(
        flag="--metric", note="", report=Shown(5),
        help="metric column to audit (repeatable; default every known metric; none found: the "
             "accuracy clocks alone)"))
    #: the axis column; None = infer the single varying numeric condition
    by: str | None = field(default=None, metadata=opt(
        help="the axis column (default: the single varying numeric condition)", note="",
        report=Shown(3, key="axis")))
    #: columns that split studies (e.g. ``arch``)
    cell: tuple[str, ...] = field(default=(), metadata=opt(
        help="condition column(s) that split studies, e.g. arch", note="", report=Shown(4)))
    #: divide accuracies by this (100: percent); None (``auto``) decides per column: percent
    #: when a value exceeds 1 or a sibling accuracy column does (``docs/adapters.md``)
    acc_scale: float | None = field(default=None, metadata=opt(
        kind="scale", range=Range(0, _INF, lo_open=True), report=Shown(16, "set"),
        note="default auto; valid auto or {range}",
        help="divide accuracies by this: 100 (percent), 1 (fractions), auto (per column: "
             "percent with three values above 1.5, or beside such a column), or per column: "
             "test_acc=100,train_acc=1"))
    #: per accuracy column, ``("test_acc=100", "train_acc=1")``: the scale of that column,
    #: over ``acc_scale`` and the per-column rule (``--acc-scale test_acc=100,train_acc=1``)
    acc_scales: tuple[str, ...] = field(default=(), metadata=opt(
        kind="pairs", flag="--acc-scale", echo_when_set=True, report=Shown(17, "set")))
    #: duplicate (run, step) rows with different values: error|first|last
    on_duplicate: str = field(default="error", metadata=opt(
        choices=("error", "first", "last"),
        help="duplicate (run, step) rows with different values"))
    #: the most rows / columns an input may declare in its Parquet metadata, checked before it
    #: is read (``TOO_LARGE``; ``audit/limits.py``)
    max_rows: int = field(default=DEFAULT_MAX_ROWS, metadata=opt(
        range=Range(1, 10**12), echo_when_set=True,
        help="refuse an input whose Parquet metadata declares more rows (checked before "
             "reading)"))
    max_columns: int = field(default=DEFAULT_MAX_COLUMNS, metadata=opt(
        range=Range(1, 10**7), echo_when_set=True,
        help="refuse an input whose Parquet metadata declares more columns"))
    # -- clocks (§1) ------------------------------------------------------------------------
    mem_threshold: float = field(default=0.99, metadata=_unit(
        "train_acc that counts as memorized"))
    grok_threshold: float = field(default=0.90, metadata=_unit(
        "test_acc that counts as grokked", report=Shown(7, "accuracy")))
    #: consecutive logged points below threshold that break a grok
    sustain: int = field(default=3, metadata=_count(
        "consecutive points below threshold that break a grok"))
    full_threshold: float = field(default=0.98, metadata=_unit(
        "final median test_acc of a fully generalized run", report=Shown(8, "accuracy")))
    floor_frac: float = field(default=0.10, metadata=_unit(
        "final window W2 as a fraction of the step span", hi_open=True, report=Shown(9)))
    min_floor_points: int = field(default=5, metadata=_count("fewest points in W2"))
    max_floor_frac: float = field(default=0.25, metadata=_unit(
        "how far back W2 may reach to find them", hi_open=True))
    rel_tol: float = field(default=0.05, metadata=_unit(
        "floor band half-width relative to |F|", lo_open=False, report=Shown(10)))
    abs_tol: float = field(default=0.0, metadata=opt(
        threshold=True, range=Range(0, _INF),
        help="floor band half-width floor in metric units"))
    #: confidence of the Theil–Sen drift interval
    drift_level: float = field(default=0.90, metadata=opt(
        set_by="file", range=Range(0, 1, lo_open=True, hi_open=True)))
    max_slope_bins: int = field(default=64, metadata=opt(set_by="file", range=Range(3, 4096)))
    #: trailing rolling-median width, in metric points
    smooth: int = field(default=3, metadata=_count(
        "trailing rolling-median width in metric points", report=Shown(11)))
    min_rel_drop: float = field(default=0.25, metadata=_unit(
        "compression smaller than this share of the peak is none", lo_open=False,
        hi_open=True))
    min_abs_drop: float = field(default=0.0, metadata=opt(
        threshold=True, range=Range(0, _INF), help="compression smaller than this is none"))
    #: ``settle`` (default) or ``crossing`` (the reference's rule)
    rule: str = field(default="settle", metadata=opt(
        choices=("settle", "crossing"), help="t_compress rule", report=Shown(6)))
    #: the crossing rule's tolerance
    eps: float = field(default=0.10, metadata=_unit(
        "tolerance of the crossing rule", hi_open=True))
    transient_threshold: float = field(default=1.2, metadata=opt(
        threshold=True, range=Range(1, _INF), report=Shown(12),
        help="m_grok/F above this is a transient"))
    #: the grok criterion: ``test_acc`` rising to ``grok_threshold``, or a loss column (e.g.
    #: ``test_loss``) falling to ``grok_below`` — for logs without accuracy (regression tasks)
    grok_on: str = field(default="test_acc", metadata=opt(
        kind="criterion", echo_when_set=True, report=Shown(0, "loss"),
        help="the grok criterion's column: test_acc (rising to --grok-threshold) or a "
             "held-out loss (falling to --grok-below)"))
    #: the loss level of a grok (with a loss ``grok_on``)
    grok_below: float | None = field(default=None, metadata=opt(
        range=Range(0, _INF, lo_open=True), echo_when_set=True, report=Shown(1, "loss"),
        note="valid {range}",
        help="with a loss --grok-on: the loss that counts as generalized"))
    #: ``off``: the thresholds are absolute accuracies; ``study``: for a study whose best
    #: sustained test accuracy c is below 1 (a task ceiling), the grok and full thresholds are
    #: read as fractions of c (``grok_threshold × c``, ``full_threshold × c``); c < 0.5 keeps
    #: the absolute thresholds (a study at chance has no ceiling to measure against)
    grok_relative: str = field(default="off", metadata=opt(
        choices=("off", "study"), echo_when_set=True, report=Shown(15, "set"),
        help="study: read --grok-threshold and --full-threshold as fractions of the study's "
             "best sustained test accuracy when a task ceiling keeps it below 1 (at least 0.5)"))
    #: final median loss of a fully generalized run [grok_below]
    full_below: float | None = field(default=None, metadata=opt(
        range=Range(0, _INF, lo_open=True), echo_when_set=True, report=Shown(2, "loss"),
        note="default --grok-below",
        help="with a loss --grok-on: the final median loss of a fully generalized run"))
    # -- gates and study (§2–§3) -------------------------------------------------------------
    high_floor_factor: float = field(default=3.0, metadata=opt(
        threshold=True, range=Range(1, _INF, lo_open=True), help="floor outlier factor"))
    mono_threshold: float = field(default=0.6, metadata=_unit(
        "tau bound for a monotone ordering"))
    flat_threshold: float = field(default=0.3, metadata=_unit(
        "tau bound for a flat ordering (below --mono-threshold)", lo_open=False, hi_open=True))
    large_lag: float = field(default=0.5, metadata=opt(
        threshold=True, range=Range(0, _INF), report=Shown(13),
        help="median rel_lag above this is a large lag"))
    censor_warn: float = field(default=0.25, metadata=_unit(
        "censored share of t_compress that is inconclusive", lo_open=False, hi_open=True,
        report=Shown(14)))
    endpoint_cv: float = field(default=0.15, metadata=opt(
        set_by="file", range=Range(0, _INF, lo_open=True)))
    # -- severity (§4) ---------------------------------------------------------------------
    #: ``default``, ``none``, ``warning`` or reason codes
    fail_on: tuple[str, ...] = field(default=("default",), metadata=opt(
        kind="fail_on", note="", report=Shown(18),
        help="what makes the exit code 1: default (critical findings), none, warning "
             "(warnings too), or a comma list of reason codes (case-insensitive); anything "
             "else is an error"))
    # -- profile switches (§5): the named differences of the reference analyzer --------------
    #: ``span`` (last floor_frac of the step span), ``index`` (last floor_frac of the run's
    #: points) or ``grid`` (last floor_frac of the positions of the cell's step grid, v1.5)
    floor_window: str = field(default="span", metadata=opt(
        set_by="switch", choices=("span", "index", "grid")))
    stability_check: bool = field(default=True, metadata=opt(set_by="switch"))
    interval_censoring: bool = field(default=True, metadata=opt(set_by="switch"))
    #: compression measured from ``peak`` (default) or ``grok`` value
    drop_from: str = field(default="peak", metadata=opt(
        set_by="switch", choices=("peak", "grok")))
    #: ``intervals`` (Kendall bounds) or ``spearman`` (point medians)
    ordering: str = field(default="intervals", metadata=opt(
        set_by="switch", choices=("intervals", "spearman")))
    #: ``default`` (four gates) or ``reference`` (floor outlier, drop)
    gates: str = field(default="default", metadata=opt(
        set_by="switch", choices=("default", "reference")))
    #: ``accuracy``: t_grok is the first logged test_acc ≥ threshold; ``usable``: the first
    #: point where test_acc ≥ threshold *and* the metric is logged (v1.5), m_grok read there
    grok_point: str = field(default="accuracy", metadata=_v15_switch("accuracy", "usable"))
    #: where ``min_rel_drop`` applies: ``run`` (each run's drop) or ``cell`` (the ratio of the
    #: cell's median drop to its median m_grok, a boundary gate; runs need only min_abs_drop)
    rel_drop: str = field(default="run", metadata=_v15_switch("run", "cell"))
    #: a censored t_compress: ``bound`` (a lower bound, left out of point medians) or
    #: ``last_step`` (the last metric step after grok, kept in the medians, as v1.5 does)
    censored_time: str = field(default="bound", metadata=_v15_switch("bound", "last_step"))
    #: the runs of a cell's medians: ``all`` runs, or ``kept``: the runs that grokked and have
    #: a floor (v1.5's seeds; t_grok, m_grok, floor over them, times over those with a drop)
    cell_runs: str = field(default="all", metadata=_v15_switch("all", "kept"))
    #: the censoring fraction over the eligible runs of the ``passing`` cells, or over the runs
    #: with a drop of ``all_cells``, gated ones included (v1.5)
    censor_scope: str = field(default="passing", metadata=_v15_switch("passing", "all_cells"))
    #: the lag class from the median rel_lag of the pooled eligible ``runs``, or from the
    #: median of the passing cells' median rel_lag (``cell_medians``, v1.5)
    lag_class: str = field(default="runs", metadata=_v15_switch("runs", "cell_medians"))
    #: ``monotone``: both time orderings identified and monotone decide the clock type;
    #: ``sign``: the signs of the two Spearman coefficients, then whether the earliest cells
    #: differ (v1.5)
    clock_rule: str = field(default="monotone", metadata=_v15_switch("monotone", "sign"))
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if _READY:
            validate(self)

    def to_dict(self) -> dict[str, Any]:
        """The effective config as plain JSON-able values (``extra`` omitted). The v1.5
        switches (:data:`ECHOED_WHEN_SET`) appear only when they differ from their default, so
        the default profile's echo is what it was before they existed; an omitted one is at its
        default, and the echo still rebuilds the config exactly."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if f.name in ECHOED_WHEN_SET and v == f.default:
                continue
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


def _resolved(f: dataclasses.Field[Any]) -> Option:
    """Field ``f``'s :class:`Option` with its kind (from the annotation when not declared) and
    its flag (``--name-with-dashes`` for one set by a flag) filled in."""
    o: Option = f.metadata[_KEY]
    flag = o.flag
    if flag is None and o.set_by == "flag":
        flag = "--" + f.name.replace("_", "-")
    return dataclasses.replace(o, kind=o.kind or _KIND_OF_TYPE[str(f.type)], flag=flag)


def options_of(cls: type[AuditConfig]) -> dict[str, Option]:
    """The resolved :class:`Option` of every field of ``cls`` that declares one, in field
    order (``extra`` declares none)."""
    return {f.name: _resolved(f) for f in fields(cls) if _KEY in f.metadata}


#: Every option's :class:`Option`, in field order: the one source of the tables below.
OPTIONS: dict[str, Option] = options_of(AuditConfig)


def kind_of(name: str) -> Kind:
    """How option ``name``'s value is read (resolved, never ``None``)."""
    kind = OPTIONS[name].kind
    assert kind is not None  # _resolved fills it in
    return kind


#: Switches echoed in ``AuditConfig.to_dict`` only when set to a non-default value.
ECHOED_WHEN_SET = tuple(n for n, o in OPTIONS.items() if o.echo_when_set)

#: What ``--profile reference`` changes (AUDIT_SPEC §5: the public v1.5 analyzer).
REFERENCE_OVERRIDES: dict[str, Any] = {
    "floor_window": "grid",
    "stability_check": False,
    "interval_censoring": False,
    "drop_from": "grok",
    "min_abs_drop": 1.0,
    "rule": "crossing",
    "eps": 0.10,
    "ordering": "spearman",
    "gates": "reference",
    "large_lag": 0.5,
    "censor_warn": 0.25,
    "grok_point": "usable",
    "rel_drop": "cell",
    "censored_time": "last_step",
    "cell_runs": "kept",
    "censor_scope": "all_cells",
    "lag_class": "cell_medians",
    "clock_rule": "sign",
}

#: The valid values of every choice option.
_CHOICES: dict[str, tuple[str, ...]] = {n: o.choices for n, o in OPTIONS.items() if o.choices}

_READY = False  # AuditConfig validates itself once the module (its ranges) is defined

#: The valid range of every numeric option (stated in ``--help`` and ``docs/cli.md``).
RANGES: dict[str, Range] = {n: o.range for n, o in OPTIONS.items() if o.range is not None}

#: Options that may be unset (``None``): the loss levels, set only with a loss ``grok_on``.
OPTIONAL = tuple(n for n in OPTIONS if kind_of(n) == "level")

#: ``fail_on`` modes; anything else must be a list of reason codes.
FAIL_ON_MODES = ("default", "none", "warning")


#: Options that only a config file or the Python API can set (no command-line flag).
FILE_ONLY = tuple(n for n, o in OPTIONS.items() if o.set_by == "file")

#: The profile switches (``docs/profiles.md``): choices that name a definition, set by
#: ``--profile`` or a config file, never by a flag of their own.
PROFILE_SWITCHES = tuple(n for n, o in OPTIONS.items() if o.set_by == "switch")

#: The options the text report's ``config:`` line shows, in order: the key shown and when.
REPORT_KEYS: tuple[tuple[str, ShownWhen], ...] = tuple(
    (key, when) for _, key, when in sorted((o.report.at, o.report.key or n, o.report.when)
                                           for n, o in OPTIONS.items() if o.report is not None))


def _named(name: str) -> str:
    """An option as a message names it: ``'rel_tol' (--rel-tol)``, its config key and flag."""
    return f"{name!r} ({flag_of(name)})"


def flag_of(name: str) -> str:
    """How option ``name`` is set: its flag (``rel_tol`` → ``--rel-tol``), or "config file
    only" for an option without one."""
    o = OPTIONS.get(name)
    if o is None:  # not an option: the flag it would have
        return "--" + name.replace("_", "-")
    return o.flag or "config file only"


def parse_fail_on(value: str | Sequence[str], source: str = "command line") -> tuple[str, ...]:
    """Validate ``fail_on``: ``default``, ``none``, ``warning``, or a list of known reason codes
    (case-insensitive; a comma list or a sequence). A mode mixed with anything else, an empty
    value or an unknown token is a :class:`ConfigError` (``INVALID_FAIL_ON``) naming the token
    and listing the valid ones. Returns the normalized tuple (modes lower case, codes upper)."""
    from .reasons import Reason

    parts = [value] if isinstance(value, str) else [str(v) for v in value]
    tokens = [t.strip() for p in parts for t in p.split(",") if t.strip()]
    valid = f"{', '.join(FAIL_ON_MODES)}, or reason codes (see docs/reasons.md)"
    if not tokens:
        raise ConfigError(f"{source}: fail_on is empty; choose {valid}",
                          code=ErrorCode.INVALID_FAIL_ON, option="fail_on")
    modes = [t for t in tokens if t.lower() in FAIL_ON_MODES]
    if modes:
        if len(tokens) > 1:
            raise ConfigError(
                f"{source}: fail_on {','.join(tokens)!r} mixes {modes[0]!r} with other tokens; "
                f"give one of {', '.join(FAIL_ON_MODES)} alone, or a list of reason codes",
                code=ErrorCode.INVALID_FAIL_ON, option="fail_on")
        return (modes[0].lower(),)
    known = {r.value for r in Reason}
    out: list[str] = []
    for t in tokens:
        u = t.upper()
        if u not in known:
            raise ConfigError(
                f"{source}: fail_on token {t!r} is not a reason code"
                f"{hint(u, sorted(known), quote=False)}; choose {valid}",
                code=ErrorCode.INVALID_FAIL_ON, option="fail_on")
        if u not in out:
            out.append(u)
    return tuple(out)


#: options that name columns: a blank name is refused, never read as the option left out
_COLUMN_LISTS = tuple(n for n in OPTIONS if kind_of(n) == "columns")


def repeated(names: Sequence[str]) -> list[str]:
    """The names given more than once, sorted (``--by wd,wd``, ``metrics = [m, m]``)."""
    return sorted({n for n in names if names.count(n) > 1})


def _blank(name: str, value: Any, source: str) -> ConfigError:
    """The refusal of a blank column name (``by = ""``, ``metrics = ","``): read as the option
    left out it would audit the detected axis, every metric or no cell split without a word."""
    return ConfigError(f"{source}: option {_named(name)} = {value!r} is blank; give a column "
                       "name, or leave the option out for the automatic choice",
                       code=ErrorCode.INVALID_OPTION, option=name)


# -- "did you mean": the one suggestion of every misspelt name ------------------------------
def did_you_mean(word: str, candidates: Iterable[str], n: int = 1, cutoff: float = 0.6, *,
                 quote: bool = True) -> str:
    """``"did you mean 'rel_tol'?"`` (several: ``'a' or 'b'``), or ``""`` when no candidate is
    close enough. Every "did you mean" of grokaudit (a config key, a ``fail_on`` code, a
    weight matrix of a callback) asks here, so all rank candidates alike (``difflib``'s ratio,
    the ``n`` best at or above ``cutoff``) and word the suggestion alike; ``quote=False`` names
    them bare, as reason codes are written (``did you mean NO_GROK?``)."""
    close = difflib.get_close_matches(word, list(candidates), n=n, cutoff=cutoff)
    if not close:
        return ""
    return f"did you mean {' or '.join(repr(c) if quote else c for c in close)}?"


def hint(word: str, candidates: Iterable[str], n: int = 1, cutoff: float = 0.6, *,
         quote: bool = True) -> str:
    """:func:`did_you_mean` as an aside inside a message: ``" (did you mean 'rel_tol'?)"``, or
    ``""``."""
    text = did_you_mean(word, candidates, n, cutoff, quote=quote)
    return f" ({text})" if text else ""


# -- coercers: one per Kind; (name, value, source) -> the field's value ------------------------
Coercer = Callable[[str, Any, str], Any]
T = TypeVar("T")


def _refusing(what: str) -> Callable[[Callable[[str, Any, str], T]],
                                     Callable[[str, Any, str], T]]:
    """A coercer whose ``TypeError``/``ValueError``/``OverflowError`` (a value of the wrong
    type, ``int("1e3")``, ``float(10**400)``) becomes the one refusal ``option 'x' (--x) = v is
    not WHAT`` (``INVALID_OPTION``); a :class:`ConfigError` of its own passes as it is."""
    def wrap(fn: Callable[[str, Any, str], T]) -> Callable[[str, Any, str], T]:
        @functools.wraps(fn)
        def coerce(name: str, value: Any, source: str) -> T:
            try:
                return fn(name, value, source)
            except ConfigError:
                raise
            except (TypeError, ValueError, OverflowError):
                raise ConfigError(f"{source}: option {_named(name)} = {value!r} is not {what}",
                                  code=ErrorCode.INVALID_OPTION, option=name) from None
        return coerce
    return wrap


@_refusing("true/false")
def _to_bool(name: str, value: Any, source: str) -> bool:
    """``true``/``1``/``yes``, ``false``/``0``/``no`` (any case), a bool or an int."""
    if isinstance(value, str):
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ValueError(value)
    if not isinstance(value, (bool, int)):
        raise ValueError(value)
    return bool(value)


@_refusing("an integer")
def _to_int(name: str, value: Any, source: str) -> int:
    """An int, an integral float or an integer string; never a bool (``True`` is no count)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(value)
    elif isinstance(value, str):
        value = int(value.strip())
    elif not isinstance(value, int):
        raise ValueError(value)
    return int(value)


@_refusing("a number")
def _to_float(name: str, value: Any, source: str) -> float:
    """A number or a numeric string; never a bool. Its range is :func:`validate`'s."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(value)
    return float(value)


def _to_level(name: str, value: Any, source: str) -> float | None:
    """A loss level: unset (``None`` or ``""``) or a number."""
    if value is None or value == "":
        return None
    return _to_float(name, value, source)


def _to_scale(name: str, value: Any, source: str) -> float | None:
    """``acc_scale``: ``auto`` or blank (decided per column: ``None``), else a number."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    return _to_level(name, value, source)


@_refusing("a list of names")
def _to_columns(name: str, value: Any, source: str) -> tuple[str, ...]:
    """Column names: a comma list or a sequence. A blank name, or none at all, is refused
    (:func:`_blank`), and so is a name given twice in a sequence (two equal studies)."""
    if isinstance(value, str):
        names = tuple(v.strip() for v in value.split(",") if v.strip())
        if not names:
            raise _blank(name, value, source)
        return names
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, (str, int, float)) for v in value):
        raise ValueError(value)
    if any(not str(v).strip() for v in value):
        raise _blank(name, value, source)
    names = tuple(str(v) for v in value)
    twice = repeated(names)
    if twice:  # --metric m --metric m: two equal studies
        raise ConfigError(f"{source}: option {_named(name)} names "
                          f"{', '.join(map(repr, twice))} twice; name each once",
                          code=ErrorCode.INVALID_OPTION, option=name)
    return names


@_refusing("a string")
def _to_column(name: str, value: Any, source: str) -> str | None:
    """One column name or unset; a blank one (a placeholder left empty) is not unset."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(value)
    if not value.strip():
        raise _blank(name, value, source)
    return value


@_refusing("a string")
def _to_text(name: str, value: Any, source: str) -> str:
    """A string, as given (a choice is checked by :func:`validate`, naming every choice)."""
    if not isinstance(value, str):
        raise ValueError(value)
    return value


def _to_criterion(name: str, value: Any, source: str) -> str:
    """``grok_on``: a column name, stripped (which column it may be is :func:`validate`'s)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{source}: option {_named(name)} = {value!r} must be a "
                          "column name", code=ErrorCode.INVALID_OPTION, option=name)
    return value.strip()


def _to_fail_on(name: str, value: Any, source: str) -> tuple[str, ...]:
    """``fail_on``: a string or a list of strings, normalized by :func:`parse_fail_on`."""
    if not isinstance(value, (str, list, tuple)):
        raise ConfigError(f"{source}: option {name!r} = {value!r} must be a string or a "
                          "list of strings", code=ErrorCode.INVALID_OPTION, option=name)
    return parse_fail_on(value, source)


def _to_pairs(name: str, value: Any, source: str) -> tuple[str, ...]:
    """``acc_scales``: ``COLUMN=SCALE`` items as a comma list, a sequence or a table
    (``acc_scale = {test_acc = 100}`` in a config file); each is checked by
    :func:`column_scales`."""
    if isinstance(value, dict):
        value = [f"{k}={v}" for k, v in value.items()]
    items = ([v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str)
             else [str(v) for v in value] if isinstance(value, (list, tuple)) else None)
    if items is None:
        raise ConfigError(f"{source}: option {name!r} = {value!r} must be COLUMN=SCALE "
                          "pairs", code=ErrorCode.INVALID_OPTION, option=name)
    return tuple(items)


_COERCERS: dict[Kind, Coercer] = {
    "bool": _to_bool, "int": _to_int, "float": _to_float, "level": _to_level,
    "scale": _to_scale, "columns": _to_columns, "column": _to_column, "text": _to_text,
    "criterion": _to_criterion, "fail_on": _to_fail_on, "pairs": _to_pairs,
}


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` (from ``source``: a file, the command line) as option ``name``'s type, by the
    coercer of its kind; range and choice checks are :func:`validate`'s."""
    return _COERCERS[kind_of(name)](name, value, source)


def _unknown(key: str) -> ConfigError:
    """The refusal of a keyword that is no option (a flag override, :func:`replace`),
    suggesting the closest option."""
    return ConfigError(f"unknown option {key!r}{hint(key, OPTIONS)}",
                       code=ErrorCode.UNKNOWN_OPTION, option=key)


def validate(cfg: AuditConfig) -> AuditConfig:
    """Check every field of ``cfg``: choices, finite numbers in their :data:`RANGES`, bounded
    integers, a valid ``fail_on``. Raises :class:`ConfigError` naming the option, its flag and
    the valid range. Every ``AuditConfig`` passes through here when it is built."""
    for name, choices in _CHOICES.items():
        if getattr(cfg, name) not in choices:
            raise ConfigError(
                f"option {_named(name)} = {getattr(cfg, name)!r}; choose one of "
                f"{', '.join(choices)}", code=ErrorCode.INVALID_OPTION, option=name)
    for name, rng in RANGES.items():
        v = getattr(cfg, name)
        if v is None and kind_of(name) in ("level", "scale"):  # unset: allowed
            continue
        is_int = kind_of(name) == "int"
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (
                is_int and not isinstance(v, int)):
            raise ConfigError(f"option {_named(name)} = {v!r} is not "
                              f"{'an integer' if is_int else 'a number'}",
                              code=ErrorCode.INVALID_OPTION, option=name)
        if not rng.contains(float(v)):
            what = "an integer" if is_int else "a finite number"
            raise ConfigError(f"option {_named(name)} = {v!r}; it must be {what} in "
                              f"{rng}", code=ErrorCode.OPTION_OUT_OF_RANGE, option=name)
    _validate_grok_on(cfg)
    column_scales(cfg)
    if cfg.floor_frac > cfg.max_floor_frac:
        raise ConfigError(f"option {_named('floor_frac')} = {cfg.floor_frac} must not exceed "
                          f"{_named('max_floor_frac')} = {cfg.max_floor_frac}",
                          code=ErrorCode.OPTION_OUT_OF_RANGE, option="floor_frac")
    if cfg.flat_threshold >= cfg.mono_threshold:
        raise ConfigError(f"option {_named('flat_threshold')} = {cfg.flat_threshold} must be below "
                          f"{_named('mono_threshold')} = {cfg.mono_threshold}",
                          code=ErrorCode.OPTION_OUT_OF_RANGE, option="flat_threshold")
    if tuple(parse_fail_on(cfg.fail_on)) != tuple(cfg.fail_on):
        raise ConfigError(f"option 'fail_on' = {list(cfg.fail_on)!r} is not normalized; build "
                          "the config with make_config", code=ErrorCode.INVALID_FAIL_ON,
                          option="fail_on")
    for name in ("metrics", "cell"):
        v = getattr(cfg, name)
        if not isinstance(v, tuple) or not all(isinstance(x, str) and x for x in v):
            raise ConfigError(f"option {name!r} = {v!r} must be a list of column names",
                              code=ErrorCode.INVALID_OPTION, option=name)
    if cfg.by is not None and (not isinstance(cfg.by, str) or not cfg.by):
        raise ConfigError(f"option 'by' = {cfg.by!r} must be a column name",
                          code=ErrorCode.INVALID_OPTION, option="by")
    if cfg.by is not None and cfg.by in cfg.cell:
        # each study would hold one value of its own axis: no ordering could ever be read
        raise ConfigError(f"option {_named('by')} = {cfg.by!r} is also in {_named('cell')}: "
                          "the axis varies within a study, the cell columns split studies; "
                          "drop it from one", code=ErrorCode.INVALID_OPTION, option="cell")
    return cfg


_validate = validate


def column_scales(cfg: AuditConfig) -> dict[str, float]:
    """``acc_scales`` as ``{column: scale}``; a :class:`ConfigError` for a pair that is not
    ``test_acc=N`` or ``train_acc=N`` with N a positive finite number."""
    out: dict[str, float] = {}
    for item in cfg.acc_scales:
        col, sep, val = str(item).partition("=")
        col = col.strip()
        try:
            scale = float(val)
        except ValueError:
            scale = math.nan
        if not sep or col not in ("test_acc", "train_acc") or not math.isfinite(scale) \
                or scale <= 0:
            raise ConfigError(f"--acc-scale {item!r}: expected test_acc=N or train_acc=N with N "
                              "a positive number (100 for percent, 1 for fractions)",
                              code=ErrorCode.INVALID_OPTION, option="acc_scale")
        out[col] = scale
    return out


#: The smallest best sustained test accuracy a study needs for ``grok_relative = study``.
RELATIVE_MIN_CEILING = 0.5


def _validate_grok_on(cfg: AuditConfig) -> None:
    """The grok criterion: accuracy (no loss levels), or a loss column with its level."""
    if cfg.grok_relative != "off":
        if cfg.grok_on != "test_acc":
            raise ConfigError("--grok-relative study reads the accuracy thresholds relative to "
                              "a ceiling; it does not apply to a loss criterion (--grok-on "
                              f"{cfg.grok_on})", code=ErrorCode.INVALID_OPTION,
                              option="grok_relative")
        if cfg.grok_point != "accuracy":
            raise ConfigError("grok_relative = study is not a definition of the reference "
                              "profile (grok_point = usable); use the default profile",
                              code=ErrorCode.INVALID_OPTION, option="grok_relative")
    if cfg.grok_on == "test_acc":
        for name in OPTIONAL:
            if getattr(cfg, name) is not None:
                raise ConfigError(
                    f"option {_named(name)} sets a loss level, but the grok "
                    "criterion is test_acc: pass --grok-on LOSS_COLUMN (e.g. test_loss) too",
                    code=ErrorCode.INVALID_OPTION, option=name)
        return
    if cfg.grok_on in ("run", "step", "train_acc"):
        raise ConfigError(f"option 'grok_on' (--grok-on) = {cfg.grok_on!r}: name test_acc or a "
                          "held-out loss column (e.g. test_loss)",
                          code=ErrorCode.INVALID_OPTION, option="grok_on")
    if cfg.grok_below is None:
        raise ConfigError(f"--grok-on {cfg.grok_on}: a loss criterion needs its level: pass "
                          "--grok-below LEVEL (the loss that counts as generalized)",
                          code=ErrorCode.INVALID_OPTION, option="grok_below")
    if cfg.full_below is not None and cfg.full_below > cfg.grok_below:
        raise ConfigError(f"option {_named('full_below')} = {cfg.full_below} must not exceed "
                          f"{_named('grok_below')} = {cfg.grok_below} (a fully generalized run is at least "
                          "as good as a grokked one)", code=ErrorCode.OPTION_OUT_OF_RANGE,
                          option="full_below")


def grok_levels(cfg: AuditConfig) -> tuple[str, float, float, float]:
    """The grok criterion as a rising signal: ``(column, sign, grok level, full level)``.

    Accuracy rises to its thresholds (sign +1); a loss falls to its levels, read as the rising
    signal ``−loss`` against ``−level`` (sign −1), so one first-passage rule serves both."""
    if cfg.grok_on == "test_acc":
        return "test_acc", 1.0, cfg.grok_threshold, cfg.full_threshold
    assert cfg.grok_below is not None
    full = cfg.full_below if cfg.full_below is not None else cfg.grok_below
    return cfg.grok_on, -1.0, -cfg.grok_below, -full


def _toml_error(path: Path, exc: Exception) -> ConfigError:
    return ConfigError(f"{path}: not valid TOML ({exc}); fix the file or pass --config PATH",
                       code=ErrorCode.CONFIG_SYNTAX)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found",
                          code=ErrorCode.CONFIG_NOT_FOUND) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc})",
                          code=ErrorCode.CONFIG_SYNTAX) from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(path, exc) from None


def _table_of(data: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """The grokaudit table of a parsed file: ``[tool.grokaudit]`` (pyproject or grokaudit.toml),
    ``[grokaudit]``, or the top-level keys of a ``grokaudit.toml``."""
    tool = data.get("tool")
    table = tool.get("grokaudit") if isinstance(tool, dict) else None
    if path.name == "pyproject.toml":
        if table is not None and not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.grokaudit] must be a table",
                              code=ErrorCode.CONFIG_SYNTAX)
        return dict(table) if isinstance(table, dict) else None
    if isinstance(table, dict):
        rest = {k: v for k, v in data.items() if k != "tool"}
        if rest or not isinstance(tool, dict) or set(tool) != {"grokaudit"}:
            raise ConfigError(f"{path}: holds [tool.grokaudit] and other keys; keep one form",
                              code=ErrorCode.UNKNOWN_OPTION)
        return dict(table)
    if "grokaudit" in data:
        if not isinstance(data["grokaudit"], dict) or len(data) > 1:
            raise ConfigError(f"{path}: [grokaudit] must be the only table",
                              code=ErrorCode.UNKNOWN_OPTION)
        return dict(data["grokaudit"])
    return dict(data)


def find_config_file(start: Path | None = None) -> tuple[Path | None, list[str]]:
    """The config file discovery finds: ``grokaudit.toml``, or a ``pyproject.toml`` with a
    ``[tool.grokaudit]`` table, in ``start`` (default: the working directory) or a parent —
    stopping at the repository root (the folder holding ``.git``) or the user's home, so that
    a file two folders above a project cannot change its audit unseen. Returns the file (None)
    and the folders searched, in order."""
    here = (start or Path.cwd()).resolve()
    try:
        home: Path | None = Path.home().resolve()
    except (RuntimeError, KeyError):
        home = None
    searched: list[str] = []
    for d in (here, *here.parents):
        searched.append(str(d))
        g = d / "grokaudit.toml"
        if g.is_file():
            return g, searched
        p = d / "pyproject.toml"
        if p.is_file() and _table_of(_read_toml(p), p) is not None:
            return p, searched
        if (d / ".git").exists() or (home is not None and d == home):
            break
    return None, searched


def ignored_config_files(found: Path | None, named: str | None = None,
                         start: Path | None = None) -> list[tuple[Path, str]]:
    """The config files a command does not read although discovery would see them, each with
    why (said in the trail, never silently): a ``pyproject.toml`` with a ``[tool.grokaudit]``
    table beside the ``grokaudit.toml`` that wins (``found``), or, when ``--config`` names a
    file (``named``), the file discovery finds. A file that cannot be parsed is left out here
    (it is not read either way)."""
    out: list[tuple[Path, str]] = []
    if named:
        try:
            found, _ = find_config_file(start)
        except ConfigError:
            return out
        if found is not None and found.resolve() != Path(named).resolve():
            out.append((found, f"--config names {named}"))
            return out
        found = None
    if found is not None and found.name == "grokaudit.toml":
        p = found.parent / "pyproject.toml"
        try:
            shadowed = p.is_file() and _table_of(_read_toml(p), p) is not None
        except ConfigError:
            shadowed = False
        if shadowed:
            out.append((p, f"{found.name} in the same folder comes first"))
    return out


def config_file_values(start: Path | None = None) -> tuple[dict[str, Any], str | None]:
    """The table of the config file discovery finds (:func:`find_config_file`) and the file it
    came from (``None`` when there is none). A file that cannot be parsed is an error
    (``CONFIG_SYNTAX``), never skipped: its settings would be silently ignored."""
    found, _ = find_config_file(start)
    if found is None:
        return {}, None
    return load_config_file(found), str(found)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a config file: ``grokaudit.toml`` (top-level keys, a ``[grokaudit]`` table, or a
    ``[tool.grokaudit]`` table as in ``pyproject.toml``) or a ``pyproject.toml`` (its
    ``[tool.grokaudit]`` table)."""
    p = Path(path)
    return _table_of(_read_toml(p), p) or {}


def make_config(profile: str | None = None, file_values: Mapping[str, Any] | None = None,
                source: str = "config", **overrides: Any) -> AuditConfig:
    """Build the effective config: profile defaults, then ``file_values``, then ``overrides``.

    ``None`` overrides are ignored (an unset CLI flag). Unknown keys raise :class:`ConfigError`.
    """
    file_values = dict(file_values or {})
    spelt: dict[str, str] = {}
    for k in file_values:
        k2 = str(k).replace("-", "_")
        if k2 in spelt:  # fail_on and fail-on in one file: which one holds is no choice
            raise ConfigError(f"{source}: option {k2!r} is set twice ({spelt[k2]!r} and "
                              f"{str(k)!r}); keep one", code=ErrorCode.INVALID_OPTION,
                              option=k2)
        spelt[k2] = str(k)
        if k2 not in OPTIONS:
            raise ConfigError(f"{source}: unknown option {k!r}{hint(k2, OPTIONS)} (see "
                              "`grokaudit check --help` and docs/config.md)",
                              code=ErrorCode.UNKNOWN_OPTION, option=str(k))
    file_values = {str(k).replace("-", "_"): v for k, v in file_values.items()}
    chosen = profile or file_values.pop("profile", None) or "default"
    file_values.pop("profile", None)
    if chosen not in PROFILES:
        raise ConfigError(f"{source}: unknown profile {chosen!r}; choose one of "
                          f"{', '.join(PROFILES)}", code=ErrorCode.INVALID_OPTION,
                          option="profile")
    values: dict[str, Any] = {"profile": chosen}
    if chosen == "reference":
        values.update(REFERENCE_OVERRIDES)
    for k, v in file_values.items():
        values[k] = _coerce(k, v, source)
    for k, v in overrides.items():
        if v is None:
            continue
        if k not in OPTIONS:
            raise _unknown(k)
        values[k] = _coerce(k, v, "command line")
    try:
        return AuditConfig(**values)
    except ConfigError as exc:
        given = {k for k, v in overrides.items() if v is not None}
        if exc.option in file_values and exc.option not in given and source != "config":
            # name the file the value came from, as the parse errors do
            raise ConfigError(f"{source}: {exc}", code=exc.code, option=exc.option) from None
        raise


def build_config(profile: str | None, config_file: str | None,
                 overrides: Mapping[str, Any]) -> AuditConfig:
    """The effective config of a command: profile, then the config file (``config_file``, else
    ``grokaudit.toml`` / ``[tool.grokaudit]`` found upwards from the working directory), then
    the flags in ``overrides`` (``None`` = not given)."""
    if config_file:
        values, source = load_config_file(config_file), config_file
    else:
        values, src = config_file_values()
        source = src or "config"
    return make_config(profile, values, source=source, **dict(overrides))


def replace(cfg: AuditConfig, **changes: Any) -> AuditConfig:
    """A copy of ``cfg`` with ``changes`` applied (coerced like a flag) and validated."""
    for k in changes:
        if k not in OPTIONS:
            raise _unknown(k)
    coerced = {k: _coerce(k, v, "replace") for k, v in changes.items()}
    return dataclasses.replace(cfg, **coerced)


_DEFAULTS = AuditConfig()
_READY = True
validate(_DEFAULTS)
