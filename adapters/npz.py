"""Per-condition NPZ sweeps: one ``.npz`` file per cell, holding ``(seeds, T)`` arrays.

The layout of several public grokking repositories (e.g. critical-norm-grokking)::

    grokfss_p59/adamw_p59_a0.30_…npz
        steps          (T,)     logged steps
        test_acc/acc   (S, T)   one row per seed        -> metric columns
        eff_rank_E/eff (S, T)                           -> metric columns
        alpha, p, lam  ()       scalars                 -> condition columns
        T_grok_per_seed (S,)    per-run attributes      -> provenance ``run_attributes``

Run ids are ``<file stem>/s<seed index>``; the seed index is the ``seed`` condition.
Per-run attributes stay out of the table (as columns they would look like conditions that split
a cell seed by seed); they are kept in the provenance.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.text import safe

from .merge import ReadOptions
from .points import Points, as_steps
from .registry import Reader

#: Key aliases of the public layouts, read as the canonical names.
ALIASES = {"acc": "test_acc", "eff": "eff_rank_E"}


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(q for q in path.rglob("*.npz") if q.is_file())


def _detect(path: Path) -> bool:
    """An ``.npz`` file, or a folder of them with no table file (a folder is classified by
    all its files: NPZ snapshots beside JSON or CSV logs do not make it an NPZ sweep)."""
    if path.is_file():
        return path.suffix.lower() == ".npz"
    from .files import table_files
    from .records import SIDECAR_NAMES, config_like

    if not any(True for _ in path.rglob("*.npz")):
        return False
    return all(f.name in SIDECAR_NAMES or config_like(f) for f in table_files(path))


def _scalar(a: np.ndarray) -> Any:
    if a.dtype == np.float32:  # the value as written (0.15), not its float32 expansion
        return float(str(a.reshape(())[()]))
    v = a.item()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _real(a: np.ndarray) -> bool:
    """Integer, unsigned, float or boolean values (not complex, text, dates or objects)."""
    return a.dtype.kind in "iufb"


def _load(f: Path) -> dict[str, np.ndarray]:
    """Every array of one NPZ file, never unpickling (an object array would run code)."""
    key = None
    try:
        z = np.load(f, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise LogFormatError("holds a single .npy array, not an NPZ archive of named "
                                 "arrays; save the sweep with np.savez", path=str(f),
                                 code=ErrorCode.FILE_UNREADABLE)
        with z:
            arrays = {}
            for key in z.files:
                arrays[key] = z[key]
            return arrays
    except LogFormatError:
        raise
    except ValueError as exc:
        if key is not None and "allow_pickle" in str(exc):
            raise LogFormatError(f"array {safe(key)!r} holds pickled Python objects; grokaudit "
                                 "never unpickles a log (that would run code from the file): "
                                 "save it as a numeric or text array, or remove it",
                                 path=str(f), column=key,
                                 code=ErrorCode.FILE_UNREADABLE) from None
        raise _unreadable(f, exc) from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, zlib.error,
            NotImplementedError) as exc:
        raise _unreadable(f, exc) from None


def _unreadable(f: Path, exc: BaseException) -> LogFormatError:
    return LogFormatError(f"cannot read as .npz ({type(exc).__name__}: {safe(exc)[:200]}); the "
                          "file is truncated or not an NPZ archive", path=str(f),
                          code=ErrorCode.FILE_UNREADABLE)


def read(path: Path, options: ReadOptions) -> Points:
    """Read one NPZ file or every ``*.npz`` under a directory."""
    files = _files(path)
    if not files:
        raise LogFormatError("directory holds no .npz files; check the path or the --format",
                             path=str(path), code=ErrorCode.FORMAT_MISMATCH)
    points = Points()
    attributes: dict[str, dict[str, Any]] = {}
    for f in files:
        points.files.append(str(f))
        if f.stat().st_size == 0:
            raise LogFormatError("file is empty; there is nothing to read", path=str(f),
                                 code=ErrorCode.FILE_EMPTY)
        arrays = _load(f)
        if "steps" not in arrays and "step" not in arrays:
            raise LogFormatError("no 'steps' array; an NPZ sweep file holds a (T,) 'steps' "
                                 "vector and (seeds, T) metric arrays", path=str(f),
                                 column="steps", code=ErrorCode.MISSING_COLUMN)
        steps = np.asarray(arrays.pop("steps" if "steps" in arrays else "step"))
        if steps.ndim != 1 or not _real(steps):
            raise LogFormatError(f"'steps' is a {steps.dtype} array of shape {steps.shape}; "
                                 "expected a (T,) vector of integer steps", path=str(f),
                                 column="steps", code=ErrorCode.BAD_COLUMN_TYPE)
        T = steps.shape[0]
        series = {k: v for k, v in arrays.items() if v.ndim == 2}
        if not series:
            raise LogFormatError("no (seeds, T) metric arrays; save each metric as one row per "
                                 "seed", path=str(f), code=ErrorCode.NO_METRIC)
        S = {v.shape[0] for v in series.values()}
        for k, v in series.items():
            if v.shape[1] != T:
                raise LogFormatError(f"array {safe(k)!r} has shape {v.shape}; its second axis "
                                     f"must match 'steps' ({T})", path=str(f), column=k,
                                     code=ErrorCode.BAD_COLUMN_TYPE)
            if not _real(v):
                raise LogFormatError(f"array {safe(k)!r} holds {v.dtype} values, not numbers; a "
                                     "(seeds, T) array is a metric: save numbers, or remove it",
                                     path=str(f), column=k, code=ErrorCode.BAD_COLUMN_TYPE)
        if len(S) != 1:
            raise LogFormatError(f"metric arrays disagree on the number of seeds ({sorted(S)}); "
                                 "every (seeds, T) array needs one row per seed", path=str(f),
                                 code=ErrorCode.BAD_COLUMN_TYPE)
        n_seeds = S.pop()
        stem = f.stem if path.is_file() else f.relative_to(path).with_suffix("").as_posix()
        runs = [f"{stem}/s{i}" for i in range(n_seeds)]
        step = as_steps(steps, what="'steps'", path=str(f), column="steps")
        for key, v in series.items():
            name = ALIASES.get(key, key)
            vals = v.astype(np.float64)
            for i, r in enumerate(runs):
                row = vals[i]
                ok = ~np.isnan(row)
                points.add(r, name, step[ok], row[ok])
        for key, v in arrays.items():
            if v.ndim == 0:
                for r in runs:
                    points.add_condition(r, key, _scalar(v))
            elif v.ndim == 1 and v.shape[0] == n_seeds:
                for i, r in enumerate(runs):
                    attributes.setdefault(r, {})[key] = _scalar(v[i:i + 1].reshape(()))
            elif v.ndim == 1 and v.shape[0] == T and _real(v):
                # one value per step, shared by the seeds (a learning-rate schedule): a metric
                vals = v.astype(np.float64)
                ok = ~np.isnan(vals)
                for r in runs:
                    points.add(r, ALIASES.get(key, key), step[ok], vals[ok])
            elif v.ndim != 2:
                points.warnings.append(f"{safe(f.name)}: array {safe(key)!r} of shape {v.shape} "
                                       "not read (neither (seeds, T), (T,), (seeds,) nor a "
                                       "scalar)")
        for i, r in enumerate(runs):
            points.add_condition(r, "seed", i)
            points.origins[r] = f"{stem}/s{i}"
    points.extra["run_attributes"] = attributes
    return points


READER = Reader(
    name="npz",
    description="Per-condition NPZ sweeps: (seeds, T) arrays plus a 'steps' vector per file",
    read=read, detect=_detect, version="1", priority=40,
)
