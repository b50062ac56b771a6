"""Every threshold of the audit in one place, with its default (AUDIT_SPEC §1–§5).

``AuditConfig`` is frozen; build one with :func:`make_config`, which applies, in order, the
profile's defaults, a ``[tool.grokaudit]`` table from ``pyproject.toml`` or a ``grokaudit.toml``,
and explicit overrides (CLI flags). The effective config is echoed in every report.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError, ErrorCode
from .limits import DEFAULT_MAX_COLUMNS, DEFAULT_MAX_ROWS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Rule = Literal["settle", "crossing"]
PROFILES = ("default", "reference")


@dataclass(frozen=True)
class AuditConfig:
    """The audit's parameters. Times are in logged steps; fractions are of a run's step span."""

    profile: str = "default"
    # -- what to audit ----------------------------------------------------------------------
    metrics: tuple[str, ...] = ()  #: metric columns; empty = every known metric column present
    by: str | None = None  #: the axis column; None = infer the single varying numeric condition
    cell: tuple[str, ...] = ()  #: columns that split studies (e.g. ``arch``)
    #: divide accuracies by this (100: percent); None (``auto``) decides per column: percent
    #: when a value exceeds 1 or a sibling accuracy column does (``docs/adapters.md``)
    acc_scale: float | None = None
    #: per accuracy column, ``("test_acc=100", "train_acc=1")``: the scale of that column,
    #: over ``acc_scale`` and the per-column rule (``--acc-scale test_acc=100,train_acc=1``)
    acc_scales: tuple[str, ...] = ()
    on_duplicate: str = "error"  #: duplicate (run, step) rows with different values: error|first|last
    #: the most rows / columns an input may declare in its Parquet metadata, checked before it
    #: is read (``TOO_LARGE``; ``audit/limits.py``)
    max_rows: int = DEFAULT_MAX_ROWS
    max_columns: int = DEFAULT_MAX_COLUMNS
    # -- clocks (§1) ------------------------------------------------------------------------
    mem_threshold: float = 0.99
    grok_threshold: float = 0.90
    sustain: int = 3  #: consecutive logged points below threshold that break a grok
    full_threshold: float = 0.98
    floor_frac: float = 0.10
    min_floor_points: int = 5
    max_floor_frac: float = 0.25
    rel_tol: float = 0.05
    abs_tol: float = 0.0
    drift_level: float = 0.90  #: confidence of the Theil–Sen drift interval
    max_slope_bins: int = 64
    smooth: int = 3  #: trailing rolling-median width, in metric points
    min_rel_drop: float = 0.25
    min_abs_drop: float = 0.0
    rule: str = "settle"  #: ``settle`` (default) or ``crossing`` (the reference's rule)
    eps: float = 0.10  #: the crossing rule's tolerance
    transient_threshold: float = 1.2
    #: the grok criterion: ``test_acc`` rising to ``grok_threshold``, or a loss column (e.g.
    #: ``test_loss``) falling to ``grok_below`` — for logs without accuracy (regression tasks)
    grok_on: str = "test_acc"
    grok_below: float | None = None  #: the loss level of a grok (with a loss ``grok_on``)
    #: ``off``: the thresholds are absolute accuracies; ``study``: for a study whose best
    #: sustained test accuracy c is below 1 (a task ceiling), the grok and full thresholds are
    #: read as fractions of c (``grok_threshold × c``, ``full_threshold × c``); c < 0.5 keeps
    #: the absolute thresholds (a study at chance has no ceiling to measure against)
    grok_relative: str = "off"
    full_below: float | None = None  #: final median loss of a fully generalized run [grok_below]
    # -- gates and study (§2–§3) -------------------------------------------------------------
    high_floor_factor: float = 3.0
    mono_threshold: float = 0.6
    flat_threshold: float = 0.3
    large_lag: float = 0.5
    censor_warn: float = 0.25
    endpoint_cv: float = 0.15
    # -- severity (§4) ---------------------------------------------------------------------
    fail_on: tuple[str, ...] = ("default",)  #: ``default``, ``none``, ``warning`` or reason codes
    # -- profile switches (§5): the named differences of the reference analyzer --------------
    #: ``span`` (last floor_frac of the step span), ``index`` (last floor_frac of the run's
    #: points) or ``grid`` (last floor_frac of the positions of the cell's step grid, v1.5)
    floor_window: str = "span"
    stability_check: bool = True
    interval_censoring: bool = True
    drop_from: str = "peak"  #: compression measured from ``peak`` (default) or ``grok`` value
    ordering: str = "intervals"  #: ``intervals`` (Kendall bounds) or ``spearman`` (point medians)
    gates: str = "default"  #: ``default`` (four gates) or ``reference`` (floor outlier, drop)
    #: ``accuracy``: t_grok is the first logged test_acc ≥ threshold; ``usable``: the first
    #: point where test_acc ≥ threshold *and* the metric is logged (v1.5), m_grok read there
    grok_point: str = "accuracy"
    #: where ``min_rel_drop`` applies: ``run`` (each run's drop) or ``cell`` (the ratio of the
    #: cell's median drop to its median m_grok, a boundary gate; runs need only min_abs_drop)
    rel_drop: str = "run"
    #: a censored t_compress: ``bound`` (a lower bound, left out of point medians) or
    #: ``last_step`` (the last metric step after grok, kept in the medians, as v1.5 does)
    censored_time: str = "bound"
    #: the runs of a cell's medians: ``all`` runs, or ``kept``: the runs that grokked and have
    #: a floor (v1.5's seeds; t_grok, m_grok, floor over them, times over those with a drop)
    cell_runs: str = "all"
    #: the censoring fraction over the eligible runs of the ``passing`` cells, or over the runs
    #: with a drop of ``all_cells``, gated ones included (v1.5)
    censor_scope: str = "passing"
    #: the lag class from the median rel_lag of the pooled eligible ``runs``, or from the
    #: median of the passing cells' median rel_lag (``cell_medians``, v1.5)
    lag_class: str = "runs"
    #: ``monotone``: both time orderings identified and monotone decide the clock type;
    #: ``sign``: the signs of the two Spearman coefficients, then whether the earliest cells
    #: differ (v1.5)
    clock_rule: str = "monotone"
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


#: Switches echoed in ``AuditConfig.to_dict`` only when set to a non-default value.
ECHOED_WHEN_SET = ("grok_point", "rel_drop", "censored_time", "cell_runs", "censor_scope",
                   "lag_class", "clock_rule", "grok_on", "grok_below", "full_below",
                   "grok_relative", "acc_scales", "max_rows", "max_columns")

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

_CHOICES: dict[str, tuple[str, ...]] = {
    "rule": ("settle", "crossing"),
    "on_duplicate": ("error", "first", "last"),
    "floor_window": ("span", "index", "grid"),
    "grok_point": ("accuracy", "usable"),
    "rel_drop": ("run", "cell"),
    "censored_time": ("bound", "last_step"),
    "cell_runs": ("all", "kept"),
    "censor_scope": ("passing", "all_cells"),
    "lag_class": ("runs", "cell_medians"),
    "clock_rule": ("monotone", "sign"),
    "drop_from": ("peak", "grok"),
    "ordering": ("intervals", "spearman"),
    "gates": ("default", "reference"),
    "grok_relative": ("off", "study"),
    "profile": PROFILES,
}

_FIELD_TYPES = {f.name: f.type for f in fields(AuditConfig)}
_READY = False  # AuditConfig validates itself once the module (its ranges) is defined

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
#: The valid range of every numeric option (stated in ``--help`` and ``docs/cli.md``).
RANGES: dict[str, Range] = {
    "acc_scale": Range(0, _INF, lo_open=True),
    "mem_threshold": Range(0, 1, lo_open=True),
    "grok_threshold": Range(0, 1, lo_open=True),
    "sustain": Range(1, INT_MAX),
    "full_threshold": Range(0, 1, lo_open=True),
    "floor_frac": Range(0, 1, lo_open=True, hi_open=True),
    "min_floor_points": Range(1, INT_MAX),
    "max_floor_frac": Range(0, 1, lo_open=True, hi_open=True),
    "rel_tol": Range(0, 1),
    "abs_tol": Range(0, _INF),
    "drift_level": Range(0, 1, lo_open=True, hi_open=True),
    "max_slope_bins": Range(3, 4096),
    "smooth": Range(1, INT_MAX),
    "max_rows": Range(1, 10**12),
    "max_columns": Range(1, 10**7),
    "min_rel_drop": Range(0, 1, hi_open=True),
    "min_abs_drop": Range(0, _INF),
    "eps": Range(0, 1, lo_open=True, hi_open=True),
    "transient_threshold": Range(1, _INF),
    "high_floor_factor": Range(1, _INF, lo_open=True),
    "mono_threshold": Range(0, 1, lo_open=True),
    "flat_threshold": Range(0, 1, hi_open=True),
    "large_lag": Range(0, _INF),
    "censor_warn": Range(0, 1, hi_open=True),
    "endpoint_cv": Range(0, _INF, lo_open=True),
    "grok_below": Range(0, _INF, lo_open=True),
    "full_below": Range(0, _INF, lo_open=True),
}

#: Options that may be unset (``None``): the loss levels, set only with a loss ``grok_on``.
OPTIONAL = ("grok_below", "full_below")

#: ``fail_on`` modes; anything else must be a list of reason codes.
FAIL_ON_MODES = ("default", "none", "warning")


#: Options that only a config file or the Python API can set (no command-line flag).
FILE_ONLY = ("drift_level", "max_slope_bins", "endpoint_cv")

#: The profile switches (``docs/profiles.md``): choices that name a definition, set by
#: ``--profile`` or a config file, never by a flag of their own.
PROFILE_SWITCHES = ("floor_window", "stability_check", "interval_censoring", "drop_from",
                    "ordering", "gates", "grok_point", "rel_drop", "censored_time", "cell_runs",
                    "censor_scope", "lag_class", "clock_rule")


def _named(name: str) -> str:
    """An option as a message names it: ``'rel_tol' (--rel-tol)``, its config key and flag."""
    return f"{name!r} ({flag_of(name)})"


def flag_of(name: str) -> str:
    """How option ``name`` is set: its flag (``rel_tol`` → ``--rel-tol``), or "config file
    only" for an option without one."""
    if name in FILE_ONLY or name in PROFILE_SWITCHES:
        return "config file only"
    if name == "metrics":
        return "--metric"
    return "--" + name.replace("_", "-")


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
            close = difflib.get_close_matches(u, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"{source}: fail_on token {t!r} is not a reason code{hint}; choose {valid}",
                code=ErrorCode.INVALID_FAIL_ON, option="fail_on")
        if u not in out:
            out.append(u)
    return tuple(out)


