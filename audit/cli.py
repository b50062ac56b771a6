"""The command line: a thin shell over library functions.

This is the composition root: the only module that wires the adapters, the trainer and the
adversarial suite to commands, and it imports each lazily, when its command runs, so that
``grokaudit check`` never imports torch or an adapter's optional dependency.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from . import __version__
from .errors import GrokauditError

#: Commands that live outside the core: name -> ("module:attribute", one-line help).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("grokaudit.reference_runs.cli:train",
              "Train reference grokking runs from a sweep TOML and write the canonical log."),
    "convert": ("grokaudit.adapters.cli:convert",
                "Convert an external log (W&B, TensorBoard, MLflow, CSV, NPZ) to canonical Parquet."),
    "formats": ("grokaudit.adapters.cli:formats",
                "List the log formats grokaudit reads, and whether their extra is installed."),
    "suite": ("grokaudit.adversarial_suite.cli:suite",
              "Run the adversarial self-test against the installed audit and your config."),
    "report": ("grokaudit.html_report:report",
               "Render the audit as a self-contained HTML report (and PNG figures)."),
    "onset": ("grokaudit.claims.cli:onset",
              "Audit onset-scaling claims: t_grok vs hyperparameters, OLS vs censored AFT."),
    "dose": ("grokaudit.claims.cli:dose",
             "Audit dose-response laws: exponential vs power vs saddle-node by AICc."),
    "transition": ("grokaudit.claims.cli:transition",
                   "Audit phase-boundary claims: logistic transition point and exponents."),
    "precursor": ("grokaudit.claims.cli:precursor",
                  "Audit precursor signals against permuted and placebo nulls."),
    "compare": ("grokaudit.claims.cli:compare",
                "Audit paired comparisons of methods (Wilcoxon, sign-flip, power)."),
}


class LazyGroup(click.Group):
    """A click group whose extra commands are imported only when invoked."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None or cmd_name not in LAZY_COMMANDS:
            return cmd
        target, short = LAZY_COMMANDS[cmd_name]
        mod_name, attr = target.split(":")
        try:
            mod = importlib.import_module(mod_name)
            found = getattr(mod, attr)
        except (ImportError, AttributeError) as exc:
            return _unavailable(cmd_name, short, exc)
        return found if isinstance(found, click.Command) else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS:
                rows.append((name, LAZY_COMMANDS[name][1]))
            else:
                cmd = super().get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=90)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _unavailable(name: str, short: str, exc: BaseException) -> click.Command:
    missing = getattr(exc, "name", None) or str(exc)
    extra = {"torch": "train", "hypothesis": "test", "matplotlib": "report"}.get(str(missing).split(".")[0], None)
    fix = f"pip install 'grokaudit[{extra}]'" if extra else "reinstall grokaudit"

    @click.command(name=name, help=short, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def stub(args: tuple[str, ...]) -> None:
        click.echo(f"error: `grokaudit {name}` needs {missing!s}, which is not installed; "
                   f"fix: {fix}", err=True)
        sys.exit(2)

    return stub


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grokaudit")
def cli() -> None:
    """grokaudit: which numbers in a grokking training log can be trusted."""


def main(argv: list[str] | None = None) -> Any:
    """Console entry point: run the CLI; a GrokauditError becomes one line and exit 2."""
    try:
        return cli.main(args=argv, prog_name="grokaudit", standalone_mode=True)
    except GrokauditError as exc:  # commands catch their own; this is the last net
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


# ------------------------------------------------------------------------------------------
# grokaudit check
# ------------------------------------------------------------------------------------------

def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)


def _pairs(values: tuple[str, ...], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}", param_hint=flag)
        k, _, val = v.partition("=")
        out[k.strip()] = val.strip()
    return out


