"""CSV and TSV to Arrow: the one reader of the canonical table and of the table adapters.

pyarrow infers each column's type from its cells, and a column whose cells all read as integers
becomes numbers: the labels ``007`` and ``7`` become one value. In a condition column that
pools two arms without a word (a Parquet or JSON lines log holding the same labels as text
keeps them apart). So a column read as integers is kept as its text, as Parquet would hold it,
when all of these hold:

* a cell is written with a leading zero (``007``, ``-01``: how labels are padded; a number
  written ``+7``, `` 7`` or ``-0`` is that number, whatever the formatter);
* two different cells read as one value (``007`` and ``7``): one spelling per value pools
  nothing;
* the column is a condition: the ``run`` column names the runs and each run writes the column
  one way (a step or a metric column, which changes within a run, keeps its numbers).

The runs then stay apart, and an axis that needs numbers says the column is text
(``NOT_NUMERIC``, naming two of its spellings). Booleans (``True`` and ``true``) and floats
(``0.1`` and ``0.10``, ``1e3`` and ``1000``) keep their values: they are one value written by
two formatters.

The file is read into memory once and parsed from there: the integer conditions' text is a
second parse of the same bytes (a log still being written could otherwise give the two parses
two different files). The second parse is made only when an integer column holds one value per
run (found from the numbers: one grouping of the rows by run), and the comparison is one pass
per column unless its cells are written otherwise than Arrow writes the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .limits import csv_block_size

__all__ = ["NULL_CELLS", "read_csv_arrow", "spellings"]

#: the cells read as missing, in every column (text ones too), as pandas' reader reads them:
#: what CSV writers put for a value they do not have (pandas writes "", R "NA", str() "None")
NULL_CELLS = ["", "NA", "N/A", "n/a", "#N/A", "NaN", "nan", "-nan", "NAN", "null", "NULL",
              "None", "<NA>"]
#: an integer written with a leading zero (``007``, ``-01``, `` 00``; RE2, Arrow's syntax)
_PADDED = r"^\s*[+-]?0[0-9]"


def read_csv_arrow(path: Path, *, tsv: bool = False) -> pa.Table:
    """``path`` as Arrow (``run`` as text, :data:`NULL_CELLS` missing); an integer condition
    column whose cells spell one value two ways kept as its text (the module's rules). Raises
    what ``pyarrow.csv.read_csv`` raises."""
    opts = pacsv.ParseOptions(delimiter="\t" if tsv else ",")
    # a header longer than pyarrow's 1 MiB block: a block that holds it
    block = pacsv.ReadOptions(block_size=csv_block_size(path, opts.delimiter))
    data = pa.py_buffer(path.read_bytes())  # one version of the file for both parses
    conv = pacsv.ConvertOptions(column_types={"run": pa.string()}, null_values=NULL_CELLS,
                                strings_can_be_null=True)
    table = pacsv.read_csv(pa.BufferReader(data), read_options=block, parse_options=opts,
                           convert_options=conv)
    names = table.column_names
    ints = [n for n, t in zip(names, table.schema.types, strict=True)
            if pa.types.is_integer(t) and n != "run"]
    if not ints or len(set(names)) != len(names):  # duplicate names: refused by the caller
        return table
    if "run" not in names:  # one run's file: its padded constants, for the folder to compare
        return _padded_constants(table, ints, data, block, opts)
    ints = _conditions(table, ints)
    if not ints:  # steps, metrics, counters: no second parse
        return table
    texts = _as_text(data, block, opts, ints)
    del data
    padded = {}
    for name in ints:
        text = texts.column(name)
        if _labels(table.column(name), text, table.column("run")):
            table = table.set_column(names.index(name), name, text)
        elif (one := _one_padded_text(text)) is not None:
            padded[name] = one  # one file of a folder of run files: compared there
    return _with_labels(table, padded)


def _padded_constants(table: pa.Table, ints: list[str], data: pa.Buffer,
                      block: pacsv.ReadOptions, opts: pacsv.ParseOptions) -> pa.Table:
    """A file without a ``run`` column (one run's file in a folder): the integer columns that
    hold one value in every row, written with a leading zero (``007``), recorded in the
    table's ``grokaudit.json`` metadata as ``labels`` (column -> text; so are a file's
    conditions written so with a ``run`` column). No file of a folder sees another's
    spelling: the folder's reader compares them (``grokaudit.adapters.merge``), and keeps a
    column whose runs spell one value two ways as text."""
    const = [c for c in ints if table.num_rows and not table.column(c).null_count
             and (ext := pc.min_max(table.column(c)))["min"] == ext["max"]]
    if not const:
        return table
    texts = _as_text(data, block, opts, const)
    return _with_labels(table, {c: t for c in const
                                if (t := _one_padded_text(texts.column(c))) is not None})


def _as_text(data: pa.Buffer, block: pacsv.ReadOptions, opts: pacsv.ParseOptions,
             columns: list[str]) -> pa.Table:
    """The second parse of the file's bytes: ``columns`` as the text of their cells (the
    same cells missing as in the first parse)."""
    return pacsv.read_csv(pa.BufferReader(data), read_options=block, parse_options=opts,
                          convert_options=pacsv.ConvertOptions(
                              column_types=dict.fromkeys(columns, pa.string()),
                              include_columns=columns, null_values=NULL_CELLS,
                              strings_can_be_null=True))


def _one_padded_text(text: pa.ChunkedArray) -> str | None:
    """The one text of a column written one way in every row with a leading zero, else
    None."""
    if text.null_count or pc.count_distinct(text).as_py() != 1 or \
            not pc.all(pc.match_substring_regex(text, _PADDED)).as_py():
        return None
    return str(text[0].as_py())


def _with_labels(table: pa.Table, labels: dict[str, str]) -> pa.Table:
    """``table`` with ``labels`` (column -> its one padded text) in its ``grokaudit.json``
    metadata, read by the table adapters' ``load``."""
    if not labels:
        return table
    meta = dict(table.schema.metadata or {})
    info = json.loads(meta.get(b"grokaudit.json", b"{}"))
    info["labels"] = labels
    meta[b"grokaudit.json"] = json.dumps(info).encode()
    return table.replace_schema_metadata(meta)


