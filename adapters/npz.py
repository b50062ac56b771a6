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
from pathlib import Path
from typing import Any

import numpy as np
from grokaudit.errors import LogFormatError

from .merge import ReadOptions
from .points import Points
from .registry import Reader

#: Key aliases of the public layouts, read as the canonical names.
ALIASES = {"acc": "test_acc", "eff": "eff_rank_E"}


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(q for q in path.rglob("*.npz") if q.is_file())


def _detect(path: Path) -> bool:
    if path.is_file():
        return path.suffix.lower() == ".npz"
    return any(True for _ in path.rglob("*.npz"))


def _scalar(a: np.ndarray) -> Any:
    if a.dtype == np.float32:  # the value as written (0.15), not its float32 expansion
        return float(str(a.reshape(())[()]))
    v = a.item()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def read(path: Path, options: ReadOptions) -> Points:
    """Read one NPZ file or every ``*.npz`` under a directory."""
    files = _files(path)
    if not files:
        raise LogFormatError("directory holds no .npz files", path=str(path))
    points = Points()
    attributes: dict[str, dict[str, Any]] = {}
    for f in files:
        points.files.append(str(f))
        if f.stat().st_size == 0:
            raise LogFormatError("file is empty; there is nothing to read", path=str(f))
        try:
            with np.load(f, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
            raise LogFormatError(f"cannot read as .npz ({type(exc).__name__}: {exc}); the file "
                                 "is truncated or not an NPZ archive", path=str(f)) from None
        if "steps" not in arrays and "step" not in arrays:
            raise LogFormatError("no 'steps' array; an NPZ sweep file holds a (T,) 'steps' "
                                 "vector and (seeds, T) metric arrays", path=str(f),
                                 column="steps")
        steps = np.asarray(arrays.pop("steps" if "steps" in arrays else "step"))
        if steps.ndim != 1 or not np.issubdtype(steps.dtype, np.number):
            raise LogFormatError(f"'steps' has shape {steps.shape}; expected (T,)", path=str(f),
                                 column="steps")
        T = steps.shape[0]
        series = {k: v for k, v in arrays.items() if v.ndim == 2}
        if not series:
            raise LogFormatError("no (seeds, T) metric arrays", path=str(f))
        S = {v.shape[0] for v in series.values()}
        for k, v in series.items():
            if v.shape[1] != T:
                raise LogFormatError(f"array {k!r} has shape {v.shape}; its second axis must "
                                     f"match 'steps' ({T})", path=str(f), column=k)
        if len(S) != 1:
            raise LogFormatError(f"metric arrays disagree on the number of seeds ({sorted(S)})",
                                 path=str(f))
        n_seeds = S.pop()
        stem = f.stem if path.is_file() else f.relative_to(path).with_suffix("").as_posix()
        runs = [f"{stem}/s{i}" for i in range(n_seeds)]
        step = steps.astype(np.int64)
        for key, v in series.items():
            name = ALIASES.get(key, key)
            if not np.issubdtype(v.dtype, np.number):
                points.warnings.append(f"{f.name}: non-numeric array {key!r} ignored")
                continue
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
            elif v.ndim != 2:
                points.warnings.append(f"{f.name}: array {key!r} of shape {v.shape} ignored")
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
