"""The claim-audit commands: ``onset``, ``dose``, ``transition``, ``precursor``, ``compare``.

Each parses its options, calls one library function, prints. Exit codes as ``check``: 0 no
critical finding, 1 critical findings, 2 usage or input error (one line ``error: …``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import ConfigError, GrokauditError


def _floats(value: str | None, flag: str) -> tuple[float, ...]:
    if not value:
        return ()
    try:
        return tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise ConfigError(f"{flag}: expected comma-separated numbers, got {value!r}") from None


def _names(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def _assign(value: str | None, flag: str) -> dict[str, Any]:
    """``rho=1,tau=1`` → ``{"rho": 1.0, "tau": 1.0}`` (numbers where they parse)."""
    out: dict[str, Any] = {}
    for part in _names(value):
        if "=" not in part:
            raise ConfigError(f"{flag}: expected KEY=VALUE[,KEY=VALUE], got {part!r}")
        k, _, v = part.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            out[k.strip()] = v.strip()
    return out


def claim_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every claim command."""
    opts = [
        click.argument("path", type=click.Path()),
        click.option("--json", "json_out", default=None, metavar="PATH|-",
                     help="write the versioned JSON result to PATH (- for stdout)"),
        click.option("-v", "--verbose", is_flag=True, help="show informational findings too"),
        click.option("-q", "--quiet", is_flag=True, help="print only the result line"),
        click.option("--grok-threshold", type=float, default=None,
                     help="test_acc that counts as grokked [0.90]"),
        click.option("--mem-threshold", type=float, default=None,
                     help="train_acc that counts as memorized [0.99]"),
        click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                     help="config file (default: grokaudit.toml or [tool.grokaudit])"),
        click.option("--acc-scale", type=float, default=None,
                     help="divide accuracies by this (100 for percent logs) [1]"),
        click.option("--on-duplicate", type=click.Choice(["error", "first", "last"]),
                     default=None, help="duplicate (run, step) rows with different values"),
        click.option("--fail-on", "fail_on", default=None, metavar="WHAT",
                     help="what makes the exit code 1: default, none, warning, or codes"),
        click.option("--step-unit", type=click.Choice(["steps", "epochs"]), default=None,
                     help="what the log's step column counts [from provenance, else steps]"),
        click.option("--level", type=float, default=0.95, show_default=True,
                     help="confidence level of every interval"),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="seed of every bootstrap and permutation"),
        click.option("--format", "fmt", default=None, metavar="NAME",
                     help="read PATH with this adapter (see `grokaudit formats`)"),
        click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
                     help="rename a column before auditing (adapters)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _run(command: str, common: dict[str, Any], call: Callable[[Any, Any, str], Any]) -> None:
    """Load, configure, compute, print, exit — with the one error net of the CLI."""
    from ..cli import build_config, load_for_audit
    from .render import render_text

    path = common["path"]
    try:
        fail_on = common["fail_on"]
        overrides = {"grok_threshold": common["grok_threshold"],
                     "mem_threshold": common["mem_threshold"],
                     "acc_scale": common["acc_scale"], "on_duplicate": common["on_duplicate"],
                     "fail_on": _names(fail_on) if fail_on else None}
        cfg = build_config(None, common["config_file"], overrides)
        if not 0 < common["level"] < 1:
            raise ConfigError(f"--level {common['level']}: a confidence level is in (0, 1)")
        table = load_for_audit(path, common["fmt"], common["maps"], None, ())
        result = call(table, cfg, path)
    except GrokauditError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    out = common["json_out"]
    if out == "-":
        click.echo(result.to_json(), nl=False)
    else:
        if out:
            from ..cli import _write_text

            _write_text(out, result.to_json())
        text = render_text(result, verbose=common["verbose"])
        click.echo(text.splitlines()[-1] if common["quiet"] else text, nl=common["quiet"])
    sys.exit(result.exit_code)


_COMMON = ("path", "json_out", "verbose", "quiet", "grok_threshold", "mem_threshold",
           "config_file", "acc_scale", "on_duplicate", "fail_on", "step_unit", "level", "seed",
           "fmt", "maps")


