"""The loader reads every input that is not a canonical table through the reader it is given
(issue 23): a canonical table never reaches it, the public entry points (``audit_path``, the
command line) pass the adapters' registry from ``grokaudit.readers``, and the core names the
adapters there only. Also: the canonical table (``schema``) is in no import cycle."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner
from grokaudit import readers
from grokaudit.cli import cli
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.limits import Limits
from grokaudit.loader import read_any, read_source
from grokaudit.schema import write_table

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "audit"
LOG = ROOT / "reference_runs" / "data" / "mlp_wd_sweep_p59.parquet"
OPTS = {"by": "wd", "metrics": ["emb_pr"], "cell": ["arch"]}


class Recording:
    """A :class:`~grokaudit.readers.LogReader` that records each path it is given and reads it
    with the adapters (or refuses it, with ``refuse``)."""

    def __init__(self, refuse: bool = False) -> None:
        self.calls: list[Path] = []
        self.refuse = refuse

    def __call__(self, path: Path, format: str | None, /, *, mapping: dict[str, str] | None,
                 run_from: str | None, cond: dict[str, str] | None, partial: bool,
                 limits: Limits | None) -> pa.Table:
        self.calls.append(Path(path))
        if self.refuse:
            raise LogFormatError("refused by the test's reader", path=str(path),
                                 code=ErrorCode.UNKNOWN_FORMAT)
        return readers.InstalledAdapters()(path, format, mapping=mapping, run_from=run_from,
                                           cond=cond, partial=partial, limits=limits)


def _frame(t: pa.Table) -> pd.DataFrame:
    df = t.to_pandas()
    df["run"] = df["run"].astype(str)
    return df.sort_values(["run", "step"]).reset_index(drop=True)


@pytest.fixture()
def canonical(tmp_path: Path) -> Path:
    steps = np.arange(0, 500, 50)
    df = pd.DataFrame({"run": np.repeat(["a", "b"], steps.size), "step": np.tile(steps, 2),
                       "test_acc": np.tile(np.linspace(0, 1, steps.size), 2)})
    return write_table(df, tmp_path / "acc.parquet")


@pytest.fixture()
def npz(tmp_path: Path) -> Path:
    """An NPZ sweep (two seeds), written by numpy: read only by an adapter."""
    steps = np.arange(0, 500, 50)
    p = tmp_path / "sweep.npz"
    np.savez(p, steps=steps, test_acc=np.vstack([np.linspace(0, 1, steps.size)] * 2),
             emb_pr=np.vstack([np.linspace(40, 20, steps.size)] * 2), wd=np.array(1.0))
    return p


@pytest.fixture(scope="module")
def val_acc_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled log as a CSV whose accuracy is named ``val_acc``: not a canonical table, so
    the adapters read it (and choose ``val_acc`` as the test accuracy)."""
    df = pd.read_parquet(LOG)[["run", "step", "test_acc", "emb_pr", "wd", "arch"]]
    p = tmp_path_factory.mktemp("csv") / "log.csv"
    df.rename(columns={"test_acc": "val_acc"}).to_csv(p, index=False)
    return p


def test_a_canonical_table_never_reaches_the_reader(canonical: Path) -> None:
    rec = Recording()
    t = read_any(canonical, readers=rec)
    assert rec.calls == []
    pd.testing.assert_frame_equal(_frame(t), _frame(read_any(canonical)))


def test_another_format_is_read_by_the_reader_given(npz: Path) -> None:
    rec = Recording()
    t = read_any(npz, readers=rec)
    assert rec.calls == [npz]
    pd.testing.assert_frame_equal(_frame(t), _frame(read_any(npz)))  # the default: the adapters
    rec_lazy = Recording()
    read_source(npz, readers=rec_lazy)
    assert rec_lazy.calls == [npz]


def test_several_paths_each_go_to_the_reader_only_when_not_canonical(canonical: Path,
                                                                     npz: Path) -> None:
    rec = Recording()
    t = read_any([canonical, npz], readers=rec)
    assert rec.calls == [npz]
    assert set(t.column("run").to_pylist()) == {"a", "b", "sweep/s0", "sweep/s1"}


def test_a_reader_that_refuses_is_the_loaders_error(canonical: Path, npz: Path) -> None:
    with pytest.raises(LogFormatError) as ei:
        read_any([canonical, npz], readers=Recording(refuse=True))
    assert ei.value.code is ErrorCode.UNKNOWN_FORMAT
    assert read_any(canonical, readers=Recording(refuse=True)).num_rows == 20


def test_audit_path_passes_the_adapters_registry(monkeypatch: pytest.MonkeyPatch,
                                                 val_acc_csv: Path) -> None:
    import grokaudit

    expected = grokaudit.audit_path(val_acc_csv, **OPTS).to_json()
    rec = Recording()
    monkeypatch.setattr(readers, "ADAPTERS", rec)
    assert grokaudit.audit_path(val_acc_csv, **OPTS).to_json() == expected
    assert rec.calls == [val_acc_csv]
    monkeypatch.setattr(readers, "ADAPTERS", Recording(refuse=True))
    with pytest.raises(LogFormatError) as ei:
        grokaudit.audit_path(val_acc_csv, **OPTS)
    assert ei.value.code is ErrorCode.UNKNOWN_FORMAT


def test_the_command_line_passes_the_adapters_registry(monkeypatch: pytest.MonkeyPatch,
                                                       val_acc_csv: Path) -> None:
    args = ["check", str(val_acc_csv), "--by", "wd", "--metric", "emb_pr", "--cell", "arch",
            "--json", "-"]
    rec = Recording()
    monkeypatch.setattr(readers, "ADAPTERS", rec)
    r = CliRunner().invoke(cli, args)
    assert r.exit_code in (0, 1), r.output
    assert rec.calls == [val_acc_csv]
    assert json.loads(r.stdout)["input"]["provenance"]["adapter"] == "table"
    monkeypatch.setattr(readers, "ADAPTERS", Recording(refuse=True))
    assert CliRunner().invoke(cli, args).exit_code == 2


def _imports(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function, absolute names; and
    every literal passed to ``importlib.import_module``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = package if path.name == "__init__.py" else package.rsplit(".", 1)[0]
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                parts = here.split(".")
                parts = parts[: len(parts) - (n.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            out.add(base)
            out.update(f"{base}.{a.name}" for a in n.names)
        elif isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif (isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "import_module"
              and n.args and isinstance(n.args[0], ast.Constant)):
            out.add(str(n.args[0].value))
    return out


def _core_graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for p in AUDIT.rglob("*.py"):
        parts = [x for x in p.relative_to(AUDIT).with_suffix("").parts if x != "__init__"]
        mods[".".join(["grokaudit", *parts])] = p
    return {m: {t for t in _imports(p, m) if t in mods and t != m} for m, p in mods.items()}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_core_names_the_adapters_in_one_place() -> None:
    naming = sorted(
        str(p.relative_to(ROOT)) for p in AUDIT.rglob("*.py")
        if any(t == "grokaudit.adapters" or t.startswith("grokaudit.adapters.")
               for t in _imports(p, "grokaudit." + ".".join(
                   x for x in p.relative_to(AUDIT).with_suffix("").parts if x != "__init__"))))
    assert naming == ["audit/readers.py"]


def test_the_canonical_table_is_in_no_import_cycle() -> None:
    graph = _core_graph()
    assert "grokaudit.schema" not in _reach(graph, "grokaudit.schema")
    assert "grokaudit.logger" not in _reach(graph, "grokaudit.schema")
    assert "grokaudit.schema" in _reach(graph, "grokaudit.logger")  # the one direction
