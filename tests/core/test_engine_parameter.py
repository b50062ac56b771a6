"""The engine is a parameter of the audit (issue 43, item 3): the engine handed to
``audit_table``, ``audit_path``, ``audit_log`` or ``audit_stream`` is the one that cuts the runs
into blocks and computes them, with no process state on the way; ``engine_named`` builds the
engine ``--engine`` names; one function starts Ray (``start_ray``, shared with the trainer) and
one counts the CPUs (``usable_cpus``). Ray itself is replaced by a fake module here: what is
checked is what grokaudit asks of it."""

from __future__ import annotations

import json
import signal
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pytest
from grokaudit import audit_path, audit_table
from grokaudit.engine import (
    RAY_MISSING,
    THREADS,
    RayEngine,
    ThreadEngine,
    engine_named,
    start_ray,
    usable_cpus,
)
from grokaudit.errors import ConfigError, ErrorCode, MissingExtraError
from grokaudit.stream import audit_stream
from helpers.hostile import sweep_df

T = TypeVar("T")


def _sweep(n_seeds: int = 4) -> pd.DataFrame:
    """The tests' sweep (``helpers.hostile.sweep_df``): 3 weight decays × ``n_seeds`` runs of
    61 steps."""
    return sweep_df(seeds=range(n_seeds))


class Recording:
    """An engine that computes one run per block, in order, here, and records what it was
    asked: the shapes it blocked and the blocks it computed."""

    name = "recording"

    def __init__(self) -> None:
        self.shapes: list[tuple[int, int]] = []
        self.mapped: list[slice] = []

    def blocks(self, n_rows: int, n_cols: int) -> list[slice]:
        self.shapes.append((n_rows, n_cols))
        return [slice(r, r + 1) for r in range(n_rows)] or [slice(0, 0)]

    def map(self, fn: Callable[[slice], T], blocks: Sequence[slice]) -> list[T]:
        self.mapped.extend(blocks)
        return [fn(b) for b in blocks]


def _json(res: Any) -> str:
    d = res.to_dict()
    d["trail"] = None
    d["input"].pop("provenance", None)
    return json.dumps(d, sort_keys=True)


def test_the_engine_handed_to_audit_table_computes_every_block() -> None:
    df = _sweep()
    rec = Recording()
    on_rec = audit_table(df, by="wd", metrics=["emb_erank"], engine=rec)
    runs = df["run"].nunique()
    # the accuracy clocks and the metric's: each blocked and computed by the engine given
    assert len(rec.shapes) >= 2 and {n for n, _ in rec.shapes} == {runs}
    assert len(rec.mapped) == runs * len(rec.shapes)
    # one run per block (not the thread engine's one block) changes nothing
    assert on_rec.to_json() == audit_table(df, by="wd", metrics=["emb_erank"]).to_json()


def test_the_engine_is_no_state_left_behind() -> None:
    """An audit on one engine leaves nothing set: the next audit, given none, runs on the
    default, not on the last engine used."""
    df = _sweep(2)
    rec = Recording()
    audit_table(df, by="wd", engine=rec)
    seen = len(rec.mapped)
    assert seen
    audit_table(df, by="wd")
    assert len(rec.mapped) == seen


def test_audit_path_and_audit_stream_hand_their_engine_down(tmp_path: Path) -> None:
    df = _sweep()
    log = tmp_path / "log.parquet"
    df.to_parquet(log, index=False, row_group_size=61)  # one run: 61 rows
    whole_rec, parts_rec = Recording(), Recording()
    whole = audit_path(log, by="wd", metrics=["emb_erank"], engine=whole_rec)
    parts = audit_stream(log, by="wd", metrics=["emb_erank"], part_rows=100, engine=parts_rec)
    runs = df["run"].nunique()
    assert {n for n, _ in whole_rec.shapes} == {runs}
    # every part's clocks on the engine given: several parts, all the runs between them
    assert len(parts_rec.shapes) > len(whole_rec.shapes)
    assert sum(n for n, _ in parts_rec.shapes) == runs * len(whole_rec.shapes)
    assert _json(parts) == _json(whole) == _json(audit_path(log, by="wd",
                                                             metrics=["emb_erank"]))


def test_an_engine_named_is_the_one_asked_for() -> None:
    assert engine_named("threads") is THREADS and isinstance(THREADS, ThreadEngine)
    with pytest.raises(ConfigError) as err:
        engine_named("dask")
    assert err.value.code is ErrorCode.INVALID_OPTION and err.value.option == "--engine"
    assert "threads" in str(err.value) and "ray" in str(err.value)


def test_the_ray_engine_without_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MissingExtraError) as err:
        engine_named("ray")  # started when built: fails before any work
    assert err.value.code is ErrorCode.MISSING_EXTRA and str(err.value) == RAY_MISSING
    assert "grokaudit[ray]" in RAY_MISSING


class FakeRay(types.ModuleType):
    """What grokaudit uses of Ray: init (recorded; it installs a SIGTERM handler of its own,
    as Ray's does), the cluster's CPUs, and remote tasks run here."""

    def __init__(self, cpus: float = 3.0) -> None:
        super().__init__("ray")
        self.inits: list[dict[str, Any]] = []
        self.tasks = 0
        self.retries: list[int] = []
        self.cpus = cpus

    def is_initialized(self) -> bool:
        return bool(self.inits)

    def init(self, **kw: Any) -> None:
        self.inits.append(kw)
        signal.signal(signal.SIGTERM, _rays_handler)

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": self.cpus}

    def put(self, obj: Any) -> Any:
        return obj

    def get(self, refs: list[Any]) -> list[Any]:
        return [r() for r in refs]

    def remote(self, max_retries: int) -> Callable[[Callable[..., Any]], Any]:
        self.retries.append(max_retries)

        def wrap(fn: Callable[..., Any]) -> Any:
            def call(*args: Any) -> Callable[[], Any]:
                self.tasks += 1
                return lambda: fn(*args)
            return types.SimpleNamespace(remote=call)
        return wrap


