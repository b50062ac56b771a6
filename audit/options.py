"""The command-line options shared by every command that reads a log, and the one parser of
``KEY=VALUE`` and comma lists.

Commands (``check``, ``report``, the claims) stack these decorators; each option's help states
its default and valid range, taken from :mod:`grokaudit.config` so that ``--help``, the docs and
the validator cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from .config import RANGES, AuditConfig, repeated
from .errors import ConfigError, ErrorCode

F = Callable[..., Any]

_DEFAULTS = AuditConfig()


def split_list(values: str | Iterable[str] | None) -> tuple[str, ...]:
    """``("a,b", "c")`` → ``("a", "b", "c")``: comma lists and repeated flags, blanks dropped."""
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    return tuple(x.strip() for v in items for x in v.split(",") if x.strip())


def column_names(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback for the options that name columns (``--by``, ``--cell``, ``--metric``,
    ``--sweep`` …): a value that names none (``--by ''`` from an unset shell variable, ``--cell
    ,``) is an error, never read as the option not given (the default, every metric or the
    detected axis, would be audited without a word)."""
    items = [value] if isinstance(value, str) else list(value or ())
    for v in items:
        if not split_list(v):
            flag = max(param.opts, key=len) if param.opts else str(param.name)
            what = "a column name" if "COL" in str(getattr(param, "metavar", "")) else "values"
            rest = "" if param.required else f", or leave {flag} out for its default"
            raise ConfigError(f"{flag} {v!r} is blank; give {what}{rest}",
                              code=ErrorCode.INVALID_OPTION, option=flag)
        names = split_list(v)
        twice = repeated(names)
        if twice:  # --by wd,wd: one axis twice (a fit with two equal columns, a 1×1 map)
            flag = max(param.opts, key=len) if param.opts else str(param.name)
            raise ConfigError(f"{flag} {v!r} names {', '.join(map(repr, twice))} twice; name "
                              "each once", code=ErrorCode.INVALID_OPTION, option=flag)
    return value


def parse_pairs(values: str | Iterable[str] | None, flag: str, *,
                split_commas: bool = False) -> dict[str, str]:
    """``KEY=VALUE`` items (``--map a=b``, ``--cond wd=REGEX``) as a dict, in order.

    With ``split_commas`` one value may hold several pairs (``--baseline rho=1,tau=1``).
    A missing ``=`` or an empty key is a :class:`ConfigError` naming the flag."""
    items = [values] if isinstance(values, str) else list(values or ())
    if split_commas:
        items = list(split_list(items))
    out: dict[str, str] = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag}: expected KEY=VALUE, got {item!r}",
                              code=ErrorCode.INVALID_OPTION, option=flag)
        out[key.strip()] = val.strip()
    return out


def _help(text: str, field: str) -> str:
    default = getattr(_DEFAULTS, field)
    rng = RANGES.get(field)
    return f"{text} [default {default}; valid {rng}]" if rng else f"{text} [default {default}]"


#: (flag, config field, type, help) for every threshold a flag can set.
THRESHOLD_FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("--mem-threshold", "mem_threshold", float, "train_acc that counts as memorized"),
    ("--grok-threshold", "grok_threshold", float, "test_acc that counts as grokked"),
    ("--sustain", "sustain", int, "consecutive points below threshold that break a grok"),
    ("--full-threshold", "full_threshold", float,
     "final median test_acc of a fully generalized run"),
    ("--floor-frac", "floor_frac", float, "final window W2 as a fraction of the step span"),
    ("--min-floor-points", "min_floor_points", int, "fewest points in W2"),
    ("--max-floor-frac", "max_floor_frac", float, "how far back W2 may reach to find them"),
    ("--rel-tol", "rel_tol", float, "floor band half-width relative to |F|"),
    ("--abs-tol", "abs_tol", float, "floor band half-width floor in metric units"),
    ("--smooth", "smooth", int, "trailing rolling-median width in metric points"),
    ("--min-rel-drop", "min_rel_drop", float,
     "compression smaller than this share of the peak is none"),
    ("--min-abs-drop", "min_abs_drop", float, "compression smaller than this is none"),
    ("--eps", "eps", float, "tolerance of the crossing rule"),
    ("--transient-threshold", "transient_threshold", float, "m_grok/F above this is a transient"),
    ("--high-floor-factor", "high_floor_factor", float, "floor outlier factor"),
    ("--mono-threshold", "mono_threshold", float, "tau bound for a monotone ordering"),
    ("--flat-threshold", "flat_threshold", float,
     "tau bound for a flat ordering (below --mono-threshold)"),
    ("--large-lag", "large_lag", float, "median rel_lag above this is a large lag"),
    ("--censor-warn", "censor_warn", float,
     "censored share of t_compress that is inconclusive"),
)

