"""The command-line options shared by every command that reads a log, and the one parser of
``KEY=VALUE`` and comma lists.

Commands (``check``, ``report``, the claims) stack these decorators. An option that sets a config
field takes its flag, type, choices and help — default and valid range included — from that
field's metadata (:data:`grokaudit.config.OPTIONS`), so that ``--help``, the docs and the
validator cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from .config import OPTIONS, RANGES, AuditConfig, kind_of, repeated
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
    """``text`` with the usual bracket: ``[default D; valid R]``, or ``[default D]`` for an
    option without a range."""
    default = getattr(_DEFAULTS, field)
    rng = RANGES.get(field)
    return f"{text} [default {default}; valid {rng}]" if rng else f"{text} [default {default}]"


def help_of(field: str) -> str:
    """The ``--help`` text of the flag of config field ``field``, from its metadata: its help,
    then its ``note`` (``None``: the usual bracket of :func:`_help`; ``""``: none; else a
    template over ``{default}`` and ``{range}``)."""
    o = OPTIONS[field]
    if o.note is None:
        return _help(o.help, field)
    if not o.note:
        return o.help
    note = o.note.format(default=getattr(_DEFAULTS, field), range=RANGES.get(field))
    return f"{o.help} [{note}]"


#: The click type of a flag, by how its config field is read (None: the string as typed).
_CLICK_TYPES: dict[str, type] = {"int": int, "float": float, "level": float}


def config_option(field: str, **attrs: Any) -> Callable[[F], F]:
    """The click option that sets config field ``field``: flag, type (a ``click.Choice`` of
    its choices), help from the field's metadata; ``attrs`` add what only the command line
    has (``metavar``, ``multiple``, ``callback``). Unset, it is ``None``: the config decides."""
    o = OPTIONS[field]
    if o.flag is None:
        raise ValueError(f"config option {field!r} has no flag (set by a config file only)")
    typ: Any = click.Choice(list(o.choices)) if o.choices else _CLICK_TYPES.get(kind_of(field))
    return click.option(o.flag, field, type=typ, default=None, help=help_of(field), **attrs)


#: (flag, config field, type, help) for every threshold a flag can set.
THRESHOLD_FLAGS: tuple[tuple[str, str, Any, str], ...] = tuple(
    (o.flag, name, _CLICK_TYPES[kind_of(name)], o.help)
    for name, o in OPTIONS.items() if o.threshold and o.flag is not None)

FAIL_ON_HELP = help_of("fail_on")


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
        click.option("--step-from", "step_from", default=None, metavar="row",
                     help="number the rows of a table with no step column 0, 1, 2, … in "
                          "file order as its steps (each run's own): Keras's history.history "
                          "saved as a CSV or JSON file, one row per epoch"),
        config_option("acc_scale", metavar="auto|N|COL=N,…"),
        config_option("on_duplicate"),
        config_option("max_rows", metavar="N"),
        config_option("max_columns", metavar="N"),
    ])


#: The parsed options of :func:`input_options` that say a log's shape (the readers'
#: ``layout``), and how its steps are read (``--step-scale``).
LAYOUT_PARAMS = ("long", "columns", "conditions_from", "on", "step_scale", "step_from")


#: What each shape option takes, and what leaving it out does (the refusal of a blank value).
_BLANK_HINTS = {
    "long": ("name=COL,value=COL", "to have a long table detected"),
    "columns": ("the names of the file's columns, in order", "for a file with a header"),
    "conditions_from": ("a table of one row per run", "to read no conditions from one"),
    "on": ("the column of --conditions-from holding the run ids",
           "when no --conditions-from is given"),
    "step_scale": ("a positive integer or cadence", "to read the steps as logged"),
    "step_from": ("row", "to read a step column"),
}


def layout_of(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``--long``, ``--columns``, ``--conditions-from``, ``--on``, ``--step-scale``,
    ``--step-from`` as the
    readers' ``layout`` (None when none is given). ``--columns`` is checked here: a blank name
    is refused; ``--step-scale`` by the readers (``grokaudit.adapters.cadence``)."""
    for k in LAYOUT_PARAMS:  # a blank value is refused, never read as the option left out
        if params.get(k) is not None and not str(params[k]).strip():
            flag = f"--{k.replace('_', '-')}"
            give, unless = _BLANK_HINTS[k]
            raise ConfigError(f"{flag} '' is blank; give {give}, or leave {flag} out {unless}",
                              option=flag, code=ErrorCode.INVALID_OPTION)
    out = {k: params.get(k) for k in LAYOUT_PARAMS if params.get(k) is not None}
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
        config_option("fail_on", metavar="WHAT"),
    ])


def audit_options(f: F) -> F:
    """The options of every command that runs the audit (``check``, ``report``)."""
    for _, field, _, _ in reversed(THRESHOLD_FLAGS):
        f = threshold_option(field)(f)
    f = _stack(f, [
        config_option("by", metavar="COL", callback=column_names),
        config_option("cell", multiple=True, metavar="COL[,COL]", callback=column_names),
        config_option("metrics", multiple=True, metavar="COL", callback=column_names),
        config_option("profile"),
        config_option("rule"),
        config_option("grok_relative"),
    ])
    return grok_options(config_options(input_options(f)))


def grok_options(f: F) -> F:
    """The grok criterion on a loss, for logs without accuracy (``--grok-on test_loss
    --grok-below 0.05``)."""
    return _stack(f, [
        config_option("grok_on", metavar="COL"),
        config_option("grok_below", metavar="LEVEL"),
        config_option("full_below", metavar="LEVEL"),
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
    if not OPTIONS[field].threshold:
        raise ValueError(f"{field!r} is not a threshold of THRESHOLD_FLAGS")
    return config_option(field)


def audit_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """The config overrides named by the parsed options of :func:`audit_options` (``None`` for
    an option not given)."""
    return {**shared_overrides(params),
            "by": params.get("by"), "rule": params.get("rule"),
            "grok_relative": params.get("grok_relative"),
            "cell": split_list(params.get("cell")) or None,
            "metrics": split_list(params.get("metrics")) or None}
