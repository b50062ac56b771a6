"""The five claim commands through the CLI: exit codes, versioned JSON, bad input → exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.claims.simulate import make_log
from grokaudit.cli import cli


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("claims")
    rng = np.random.default_rng(0)
    out: dict[str, Path] = {}
    # paired methods, 5 seeds: underpowered (exit 1)
    n = 5
    runs = pd.DataFrame({"run": [f"b{i}" for i in range(n)] + [f"c{i}" for i in range(n)],
                         "method": ["baseline"] * n + ["cv"] * n, "seed": list(range(n)) * 2,
                         "t_grok": list(rng.uniform(3000, 4000, n).round())
                         + list(rng.uniform(1000, 2000, n).round()), "budget": 5000})
    out["compare"] = d / "compare.csv"
    make_log(runs, every=50, series={
        "attn_cv": lambda r, s: np.exp(-(((s - r["t_grok"] + 500) / 200) ** 2))}
    ).to_csv(out["compare"], index=False)
    # a dose axis, 6 cells × 4 seeds
    x = np.repeat(np.linspace(0.5, 2.0, 6), 4)
    runs = pd.DataFrame({"run": [f"x{i}" for i in range(x.size)], "rho": x,
                         "seed": np.tile(np.arange(4), 6),
                         "t_grok": np.round(np.exp(np.log(200) + 1.5 * x
                                                   + rng.normal(0, 0.05, x.size))),
                         "budget": 6000})
    out["dose"] = d / "dose.parquet"
    make_log(runs, every=10).to_parquet(out["dose"], index=False)
    return out


def _invoke(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, args)
    return res.exit_code, res.stdout, res.stderr


CASES = [
    ("compare", ["--by", "method", "--pair", "seed"], 1),
    ("precursor", ["--signal", "attn_cv", "--n-perm", "99"], None),
    ("onset", ["--by", "rho", "--thresholds", "0.9,0.95"], None),
    ("dose", ["--by", "rho", "--n-resamples", "50"], None),
    ("transition", ["--by", "rho", "--n-resamples", "20"], None),
]


@pytest.mark.parametrize("command,args,code", CASES)
def test_commands_print_and_exit_like_check(logs: dict[str, Path], command: str,
                                            args: list[str], code: int | None) -> None:
    path = logs["compare" if command in ("compare", "precursor") else "dose"]
    rc, out, _ = _invoke([command, str(path), *args])
    assert rc in (0, 1) and (code is None or rc == code)
    assert out.strip().splitlines()[-1].startswith("result:")
    rc2, js, _ = _invoke([command, str(path), *args, "--json", "-"])
    assert rc2 == rc
    d = json.loads(js)
    assert d["schema"] == f"grokaudit.{command}/2"
    assert d["summary"]["exit_code"] == rc
    assert _invoke([command, str(path), *args, "--json", "-"])[1] == js  # byte-identical


@pytest.mark.parametrize("args", [
    ["compare", "{compare}", "--by", "nope", "--pair", "seed"],
    ["compare", "{missing}", "--by", "method", "--pair", "seed"],
    ["dose", "{dose}", "--by", "rho", "--fit-range", "1"],
    ["onset", "{dose}", "--by", "rho", "--thresholds", "a,b"],
    ["precursor", "{compare}", "--signal", "nope"],
    ["transition", "{compare}", "--by", "method"],
])
def test_bad_input_exits_2_with_one_line(logs: dict[str, Path], tmp_path: Path,
                                         args: list[str]) -> None:
    paths = {"compare": logs["compare"], "dose": logs["dose"], "missing": tmp_path / "x.csv"}
    args = [a.format(**paths) for a in args]
    rc, out, err = _invoke(args)
    assert rc == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err


def test_claims_never_import_torch() -> None:
    code = ("import sys, grokaudit.cli, grokaudit.claims.onset, grokaudit.claims.dose, "
            "grokaudit.claims.transition, grokaudit.claims.precursor, grokaudit.claims.compare, "
            "grokaudit.claims.sensitivity, grokaudit.claims.render; "
            "assert 'torch' not in sys.modules; assert 'lifelines' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
