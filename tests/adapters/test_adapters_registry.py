"""The registry (entry points, detection, extras) and the `convert` / `formats` commands."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from grokaudit.adapters import (
    Reader,
    detect_format,
    list_formats,
    read_log,
    readers,
)
from grokaudit.adapters import registry as reg
from grokaudit.adapters.points import Points
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode, LogFormatError, MissingExtraError
from grokaudit.schema import PROVENANCE_KEY, read_arrow

BUILTINS = {"table", "npz", "tensorboard", "wandb-csv", "wandb-history", "wandb-offline",
            "mlflow", "mlflow-sqlite", "text"}


def _toy_read(path: Path, options) -> Points:  # type: ignore[no-untyped-def]
    pts = Points(files=[str(path)])
    pts.add("toy", "test_acc", np.arange(5), np.linspace(0, 1, 5))
    return pts


TOY = Reader(name="toy", description="A third-party toy format", read=_toy_read,
             detect=lambda p: p.suffix == ".toy", priority=10)


def test_builtins_are_installed_as_entry_points() -> None:
    eps = {e.name for e in importlib.metadata.entry_points(group="grokaudit.adapters")}
    if not eps:
        pytest.skip("package metadata predates the entry points; reinstall with pip install -e .")
    assert BUILTINS <= eps


def test_third_party_entry_point_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint(name="toy", value=f"{__name__}:TOY",
                                       group="grokaudit.adapters")
    monkeypatch.setitem(sys.modules, __name__, sys.modules[__name__])
    real = importlib.metadata.entry_points
    monkeypatch.setattr(reg.importlib.metadata, "entry_points",
                        lambda group=None: [ep, *real(group=group)])
    assert set(readers()) == BUILTINS | {"toy"}
    p = tmp_path / "x.toy"
    p.write_text("anything")
    assert detect_format(p) == "toy"
    t = read_log(p)
    assert json.loads(t.schema.metadata[PROVENANCE_KEY])["adapter"] == "toy"


def test_list_formats_reports_extras() -> None:
    infos = {i.name: i for i in list_formats()}
    assert set(infos) >= BUILTINS
    assert infos["tensorboard"].extra == "tensorboard"
    assert infos["table"].extra is None and infos["table"].extra_installed


def test_missing_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "events.out.tfevents.1.host").write_bytes(b"\x00" * 32)
    for mod in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard -> ImportError
    with pytest.raises(MissingExtraError) as exc:
        read_log(d)
    assert exc.value.code is ErrorCode.MISSING_EXTRA
    assert "grokaudit[tensorboard]" in str(exc.value)
    assert not {i.name: i for i in list_formats()}["tensorboard"].extra_installed


@pytest.mark.parametrize("content,code", [(None, ErrorCode.FILE_NOT_FOUND),
                                          (b"", ErrorCode.FILE_EMPTY),
                                          (b"\x89PNG\r\n\x1a\n", ErrorCode.UNKNOWN_FORMAT)])
def test_unknown_or_empty_path_is_a_log_format_error(tmp_path: Path, content: bytes | None,
                                                     code: ErrorCode) -> None:
    p = tmp_path / "thing.bin"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        detect_format(p)
    assert exc.value.path == str(p) and exc.value.code is code


def test_unknown_format_name(tmp_path: Path) -> None:
    small = tmp_path / "r.csv"
    small.write_text("step,test_acc\n0,0.5\n")
    with pytest.raises(LogFormatError) as exc:
        read_log(small, "no-such-format")
    assert exc.value.code is ErrorCode.UNKNOWN_FORMAT


# -- CLI ------------------------------------------------------------------------------------------

def test_convert_writes_canonical_parquet_with_provenance(tmp_path: Path) -> None:
    src = tmp_path / "runs" / "wd1.5_s0"
    src.mkdir(parents=True)
    pd.DataFrame({"step": np.arange(0, 100, 10), "val_acc": np.linspace(0, 100, 10),
                  "emb_erank": 5.0 - np.arange(10) / 10}).to_csv(src / "m.csv", index=False)
    out = tmp_path / "logs.parquet"
    res = CliRunner().invoke(cli, ["convert", str(tmp_path / "runs"), "-o", str(out),
                                   "--map", "val_acc=test_acc", "--run-from", "path",
                                   "--cond", r"wd=wd([0-9.]+)"])
    assert res.exit_code == 0, res.output
    t = read_arrow(out)
    prov = json.loads(t.schema.metadata[PROVENANCE_KEY])
    assert prov["adapter"] == "table" and prov["schema_version"] == 1
    df = t.to_pandas()
    assert df["run"].unique().tolist() == ["wd1.5_s0"] and df["wd"].iloc[0] == 1.5
    assert df["test_acc"].max() == pytest.approx(100.0)  # as logged; the audit reads percent


@pytest.mark.parametrize("args,code", [(["--format", "tensorboard"], ErrorCode.FILE_EMPTY),
                                       ([], ErrorCode.FILE_EMPTY),
                                       (["--map", "nonsense"], ErrorCode.INVALID_OPTION)])
def test_convert_bad_input_exits_2_naming_the_file(tmp_path: Path, args: list[str],
                                                   code: ErrorCode) -> None:
    p = tmp_path / "empty.csv"
    p.write_bytes(b"")
    res = CliRunner().invoke(cli, ["convert", str(p), "-o", str(tmp_path / "o.parquet"), *args])
    assert res.exit_code == 2
    assert res.stderr.startswith("error:") and res.stderr.rstrip().endswith(f"[{code.value}]")
    assert not (tmp_path / "o.parquet").exists() and p.read_bytes() == b""


def test_formats_command_lists_every_reader() -> None:
    res = CliRunner().invoke(cli, ["formats", "--json"])
    assert res.exit_code == 0
    assert {f["name"] for f in json.loads(res.output)} >= BUILTINS
    res = CliRunner().invoke(cli, ["formats"])
    assert res.exit_code == 0 and len(res.output.strip().splitlines()) >= len(BUILTINS)


def _needs(module: str, extra: str) -> Any:
    """A case that needs an optional extra's reader: skipped with the reason without it (its
    reader would say MISSING_EXTRA first, which names no file)."""
    import importlib.util

    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"reading it needs the [{extra}] extra")


@pytest.mark.parametrize("name,content", [
    pytest.param("run/events.out.tfevents.1.host", b"",
                 marks=_needs("tensorboard", "tensorboard")),
    pytest.param("run/events.out.tfevents.1.host", b"garbage garbage garbage",
                 marks=_needs("tensorboard", "tensorboard")),
    pytest.param("offline-run-1-abc/run-abc.wandb", b"", marks=_needs("wandb", "wandb")),
    ("cell.npz", b"PK\x03\x04 truncated"),
    ("mlflow.db", b"SQLite format 3\x00" + b"\x00" * 84),
])
def test_check_and_convert_exit_2_naming_the_file(tmp_path: Path, name: str,
                                                  content: bytes) -> None:
    f = tmp_path / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(content)
    target = str(f.parent if f.parent != tmp_path else f)
    for args in (["check", target], ["convert", target, "-o", str(tmp_path / "o.parquet")]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2, (args, res.output)
        assert f.name in res.output or target in res.output
