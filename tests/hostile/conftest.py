"""Fixtures of the hostile-input suite (issue 10, item 6).

Helpers live in ``tests/helpers/hostile.py`` (``helpers`` is importable because pytest puts
``tests/`` on ``sys.path``: ``pythonpath`` in pyproject.toml). The hypothesis profile and the
``umask`` fixture are in the root ``tests/conftest.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.hostile import REFERENCE, sweep_df, write_parquet


@pytest.fixture(scope="session")
def clean_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with no grokaudit.toml / pyproject.toml in it."""
    return tmp_path_factory.mktemp("clean")


@pytest.fixture(scope="session")
def failing_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled log with critical findings (exit 1 with FAILING_ARGS)."""
    if not REFERENCE.is_file():
        pytest.skip(f"bundled reference log not found at {REFERENCE}")
    d = tmp_path_factory.mktemp("failing")
    return Path(shutil.copy(REFERENCE, d / REFERENCE.name))


@pytest.fixture
def good_log(tmp_path: Path) -> Path:
    """A small valid canonical log (9 runs, 3 cells along wd) in its own folder."""
    d = tmp_path / "in"
    d.mkdir()
    return write_parquet(sweep_df(), d / "log.parquet")