#: options that name columns: a blank name is refused, never read as the option left out
_COLUMN_LISTS = ("metrics", "cell")


def repeated(names: Sequence[str]) -> list[str]:
    """The names given more than once, sorted (``--by wd,wd``, ``metrics = [m, m]``)."""
    return sorted({n for n in names if names.count(n) > 1})


def _blank(name: str, value: Any, source: str) -> ConfigError:
    """The refusal of a blank column name (``by = ""``, ``metrics = ","``): read as the option
    left out it would audit the detected axis, every metric or no cell split without a word."""
    return ConfigError(f"{source}: option {_named(name)} = {value!r} is blank; give a column "
                       "name, or leave the option out for the automatic choice",
                       code=ErrorCode.INVALID_OPTION, option=name)


def _coerce(name: str, value: Any, source: str) -> Any:
    default = getattr(AuditConfig(), name)
    if name == "acc_scale" and (value is None or (isinstance(value, str)
                                                  and value.strip().lower() in ("", "auto"))):
        return None
    if name in OPTIONAL or name == "acc_scale":
        if value is None or value == "":
            return None
        try:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValueError(value)
            return float(value)
        except (TypeError, ValueError, OverflowError):
            raise ConfigError(f"{source}: option {_named(name)} = {value!r} is not "
                              "a number", code=ErrorCode.INVALID_OPTION, option=name) from None
    if name == "acc_scales":
        if isinstance(value, dict):  # acc_scale = {test_acc = 100} in a config file
            value = [f"{k}={v}" for k, v in value.items()]
        items = ([v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str)
                 else [str(v) for v in value] if isinstance(value, (list, tuple)) else None)
        if items is None:
            raise ConfigError(f"{source}: option 'acc_scales' = {value!r} must be COLUMN=SCALE "
                              "pairs", code=ErrorCode.INVALID_OPTION, option=name)
        return tuple(items)
    if name == "grok_on":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{source}: option 'grok_on' (--grok-on) = {value!r} must be a "
                              "column name", code=ErrorCode.INVALID_OPTION, option=name)
        return value.strip()
    if name == "fail_on":
        if not isinstance(value, (str, list, tuple)):
            raise ConfigError(f"{source}: option 'fail_on' = {value!r} must be a string or a "
                              "list of strings", code=ErrorCode.INVALID_OPTION, option=name)
        return parse_fail_on(value, source)
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes"):
                    return True
                if value.lower() in ("false", "0", "no"):
                    return False
                raise ValueError(value)
            if not isinstance(value, (bool, int)):
                raise ValueError(value)
            return bool(value)
        if isinstance(default, tuple):
            if isinstance(value, str):
                names = tuple(v.strip() for v in value.split(",") if v.strip())
                if not names and name in _COLUMN_LISTS:
                    raise _blank(name, value, source)
                return names
            if not isinstance(value, (list, tuple)) or not all(
                    isinstance(v, (str, int, float)) for v in value):
                raise ValueError(value)
            if name in _COLUMN_LISTS and any(not str(v).strip() for v in value):
                raise _blank(name, value, source)
            names = tuple(str(v) for v in value)
            twice = repeated(names)
            if name in _COLUMN_LISTS and twice:  # --metric m --metric m: two equal studies
                raise ConfigError(f"{source}: option {_named(name)} names "
                                  f"{', '.join(map(repr, twice))} twice; name each once",
                                  code=ErrorCode.INVALID_OPTION, option=name)
            return names
        if name == "by":
            if value is None:
                return None
            if not isinstance(value, str):
                raise ValueError(value)
            if not value.strip():  # a placeholder left empty is not `by` left out
                raise _blank(name, value, source)
            return value
        if isinstance(default, int):
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
        if isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ValueError(value)
            return float(value)
        if not isinstance(value, str):
            raise ValueError(value)
        return value
    except ConfigError:  # a refusal of its own (a blank or repeated name): as it is
        raise
    except (TypeError, ValueError, OverflowError):
        kind = {bool: "true/false", int: "an integer", float: "a number",
                tuple: "a list of names"}.get(type(default), "a string")
        raise ConfigError(
            f"{source}: option {_named(name)} = {value!r} is not {kind}",
            code=ErrorCode.INVALID_OPTION, option=name) from None


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
        if v is None and (name in OPTIONAL or name == "acc_scale"):
            continue
        is_int = isinstance(getattr(_DEFAULTS, name), int)
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
        if k2 not in _FIELD_TYPES or k2 == "extra":
            close = difflib.get_close_matches(k2, [f for f in _FIELD_TYPES if f != "extra"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{source}: unknown option {k!r}{hint} (see `grokaudit check "
                              "--help` and docs/config.md)", code=ErrorCode.UNKNOWN_OPTION,
                              option=str(k))
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
        if k not in _FIELD_TYPES or k == "extra":
            close = difflib.get_close_matches(k, [f for f in _FIELD_TYPES if f != "extra"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown option {k!r}{hint}", code=ErrorCode.UNKNOWN_OPTION,
                              option=k)
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
        if k not in _FIELD_TYPES or k == "extra":
            close = difflib.get_close_matches(k, [f for f in _FIELD_TYPES if f != "extra"], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown option {k!r}{hint}", code=ErrorCode.UNKNOWN_OPTION,
                              option=k)
    coerced = {k: _coerce(k, v, "replace") for k, v in changes.items()}
    return dataclasses.replace(cfg, **coerced)


_DEFAULTS = AuditConfig()
_READY = True
validate(_DEFAULTS)
