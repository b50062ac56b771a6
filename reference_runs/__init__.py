"""The reference trainer: batched torch training of the seed papers' grokking runs, written as
the canonical log table so that ``grokaudit check`` audits them directly.

Importing this package does not import torch; the modules that train do. Entry points:
``grokaudit train CONFIG.toml -o OUT.parquet`` (``cli.py``) and :func:`sweep.run_sweep`.
The bundled logs live in ``data/`` (see :func:`data_path`).
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"
CONFIG_DIR = Path(__file__).parent / "configs"


def data_path(name: str) -> Path:
    """Path of a bundled reference log in ``data/`` (e.g. ``"mlp_wd_sweep_p59.parquet"``)."""
    return DATA_DIR / name
