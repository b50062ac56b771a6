"""Two validation passes made columnar (issue 44 item 1) give what the per-row code gave: the
conditions taken chunk by chunk equal ``ChunkedArray.take`` (values, nulls, type, order), and a
run id is blank for Arrow's whitespace trim exactly when Python's ``str.strip()`` leaves
nothing, for every Unicode code point."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from grokaudit.schema import _take_rows


def _chunked(rng: np.random.Generator, dtype: pa.DataType) -> pa.ChunkedArray:
    chunks = []
    for size in rng.integers(0, 8, size=int(rng.integers(1, 6))).tolist():
        if pa.types.is_string(dtype):
            v: list = [None if rng.random() < .1 else f"x{int(rng.integers(5))}"
                       for _ in range(size)]
        elif pa.types.is_boolean(dtype):
            v = [None if rng.random() < .1 else bool(rng.integers(2)) for _ in range(size)]
        elif pa.types.is_integer(dtype):
            v = [None if rng.random() < .1 else int(rng.integers(9)) for _ in range(size)]
        else:
            v = [None if rng.random() < .1 else float(rng.integers(9)) / 4 for _ in range(size)]
        chunks.append(pa.array(v, type=dtype))
    return pa.chunked_array(chunks, type=dtype)


@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32(), pa.int64(), pa.string(),
                                   pa.bool_(), pa.dictionary(pa.int32(), pa.string())])
def test_conditions_taken_chunk_by_chunk_equal_the_whole_take(dtype: pa.DataType) -> None:
    rng = np.random.default_rng(3)
    tried = 0
    for _ in range(60):
        base = _chunked(rng, pa.string() if pa.types.is_dictionary(dtype) else dtype)
        c = (pa.chunked_array([ch.dictionary_encode() for ch in base.chunks], type=dtype)
             if pa.types.is_dictionary(dtype) else base)
        if len(c) == 0:
            continue
        rows = rng.integers(0, len(c), size=int(rng.integers(0, 20)))  # any order, repeats
        got = _take_rows(c, rows)
        want = c.take(pa.array(rows)).combine_chunks()
        assert got.type == want.type and got.equals(want)
        tried += 1
    assert tried > 40


def test_a_blank_run_id_is_what_str_strip_empties_for_every_code_point() -> None:
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = chars + [" a ", "\t\n", "", "a\u3000", "\u3000\x1c"]
    by_python = np.array([t.strip() == "" for t in texts])
    arr = pa.array(texts)
    by_arrow = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr)), 0).to_numpy(
        zero_copy_only=False)
    assert by_python.sum() > 20  # the whitespace characters are there
    assert np.array_equal(by_python, by_arrow)
