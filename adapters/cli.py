"""``grokaudit convert`` and ``grokaudit formats``: thin shells over :func:`read_log`.

The core CLI imports this module lazily (``LAZY_COMMANDS`` in ``grokaudit.cli``), only when one
of these commands runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from grokaudit.errors import GrokauditError
from grokaudit.schema import PROVENANCE_KEY, write_table

from . import list_formats, read_log
from .merge import parse_pairs


@click.command(name="convert")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", "output", required=True, type=click.Path(path_type=Path),
              help="Canonical table to write (.parquet, or .csv).")
@click.option("--format", "fmt", default=None, metavar="NAME",
              help="Log format (see `grokaudit formats`); detected from PATH by default.")
@click.option("--map", "maps", multiple=True, metavar="OLD=NEW",
              help="Rename a metric, e.g. --map val_acc=test_acc (repeatable).")
@click.option("--run-from", "run_from", default=None, metavar="path|column|NAME",
              help="Take run ids from file/directory names (path), a 'run' column (column), "
                   "or the column NAME.")
@click.option("--cond", "conds", multiple=True, metavar="KEY=REGEX",
              help="Condition KEY from each run's path by REGEX (first group), e.g. "
                   "--cond wd='wd([0-9.]+)' (repeatable).")
def convert(path: Path, output: Path, fmt: str | None, maps: tuple[str, ...],
            run_from: str | None, conds: tuple[str, ...]) -> None:
    """Convert an external log at PATH to the canonical table (written atomically)."""
    try:
        table = read_log(path, fmt, mapping=parse_pairs(maps, "--map") or None,
                         run_from=run_from, cond=parse_pairs(conds, "--cond") or None)
        prov = json.loads(table.schema.metadata[PROVENANCE_KEY])
        df = table.to_pandas()
        write_table(df, output, provenance=prov)
    except GrokauditError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    runs = df["run"].nunique()
    click.echo(f"read {prov['adapter']} log: {runs} run(s), {len(df)} rows, "
               f"{prov['points_read']} points from {len(prov['source_files'])} file(s)")
    metrics = [c for c in df.columns if c not in ("run", "step")]
    click.echo(f"columns: {', '.join(metrics)}")
    for w in prov["warnings"]:
        click.echo(f"warning: {w}")
    for f in prov["findings"]:
        where = f" [run {f['run']}]" if f["run"] else ""
        at = f" ({f['file']} @ byte {f['offset']})" if f["file"] is not None else ""
        click.echo(f"finding {f['code']}{where}: {f['detail']}{at}")
    click.echo(f"wrote {output}")


@click.command(name="formats")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def formats(as_json: bool) -> None:
    """List the log formats grokaudit reads, and whether their extra is installed."""
    infos = list_formats()
    if as_json:
        click.echo(json.dumps([{"name": i.name, "description": i.description, "extra": i.extra,
                                "extra_installed": i.extra_installed} for i in infos], indent=1))
        return
    width = max(len(i.name) for i in infos)
    for i in infos:
        if i.extra is None:
            status = "built in"
        elif i.extra_installed:
            status = f"extra [{i.extra}] installed"
        else:
            status = f"needs: pip install 'grokaudit[{i.extra}]'"
        click.echo(f"{i.name:<{width}}  {i.description}  ({status})")