def _rays_handler(signum: int, frame: Any) -> None:  # pragma: no cover - never delivered
    pass


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> Any:
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", ray)
    before = signal.getsignal(signal.SIGTERM)
    yield ray
    signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize(("address", "expected"), [
    (None, "local"), ("", "local"), ("  ", "local"), ("ray://head:10001", "ray://head:10001")])
def test_start_ray_reaches_ray_address_else_starts_a_local_instance(
        fake_ray: FakeRay, monkeypatch: pytest.MonkeyPatch, address: str | None,
        expected: str) -> None:
    if address is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", address)
    assert start_ray(5, object_store_memory=1 << 20) is fake_ray
    assert start_ray(7) is fake_ray  # once per process
    [kw] = fake_ray.inits
    assert kw["address"] == expected and kw["include_dashboard"] is False
    assert kw["log_to_driver"] is False and kw["configure_logging"] is False
    if expected == "local":
        assert kw["num_cpus"] == 5 and kw["object_store_memory"] == 1 << 20
    else:  # Ray refuses sizes for a cluster it connects to
        assert "num_cpus" not in kw and "object_store_memory" not in kw


def test_start_ray_keeps_the_commands_sigterm_handler(fake_ray: FakeRay,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def commands(signum: int, frame: Any) -> None:  # pragma: no cover - never delivered
        pass

    commands.grokaudit_after = signal.SIG_DFL  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, commands)
    start_ray()
    assert fake_ray.inits[0]["num_cpus"] == usable_cpus()
    assert signal.getsignal(signal.SIGTERM) is commands  # the command's, while it runs
    assert commands.grokaudit_after is _rays_handler  # type: ignore[attr-defined]


def test_the_ray_engine_runs_a_task_per_group_and_gives_the_threads_result(
        fake_ray: FakeRay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    df = _sweep()
    runs = df["run"].nunique()
    eng = RayEngine(num_cpus=2)
    assert eng.blocks(runs, 31) == [slice(r, min(runs, r + 2)) for r in range(0, runs, 2)]
    assert eng.blocks(1, 31) == [slice(0, 1)]
    on_ray = audit_table(df, by="wd", metrics=["emb_erank"], engine=eng)
    assert fake_ray.inits[0]["num_cpus"] == 2
    # two groups per CPU of the cluster (3): 12 runs in 6 tasks, for each clock computed
    assert fake_ray.tasks >= 2 * 6 and set(fake_ray.retries) == {3}
    assert on_ray.to_json() == audit_table(df, by="wd", metrics=["emb_erank"]).to_json()


def test_the_trainer_starts_ray_with_the_same_function(fake_ray: FakeRay,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from grokaudit.reference_runs.ray_engine import LOCAL_OBJECT_STORE, connect

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert connect(fake_ray) is True and connect(fake_ray) is False
    [kw] = fake_ray.inits
    assert kw["num_cpus"] == usable_cpus() and kw["object_store_memory"] == LOCAL_OBJECT_STORE
    assert kw["configure_logging"] is True and kw["logging_level"] >= 40  # errors only


def test_usable_cpus_are_those_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 3

    def no_affinity(pid: int) -> set[int]:
        raise OSError("not here")

    monkeypatch.setattr(os, "sched_getaffinity", no_affinity, raising=False)
    assert usable_cpus() == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cpus() == 1


def test_trainer_threads_are_capped_by_the_usable_cpus(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    import os

    from grokaudit.reference_runs.config import THREADS_PER_CPU, check_run_options

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    ok = {"max_retries": 0, "max_minutes": None, "checkpoint_minutes": 1.0}
    check_run_options(threads=THREADS_PER_CPU, engine="threads", **ok)
    with pytest.raises(ConfigError) as err:
        check_run_options(threads=THREADS_PER_CPU + 1, engine="threads", **ok)
    assert f"(1 usable CPUs × {THREADS_PER_CPU})" in str(err.value)
    check_run_options(threads=THREADS_PER_CPU + 1, engine="ray", **ok)  # per Ray task


def test_the_api_takes_an_engine_or_a_kernel_by_name(tmp_path: Path) -> None:
    """``audit_path(path, engine="threads", kernel="numpy")`` as the command line names them;
    an unknown name is INVALID_OPTION before the log is read (it was a bare AttributeError
    after the whole read and validation)."""
    import grokaudit
    from grokaudit.errors import ConfigError

    path = (Path(__file__).resolve().parents[2] / "reference_runs" / "data"
            / "transformer_ln_p23.parquet")
    by_name = grokaudit.audit_path(path, engine="threads", kernel="numpy")
    assert by_name.to_json() == grokaudit.audit_path(path).to_json()
    for kw in ({"engine": "rayy"}, {"kernel": "numbaa"}):
        with pytest.raises(ConfigError) as exc:
            grokaudit.audit_path(tmp_path / "not-read.parquet", **kw)
        assert exc.value.code.value == "INVALID_OPTION"
