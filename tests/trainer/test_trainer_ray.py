"""``grokaudit train --engine ray``: the sweep's groups as Ray tasks on a local Ray cluster write
the log the in-process engine writes (byte for byte); a worker lost mid-group is retried from
the group's checkpoint, and reported; a group lost for good exits 2 with one line, writes no
log, and ``--resume`` finishes the sweep from the groups' files.

One local Ray instance serves the whole module (starting one takes seconds): it is started the
way the CLI starts it, and the CLI, finding Ray connected, uses it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # ./scripts/test --quick leaves it out

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402
from grokaudit.cli import cli as main  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SWEEP = """
name = "ray"
[base]
p = 11
alpha = 0.5
d_emb = 8
lr = 0.01
steps = 300
log_every = 50
[grid]
hidden = [16, 24]   # two shapes: two groups, two Ray tasks
seed = [0, 1]
"""

KILL = "GROKAUDIT_TEST_RAY_KILL"
#: manifest fields that describe the machine and the moment, not the sweep
ENVIRONMENT_FIELDS = ("date", "wall_seconds", "environment", "trainer_commit")


def _invoke(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["train", *args, "--threads", "1", "--device", "cpu"])
    return res.exit_code, res.output


def _provenance(path: Path) -> dict[str, object]:
    import pyarrow.parquet as pq
    from grokaudit.schema import PROVENANCE_KEY

    return json.loads((pq.read_schema(path).metadata or {})[PROVENANCE_KEY])


def _manifest(path: Path) -> dict[str, object]:
    man = tomllib.loads(path.read_text())
    return {k: v for k, v in man.items() if k not in ENVIRONMENT_FIELDS}


@pytest.fixture(scope="module")
def ray_cluster() -> object:
    ray = pytest.importorskip("ray", reason="--engine ray needs the ray extra: "
                                            "pip install 'grokaudit[ray]'")
    from grokaudit.reference_runs.ray_engine import connect

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        started = connect(ray)  # a local instance, as the CLI starts it
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = tmp_path_factory.mktemp("ray_sweep") / "sweep.toml"
    cfg.write_text(SWEEP)
    return cfg


@pytest.fixture(scope="module")
def reference(config: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The in-process log, written as ``log.parquet`` from its own folder."""
    folder = tmp_path_factory.mktemp("process")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        code, text = _invoke([str(config), "-o", "log.parquet", "--progress", "none"])
    assert code == 0, text
    return folder / "log.parquet"


def test_ray_engine_writes_the_in_process_log(ray_cluster: object, config: Path,
                                              reference: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KILL, raising=False)
    # the same relative -o as the reference: under CliRunner the recorded command is rebuilt
    # from CONFIG and -o, so the two provenances are equal and the files can be compared whole
    monkeypatch.chdir(tmp_path)
    code, text = _invoke([str(config), "-o", "log.parquet", "--engine", "ray",
                          "--progress", "lines"])
    assert code == 0, text
    out = tmp_path / "log.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(reference),
                                  check_exact=True)
    assert _provenance(out) == _provenance(reference)
    assert out.read_bytes() == reference.read_bytes()
    assert _manifest(tmp_path / "log.MANIFEST.toml") == \
        _manifest(reference.with_name("log.MANIFEST.toml"))
    # progress per task, then nothing left behind: no working folder, no temporary file
    assert "group 1/2 (2 runs): started on pid" in text
    assert "group 2/2 (2 runs): done in" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.MANIFEST.toml", "log.parquet"]


def test_lost_worker_is_retried_from_its_checkpoint(ray_cluster: object, config: Path,
                                                    reference: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the first attempt of group 2 kills its own worker (SIGKILL) after a checkpoint at step ≥ 100
    monkeypatch.setenv(KILL, "1@100")
    out = tmp_path / "log.parquet"
    code, text = _invoke([str(config), "-o", str(out), "--engine", "ray",
                          "--checkpoint-minutes", "0", "--progress", "lines"])
    assert code == 0, text
    assert "group 2/2 (2 runs): worker lost (attempt 1, pid" in text
    assert "retry 1 of 3" in text and "resumes from its checkpoint at step 1" in text
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(reference),
                                  check_exact=True)
    assert not (tmp_path / "log.parquet.ray").exists()