def _conditions(table: pa.Table, ints: list[str]) -> list[str]:
    """The columns of ``ints`` whose value is one within each run (their smallest and largest
    value per run equal): the only ones that can name an arm."""
    ext = table.select(["run", *ints]).group_by("run").aggregate(
        [(c, agg) for c in ints for agg in ("min", "max")])
    return [c for c in ints
            if pc.all(pc.fill_null(pc.equal(ext[f"{c}_min"], ext[f"{c}_max"]), True)).as_py()]


def _labels(values: pa.ChunkedArray, text: pa.ChunkedArray, run: pa.ChunkedArray) -> bool:
    """Whether an integer column holds labels: padded with a leading zero, one value spelled
    two ways, and written one way within each run."""
    same = pc.equal(values.cast(pa.string()), text)
    if pc.all(pc.fill_null(same, True)).as_py():
        return False  # every cell as Arrow writes its number
    if not pc.any(pc.match_substring_regex(text, _PADDED)).as_py():
        return False
    if spellings(values, text) is None:
        return False
    per_run = pa.table({"r": run, "t": text}).group_by("r").aggregate([("t", "count_distinct")])
    return bool(pc.max(per_run["t_count_distinct"]).as_py() <= 1)


def spellings(values: pa.ChunkedArray | pa.Array, text: pa.ChunkedArray | pa.Array
              ) -> tuple[str, str] | None:
    """Two different texts of ``text`` that read as one value of ``values`` (the same rows),
    or None when each value has one spelling."""
    pairs = pa.table({"t": text, "v": values}).group_by("t").aggregate([("v", "min")])
    if pc.count_distinct(pairs["v_min"], mode="all").as_py() == pairs.num_rows:
        return None
    order = pc.sort_indices(pairs, sort_keys=[("v_min", "ascending"), ("t", "ascending")])
    t = pairs["t"].take(order).to_pylist()
    v = pairs["v_min"].take(order).to_pylist()
    for i in range(1, len(v)):
        if v[i] == v[i - 1] and v[i] is not None:
            return str(t[i - 1]), str(t[i])
    return None  # unreachable: nulls are one text, so fewer values means two texts share one
