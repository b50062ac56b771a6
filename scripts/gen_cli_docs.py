"""Generate docs/cli.md from the commands' own --help (tests/core/test_docs.py keeps it in sync).

    python scripts/gen_cli_docs.py            # rewrite docs/cli.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = 100


def command_help(name: str | None) -> str | None:
    """The --help text of ``grokaudit NAME`` (the group when None); None if unavailable."""
    from grokaudit.cli import cli

    # the group's own settings (``-h`` and ``--help``), as a real invocation sees them: click
    # caches a command's help option, so help text must not depend on which context came first
    root = click.Context(cli, info_name="grokaudit", terminal_width=WIDTH, max_content_width=WIDTH,
                         **cli.context_settings)
    if name is None:
        return cli.get_help(root)
    cmd = cli.get_command(root, name)
    if cmd is None or cmd.callback is not None and cmd.callback.__name__ == "stub":
        return None
    ctx = click.Context(cmd, info_name=name, parent=root, terminal_width=WIDTH,
                        max_content_width=WIDTH)
    return cmd.get_help(ctx)


def render() -> str:
    from grokaudit.cli import cli

    names = cli.list_commands(click.Context(cli))
    parts = ["# Command-line reference", "",
             "Generated from each command's `--help` by `scripts/gen_cli_docs.py`; "
             "`tests/core/test_docs.py` fails when it drifts.", "",
             "## grokaudit", "", "```text", command_help(None) or "", "```", ""]
    for n in names:
        h = command_help(n)
        parts += [f"## grokaudit {n}", ""]
        parts += (["```text", h, "```", ""] if h is not None else
                  ["_Needs an optional extra that is not installed here._", ""])
    return "\n".join(parts)


def main() -> int:
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
