"""Atomic checkpoints: a sweep's finished groups and the running group's exact state.

Written with ``torch.save`` to a temporary file in the target's folder, flushed and fsynced,
then renamed over the target (:func:`grokaudit.outputs.atomic_write_with`, the project's one
atomic writer): a crash (even SIGKILL) leaves either the old or the new checkpoint, never a torn
one; an error or an interruption leaves no temporary file.

A checkpoint holds plain data only: tensors, numbers, strings, ``None`` and lists, tuples and
dicts of them (the log rows' numpy arrays are stored as tensors and come back as arrays). It is
read with ``torch.load(weights_only=True)``, which never calls into code named by the file: a
planted pickle that would run code when unpickled is refused (``UNSAFE_FILE``) before any of it
runs.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from grokaudit.errors import ConfigError, ErrorCode
from grokaudit.outputs import atomic_write_with

from .train import GroupState, GroupTrainer

FORMAT = "grokaudit.trainer-checkpoint/2"

#: The first bytes of the file ``torch.save`` writes: a zip archive.
ZIP_MAGIC = b"PK\x03\x04"
#: The first byte of a pickle stream of protocol 2 or later (the PROTO opcode): what a planted
#: ``pickle.dump`` or a legacy ``torch.save`` file starts with. Never ours.
PICKLE_PROTO = 0x80

#: What every checkpoint format grokaudit wrote names first in its pickle (``{"format": ...}``)
FORMAT_TAG = b"grokaudit.trainer-checkpoint/"
#: How much of the archive's pickle :func:`is_checkpoint` reads: the tag is in its first bytes.
_HEAD_BYTES = 4096

Rows = list[dict[str, np.ndarray]]


def is_checkpoint(path: Path) -> bool:
    """Whether ``path`` is a checkpoint grokaudit's trainer wrote (of any format): a zip archive
    (what ``torch.save`` writes) whose pickle names :data:`FORMAT_TAG` in its first bytes.

    Decided from the file's bytes alone: nothing is unpickled, so a planted file runs nothing.
    A text, a log, a config, a bare pickle, another zip or torch file, an unreadable or torn
    file: False. ``train`` never replaces or removes such a file (see docs/trainer.md)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
                return False
        with zipfile.ZipFile(path) as zf:
            pkl = [n for n in zf.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pkl) != 1:
                return False
            with zf.open(pkl[0]) as fh:
                head = fh.read(_HEAD_BYTES)
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, EOFError):
        return False
    return FORMAT_TAG in head


def save_checkpoint(path: Path, sweep_id: str, done: dict[int, Rows],
                    current: tuple[int, GroupState] | None) -> None:
    """Atomically write the checkpoint: ``done`` maps finished group index → log rows;
    ``current`` is the running group's index and state (None between groups). A path that
    cannot be written, or a full disk: ``OutputError`` (``OUTPUT_NOT_WRITABLE``), the previous
    checkpoint kept as it was."""
    payload = {
        "format": FORMAT,
        "sweep_id": sweep_id,
        "done": {int(k): _rows_to_tensors(v) for k, v in done.items()},
        "current": None if current is None else [int(current[0]), _state_to_plain(current[1])],
    }

    def write(tmp: str) -> None:
        try:
            with open(tmp, "wb") as fh:
                torch.save(payload, fh)
        except RuntimeError as exc:
            # a failed write (a full disk) surfaces from torch's zip writer as a RuntimeError
            # raised while handling the OSError: report the OSError (OUTPUT_NOT_WRITABLE)
            if isinstance(exc.__context__, OSError):
                raise exc.__context__ from None
            raise

    # 0600 as before: a checkpoint is this sweep's private state, not a file to share
    atomic_write_with(path, write, flag="the checkpoint", fsync=True, mode=0o600,
                      temp_suffix=".tmp")


def refuse_foreign(path: Path) -> None:
    """Refuse (:class:`ConfigError`, ``OUTPUT_NOT_WRITABLE``) to write or remove a checkpoint at
    ``path`` when a file there is not one (:func:`is_checkpoint`): a note, a log, a planted
    pickle is never called a checkpoint, and never replaced or removed, not even with
    ``--overwrite``."""
    if os.path.lexists(path) and not is_checkpoint(path):
        raise ConfigError(f"{path}: the checkpoint's path holds a file that is not a grokaudit "
                          "trainer checkpoint; it is not touched (not even with --overwrite): "
                          "name another file with --checkpoint (or another -o), or move this "
                          "one away", code=ErrorCode.OUTPUT_NOT_WRITABLE, option="--checkpoint")


def load_checkpoint(path: Path, sweep_id: str
                    ) -> tuple[dict[int, Rows], tuple[int, GroupState] | None]:
    """Read a checkpoint written by :func:`save_checkpoint` for the same sweep.

    Raises :class:`ConfigError`: ``UNSAFE_FILE`` for a pickle, or a torch file that holds
    anything but plain data (nothing in it has run); ``FILE_UNREADABLE`` for any other file
    that is not such a checkpoint; ``INCOMPATIBLE_INPUTS`` when it belongs to another sweep (a
    changed config or shard).
    """
    payload = _read_plain(path)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a grokaudit trainer checkpoint (or one written by "
                          "another version); delete it to start over",
                          code=ErrorCode.FILE_UNREADABLE, option="--checkpoint")
    if payload.get("sweep_id") != sweep_id:
        raise ConfigError(f"{path}: checkpoint belongs to a different sweep (config, flags or "
                          "shard changed); delete it or drop --resume to start over",
                          code=ErrorCode.INCOMPATIBLE_INPUTS)
    try:
        done = {int(k): _rows_from_tensors(v) for k, v in payload["done"].items()}
        cur = payload["current"]
        current = None if cur is None else (int(cur[0]), _state_from_plain(cur[1]))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        raise ConfigError(f"{path}: a damaged grokaudit trainer checkpoint (a part is missing "
                          "or of the wrong kind); delete it to start over",
                          code=ErrorCode.FILE_UNREADABLE, option="--checkpoint") from None
    return done, current