FAIL_ON_HELP = ("what makes the exit code 1: default (critical findings), none, warning "
                "(warnings too), or a comma list of reason codes (case-insensitive); anything "
                "else is an error")


def _stack(f: F, opts: list[Callable[[F], F]]) -> F:
    for o in reversed(opts):
        f = o(f)
    return f


def input_options(f: F) -> F:
    """How the log is read: ``--format``, ``--map``, ``--run-from``, ``--cond``, duplicates and
    the accuracy scale."""
    return _stack(f, [
        click.option("--format", "fmt", default=None, metavar="NAME",
                     help="read PATH with this adapter (see `grokaudit formats`)"),
        click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
                     help="rename a column before auditing (adapters)"),
        click.option("--run-from", default=None, metavar="path|column",
                     help="take run ids from file/directory names or a column (adapters)"),
        click.option("--cond", "conds", multiple=True, metavar="KEY=REGEX",
                     help="take a condition from file/directory names (adapters)"),
        click.option("--long", "long", default=None, metavar="name=COL,value=COL[,keys=COL,…]",
                     help="read a long table (one row per step and metric): its name, value "
                          "and key columns; pivoted to one column per series, named by the "
                          "keys and the name joined by '/' [default: detected when "
                          "unambiguous]"),
        click.option("--columns", "columns", default=None, metavar="COL,COL,…",
                     help="the names of the columns of a header-less numeric text file "
                          "(.txt, .dat, .log), e.g. epoch,train_acc,test_acc"),
        click.option("--conditions-from", "conditions_from", default=None, metavar="FILE",
                     help="a one-row-per-run table whose columns become the conditions of "
                          "the runs whose id is in its --on column"),
        click.option("--on", "on", default=None, metavar="COL",
                     help="the column of --conditions-from holding the run ids"),
        click.option("--step-scale", "step_scale", default=None, metavar="N|cadence",
                     help="multiply the steps by N, or by each run's declared cadence where "
                          "its step column counts log events (STEP_CADENCE_MISMATCH) [default: "
                          "as logged; valid a positive integer or cadence]"),
        click.option("--acc-scale", default=None, metavar="auto|N|COL=N,…",
                     help="divide accuracies by this: 100 (percent), 1 (fractions), auto (per "
                          "column: percent with three values above 1.5, or beside such a "
                          "column), or per column: test_acc=100,train_acc=1 "
                          f"[default auto; valid auto or {RANGES['acc_scale']}]"),
        click.option("--on-duplicate", type=click.Choice(["error", "first", "last"]),
                     default=None,
                     help="duplicate (run, step) rows with different values [default error]"),
        click.option("--max-rows", "max_rows", type=int, default=None, metavar="N",
                     help=_help("refuse an input whose Parquet metadata declares more rows "
                                "(checked before reading)", "max_rows")),
        click.option("--max-columns", "max_columns", type=int, default=None, metavar="N",
                     help=_help("refuse an input whose Parquet metadata declares more "
                                "columns", "max_columns")),
    ])


#: The parsed options of :func:`input_options` that say a log's shape (the readers'
#: ``layout``), and how its steps are read (``--step-scale``).
LAYOUT_PARAMS = ("long", "columns", "conditions_from", "on", "step_scale")


