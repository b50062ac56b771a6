"""Hostile checkpoints: ``train --resume`` reads a file someone else may have planted at
``OUT.ckpt``. A pickle that runs code when read is refused (``UNSAFE_FILE``) before any of it
runs; a crafted checkpoint of plain data but the wrong parts is ``FILE_UNREADABLE``, not an
internal error; what the trainer writes is plain data (tensors, numbers, strings), read back
with ``weights_only=True``, and a run resumed from it equals the uninterrupted run."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from grokaudit.errors import ConfigError, ErrorCode
from helpers.hostile import assert_unchanged, cli, expect_error, snapshot

torch = pytest.importorskip("torch", reason="the trainer's checkpoints are torch files")

from grokaudit.reference_runs.checkpoint import (  # noqa: E402
    FORMAT,
    load_checkpoint,
    restore,
    save_checkpoint,
)
from grokaudit.reference_runs.config import TrainConfig  # noqa: E402
from grokaudit.reference_runs.train import GroupTrainer  # noqa: E402

CPU = torch.device("cpu")

SWEEP = """
name = "planted"
[base]
p = 7
alpha = 0.5
d_emb = 6
hidden = 8
steps = 20
log_every = 10
"""


class Payload:
    """Unpickling it creates ``marker``: the code a planted checkpoint would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


def _planted(kind: str, path: Path, marker: Path) -> None:
    """A code-carrying file at ``path``: a bare pickle stream, or a torch file (a zip, like a
    real checkpoint) whose pickle holds the payload beside the right format tag."""
    if kind == "pickle":
        with open(path, "wb") as fh:
            pickle.dump({"format": FORMAT, "x": Payload(marker)}, fh)
    else:
        torch.save({"format": FORMAT, "sweep_id": "s", "done": {}, "current": None,
                    "x": Payload(marker)}, path)


@pytest.mark.parametrize("kind", ["pickle", "torch"])
def test_code_carrying_checkpoint_is_refused_before_it_runs(tmp_path: Path, kind: str) -> None:
    marker = tmp_path / "MARKER"
    ckpt = tmp_path / "out.parquet.ckpt"
    _planted(kind, ckpt, marker)
    with pytest.raises(ConfigError) as info:
        load_checkpoint(ckpt, "s")
    assert info.value.code is ErrorCode.UNSAFE_FILE
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["pickle", "torch"])
def test_train_resume_refuses_a_planted_checkpoint(tmp_path: Path, kind: str) -> None:
    (tmp_path / "sweep.toml").write_text(SWEEP)
    marker = tmp_path / "MARKER"
    _planted(kind, tmp_path / "out.parquet.ckpt", marker)
    before = snapshot(tmp_path)
    out = cli(["train", "sweep.toml", "-o", "out.parquet", "--resume", "--threads", "1",
               "--progress", "none"], cwd=tmp_path)
    expect_error(out, ErrorCode.UNSAFE_FILE)
    assert not marker.exists()
    assert_unchanged(before, tmp_path)  # no log, no manifest, the planted file left as it was


def test_crafted_plain_checkpoint_with_wrong_parts_is_unreadable(tmp_path: Path) -> None:
    # plain data torch loads safely, with the right tag and sweep, but no log rows inside
    ckpt = tmp_path / "c.ckpt"
    torch.save({"format": FORMAT, "sweep_id": "s", "done": {0: "rows"}, "current": None}, ckpt)
    with pytest.raises(ConfigError) as info:
        load_checkpoint(ckpt, "s")
    assert info.value.code is ErrorCode.FILE_UNREADABLE


def test_checkpoint_of_the_first_format_is_unreadable_not_unsafe(tmp_path: Path) -> None:
    # grokaudit's first format kept the log rows as numpy arrays: refused (numpy's globals are
    # not unpickled), but named for what it is, not as a file carrying code
    ckpt = tmp_path / "c.ckpt"
    rows = [{"train_acc": np.zeros(2), "step": np.zeros(2, dtype=np.int64)}]
    torch.save({"format": "grokaudit.trainer-checkpoint/1", "sweep_id": "s", "done": {0: rows},
                "current": None}, ckpt)
    with pytest.raises(ConfigError) as info:
        load_checkpoint(ckpt, "s")
    assert info.value.code is ErrorCode.FILE_UNREADABLE


def _trainer() -> GroupTrainer:
    # minibatches (a per-run torch RNG) and cv-adamw (its controller's state): every part
    # of a group's state that a resume must restore
    cfgs = [TrainConfig(arch="transformer", p=7, alpha=0.5, d_model=8, n_heads=2, mlp_ratio=2,
                        steps=12, log_every=3, batch_size=5, optimizer="cv-adamw",
                        cv_mem_threshold=0.0, seed=s) for s in (0, 1)]
    return GroupTrainer(cfgs, CPU)


def test_checkpoint_is_plain_data_and_resumes_exactly(tmp_path: Path) -> None:
    whole = _trainer()
    whole.run()
    first = _trainer()
    first.run(should_stop=lambda: first.step >= 7)
    ckpt = tmp_path / "c.ckpt"
    save_checkpoint(ckpt, "s", {0: whole.rows}, (1, first.state()))
    torch.load(ckpt, weights_only=True)  # plain data: loads without any allow-listed global
    done, current = load_checkpoint(ckpt, "s")
    assert current is not None and current[0] == 1
    second = _trainer()
    restore(second, current[1], ckpt)
    second.run()
    for a, b in zip(whole.rows, second.rows, strict=True):
        assert list(a) == list(b)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
            assert a[k].dtype == b[k].dtype
    for k, v in whole.model.state_dict().items():
        torch.testing.assert_close(v, second.model.state_dict()[k], rtol=0, atol=0)
    assert [list(r) for r in done[0]] == [list(r) for r in whole.rows]
    for a, b in zip(whole.rows, done[0], strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