def _read_plain(path: Path) -> object:
    """The file's payload, unpickled with torch's weights-only unpickler (plain data only)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(ZIP_MAGIC))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read checkpoint ({exc.strerror}); check the path, "
                          "or delete it to start over", code=ErrorCode.FILE_UNREADABLE,
                          option="--checkpoint") from None
    if head[:1] == bytes([PICKLE_PROTO]):
        raise _unsafe(path, "a bare pickle stream, which can run code when read")
    if head != ZIP_MAGIC:  # a config, a log, text: nothing that could carry code for torch
        raise ConfigError(f"{path}: not a grokaudit trainer checkpoint (not a torch file); "
                          "give the checkpoint --checkpoint names, or delete this file to start "
                          "over", code=ErrorCode.FILE_UNREADABLE, option="--checkpoint")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # a global outside torch's allow-list: code, or objects
        if _older_format(path):
            raise ConfigError(f"{path}: a checkpoint of an earlier grokaudit (its log rows are "
                              "numpy arrays, which this version does not unpickle); delete it "
                              "and start over, or finish the sweep with the version that "
                              "wrote it", code=ErrorCode.FILE_UNREADABLE,
                              option="--checkpoint") from None
        raise _unsafe(path, "a torch file holding objects other than tensors and numbers, "
                            "which can run code when read") from None
    except Exception as exc:  # noqa: BLE001 - any other unreadable file is the same user error
        raise ConfigError(f"{path}: cannot read checkpoint ({type(exc).__name__}); delete it "
                          "to start over", code=ErrorCode.FILE_UNREADABLE,
                          option="--checkpoint") from None


#: The only globals besides torch's own in a checkpoint of grokaudit's first format: numpy
#: arrays (the log rows). Named by the file's opcodes, never imported or called here.
_FORMAT_1_GLOBALS = frozenset({"numpy.ndarray", "numpy.dtype",
                               "numpy._core.multiarray._reconstruct",
                               "numpy.core.multiarray._reconstruct"})


def _older_format(path: Path) -> bool:
    """Whether the torch file refused by the weights-only loader names no global but numpy's
    array ones: a checkpoint grokaudit's first format wrote (the file is scanned, not run)."""
    try:
        names = set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception:  # noqa: BLE001 - unscannable: not ours
        return False
    return bool(names) and names <= _FORMAT_1_GLOBALS


def _unsafe(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: refused to load {what}; grokaudit's checkpoints hold plain data "
                       "only: delete this file (do not load it elsewhere) and start over, or "
                       "name the real checkpoint with --checkpoint",
                       code=ErrorCode.UNSAFE_FILE, option="--checkpoint")


def _rows_to_tensors(rows: Rows) -> dict[str, Any]:
    """Log rows (dicts of per-run numpy arrays, the same keys in each) as one tensor per
    column, ``[points, runs]``, of the same dtype and values: a tensor is a record of the
    file, so one per column keeps a checkpoint of thousands of log points fast to write."""
    keys = list(rows[0]) if rows else []
    if any(list(r) != keys for r in rows):
        raise ValueError("log rows with different columns cannot be checkpointed")
    return {"n": len(rows),
            "columns": {k: torch.from_numpy(np.stack([r[k] for r in rows])) for k in keys}}


def _rows_from_tensors(packed: dict[str, Any]) -> Rows:
    """The inverse of :func:`_rows_to_tensors`; TypeError/ValueError for a malformed part."""
    n, cols = packed["n"], packed["columns"]
    if not isinstance(n, int) or not isinstance(cols, dict) or not all(
            isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == n
            for v in cols.values()):
        raise TypeError("rows")
    arrays = {str(k): v.numpy() for k, v in cols.items()}
    return [{k: a[i] for k, a in arrays.items()} for i in range(n)]


def _state_to_plain(st: GroupState) -> dict[str, Any]:
    """A group's state as plain data (its log rows as tensors)."""
    # the model, optimizer and RNG parts are tensors (and the step count) already
    return {"step": int(st.step), "model": st.model, "optim": st.optim, "rng": st.rng,
            "rows": _rows_to_tensors(st.rows), "ctrl": st.ctrl}


def _state_from_plain(d: dict[str, Any]) -> GroupState:
    """The inverse of :func:`_state_to_plain`; TypeError/KeyError for a malformed state."""
    if not isinstance(d, dict) or not isinstance(d["model"], dict) \
            or not isinstance(d["optim"], dict):
        raise TypeError("state")
    rng = d["rng"]
    ctrl = d.get("ctrl")
    if rng is not None and not isinstance(rng, torch.Tensor):
        raise TypeError("rng")
    if ctrl is not None and not isinstance(ctrl, dict):
        raise TypeError("ctrl")
    return GroupState(step=int(d["step"]), model=d["model"], optim=d["optim"], rng=rng,
                      rows=_rows_from_tensors(d["rows"]), ctrl=ctrl)


def restore(trainer: GroupTrainer, state: GroupState, path: Path) -> None:
    """Load a checkpoint's group state into ``trainer``; a state whose parts do not fit the
    group's model (a crafted or damaged file of the same sweep) is ``FILE_UNREADABLE``."""
    try:
        trainer.load(state)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError):
        raise ConfigError(f"{path}: a damaged grokaudit trainer checkpoint (its state does not "
                          "fit this sweep's model); delete it to start over",
                          code=ErrorCode.FILE_UNREADABLE, option="--checkpoint") from None