def layout_of(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``--long``, ``--columns``, ``--conditions-from``, ``--on``, ``--step-scale`` as the
    readers' ``layout`` (None when none is given). ``--columns`` is checked here: a blank name
    is refused; ``--step-scale`` by the readers (``grokaudit.adapters.cadence``)."""
    if params.get("step_scale") is not None and not str(params["step_scale"]).strip():
        raise ConfigError("--step-scale '' is blank; give a positive integer or cadence, or "
                          "leave --step-scale out to read the steps as logged",
                          option="--step-scale", code=ErrorCode.INVALID_OPTION)
    out = {k: params.get(k) for k in LAYOUT_PARAMS if params.get(k) not in (None, "")}
    if "columns" in out:
        cols = [c.strip() for c in str(out["columns"]).split(",")]
        if not all(cols):
            raise ConfigError(f"--columns {out['columns']!r} has a blank name; name every "
                              "column of the file, in order", option="--columns",
                              code=ErrorCode.INVALID_OPTION)
        out["columns"] = tuple(cols)
    return out or None


def limit_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """``--max-rows`` and ``--max-columns`` as config overrides (``None``: not given)."""
    return {"max_rows": params.get("max_rows"), "max_columns": params.get("max_columns")}


def config_options(f: F) -> F:
    """``--config`` and ``--fail-on``: shared by every command that has an exit code."""
    return _stack(f, [
        click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                     help="config file (default: grokaudit.toml or [tool.grokaudit] in "
                          "pyproject.toml, searched upwards from the working directory)"),
        click.option("--fail-on", "fail_on", default=None, metavar="WHAT", help=FAIL_ON_HELP),
    ])


def audit_options(f: F) -> F:
    """The options of every command that runs the audit (``check``, ``report``)."""
    for _, field, _, _ in reversed(THRESHOLD_FLAGS):
        f = threshold_option(field)(f)
    f = _stack(f, [
        click.option("--by", "by", default=None, metavar="COL", callback=column_names,
                     help="the axis column (default: the single varying numeric condition)"),
        click.option("--cell", "cell", multiple=True, metavar="COL[,COL]", callback=column_names,
                     help="condition column(s) that split studies, e.g. arch"),
        click.option("--metric", "metrics", multiple=True, metavar="COL", callback=column_names,
                     help="metric column to audit (repeatable; default every known metric; "
                          "none found: the accuracy clocks alone)"),
        click.option("--profile", type=click.Choice(["default", "reference"]), default=None,
                     help="default, or reference (the public v1.5 analyzer)"),
        click.option("--rule", type=click.Choice(["settle", "crossing"]), default=None,
                     help="t_compress rule [default settle]"),
        click.option("--grok-relative", "grok_relative", type=click.Choice(["off", "study"]),
                     default=None,
                     help="study: read --grok-threshold and --full-threshold as fractions of "
                          "the study's best sustained test accuracy when a task ceiling keeps "
                          "it below 1 (at least 0.5) [default off]"),
    ])
    return grok_options(config_options(input_options(f)))


def grok_options(f: F) -> F:
    """The grok criterion on a loss, for logs without accuracy (``--grok-on test_loss
    --grok-below 0.05``)."""
    return _stack(f, [
        click.option("--grok-on", "grok_on", default=None, metavar="COL",
                     help="the grok criterion's column: test_acc (rising to --grok-threshold) "
                          "or a held-out loss (falling to --grok-below) [default test_acc]"),
        click.option("--grok-below", "grok_below", type=float, default=None, metavar="LEVEL",
                     help="with a loss --grok-on: the loss that counts as generalized "
                          f"[valid {RANGES['grok_below']}]"),
        click.option("--full-below", "full_below", type=float, default=None, metavar="LEVEL",
                     help="with a loss --grok-on: the final median loss of a fully generalized "
                          "run [default --grok-below]"),
    ])


def acc_scale_options(raw: str | None) -> dict[str, Any]:
    """``--acc-scale`` as config overrides: a number or ``auto`` (``acc_scale``), or
    ``COL=N`` pairs (``acc_scales``)."""
    if raw is not None and "=" in raw:
        return {"acc_scale": None, "acc_scales": split_list(raw)}
    return {"acc_scale": raw, "acc_scales": None}


def input_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The config overrides named by the parsed options of :func:`input_options`."""
    return {**acc_scale_options(params.get("acc_scale")),
            "on_duplicate": params.get("on_duplicate"), **limit_overrides(params)}


def grok_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The config overrides named by the parsed options of :func:`grok_options`."""
    return {"grok_on": params.get("grok_on"), "grok_below": params.get("grok_below"),
            "full_below": params.get("full_below")}


def shared_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The config overrides of the options every command that audits shares (the claims
    too): the thresholds of :data:`THRESHOLD_FLAGS` it has, :func:`input_options`,
    :func:`config_options`' ``--fail-on``, :func:`grok_options` (``None``: not given)."""
    return {**{field: params.get(field) for _, field, _, _ in THRESHOLD_FLAGS},
            **input_overrides(params), "fail_on": params.get("fail_on"),
            **grok_overrides(params)}


def threshold_option(field: str) -> Callable[[F], F]:
    """The option of :data:`THRESHOLD_FLAGS` that sets ``field`` (``--grok-threshold``)."""
    flag, _, typ, text = next(t for t in THRESHOLD_FLAGS if t[1] == field)
    return click.option(flag, field, type=typ, default=None, help=_help(text, field))


def audit_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The config overrides named by the parsed options of :func:`audit_options` (``None`` for
    an option not given)."""
    return {**shared_overrides(params),
            "by": params.get("by"), "rule": params.get("rule"),
            "grok_relative": params.get("grok_relative"),
            "cell": split_list(params.get("cell")) or None,
            "metrics": split_list(params.get("metrics")) or None}
