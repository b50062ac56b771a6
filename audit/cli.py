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
    extra = {"torch": "train", "hypothesis": "test"}.get(str(missing).split(".")[0], None)
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
