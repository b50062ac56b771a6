"""The MANIFEST's TOML: any command line, key or value reads back as written (a carriage
return, a tab or a quote in a value, a space or a dot in a key)."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from grokaudit.reference_runs.manifest import to_toml  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
VALUE = st.one_of(TEXT, st.integers(-10**6, 10**6), st.booleans(),
                  st.floats(allow_nan=False, allow_infinity=False),
                  st.lists(st.integers(0, 9), max_size=3))


def test_the_cases_that_were_invalid_toml() -> None:
    data = {"command": "grokaudit train a\rb.toml\t-o x", "config": {"my key": 1, "a.b": "q\"x"}}
    assert tomllib.loads(to_toml(data)) == data


@given(st.dictionaries(TEXT, VALUE, max_size=4),
       st.dictionaries(TEXT, st.dictionaries(TEXT, VALUE, max_size=3), max_size=2))
def test_any_flat_and_one_level_table_reads_back(flat: dict, tables: dict) -> None:
    data = {**{k: v for k, v in flat.items() if k not in tables}, **tables}
    assert tomllib.loads(to_toml(data)) == data
