"""``grokaudit convert`` and ``grokaudit formats``: thin shells over :func:`read_log`.

The core CLI imports this module lazily (``LAZY_COMMANDS`` in ``grokaudit.cli``), only when one
of these commands runs. Errors are :class:`~grokaudit.errors.GrokauditError` subclasses, raised
as they are: the CLI group prints them as one line with their code and exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from grokaudit.errors import ErrorCode, LogFormatError, OutputError
from grokaudit.limits import DEFAULT_MAX_COLUMNS, DEFAULT_MAX_ROWS, Limits
from grokaudit.options import layout_of, parse_pairs
from grokaudit.outputs import resolve_output
from grokaudit.schema import PROVENANCE_KEY, write_table
from grokaudit.text import safe

from . import list_formats, read_log

#: What ``convert -o`` writes (the canonical table).
OUTPUT_SUFFIXES = (".parquet", ".csv")


@click.command(name="convert")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", "output", required=True, metavar="FILE",
              help="Canonical table to write (.parquet, or .csv); not an input, not inside an "
                   "input folder. Written atomically.")
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
@click.option("--long", "long", default=None, metavar="name=COL,value=COL[,keys=COL,…]",
              help="Read a long table (one row per step and metric) with these name, value "
                   "and key columns; detected when unambiguous.")
@click.option("--columns", "columns", default=None, metavar="COL,COL,…",
              help="Name the columns of a header-less numeric text file (.txt, .dat, .log).")
@click.option("--conditions-from", "conditions_from", default=None, metavar="FILE",
              help="Join a one-row-per-run table onto the runs as their conditions (with "
                   "--on).")
@click.option("--on", "on", default=None, metavar="COL",
              help="The column of --conditions-from holding the run ids.")
@click.option("--step-scale", "step_scale", default=None, metavar="N|cadence",
              help="Multiply the steps by N, or by each run's declared cadence where its "
                   "step column counts log events (STEP_CADENCE_MISMATCH).")
@click.option("--step-from", "step_from", default=None, metavar="row",
              help="Number the rows of a table with no step column 0, 1, 2, … in file order "
                   "as its steps (Keras's history.history saved as a table).")
@click.option("--max-rows", "max_rows", type=click.IntRange(min=1), default=DEFAULT_MAX_ROWS,
              show_default=True, metavar="N",
              help="Refuse an input whose Parquet metadata declares more rows (checked before "
                   "reading).")
@click.option("--max-columns", "max_columns", type=click.IntRange(min=1),
              default=DEFAULT_MAX_COLUMNS, show_default=True, metavar="N",
              help="Refuse an input whose Parquet metadata declares more columns.")
def convert(path: Path, output: str, fmt: str | None, maps: tuple[str, ...],
            run_from: str | None, conds: tuple[str, ...], max_rows: int,
            max_columns: int, **shape: str | None) -> None:
    """Convert an external log at PATH to the canonical table (written atomically)."""
    # every check that needs no reading comes first: a refused output changes no file
    out = resolve_output(output, flag="--output", inputs=[path], allow_stdout=False,
                         suffixes=OUTPUT_SUFFIXES)
    assert out.path is not None  # allow_stdout=False
    mapping = parse_pairs(maps, "--map") or None
    cond = parse_pairs(conds, "--cond") or None
    table = read_log(path, fmt, mapping=mapping, run_from=run_from, cond=cond,
                     limits=Limits(max_rows, max_columns), layout=layout_of(shape))
    prov = json.loads(table.schema.metadata[PROVENANCE_KEY])
    if "test_acc" not in table.column_names:  # a part of a log (one W&B chart of several)
        shown = ", ".join(repr(safe(c)) for c in table.column_names[2:6])
        raise LogFormatError(
            f"no test accuracy among the metrics read ({shown}); this is a part of a log: "
            "convert the folder that holds its accuracy chart too, or name the accuracy with "
            "--map NAME=test_acc", path=str(path), column="test_acc",
            code=ErrorCode.MISSING_COLUMN)
    if out.path.suffix.lower() == ".csv" and (prov["findings"] or prov["downsampled_runs"]):
        codes = sorted({f["code"] for f in prov["findings"]} | (
            {"SOURCE_DOWNSAMPLED"} if prov["downsampled_runs"] else set()))
        raise OutputError(
            f"{output}: a .csv file cannot carry the provenance of this log, and the audit "
            f"needs it (findings: {', '.join(codes)}); write a .parquet file instead",
            code=ErrorCode.OUTPUT_EXTENSION, path=output)
    df = table.to_pandas()
    out.write_with(lambda tmp: write_table(df, tmp, provenance=prov))
    runs = df["run"].nunique()
    click.echo(f"read {safe(prov['adapter'])} log: {runs} run(s), {len(df)} rows, "
               f"{prov['points_read']} points from {len(prov['source_files'])} file(s)")
    metrics = [safe(c) for c in df.columns if c not in ("run", "step")]
    click.echo(f"columns: {', '.join(metrics)}")
    for w in prov["warnings"]:
        click.echo(f"warning: {safe(w)}")
    for f in prov["findings"]:
        where = f" [run {safe(f['run'])}]" if f["run"] else ""
        at = "" if f["file"] is None else f" ({safe(f['file'])})" if f["offset"] is None \
            else f" ({safe(f['file'])} @ byte {f['offset']})"
        click.echo(f"finding {safe(f['code'])}{where}: {safe(f['detail'])}{at}")
    click.echo(f"wrote {safe(out.path)}")


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
        click.echo(f"{safe(i.name):<{width}}  {safe(i.description)}  ({status})")