def test_group_lost_for_good_then_resume(ray_cluster: object, config: Path, reference: Path,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    out = tmp_path / "log.parquet"
    work = tmp_path / "log.parquet.ray"
    monkeypatch.setenv(KILL, "1@100x9")  # every attempt of group 2 dies
    code, text = _invoke([str(config), "-o", str(out), "--engine", "ray",
                          "--checkpoint-minutes", "0", "--max-retries", "0",
                          "--progress", "none"])
    assert code == 2, text
    # one error line (Ray's own report of the dead worker may come before or after it)
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    assert errors[0].startswith("error: 1 of 2 group(s) failed: group 2/2 (2 runs): worker lost")
    assert errors[0].endswith("[TRAINER_FAILED]") and "--resume" in errors[0]
    assert not out.exists()  # nothing half-written
    assert sorted(p.name for p in work.iterdir()) == ["group-0-of-2.parquet",
                                                      "group-1-of-2.ckpt"]
    monkeypatch.delenv(KILL)
    # the groups' files are work: refused without --resume, and by the other engine
    code, text = _invoke([str(config), "-o", str(out), "--engine", "ray"])
    assert code == 2 and "[WORK_WOULD_BE_LOST]" in text
    code, text = _invoke([str(config), "-o", str(out), "--resume"])
    assert code == 2 and "--engine ray --resume" in text and "[INCOMPATIBLE_INPUTS]" in text
    code, text = _invoke([str(config), "-o", str(out), "--engine", "ray", "--resume",
                          "--progress", "none"])
    assert code == 0, text
    assert f"resumed from {work}: 1 of 2 group(s) done" in text
    assert "group 2/2 (2 runs): resumed from its checkpoint at step 1" in text
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(reference),
                                  check_exact=True)
    assert not work.exists()


def test_cuda_on_a_cluster_without_gpus_exits_2(ray_cluster: object, config: Path,
                                                tmp_path: Path) -> None:
    if ray_cluster.cluster_resources().get("GPU", 0):  # type: ignore[attr-defined]
        pytest.skip("this Ray cluster has a GPU")
    res = CliRunner().invoke(main, ["train", str(config), "-o", str(tmp_path / "x.parquet"),
                                    "--engine", "ray", "--device", "cuda"])
    assert res.exit_code == 2
    assert res.output.startswith("error: --device cuda: the Ray cluster has no GPU")
    assert "[INVALID_OPTION]" in res.output and not (tmp_path / "x.parquet").exists()


def test_missing_ray_names_the_extra(config: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails
    code, text = _invoke([str(config), "-o", str(tmp_path / "x.parquet"), "--engine", "ray"])
    assert code == 2
    assert text.count("\n") == 1 and text.startswith("error: ")
    assert "pip install 'grokaudit[ray]'" in text and text.rstrip().endswith("[MISSING_EXTRA]")


def test_progress_names_each_running_group_and_its_worker(config: Path) -> None:
    """The driver's display, fed the events tasks post (no Ray needed): a line per group start,
    a retry with the lost worker and the checkpoint step, a progress line per running group."""
    import io

    from grokaudit.reference_runs.ray_engine import Board
    from grokaudit.reference_runs.sweep import expand, groups, load_sweep

    stream = io.StringIO()
    board = Board(groups(expand(load_sweep(config))), "lines", 3, stream=stream,
                  line_seconds=0.0)
    board.absorb([("start", 0, 1, "pid 11 on a", 0), ("start", 1, 1, "pid 12 on b", 0),
                  ("steps", 0, 200), ("start", 1, 2, "pid 13 on c", 100)])
    board.tick()
    text = stream.getvalue()
    assert "group 1/2 (2 runs): started on pid 11 on a\n" in text
    assert ("group 2/2 (2 runs): worker lost (attempt 1, pid 12 on b); retry 1 of 3 on pid 13 "
            "on c resumes from its checkpoint at step 100\n") in text
    assert "progress: group 1/2 (2 runs) on pid 11 on a: step 100/300 (33%)" in text
    assert "progress: group 2/2 (2 runs) on pid 13 on c: step 100/300 (33%)" in text
