"""Atomic checkpoints: a sweep's finished groups and the running group's exact state.

Written with ``torch.save`` to a temporary file in the target's folder, flushed and fsynced,
then renamed over the target: a crash (even SIGKILL) leaves either the old or the new
checkpoint, never a torn one.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.outputs import open_temp

from .train import GroupState

FORMAT = "grokaudit.trainer-checkpoint/1"


def save_checkpoint(path: Path, sweep_id: str, done: dict[int, list[dict[str, Any]]],
                    current: tuple[int, GroupState] | None) -> None:
    """Atomically write the checkpoint: ``done`` maps finished group index → log rows;
    ``current`` is the running group's index and state (None between groups)."""
    payload = {
        "format": FORMAT,
        "sweep_id": sweep_id,
        "done": done,
        "current": None if current is None else (current[0], asdict(current[1])),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    made: list[str] = []  # the temporary file's name, known before the file exists
    try:
        fd = open_temp(path.parent, f".{path.name}.", ".tmp", made)
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(made[-1], path)
    except BaseException:
        for name in made:
            Path(name).unlink(missing_ok=True)
        raise


def load_checkpoint(path: Path, sweep_id: str
                    ) -> tuple[dict[int, list[dict[str, Any]]], tuple[int, GroupState] | None]:
    """Read a checkpoint written by :func:`save_checkpoint` for the same sweep.

    Raises :class:`ConfigError` when it belongs to another sweep (a changed config or shard).
    """
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ConfigError(f"{path}: cannot read checkpoint ({type(exc).__name__}); delete it "
                          "to start over", code=ErrorCode.FILE_UNREADABLE) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a grokaudit trainer checkpoint; delete it to start over", code=ErrorCode.FILE_UNREADABLE)
    if payload["sweep_id"] != sweep_id:
        raise ConfigError(f"{path}: checkpoint belongs to a different sweep (config, flags or "
                          "shard changed); delete it or drop --resume to start over", code=ErrorCode.INCOMPATIBLE_INPUTS)
    cur = payload["current"]
    current = None if cur is None else (int(cur[0]), GroupState(**cur[1]))
    return payload["done"], current
