"""The five claim commands through the CLI: exit codes, versioned JSON for every command on
every input that gives text output, no zero-width interval, bad input → exit 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import make_claims_examples
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.claims.simulate import make_log
from grokaudit.cli import cli

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
TRAINER = REPO / "docs" / "examples" / "claims_tf_cvadamw_p23.parquet"


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
    # the docs' synthetic examples
    ex = make_claims_examples
    for name in ("onset", "dose", "transition", "precursor", "compare"):
        out[f"ex_{name}"] = d / f"ex_{name}.parquet"
        getattr(ex, name)(np.random.default_rng(2026)).to_parquet(out[f"ex_{name}"],
                                                                   index=False)
    # edge cases: nothing ever groks; perfect separation; censored pairs on both sides
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(8)], "wd": np.repeat([1, 2], 4),
                         "seed": np.tile(np.arange(4), 2), "t_grok": np.inf, "budget": 1000})
    out["never"] = d / "never.parquet"
    make_log(runs, every=50).to_parquet(out["never"], index=False)
    wd = np.repeat([0.1, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0], 4)
    runs = pd.DataFrame({"run": [f"s{i}" for i in range(wd.size)], "wd": wd,
                         "seed": np.tile(np.arange(4), 8),
                         "t_grok": np.where(wd > 0.2, np.round(500 / np.sqrt(wd)), np.inf),
                         "budget": 4000})
    out["separated"] = d / "separated.parquet"
    make_log(runs, every=10).to_parquet(out["separated"], index=False)
    runs = pd.DataFrame({"run": [f"a{i}" for i in range(6)] + [f"b{i}" for i in range(6)],
                         "method": ["a"] * 6 + ["b"] * 6, "seed": list(range(6)) * 2,
                         "t_grok": [np.inf, 900, 1000, np.inf, 800, 1200,
                                    500, np.inf, 600, np.inf, 700, 650], "budget": 2000})
    out["censored_pairs"] = d / "censored_pairs.parquet"
    make_log(runs, every=50).to_parquet(out["censored_pairs"], index=False)
    return out


def _invoke(args: list[str]) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, args)
    return res.exit_code, res.stdout, res.stderr


CASES = [
    ("compare", ["--by", "method", "--pair", "seed"], 1),
    ("precursor", ["--signal", "attn_cv", "--n-perm", "99"], None),
    ("onset", ["--by", "rho", "--thresholds", "0.9,0.95", "--n-resamples", "30"], None),
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


ON = ["--n-resamples", "20"]
PERM = ["--n-perm", "49"]
#: Every command on several inputs: (log, command, args). Each gives text (exit 0/1) or an
#: input error (exit 2); --json must do the same.
MATRIX = [
    ("dose", "onset", ["--by", "rho", *ON]),
    ("dose", "transition", ["--by", "rho", *ON]),
    ("dose", "compare", ["--by", "rho", "--pair", "seed", "--arms", "0.5,0.8"]),
    ("compare", "onset", ["--by", "seed"]),  # seed 0: no log → exit 2
    ("compare", "transition", ["--by", "method"]),  # not numeric → exit 2
    ("ex_onset", "onset", ["--by", "H,lr", "--thresholds", "0.9,0.99", *ON]),
    ("ex_onset", "dose", ["--by", "H", *ON]),  # lr varies at each H → DUPLICATE_AXIS_VALUES
    ("ex_onset", "dose", ["--by", "H", "--cell", "lr", *ON]),
    ("ex_onset", "transition", ["--by", "H", "--cell", "lr", *ON]),
    ("ex_onset", "compare", ["--by", "lr", "--pair", "seed"]),  # H differs in a pair → 2
    ("ex_onset", "compare", ["--by", "lr", "--pair", "seed", "--cell", "H"]),
    ("ex_dose", "dose", ["--by", "rho", "--fit-range", "1,1.75", "--mediator", "logit_scale",
                         "--baseline", "rho=1,tau=1", "--raised", "rho=1.15,tau=1",
                         "--sweep", "tau", *ON]),
    ("ex_dose", "onset", ["--by", "rho", "--cell", "tau", *ON]),
    ("ex_transition", "transition", ["--by", "wd", *ON]),
    ("ex_transition", "onset", ["--by", "wd", *ON]),
    ("ex_transition", "dose", ["--by", "wd", *ON]),
    ("ex_precursor", "precursor", ["--signal", "attn_cv", *PERM]),
    ("ex_precursor", "precursor", ["--signal", "weight_norm", "--placebo", "attn_cv", *PERM]),
    ("ex_compare", "compare", ["--by", "method", "--pair", "seed"]),
    ("ex_compare", "precursor", ["--signal", "test_acc"]),  # not a signal column → 2
    ("never", "onset", ["--by", "wd", *ON]),
    ("never", "transition", ["--by", "wd", *ON]),
    ("never", "dose", ["--by", "wd", *ON]),
    ("never", "compare", ["--by", "wd", "--pair", "seed"]),
    ("separated", "transition", ["--by", "wd", *ON]),
    ("separated", "onset", ["--by", "wd", *ON]),
    ("separated", "dose", ["--by", "wd", *ON]),
    ("censored_pairs", "compare", ["--by", "method", "--pair", "seed"]),
    ("censored_pairs", "compare", ["--by", "method", "--pair", "seed", "--arms", "b,a"]),
    ("bundled", "onset", ["--by", "wd", *ON]),
    ("bundled", "transition", ["--by", "wd", *ON]),
    ("bundled", "dose", ["--by", "wd", *ON]),
    ("bundled", "precursor", ["--signal", "weight_norm", *PERM]),
    ("bundled", "compare", ["--by", "wd", "--pair", "seed", "--arms", "3,4"]),
    ("trainer", "compare", ["--by", "optimizer", "--pair", "seed"]),
    ("trainer", "precursor", ["--signal", "attn_cv", *PERM]),
    ("trainer", "precursor", ["--signal", "attn_cv", "--cell", "optimizer", *PERM]),
]

ZERO_WIDTH = re.compile(r"[\[(](−?[-0-9.e]+), \1[\])]")


def _no_constants(x: str) -> None:
    raise AssertionError(f"non-JSON constant {x}")


@pytest.mark.parametrize("name,command,args", MATRIX,
                         ids=[f"{m[0]}-{m[1]}-{i}" for i, m in enumerate(MATRIX)])
def test_json_for_every_command_on_every_input(logs: dict[str, Path], name: str, command: str,
                                               args: list[str]) -> None:
    path = {"bundled": BUNDLED, "trainer": TRAINER}.get(name) or logs[name]
    if not path.exists():
        pytest.skip(f"{path} not found")
    rc, text, err = _invoke([command, str(path), *args])
    rcj, js, errj = _invoke([command, str(path), *args, "--json", "-"])
    assert rcj == rc, (text, err, errj)
    assert "Traceback" not in text + err + js + errj and "internal error" not in err + errj
    if rc == 2:
        assert err.startswith("error: ") and errj == err and js == ""
        return
    assert rc in (0, 1)
    d = json.loads(js, parse_constant=_no_constants)
    assert d["schema"] == f"grokaudit.{command}/2" and d["summary"]["exit_code"] == rc
    assert d["studies"] and all("study" in s and "step_unit" in s for s in d["studies"])
    # no zero-width interval, no "inf"/"nan" leaking into the text
    assert not ZERO_WIDTH.search(text), text
    assert not re.search(r"\b(inf|nan)\b", text), text


def test_expected_refusals_in_the_matrix(logs: dict[str, Path]) -> None:
    rc, _, err = _invoke(["dose", str(logs["ex_onset"]), "--by", "H", *ON])
    assert rc == 2 and "[DUPLICATE_AXIS_VALUES]" in err and "--cell lr" in err
    rc, _, err = _invoke(["compare", str(logs["ex_onset"]), "--by", "lr", "--pair", "seed"])
    assert rc == 2 and "[DUPLICATE_AXIS_VALUES]" in err


@pytest.mark.parametrize("args", [
    ["compare", "{compare}", "--by", "nope", "--pair", "seed"],
    ["compare", "{missing}", "--by", "method", "--pair", "seed"],
    ["dose", "{dose}", "--by", "rho", "--fit-range", "1"],
    ["onset", "{dose}", "--by", "rho", "--thresholds", "a,b"],
    ["onset", "{dose}", "--by", "rho", "--cell", "nope"],
    ["precursor", "{compare}", "--signal", "nope"],
    ["precursor", "{compare}", "--signal", "attn_cv", "--placebo", "nope"],
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


@pytest.mark.parametrize("args", [
    ["onset", "{dose}", "--by", "rho,rho"],
    ["onset", "{dose}", "--by", "rho", "--phase-map", "rho,rho"],
    ["onset", "{dose}", "--by", "rho", "--thresholds", ""],
    ["onset", "{dose}", "--by", "rho", "--thresholds", ","],
    ["dose", "{dose}", "--by", "rho", "--fit-range", ","],
    ["dose", "{dose}", "--by", "rho", "--cell", "seed,seed"],
])
def test_a_column_named_twice_or_a_blank_number_list_is_refused(logs, args) -> None:
    """`--by wd,wd` fitted one axis twice (warnings about too few runs, exit 0); a blank
    `--thresholds` or `--fit-range` (an unset shell variable) was read as left out."""
    argv = [a.format(dose=logs["dose"]) for a in args]
    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == 2, r.output
    assert r.stderr.rstrip().endswith("[INVALID_OPTION]"), r.stderr
