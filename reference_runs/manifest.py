"""The ``MANIFEST.toml`` written next to a log: config, command, versions, device, wall time."""

from __future__ import annotations

import datetime as _dt
import numbers
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w
from grokaudit.outputs import atomic_write_with


def _plain(v: Any) -> Any:
    """``v`` as TOML can hold it: a ``None`` in a table is left out (TOML has no null; the
    key's absence says it); tuples become arrays; keys become strings; a bool, number or
    string subclass (``numpy.float64``, an enum) its plain value, so its text is TOML's, and
    so is a numpy integer or boolean (a number stays a number); a value of any other type (a
    ``None`` inside an array, a path) is written as its text, as the hand-written emitter this
    replaced did. Two keys of one table that read the same as text (``1`` and ``"1"``) are
    refused (``ValueError``), never one silently dropped. Floats stay floats, ``nan`` and ``±inf`` included
    (TOML's ``nan``, ``inf``, ``-inf``: they read back as the same floats; the old emitter
    wrote the strings "nan" and "inf", and -inf as "inf"). A manifest holds none: every number
    of a sweep is checked finite before training, and the wall time is measured."""
    if isinstance(v, Mapping):
        keys = [str(k) for k in v]
        if len(set(keys)) < len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise ValueError(f"manifest keys {twice} read the same as text: one would be lost")
        return {str(k): _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    for kind in (bool, int, float, str):
        if isinstance(v, kind):
            return kind(v)
    if getattr(getattr(v, "dtype", None), "kind", None) == "b":  # numpy.bool_
        return bool(v)
    if isinstance(v, numbers.Integral):  # numpy integers
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return str(v)


def to_toml(data: Mapping[str, Any]) -> str:
    """``data`` as TOML text (:func:`tomli_w.dumps`, after :func:`_plain`): any key or string
    reads back as written (``'my key'`` and ``'a.b'`` stay one key; a carriage return, a tab or
    a quote in a command line is escaped), tables nest to any depth."""
    return tomli_w.dumps(_plain(data))


def environment(device: str) -> dict[str, Any]:
    """Package versions and the device, for reproducibility."""
    import numpy
    import pandas
    import pyarrow
    import torch
    from grokaudit import __version__

    dev = device
    if device.startswith("cuda") and torch.cuda.is_available():
        dev = f"{device} ({torch.cuda.get_device_name(0)})"
    elif device == "cpu":
        dev = f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
              f"{torch.get_num_threads()} torch threads)"
    return {"grokaudit": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
            "python": platform.python_version(), "platform": platform.platform(),
            "device": dev}


def trainer_commit() -> str | None:
    """The git commit of the trainer's source tree, with ``+dirty`` when it has local changes;
    None outside a git checkout (an installed wheel)."""
    import subprocess

    here = Path(__file__).parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=here,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def recipe_echo(sweep: Any, specs: list[Any]) -> dict[str, Any]:
    """The manifest's ``[recipe]`` table: the recipe(s) the runs use, where each comes from and
    what its source leaves open; per recipe and architecture the values it set
    (``[recipe.<name>_<arch>]``); and every recipe field the config set itself
    (``[recipe.overrides]``, a grid key as its list of values), with the recipe's value it
    replaced (``[recipe.replaced]``)."""
    from .recipes import RECIPE_FIELDS, RECIPES, resolve

    pairs = sorted({(s.cfg.recipe, s.cfg.arch) for s in specs})
    names = sorted({n for n, _ in pairs})
    out: dict[str, Any] = {
        "names": names,
        "source": [RECIPES[n].source for n in names],
        "open": [f"{n}: {o}" for n in names for o in RECIPES[n].open],
    }
    overrides: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    for name, arch in pairs:
        values = resolve(name, arch)
        out[f"{name}_{arch}"] = {k: values[k] for k in RECIPE_FIELDS}
        for k in RECIPE_FIELDS:
            if k in sweep.grid:
                overrides[k] = list(sweep.grid[k])
            elif k in sweep.base:
                overrides[k] = sweep.base[k]
            else:
                continue
            replaced[k] = values[k] if len(pairs) == 1 else replaced.get(k, values[k])
    out["overrides"] = overrides
    out["replaced"] = replaced
    return out


def write_manifest(path: Path, *, command: str, sweep_file: str, sweep: dict[str, Any],
                   device: str, wall_seconds: float, n_runs: int, n_rows: int,
                   complete: bool, recipe: dict[str, Any] | None = None) -> Path:
    """Write the manifest atomically (:func:`grokaudit.outputs.atomic_write_with`); returns
    its path. A folder that cannot be written: ``OutputError`` (``OUTPUT_NOT_WRITABLE``)."""
    data = {
        "log": path.name.replace(".MANIFEST.toml", ".parquet"),
        "command": command,
        "config_file": sweep_file,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_seconds": round(wall_seconds, 1),
        "runs": n_runs,
        "rows": n_rows,
        "complete": complete,
        "trainer_commit": trainer_commit(),
        "environment": environment(device),
        "sweep": sweep,
    }
    if recipe is not None:
        data["recipe"] = recipe
    text = to_toml(data).encode("utf-8")

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(text)

    # the umask's permissions (a manifest is meant to be shared); a temporary name that is not
    # a .toml file; an error or an interruption leaves no temporary file
    return atomic_write_with(path, write, flag="the MANIFEST", temp_suffix=".tmp")
