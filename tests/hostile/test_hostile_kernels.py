"""``--kernel numba`` under hostile input (issue 44): a log whose metric holds what the
compiled clocks must not guess at — both signs of zero, ±inf, values whose sum leaves the
float range, subnormals, ties, gaps — is audited to the same bytes as on numpy (the trail's
record of the kernel and the command line aside); a misspelt kernel is refused with exit 2;
an output pointed at the input is refused on numba as on numpy, the input left whole."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.cli import cli
from helpers.corpus import without_kernel
from helpers.hostile import sweep_df, write_parquet

pytest.importorskip("numba", reason="--kernel numba is the extra `fast`")

ODD = {
    "zeros": lambda rng, n: rng.choice([0.0, -0.0, 1.0, 2.0], n),  # both signs of zero
    "infinite": lambda rng, n: np.where(rng.random(n) < 0.05, rng.choice([np.inf, -np.inf], n),
                                        rng.normal(5.0, 1.0, n)),
    "huge": lambda rng, n: rng.choice([1.7e308, -1.7e308, 8.9e307, 1.0], n),
    "subnormal": lambda rng, n: rng.choice([5e-324, -5e-324, 1e-310, 0.0], n),
    "ties": lambda rng, n: rng.integers(0, 3, n).astype(float),
}


def _log(tmp_path: Path, kind: str) -> Path:
    rng = np.random.default_rng(len(kind))
    df = sweep_df()
    df["emb_erank"] = ODD[kind](rng, len(df))
    df.loc[df.sample(frac=0.1, random_state=3).index, "emb_erank"] = np.nan  # gaps
    d = tmp_path / kind
    d.mkdir()
    return write_parquet(df, d / "log.parquet")


def _check(path: Path, kernel: str) -> tuple[int, Any]:
    """The exit code and the JSON less what ``--kernel`` changes by design, or the error
    line of a refusal."""
    res = CliRunner().invoke(cli, ["check", str(path), "--by", "wd", "--metric", "emb_erank",
                                   "--json", "-", "--kernel", kernel])
    if res.exit_code == 2:
        return 2, res.output
    return res.exit_code, without_kernel(json.loads(res.stdout))


@pytest.mark.parametrize("kind", sorted(ODD))
def test_odd_metric_values_audit_the_same_on_both_kernels(tmp_path: Path, kind: str) -> None:
    path = _log(tmp_path, kind)
    code_np, out_np = _check(path, "numpy")
    code_nb, out_nb = _check(path, "numba")
    assert code_nb == code_np and out_nb == out_np
    if kind == "infinite":  # refused before any clock, on either kernel
        assert code_np == 2 and "[INFINITE_VALUE]" in out_np
    else:
        assert code_np in (0, 1)


@pytest.mark.parametrize("name", ["Numba", "numba ", "cuda", ""])
def test_a_misspelt_kernel_is_refused(good_log: Path, name: str) -> None:
    res = CliRunner().invoke(cli, ["check", str(good_log), "--kernel", name])
    assert res.exit_code == 2 and "[INVALID_OPTION]" in res.output


def test_an_output_on_the_input_is_refused_on_numba(good_log: Path) -> None:
    before = hashlib.sha256(good_log.read_bytes()).hexdigest()
    for flag in ("--json", "--report"):
        res = CliRunner().invoke(cli, ["check", str(good_log), "--kernel", "numba", flag,
                                       str(good_log)])
        assert res.exit_code == 2
    assert hashlib.sha256(good_log.read_bytes()).hexdigest() == before
    assert pd.read_parquet(good_log).shape[0] > 0
