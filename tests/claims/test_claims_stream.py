"""The claim commands on a log read in parts (``--stream``) give the in-memory JSON, byte for
byte, the trail aside: the accuracy clocks, the re-clocking at other grok thresholds
(``onset --thresholds``), a mediator series (``dose --mediator``) and the heads' last
similarity (``transition``) are computed part by part. Logs are written by pyarrow's writers
in row groups that cut runs, and as a hive dataset folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import make_claims_examples as ex
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from grokaudit.claims.precursor import run_precursor
from grokaudit.claims.simulate import make_log
from grokaudit.cli import cli
from grokaudit.config import make_config
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.stream import open_log_parts


def _mediated(rng: np.random.Generator) -> pd.DataFrame:
    """A dose sweep whose mediator moves within each run (a per-step series, not a
    condition) and whose heads' similarity is logged."""
    rows = []
    for rho in (1.0, 1.2, 1.4, 1.6, 1.8):
        for s in range(4):
            t = float(np.ceil(400 * np.exp(1.1 * (rho - 1) + rng.normal(0, 0.05))))
            rows.append({"run": f"rho{rho:g}_s{s}", "rho": rho, "seed": s, "t_grok": t,
                         "budget": 2500})
    return make_log(pd.DataFrame(rows), every=10, series={
        "logit_scale": lambda r, st: 10 * r["rho"] * (1 + st / 5000.0),
        "attn_head_cos": lambda r, st: np.minimum(1.0, 0.5 + st / (3000.0 * r["rho"]))})


LOGS = {"onset": ex.onset, "dose": ex.dose, "transition": ex.transition,
        "compare": ex.compare, "mediated": _mediated}

ON = ["--n-resamples", "20"]
#: (log, arguments, exit code in memory)
CASES = [
    ("onset", ["onset", "--by", "H,lr", "--thresholds", "0.9,0.99", *ON], 1),
    ("dose", ["dose", "--by", "rho", "--fit-range", "1,1.75", "--mediator", "logit_scale",
              "--baseline", "rho=1,tau=1", "--raised", "rho=1.15,tau=1", "--sweep", "tau", *ON],
     0),
    ("dose", ["onset", "--by", "rho,tau", "--thresholds", "0.9,0.99", *ON], 0),
    ("transition", ["transition", "--by", "wd", *ON], 0),
    ("compare", ["compare", "--by", "method", "--pair", "seed"], 1),
    ("mediated", ["dose", "--by", "rho", "--mediator", "logit_scale", "--baseline", "rho=1",
                  "--raised", "rho=1.4", "--sweep", "seed", *ON], 0),
    ("mediated", ["transition", "--by", "rho", *ON], 0),
    ("onset", ["dose", "--by", "H", *ON], 2),  # lr varies at each H: refused, the same way
]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("claims_stream")
    out = {}
    for name, make in LOGS.items():
        table = pa.Table.from_pandas(make(np.random.default_rng(2026)), preserve_index=False)
        out[name] = d / f"{name}.parquet"
        # row groups that cut runs (the example logs' runs are 150–600 rows; small row groups
        # in the small log, larger ones in the larger logs, whose claims re-read every part)
        pq.write_table(table, out[name], row_group_size=97 if name == "mediated" else 997)
    return out


def _invoke(args: list[str]) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _json(args: list[str]) -> tuple[int, dict[str, Any] | str]:
    code, out, err = _invoke([*args, "--json", "-"])
    if code == 2:
        return code, err
    d = json.loads(out)
    d.pop("trail")
    return code, d


@pytest.mark.parametrize("name,args,code", CASES, ids=[f"{n}-{a[0]}-{i}"
                                                        for i, (n, a, _) in enumerate(CASES)])
def test_a_claim_streamed_is_the_claim_in_memory(logs: dict[str, Path], name: str,
                                                 args: list[str], code: int) -> None:
    path = str(logs[name])
    whole = _json([args[0], path, *args[1:]])
    parts = _json([args[0], path, *args[1:], "--stream", "--part-rows", "1500"])
    assert whole[0] == code
    assert whole == parts


def test_series_claims_are_computed_part_by_part(logs: dict[str, Path]) -> None:
    """The mediator and the heads' similarity are per-step series here (not conditions), and
    the log is read in many parts: the streamed path computes them from the parts."""
    parts = open_log_parts(logs["mediated"], make_config(), part_rows=300)
    assert {"logit_scale", "attn_head_cos"} <= set(parts.log.series)
    assert "logit_scale" not in parts.log.conditions.columns
    seen: list[int] = []
    ids = parts.map(lambda lg, runs: (seen.append(runs.stop - runs.start),
                                      np.asarray(lg.run_ids, dtype=object))[1])
    assert len(seen) > 3 and sum(seen) == parts.log.n_runs
    assert ids.tolist() == parts.log.run_ids.tolist()


def test_a_hive_folder_is_streamed_as_its_file(logs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    pq.write_to_dataset(pq.read_table(logs["transition"]), root, partition_cols=["wd"])
    args = ["transition", "--by", "wd", *ON]
    whole = _json([args[0], str(root), *args[1:]])
    parts = _json([args[0], str(root), *args[1:], "--stream", "--part-rows", "500"])
    assert whole == parts and whole[0] in (0, 1)


def test_precursor_is_not_streamed(logs: dict[str, Path]) -> None:
    """Its null draws read every run's points at once: no --stream option, and a log read in
    parts is refused in Python."""
    code, _, err = _invoke(["precursor", str(logs["mediated"]), "--signal", "logit_scale",
                            "--stream"])
    assert code == 2 and "--stream" in err
    parts = open_log_parts(logs["mediated"], make_config(), part_rows=300)
    with pytest.raises(ConfigError) as e:
        run_precursor(parts, make_config(), signal="logit_scale")
    assert e.value.code == ErrorCode.INVALID_OPTION


@pytest.mark.parametrize("extra, option", [
    (["--part-rows", "500"], "--part-rows"),
    (["--stream", "--format", "table"], "--stream"),
    (["--stream", "--part-rows", "0"], "part_rows"),
])
def test_claim_stream_refusals_are_one_line_and_exit_2(logs: dict[str, Path],
                                                       extra: list[str], option: str) -> None:
    code, out, err = _invoke(["compare", str(logs["compare"]), "--by", "method", "--pair",
                              "seed", "--json", "-", *extra])
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert option.replace("_", "-") in err