def _split_kwargs(kw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    common = {k: kw.pop(k) for k in _COMMON}
    return common, kw


@click.command()
@claim_options
@click.option("--by", required=True, metavar="COL[,COL]",
              help="hyperparameters of the scaling fit, e.g. H,D,lr,wd (positive)")
@click.option("--interactions", is_flag=True, help="add every pairwise product of the logs")
@click.option("--thresholds", default=None, metavar="T[,T]",
              help="redo the fit at these grok thresholds, e.g. 0.9,0.95,0.99")
@click.option("--phase-map", "phase_map", default=None, metavar="ROW,COL",
              help="two condition columns for the grok-rate table [the first two --by]")
def onset(**kw: Any) -> None:
    """Audit onset-scaling claims: t_grok vs hyperparameters, OLS on grokked runs vs a
    censored Weibull AFT on all runs (SURVIVORSHIP_BIAS, THRESHOLD_SENSITIVE)."""
    from .onset import run_onset

    common, o = _split_kwargs(kw)
    _run("onset", common, lambda t, c, p: run_onset(
        t, c, by=_names(o["by"]), interactions=o["interactions"],
        thresholds=_floats(o["thresholds"], "--thresholds"),
        phase_map=_names(o["phase_map"]), level=common["level"], seed=common["seed"],
        step_unit=common["step_unit"], source=p))


@click.command()
@claim_options
@click.option("--by", required=True, metavar="COL", help="the dose axis, e.g. rho")
@click.option("--fit-range", default=None, metavar="LO,HI",
              help="fit the laws on cells with LO ≤ dose ≤ HI only [all]")
@click.option("--n-resamples", type=int, default=999, show_default=True,
              help="bootstrap resamples")
@click.option("--mediator", default=None, metavar="COL", help="mediator column, e.g. logit_scale")
@click.option("--baseline", default=None, metavar="K=V[,K=V]", help="baseline cell, e.g. rho=1,tau=1")
@click.option("--raised", default=None, metavar="K=V[,K=V]", help="raised-dose cell, e.g. rho=1.15,tau=1")
@click.option("--sweep", default=None, metavar="COL", help="condition swept at the raised dose, e.g. tau")
def dose(**kw: Any) -> None:
    """Audit dose-response laws: exponential vs power vs saddle-node by AICc
    (MODELS_INDISTINGUISHABLE), and mediation by a recovery fraction."""
    from .dose import run_dose

    common, o = _split_kwargs(kw)

    def call(t: Any, c: Any, p: str) -> Any:
        fr = _floats(o["fit_range"], "--fit-range")
        if fr and len(fr) != 2:
            raise ConfigError("--fit-range takes LO,HI")
        return run_dose(t, c, by=o["by"], fit_range=(fr[0], fr[1]) if fr else None,
                        level=common["level"], seed=common["seed"],
                        n_resamples=o["n_resamples"], mediator=o["mediator"],
                        baseline=_assign(o["baseline"], "--baseline") or None,
                        raised=_assign(o["raised"], "--raised") or None, sweep=o["sweep"],
                        step_unit=common["step_unit"], source=p)

    _run("dose", common, call)


@click.command()
@claim_options
@click.option("--by", required=True, metavar="COL", help="the control parameter λ, e.g. wd")
@click.option("--n-resamples", type=int, default=499, show_default=True,
              help="bootstrap resamples")
def transition(**kw: Any) -> None:
    """Audit phase-boundary claims: logistic transition point λ_c and the time-to-grok
    exponent, with bootstrap CIs (TOO_FEW_LEVELS, INSUFFICIENT_BUDGET)."""
    from .transition import run_transition

    common, o = _split_kwargs(kw)
    _run("transition", common, lambda t, c, p: run_transition(
        t, c, by=o["by"], level=common["level"], seed=common["seed"],
        n_resamples=o["n_resamples"], step_unit=common["step_unit"], source=p))


@click.command()
@claim_options
@click.option("--signal", required=True, metavar="COL", help="the per-step signal, e.g. attn_cv")
@click.option("--placebo", default=None, metavar="COL",
              help="a smooth placebo signal [weight_norm when logged]")
@click.option("--n-perm", type=int, default=999, show_default=True,
              help="draws of the within-run permutation null")
@click.option("--alpha", type=float, default=0.05, show_default=True)
def precursor(**kw: Any) -> None:
    """Audit precursor signals against permuted and placebo nulls
    (PEAK_AT_WINDOW_EDGE, PRECURSOR_NOT_SPECIFIC)."""
    from .precursor import run_precursor

    common, o = _split_kwargs(kw)
    _run("precursor", common, lambda t, c, p: run_precursor(
        t, c, signal=o["signal"], placebo=o["placebo"], n_perm=o["n_perm"],
        alpha=o["alpha"], level=common["level"], seed=common["seed"],
        step_unit=common["step_unit"], source=p))


@click.command()
@claim_options
@click.option("--by", required=True, metavar="COL", help="the arm column, e.g. method")
@click.option("--pair", required=True, metavar="COL", help="the pairing column, e.g. seed")
@click.option("--arms", default=None, metavar="FIRST,SECOND",
              help="the two arms; d = t_grok(FIRST) − t_grok(SECOND) [the two values, sorted]")
@click.option("--alpha", type=float, default=0.05, show_default=True)
def compare(**kw: Any) -> None:
    """Audit paired comparisons of methods: exact Wilcoxon, sign-flip permutation, d_z,
    bootstrap CIs (UNDERPOWERED, CENSORED_PAIRS)."""
    from .compare import run_compare

    common, o = _split_kwargs(kw)
    _run("compare", common, lambda t, c, p: run_compare(
        t, c, by=o["by"], pair=o["pair"], arms=_names(o["arms"]), alpha=o["alpha"],
        level=common["level"], seed=common["seed"], step_unit=common["step_unit"], source=p))