#: (flag, config field, type, help) for every threshold a flag can set.
THRESHOLD_FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("--mem-threshold", "mem_threshold", float, "train_acc that counts as memorized [0.99]"),
    ("--grok-threshold", "grok_threshold", float, "test_acc that counts as grokked [0.90]"),
    ("--sustain", "sustain", int, "consecutive points below threshold that break a grok [3]"),
    ("--full-threshold", "full_threshold", float, "final median test_acc of a fully generalized run [0.98]"),
    ("--floor-frac", "floor_frac", float, "final window W2 as a fraction of the step span [0.10]"),
    ("--min-floor-points", "min_floor_points", int, "fewest points in W2 [5]"),
    ("--max-floor-frac", "max_floor_frac", float, "how far back W2 may reach to find them [0.25]"),
    ("--rel-tol", "rel_tol", float, "floor band half-width relative to |F| [0.05]"),
    ("--abs-tol", "abs_tol", float, "floor band half-width floor in metric units [0]"),
    ("--smooth", "smooth", int, "trailing rolling-median width in metric points [3]"),
    ("--min-rel-drop", "min_rel_drop", float, "compression smaller than this share of the peak is none [0.25]"),
    ("--min-abs-drop", "min_abs_drop", float, "compression smaller than this is none [0]"),
    ("--eps", "eps", float, "tolerance of the crossing rule [0.10]"),
    ("--transient-threshold", "transient_threshold", float, "m_grok/F above this is a transient [1.2]"),
    ("--high-floor-factor", "high_floor_factor", float, "floor outlier factor [3]"),
    ("--mono-threshold", "mono_threshold", float, "tau bound for a monotone ordering [0.6]"),
    ("--flat-threshold", "flat_threshold", float, "tau bound for a flat ordering [0.3]"),
    ("--large-lag", "large_lag", float, "median rel_lag above this is a large lag [0.5]"),
    ("--censor-warn", "censor_warn", float, "censored share of t_compress that is inconclusive [0.25]"),
)


def audit_options(f: Any) -> Any:
    """The options shared by every command that runs the audit."""
    for flag, field, typ, help_ in reversed(THRESHOLD_FLAGS):
        f = click.option(flag, field, type=typ, default=None, help=help_)(f)
    opts = [
        click.option("--by", "by", default=None, metavar="COL",
                     help="the axis column (default: the single varying numeric condition)"),
        click.option("--cell", "cell", multiple=True, metavar="COL[,COL]",
                     help="condition column(s) that split studies, e.g. arch"),
        click.option("--metric", "metrics", multiple=True, metavar="COL",
                     help="metric column to audit (repeatable; default every known metric)"),
        click.option("--profile", type=click.Choice(["default", "reference"]), default=None,
                     help="default (AUDIT_SPEC) or reference (the public v1.5 analyzer)"),
        click.option("--rule", type=click.Choice(["settle", "crossing"]), default=None,
                     help="t_compress rule [settle]"),
        click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                     help="config file (default: grokaudit.toml or [tool.grokaudit] in "
                          "pyproject.toml, searched upwards from the working directory)"),
        click.option("--acc-scale", type=float, default=None,
                     help="divide accuracies by this (100 for percent logs) [1]"),
        click.option("--on-duplicate", type=click.Choice(["error", "first", "last"]),
                     default=None, help="duplicate (run, step) rows with different values [error]"),
        click.option("--fail-on", "fail_on", default=None, metavar="WHAT",
                     help="what makes the exit code 1: default (critical findings), none, "
                          "warning, or a comma list of reason codes"),
        click.option("--format", "fmt", default=None, metavar="NAME",
                     help="read PATH with this adapter (see `grokaudit formats`)"),
        click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
                     help="rename a column before auditing (adapters)"),
        click.option("--run-from", default=None, metavar="path|column",
                     help="take run ids from file/directory names or a column (adapters)"),
        click.option("--cond", "conds", multiple=True, metavar="KEY=REGEX",
                     help="take a condition from file/directory names (adapters)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


CANONICAL_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".jsonl", ".ndjson")


