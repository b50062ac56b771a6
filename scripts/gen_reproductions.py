"""Regenerate the table of docs/reproductions.md from `grokaudit reproduce --from-bundled`.

    python scripts/gen_reproductions.py            # rewrite the table in place
    python scripts/gen_reproductions.py --check    # exit 1 when the file is out of date

The table sits between the markers ``<!-- reproduce:begin -->`` and ``<!-- reproduce:end -->``;
a test (tests/reproduce) fails when it differs from the output of the bundled logs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from grokaudit.cli import run_command
from grokaudit.reproduce import reproduce_bundled
from grokaudit.reproduce_text import markdown_table

DOC = Path(__file__).resolve().parents[1] / "docs" / "reproductions.md"
BEGIN, END = "<!-- reproduce:begin -->", "<!-- reproduce:end -->"


def current_table() -> str:
    """The table made from the repository's root: its commands name the logs from there."""
    here = os.getcwd()
    os.chdir(DOC.parents[1])
    try:
        return markdown_table(reproduce_bundled(run_command))
    finally:
        os.chdir(here)


def replace_table(doc: str, table: str) -> str:
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table}{END}{tail}"


def table_in(doc: str) -> str:
    return doc.partition(BEGIN)[2].partition(END)[0].lstrip("\n")


def main(argv: list[str]) -> int:
    doc = DOC.read_text(encoding="utf-8")
    table = current_table()
    if "--check" in argv:
        return 0 if table_in(doc) == table else 1
    DOC.write_text(replace_table(doc, table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
