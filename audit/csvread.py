"""CSV and TSV to Arrow: the one reader of the canonical table and of the table adapters.

pyarrow infers each column's type from its cells, and a column whose cells all read as integers
(or as true/false words) becomes numbers: two spellings of one number — ``007`` and ``7``, ``+7``
and ``7``, ``True`` and ``true``, ``1`` and ``true`` — become one value. In a condition column
that pools two arms without a word (a Parquet or JSON lines log holding the same labels as text
keeps them apart). So every column read as integers or booleans is read a second time as text,
and where two different texts read as one value the column keeps its text, as Parquet would
hold it: the runs stay apart, and an axis that needs numbers says the column is text
(``NOT_NUMERIC``, naming two of its spellings). Float columns keep their numbers: ``0.1`` and
``0.10``, ``1e3`` and ``1000`` are one number written by two formatters.

The second read parses only the integer and boolean columns (the file is tokenized again: a
CSV log of integer-heavy columns reads in about twice the time; Parquet is the fast format).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .limits import csv_block_size

__all__ = ["NULL_CELLS", "read_csv_arrow", "spellings"]

#: the cells read as missing, in every column (text ones too): what CSV writers put for a value
#: they do not have (pandas writes "", R "NA", Python's str() "None")
NULL_CELLS = ["", "NA", "N/A", "n/a", "#N/A", "NaN", "nan", "-nan", "NAN", "null", "NULL",
              "None", "<NA>"]


def read_csv_arrow(path: Path, *, tsv: bool = False) -> pa.Table:
    """``path`` as Arrow (``run`` as text, :data:`NULL_CELLS` missing); integer and boolean
    columns whose cells spell one value two ways kept as their text. Raises what
    ``pyarrow.csv.read_csv`` raises."""
    opts = pacsv.ParseOptions(delimiter="\t" if tsv else ",")
    # a header longer than pyarrow's 1 MiB block: a block that holds it
    block = pacsv.ReadOptions(block_size=csv_block_size(path, opts.delimiter))
    conv = pacsv.ConvertOptions(column_types={"run": pa.string()}, null_values=NULL_CELLS,
                                strings_can_be_null=True)
    table = pacsv.read_csv(path, read_options=block, parse_options=opts, convert_options=conv)
    exact = [n for n, t in zip(table.column_names, table.schema.types, strict=True)
             if (pa.types.is_integer(t) or pa.types.is_boolean(t))]
    if not exact or len(set(table.column_names)) != len(table.column_names):
        return table  # duplicate column names are refused by the caller, by name
    as_text = pacsv.ConvertOptions(column_types=dict.fromkeys(exact, pa.string()),
                                   include_columns=exact, null_values=NULL_CELLS,
                                   strings_can_be_null=True)
    texts = pacsv.read_csv(path, read_options=block, parse_options=opts,
                           convert_options=as_text)
    for name in exact:
        text = texts.column(name)
        if spellings(table.column(name), text) is not None:
            table = table.set_column(table.column_names.index(name), name, text)
    return table


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