def load_for_audit(path: str, fmt: str | None, maps: tuple[str, ...], run_from: str | None,
                   conds: tuple[str, ...]) -> Any:
    """Read PATH as an Arrow table: directly when it is a canonical file, else through the
    adapters (imported only then)."""
    from pathlib import Path

    from .schema import read_arrow

    p = Path(path)
    adapter_opts = bool(fmt or maps or run_from or conds)
    canonical = p.suffix.lower() in CANONICAL_SUFFIXES or (
        p.is_dir() and any(q.suffix == ".parquet" for q in p.iterdir()))
    if canonical and not adapter_opts and p.suffix.lower() in (".parquet", ".pq"):
        return read_arrow(p)
    try:
        adapters = importlib.import_module("grokaudit.adapters")
        read_log = adapters.read_log
        if canonical and not adapter_opts:
            # a text table may be a W&B export: let detection decide, keep the fast path else
            fmt = adapters.detect_format(p)
            if fmt == "table":
                return read_arrow(p)
    except (ImportError, AttributeError):
        if canonical:
            return read_arrow(p)
        from .errors import LogFormatError

        raise LogFormatError("not a canonical table (.parquet, .csv, .tsv, .jsonl) and no "
                             "adapter reads it", path=path) from None
    return read_log(p, fmt, mapping=_pairs(maps, "--map") or None, run_from=run_from,
                    cond=_pairs(conds, "--cond") or None)


def build_config(profile: str | None, config_file: str | None, overrides: dict[str, Any]) -> Any:
    """The effective config from profile, config file and flags."""
    from .config import config_file_values, load_config_file, make_config

    if config_file:
        values, source = load_config_file(config_file), config_file
    else:
        values, src = config_file_values()
        source = src or "config"
    return make_config(profile, values, source=source, **overrides)


@cli.command()
@click.argument("path", type=click.Path())
@audit_options
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the versioned JSON result to PATH (- for stdout, replacing the text)")
@click.option("--report", "report_out", default=None, metavar="PATH",
              help="also write the self-contained HTML report to PATH (extra `report`)")
@click.option("--sensitivity", is_flag=True,
              help="re-run the audit with each free parameter moved over a small grid and "
                   "report which verdicts move (VERDICT_FRAGILE)")
@click.option("-v", "--verbose", is_flag=True, help="show informational findings too")
@click.option("-q", "--quiet", is_flag=True, help="print only the result line")
def check(path: str, json_out: str | None, report_out: str | None, sensitivity: bool,
          verbose: bool, quiet: bool, by: str | None,
          cell: tuple[str, ...], metrics: tuple[str, ...], profile: str | None,
          rule: str | None, config_file: str | None, acc_scale: float | None,
          on_duplicate: str | None, fail_on: str | None, fmt: str | None,
          maps: tuple[str, ...], run_from: str | None, conds: tuple[str, ...],
          **thresholds: Any) -> None:
    """Audit the training log at PATH.

    Exit 0: no critical finding; 1: critical findings (a reading the log cannot support);
    2: usage or input error.
    """
    from .api import audit_table
    from .report import render_text

    try:
        overrides = dict(thresholds)
        overrides.update(by=by, rule=rule, acc_scale=acc_scale, on_duplicate=on_duplicate,
                         fail_on=_split((fail_on,)) if fail_on else None,
                         cell=_split(cell) or None, metrics=_split(metrics) or None)
        cfg = build_config(profile, config_file, overrides)
        table = load_for_audit(path, fmt, maps, run_from, conds)
        sens = None
        if sensitivity:
            from .claims.sensitivity import run_sensitivity

            sens = run_sensitivity(table, cfg, source=path)
            result = sens.baseline
        else:
            result = audit_table(table, cfg, source=path)
        if report_out:
            from .html_report import write_report_from_table

            write_report_from_table(result, table, cfg, report_out, source=path)
    except GrokauditError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    doc = sens.to_json() if sens is not None else result.to_json()
    if json_out == "-":
        click.echo(doc, nl=False)
    else:
        if json_out:
            _write_text(json_out, doc)
        text = render_text(result, verbose=verbose)
        if sens is not None:
            from .claims.sensitivity import render_sensitivity

            text += "\n" + render_sensitivity(sens)
        click.echo(text.splitlines()[-1] if quiet else text, nl=quiet)
    sys.exit(sens.exit_code if sens is not None else result.exit_code)


def _write_text(path: str, text: str) -> None:
    """Write atomically: temp file in the same folder, then rename."""
    import os
    import tempfile
    from pathlib import Path

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, p)
